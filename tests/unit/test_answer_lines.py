"""Issue 29, answer lines: the answer quotes the lines that answer, and a supporting passage must be about the
question's topic (a key term or an asked-about name), not merely share its generic words."""

from __future__ import annotations

from typing import Any

import pytest

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
    assert any(stated in s.text for s in analysis.spans), [s.text for s in analysis.spans]


