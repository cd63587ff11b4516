"""Issue 37 item 6 (http_app side): the guard's refusals echo a client's Host or Origin cut short and escaped, so a
64 KB header or a control character cannot make the error long or forge a line."""

from __future__ import annotations

import pytest

from graph.errors import MAX_SHOWN_CHARS
from graph.http_app import rebinding_problem


@pytest.mark.parametrize(("host", "origin"), [
    ("evil." + "x" * 60_000 + ".example", None),
    ("127.0.0.1", "https://evil." + "y" * 60_000 + ".example"),
    ("evil.example\r\nX-Forged: 1", None),
])
def test_refusals_echo_a_short_escaped_value(host: str, origin: str | None) -> None:
    problem = rebinding_problem("127.0.0.1", host, origin)
    assert problem is not None
    assert len(problem) < MAX_SHOWN_CHARS + 200 and "\n" not in problem and "\r" not in problem, problem[:300]
