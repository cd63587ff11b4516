"""The web page is served under a strict Content-Security-Policy (graph/web.py): what the browser is told, and
that the page's own HTML needs nothing the policy forbids (no inline script, style or event handler)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from graph.web import STATIC_DIR, routes
from tests.unit.test_web import FakeBackend


@pytest.fixture
def client() -> TestClient:
    return TestClient(Starlette(routes=routes(FakeBackend(), lambda: None)), raise_server_exceptions=False)


def directives(policy: str) -> dict[str, list[str]]:
    out = {}
    for part in policy.split(";"):
        name, *values = part.split()
        out[name] = values
    return out


@pytest.mark.parametrize("url", [
    "/lotsman/",
    "/lotsman/read?session=demo&path=docs/a.md&start=1&end=2",
    "/lotsman/static/app.js",
    "/lotsman/static/style.css",
    "/lotsman/api/sessions",
    "/lotsman/api/read?session=demo&path=docs/a.md&start_line=1&end_line=2",
    "/lotsman/api/read?session=demo",  # a refusal carries them too
], ids=["page", "citation-view", "script", "styles", "sessions", "read", "refused-read"])
def test_every_response_of_the_page_carries_the_security_headers(client: TestClient, url: str) -> None:
    res = client.get(url)
    assert res.status_code in (200, 400), res.text
    policy = directives(res.headers["content-security-policy"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"], "no inline script or style"
    assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"] and policy["form-action"] == ["'self'"]
    assert not any("unsafe" in v or v == "*" for values in policy.values() for v in values)
    assert res.headers["x-content-type-options"] == "nosniff"
    assert res.headers["referrer-policy"] == "no-referrer"
    assert res.headers["x-frame-options"] == "DENY", "browsers without frame-ancestors"


def test_the_policy_is_the_documented_one() -> None:
    from graph.web import CONTENT_SECURITY_POLICY

    assert directives(CONTENT_SECURITY_POLICY)["connect-src"] == ["'self'"], "the page talks to its own server only"


class InlineFinder(HTMLParser):
    """Collects what a strict policy would block in a page's own HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "style":
            self.blocked.append("<style> element")
        if tag == "script" and not names.get("src"):
            self.blocked.append("inline <script>")
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.blocked.append(f"{tag} {name}=")
            if name in ("href", "src") and value and re.match(r"\s*javascript:", value, re.I):
                self.blocked.append(f"{tag} {name}=javascript:")


@pytest.mark.parametrize("name", ["index.html", "read.html"])
def test_the_pages_need_no_inline_script_or_style(name: str) -> None:
    finder = InlineFinder()
    finder.feed((STATIC_DIR / name).read_text(encoding="utf-8"))
    assert finder.blocked == []


def test_the_script_sets_no_style_attribute() -> None:
    script = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    assert not re.search(r"""setAttribute\(\s*["']style|\.style\.cssText|\binnerHTML\b|\beval\(|new Function""",
                         script)


@pytest.mark.parametrize("name", ["index.html", "read.html"])
def test_the_pages_load_nothing_but_their_own_files(name: str) -> None:
    html = (STATIC_DIR / name).read_text(encoding="utf-8")
    for ref in re.findall(r'(?:href|src)="([^"]+)"', html):
        assert ref == "./" or (STATIC_DIR / ref.removeprefix("static/")).is_file(), ref
