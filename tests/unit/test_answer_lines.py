"""Issue 29, answer lines: the answer quotes the lines that answer, and a supporting passage must be about the
question's topic (a key term or an asked-about name), not merely share its generic words."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.answer_composition import compose_extractive
from nodes.context_analysis import analyze
from nodes.evidence import EvidenceRow
from nodes.terms import key_terms


def ev(rid: str, path: str, content: str, start: int = 1, layer: str = "D0_DOC_CHUNKS", **extra: Any) -> EvidenceRow:
    end = extra.pop("span_end", start + content.count("\n"))
    return EvidenceRow(id=rid, path=path, layer=layer, content=content, span_start=start, span_end=end, **extra)


CORS = ev("cors", "docs/cors.md", """## Использование `CORSMiddleware`

* `expose_headers` - Указывает заголовки ответа, доступные браузеру. По умолчанию `[]`.
* `max_age` - Устанавливает время в секундах, в течение которого браузер кэширует CORS-ответы. По умолчанию `600`.

`CORSMiddleware` отвечает на два типа HTTP-запросов.""", 60)
CORS_OTHER = ev("cors2", "docs/cors.md", """## Использование `CORSMiddleware`

`CORSMiddleware` использует запрещающие настройки, поэтому источники нужно разрешить явно.""", 48)
QUERY = ev("query", "docs/query.md", """## `Query` как значение по умолчанию

Вот как можно использовать `Query()` как значение по умолчанию, установив `max_length` равным 50:""", 94)
QUERY_TWO = ev("query2", "docs/query.md", """## Значение по умолчанию внутри `Annotated`

Непонятно, какое значение должно быть по умолчанию: `"rick"` или `"morty"`.""", 134)

DEFAULT_QUESTION = "Какое значение по умолчанию у max_age в CORSMiddleware?"


@pytest.mark.parametrize(("question", "rows", "quoted", "not_quoted"), [
    # another page about default values shares only the question's generic words: it is not support
    (DEFAULT_QUESTION, [CORS, QUERY, CORS_OTHER, QUERY_TWO], ["docs/cors.md"], ["docs/query.md"]),
], ids=["default-value-of-another-setting"])
def test_supporting_passages_are_about_the_topic(question: str, rows: list[EvidenceRow], quoted: list[str],
                                                 not_quoted: list[str]) -> None:
    analysis = analyze(question, key_terms(question), rows, True)
    paths = [s.path for s in analysis.spans]
    assert "По умолчанию `600`" in analysis.spans[0].text
    assert all(p in paths for p in quoted) and not any(p in paths for p in not_quoted), paths


def test_a_support_repeating_what_the_grown_lead_already_names_is_left_out() -> None:
    """The lead grew over its section and names `CORSMiddleware` in a block it took; a passage whose only topic
    word is that name adds nothing."""
    analysis = analyze(DEFAULT_QUESTION, key_terms(DEFAULT_QUESTION), [CORS, CORS_OTHER], True)
    answer = compose_extractive(DEFAULT_QUESTION, analysis, None)
    assert [s.citation for s in analysis.spans] == ["docs/cors.md:62-65"], answer.text


HELP_OPTION = '''def help_option(*param_decls: str, **kwargs: t.Any) -> t.Callable[[FC], FC]:
    """Pre-configured ``--help`` option which immediately prints the help page
    and exits the program.
    """

    def show_help(ctx: Context, param: Parameter, value: bool) -> None:
        """Callback that print the help page on ``<stdout>`` and exits."""
        if not value or ctx.resilient_parsing:
            return

        echo(ctx.get_help(), color=ctx.color)
        ctx.exit()

    if not param_decls:
        param_decls = ("--help",)

    if kwargs.get("is_flag") is False:
        raise TypeError("help_option is always a flag")
    if "callback" in kwargs and kwargs["callback"] is not show_help:
        raise TypeError("help_option sets its own callback")

    kwargs.setdefault("is_flag", True)
    kwargs.setdefault("expose_value", False)
    kwargs.setdefault("is_eager", True)
    kwargs.setdefault("help", _("Show this message and exit."))
    kwargs["callback"] = show_help

    return option(*param_decls, **kwargs)'''
CONNECT = """def connect(url: str, timeout: float | None = None) -> Connection:
    \"\"\"Open a connection, waiting at most `timeout` seconds.\"\"\"
    if timeout is not None and timeout < 0:
        raise ValueError("negative timeout")
    started = now()
    deadline = started + timeout if timeout else None
    sock = open_socket(url, deadline)
    while not sock.ready(timeout):
        remaining = deadline - now() if deadline else timeout
        sock.wait(remaining or timeout)
    sock.settimeout(timeout)
    handshake(sock, timeout)
    retry_after = timeout / 2 if timeout else None
    log_timeout(url, timeout)
    metrics.observe(url, timeout)
    sock.keepalive(timeout)
    pool.register(sock, timeout)
    tracer.mark(timeout)
    if timeout is None:
        timeout = 30.0
    return Connection(sock, timeout, retry_after)"""


@pytest.mark.parametrize(("question", "path", "content", "stated"), [
    ("Какой текст подсказки у стандартной опции --help?", "click/decorators.py", HELP_OPTION,
     'kwargs.setdefault("help", _("Show this message and exit."))'),
    ("What is the default timeout of connect?", "pkg/net.py", CONNECT, "timeout = 30.0"),
], ids=["cli-option-help-text", "default-timeout"])
def test_a_long_definition_is_quoted_at_the_line_that_states_the_asked_value(question: str, path: str, content: str,
                                                                             stated: str) -> None:
    row = ev("code", path, content, 601, layer="C0_SOURCE_CHUNKS")
    analysis = analyze(question, key_terms(question), [row], True)
    assert stated in analysis.spans[0].text, analysis.spans[0].text


TOC = ev("toc", "docs/README.md", """## api/ — интерфейсы

| [api/cli.md](api/cli.md) | `api-cli` | команды `lotsman`, выбор профиля retrieval, коды выхода |
| [api/python_api.md](api/python_api.md) | `api-python` | `build_graph`, `LotsmanRetriever` для API |
| [api/server.md](api/server.md) | `api-server` | графы, run context, профиль retrieval, API endpoints |""", 45)
POLICY = ev("policy", "docs/logic/retrieval_policy.md", """## Основной сценарий

1. Ровно один сигнал вопроса выбирает профиль retrieval: сигнал API → профиль `docs_summary_api_endpoint`.
2. Ноль или несколько сигналов → профиль `docs_summary_generic`.""", 40)


@pytest.mark.parametrize(("question", "rows", "lead_path"), [
    ("Как Lotsman выбирает профиль retrieval для вопроса про API?", [TOC, POLICY], "docs/logic/retrieval_policy.md"),
], ids=["table-of-contents-row-per-page"])
def test_a_table_of_contents_is_never_the_answer(question: str, rows: list[EvidenceRow], lead_path: str) -> None:
    analysis = analyze(question, key_terms(question), rows, True)
    assert [s.path for s in analysis.spans] == [lead_path], [s.citation for s in analysis.spans]
