"""The page's pure JavaScript helpers (graph/web_static/app.js), run by the node that Playwright ships.

The browser test (tests/e2e/test_web_page.py) drives the whole page; these cases pin the edge cases of
citation linking and Markdown blocks that one real answer does not reach.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

APP_JS = Path(__file__).resolve().parents[2] / "graph" / "web_static" / "app.js"


def _node() -> str | None:
    """The node binary Playwright ships (a pinned dependency), else one on PATH."""
    try:
        import playwright
    except ImportError:
        bundled = None
    else:
        bundled = Path(playwright.__file__).parent / "driver" / "node"
    if bundled is not None and bundled.is_file():
        return str(bundled)
    return shutil.which("node") or shutil.which("nodejs")


NODE = _node()

pytestmark = pytest.mark.skipif(NODE is None, reason="no node: neither Playwright's nor one on PATH")


def call(function: str, *args: Any) -> Any:
    script = (f"const m = require({json.dumps(str(APP_JS))});"
              f"process.stdout.write(JSON.stringify(m.{function}(...{json.dumps(args)})));")
    assert NODE is not None
    out = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)


A = {"path": "docs/a.md", "start_line": 1, "end_line": 2}
B = {"path": "docs/b.md", "start_line": 3, "end_line": 4}


@pytest.mark.parametrize(("answer", "citations", "expected"), [
    ("see docs/a.md:1-2.", [A], [{"text": "see "}, {"text": "docs/a.md:1-2", "citation": 0}, {"text": "."}]),
    ("[docs/a.md:1-2]", [A], [{"text": "docs/a.md:1-2", "citation": 0}]),
    ("[docs/b.md:3-4](https://x/y) and docs/a.md:1-2", [A, B],
     [{"text": "docs/b.md:3-4", "citation": 1}, {"text": " and "}, {"text": "docs/a.md:1-2", "citation": 0}]),
    ("xdocs/a.md:1-2 docs/a.md:1-23", [A], [{"text": "xdocs/a.md:1-2 docs/a.md:1-23"}]),
    ("docs/c.md:1-2 is not verified", [A], [{"text": "docs/c.md:1-2 is not verified"}]),
    ("[click](javascript:alert(1))", [A], [{"text": "[click](javascript:alert(1))"}]),
    ("no citations", [], [{"text": "no citations"}]),
], ids=["plain", "bracketed", "markdown-link", "inside-longer-token", "unverified", "foreign-link", "none"])
def test_answer_segments_link_only_verified_citations(answer: str, citations: list, expected: list) -> None:
    assert call("answerSegments", answer, citations) == expected


def test_answer_blocks() -> None:
    answer = "Intro `x`:\n\n> quoted\n> more\n[docs/a.md:1-2]\n\n1. first\n   cont\n2. second\n\n```py\nx = 1\n\ny\n```"
    assert call("answerBlocks", answer) == [
        {"type": "para", "text": "Intro `x`:"},
        {"type": "quote", "text": "quoted\nmore"},
        {"type": "para", "text": "[docs/a.md:1-2]"},
        {"type": "list", "ordered": True, "items": ["first\ncont", "second"]},
        {"type": "code", "text": "x = 1\n\ny"},
    ]


def test_parse_sse_keeps_an_incomplete_event_for_the_next_chunk() -> None:
    events, rest = call("parseSse", 'event: metadata\ndata: {"run_id": "r"}\n\n: ping\n\nevent: values\r\ndata: {}\r\n'
                        '\r\nevent: mess')
    assert events == [{"event": "metadata", "data": '{"run_id": "r"}'}, {"event": "values", "data": "{}"}]
    assert rest == "event: mess"


def test_parse_sse_line_break_split_between_chunks() -> None:
    """sse-starlette ends lines with CRLF; a chunk that ends on the CR must not end the event there."""
    events, rest = call("parseSse", "event: values\r")
    assert (events, rest) == ([], "event: values\r")
    events, rest = call("parseSse", rest + '\ndata: {"a": 1}\r\n\r\n')
    assert events == [{"event": "values", "data": '{"a": 1}'}] and rest == ""


def test_content_text_of_blocks() -> None:
    assert call("contentText", [{"type": "text", "text": "a"}, {"type": "image"}, "b"]) == "ab"
