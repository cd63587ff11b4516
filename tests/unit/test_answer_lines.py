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


TOC = ev("toc", "docs/index.md", """## billing/ — платежи

| [billing/cards.md](billing/cards.md) | `billing-cards` | карты, выбор режима поиска платежей |
| [billing/refunds.md](billing/refunds.md) | `billing-refunds` | возвраты, режим поиска для вопросов о платежах |
| [billing/export.md](billing/export.md) | `billing-export` | выгрузка, режим поиска, вопросы бухгалтерии |""", 45)
POLICY = ev("policy", "docs/logic/search_modes.md", """## Как выбирается режим

1. Ровно один признак вопроса выбирает режим поиска: признак платежей → режим `payments_exact`.
2. Ноль или несколько признаков → режим `generic`.""", 40)


@pytest.mark.parametrize(("question", "rows", "lead_path"), [
    ("Как сервис выбирает режим поиска для вопроса про платежи?", [TOC, POLICY], "docs/logic/search_modes.md"),
], ids=["table-of-contents-row-per-page"])
def test_a_table_of_contents_is_never_the_answer(question: str, rows: list[EvidenceRow], lead_path: str) -> None:
    analysis = analyze(question, key_terms(question), rows, True)
    assert [s.path for s in analysis.spans] == [lead_path], [s.citation for s in analysis.spans]


def test_a_document_card_is_quoted_by_the_section_of_its_page_that_answers() -> None:
    """The page's summary names the topic; the section with the asked-about option is read from the index."""
    from nodes.context_analysis.card_sources import card_sources

    card = ev("card", "docs/proxy.md", "Path: docs/proxy.md\nЗа прокси-сервером: как запускать приложение за прокси.",
              1, layer="D1_DOCUMENT_CATALOG", span_end=120, title="За прокси-сервером")
    section = {"id": "s7", "path": "docs/proxy.md", "layer": "D0_DOC_CHUNKS", "title": "За прокси-сервером",
               "content": "## Префикс пути прокси\n\nПередайте `--root-path /api/v1`: приложение узнает префикс.",
               "span_start": 60, "span_end": 62, "metadata": {}}
    other = {**section, "id": "s1", "content": "## Введение\n\nПрокси стоит перед приложением.", "span_start": 3,
             "span_end": 5}
    question = "Как запускать приложение за прокси, который отрезает префикс пути?"

    def read(chosen: list[EvidenceRow]) -> dict[str, list[EvidenceRow]]:
        return card_sources([other, section], chosen)

    analysis = analyze(question, key_terms(question), [card], True, sources=read)
    assert "--root-path /api/v1" in analysis.spans[0].text and analysis.spans[0].citation == "docs/proxy.md:62-62"
    assert "s7" in analysis.expanded
