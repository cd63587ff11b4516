"""The web page's routes (graph/web.py) over a fake backend: input checks, error shapes, the token, static files."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from graph.web import (
    MAX_READ_LINES,
    LineRange,
    Vote,
    WebInputError,
    auth_problem,
    parse_line_range,
    parse_vote,
    routes,
    session_summary,
)
from stores.errors import SessionNotFoundError


class FakeBackend:
    def __init__(self) -> None:
        self.votes: list[Vote] = []
        self.reads: list[LineRange] = []
        self.fail: BaseException | None = None

    def _maybe_fail(self) -> None:
        if self.fail is not None:
            raise self.fail

    def sessions(self) -> list[dict[str, Any]]:
        self._maybe_fail()
        return [{"name": "demo", "rows": 3, "embedder": "fake", "updated_at": None, "revision": None}]

    def read_lines(self, line_range: LineRange) -> dict[str, Any]:
        self._maybe_fail()
        self.reads.append(line_range)
        return {"path": line_range.path, "start_line": line_range.start_line, "end_line": line_range.end_line,
                "lines": [{"number": line_range.start_line, "text": "<b>x</b>"}]}

    def record_vote(self, vote: Vote) -> str:
        self._maybe_fail()
        self.votes.append(vote)
        return "fb-1"

    async def answer_citations(self, thread_id: str, run_id: str) -> list[dict[str, Any]] | None:
        """The runs this fake server answered: run r1 of thread t1 cited docs/a.md:1-2 (issue 37 item 11)."""
        if (thread_id, run_id) == ("t1", "r1"):
            return [{"path": "docs/a.md", "start_line": 1, "end_line": 2}]
        return None


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


def client_for(backend: FakeBackend, token: str | None = None) -> TestClient:
    return TestClient(Starlette(routes=routes(backend, lambda: token)), raise_server_exceptions=False)


@pytest.fixture
def client(backend: FakeBackend) -> TestClient:
    return client_for(backend)


GOOD_READ = {"session": "demo", "path": "docs/a.md", "start_line": "3", "end_line": "5"}


@pytest.mark.parametrize(("change", "says"), [
    ({"session": None}, "session: required"),
    ({"session": "   "}, "session: must not be blank"),
    ({"path": ""}, "path: required"),
    ({"path": "a\x00b"}, "path: contains a NUL character"),
    ({"path": "p" * 1001}, "path: longer than 1000 characters"),
    ({"start_line": "three"}, "start_line: expected a line number, got 'three'"),
    ({"start_line": "0"}, "start_line: lines are numbered from 1, got 0"),
    ({"end_line": None}, "end_line: required"),
    ({"end_line": "2"}, "end_line 2 is before start_line 3"),
    ({"end_line": str(3 + MAX_READ_LINES)}, f"at most {MAX_READ_LINES} lines at a time"),
], ids=["no-session", "blank-session", "no-path", "nul-path", "long-path", "word-line", "line-zero", "no-end",
        "reversed", "too-many-lines"])
def test_bad_line_range_is_refused_with_one_line(change: dict, says: str) -> None:
    params = {k: v for k, v in {**GOOD_READ, **change}.items() if v is not None}
    with pytest.raises(WebInputError, match="^" + says.replace("(", r"\(")):
        parse_line_range(params)


def test_good_line_range() -> None:
    assert parse_line_range(GOOD_READ) == LineRange("demo", "docs/a.md", 3, 5)


GOOD_VOTE = {"session": "demo", "score": -1, "question": "Как отключить CORS?", "answer": "См. docs/a.md:1-2",
             "citations": [{"path": "docs/a.md", "start_line": 1, "end_line": 2}], "comment": "  мало  ",
             "run_id": "r1", "thread_id": "t1"}


@pytest.mark.parametrize(("body", "says"), [
    ([1, 2], "expected a JSON object"),
    ({**GOOD_VOTE, "score": 0}, "score: expected 1"),
    ({**GOOD_VOTE, "score": True}, "score: expected 1"),
    ({**GOOD_VOTE, "score": "1"}, "score: expected 1"),
    ({**GOOD_VOTE, "question": ""}, "question: required"),
    ({**GOOD_VOTE, "question": "x" * 8001}, "question: longer than 8000 characters"),
    ({**GOOD_VOTE, "comment": "x" * 2001}, "comment: longer than 2000 characters"),
    ({**GOOD_VOTE, "comment": 5}, "comment: expected a string"),
    ({**GOOD_VOTE, "citations": "docs/a.md"}, "citations: expected a list"),
    ({**GOOD_VOTE, "citations": [{"path": "a", "start_line": 4, "end_line": 2}]},
     "citations[0].end_line 2 is before start_line 4"),
    ({**GOOD_VOTE, "session": None}, "session: required"),
], ids=["list", "zero", "bool", "string-score", "no-question", "long-question", "long-comment", "int-comment",
        "citations-string", "citation-reversed", "no-session"])
def test_bad_vote_is_refused_with_one_line(body: Any, says: str) -> None:
    with pytest.raises(WebInputError, match="^" + says.replace("[", r"\[").replace("]", r"\]")):
        parse_vote(body)


def test_good_vote_keeps_what_was_answered() -> None:
    vote = parse_vote(GOOD_VOTE)
    assert vote == Vote(session="demo", score=-1, question="Как отключить CORS?", answer="См. docs/a.md:1-2",
                        citations=[{"path": "docs/a.md", "start_line": 1, "end_line": 2}], comment="мало",
                        run_id="r1", thread_id="t1")
    assert parse_vote({**GOOD_VOTE, "comment": "   ", "run_id": None}).comment is None


@pytest.mark.parametrize(("header", "token", "api_key", "problem"), [
    (None, None, None, None),
    ("Bearer anything", None, None, None),
    (None, "s3cret", None, "this server needs a token"),
    ("Basic s3cret", "s3cret", None, "this server needs a token"),
    ("Bearer nope", "s3cret", None, "the token is not this server's LOTSMAN_AUTH_TOKEN"),
    ("Bearer s3cret", "s3cret", None, None),
    ("bearer  s3cret ", "s3cret", None, None),
    (None, "s3cret", "s3cret", None),
    (None, "s3cret", "nope", "this server needs a token"),
], ids=["open", "open-with-header", "missing", "wrong-scheme", "wrong-token", "right", "case-and-spaces",
        "api-key", "wrong-api-key"])
def test_auth_problem(header: str | None, token: str | None, api_key: str | None, problem: str | None) -> None:
    found = auth_problem(header, token, api_key)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem))


SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(("ref", "commit", "revision"), [
    ("v1.2", SHA, "v1.2 @ 0123456789ab"),
    (None, SHA, "0123456789ab"),
    (None, None, None),
], ids=["tag", "commit-only", "folder"])
def test_session_summary_hides_server_paths(ref: str | None, commit: str | None, revision: str | None) -> None:
    row = {"name": "demo", "rows": 7, "embedder": "use", "updated_at": None, "root_path": "/srv/secret",
           "repo_path": "/srv/secret", "git_ref": ref, "commit_sha": commit, "rag_session_id": "x"}
    assert session_summary(row) == {"name": "demo", "rows": 7, "embedder": "use", "updated_at": None,
                                    "git_ref": ref, "commit": commit, "revision": revision}


# --- over HTTP ------------------------------------------------------------------------------------------------
def test_page_and_static_files_are_served(client: TestClient) -> None:
    page = client.get("/lotsman/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert 'src="static/app.js"' in page.text and "https://" not in page.text, "everything is served locally"
    script = client.get("/lotsman/static/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "innerHTML" not in script.text, "text from the index is never parsed as HTML"
    assert client.get("/lotsman/static/style.css").status_code == 200
    view = client.get("/lotsman/read", params={"session": "demo", "path": "docs/a.md", "start": 1, "end": 2})
    assert view.status_code == 200 and 'id="citation-view"' in view.text, "where chat answers' links lead"
    moved = client.get("/lotsman", follow_redirects=False)
    assert moved.status_code == 307 and moved.headers["location"].endswith("/lotsman/")


def test_sessions_endpoint(client: TestClient) -> None:
    res = client.get("/lotsman/api/sessions")
    assert res.status_code == 200 and res.json()["sessions"][0]["name"] == "demo"


def test_read_endpoint_checks_then_reads(client: TestClient, backend: FakeBackend) -> None:
    res = client.get("/lotsman/api/read", params=GOOD_READ)
    assert res.status_code == 200 and res.json()["lines"] == [{"number": 3, "text": "<b>x</b>"}]
    bad = client.get("/lotsman/api/read", params={**GOOD_READ, "start_line": "x"})
    assert bad.status_code == 400 and bad.json() == {"error": "start_line: expected a line number, got 'x'"}
    assert len(backend.reads) == 1, "nothing is read for a bad request"


@pytest.mark.parametrize(("failure", "status", "says"), [
    (SessionNotFoundError("no session 'x': index a repository first"), 404, "no session 'x'"),
    (psycopg.OperationalError("connection refused"), 503, "the database is not reachable"),  # issue 37 item 6
    (RuntimeError("boom"), 500, "internal error (RuntimeError): see the server log"),
], ids=["unknown-session", "database-down", "bug"])
def test_backend_failures_are_one_json_line(client: TestClient, backend: FakeBackend, failure: BaseException,
                                            status: int, says: str) -> None:
    backend.fail = failure
    res = client.get("/lotsman/api/read", params=GOOD_READ)
    assert res.status_code == status
    assert set(res.json()) == {"error"} and res.json()["error"].startswith(says)
    assert "\n" not in res.json()["error"]


def test_feedback_endpoint(client: TestClient, backend: FakeBackend) -> None:
    res = client.post("/lotsman/api/feedback", json=GOOD_VOTE)
    assert res.status_code == 200 and res.json() == {"feedback_id": "fb-1"}
    assert backend.votes[0].score == -1 and backend.votes[0].comment == "мало"


@pytest.mark.parametrize(("body", "status", "says"), [
    (b"{not json", 400, "expected a JSON object"),
    (b"\xff\xfe", 400, "expected a JSON object"),
    (b'{"session": "demo", "score": 2, "question": "q"}', 400, "score: expected 1"),
    (b'{"a": "' + b"x" * 300_000 + b'"}', 413, "request body larger than 256 KiB"),
], ids=["broken-json", "not-utf8", "bad-score", "huge"])
def test_bad_feedback_body(client: TestClient, backend: FakeBackend, body: bytes, status: int, says: str) -> None:
    res = client.post("/lotsman/api/feedback", content=body, headers={"Content-Type": "application/json"})
    assert res.status_code == status and res.json()["error"].startswith(says)
    assert backend.votes == []


def test_token_guards_every_endpoint_but_the_page(backend: FakeBackend) -> None:
    client = client_for(backend, token="s3cret")
    assert client.get("/lotsman/").status_code == 200, "the page itself holds no data"
    for method, url in [("GET", "/lotsman/api/sessions"), ("GET", "/lotsman/api/read"),
                        ("POST", "/lotsman/api/feedback")]:
        res = client.request(method, url, params=GOOD_READ, json=GOOD_VOTE)
        assert res.status_code == 401 and res.json()["error"].startswith("this server needs a token"), url
    assert backend.reads == [] and backend.votes == []
    ok = client.get("/lotsman/api/sessions", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200


def test_feedback_checks_the_token_before_reading_a_large_body(backend: FakeBackend) -> None:
    """An anonymous client made the server buffer the whole body before the token was checked."""
    client = client_for(backend, token="s3cret")
    res = client.post("/lotsman/api/feedback", content=b"x" * 300_000, headers={"Content-Type": "application/json"})
    assert res.status_code == 401

    def chunks():  # no Content-Length: the cap applies while reading
        for _ in range(40):
            yield b"x" * 10_000

    res = client.post("/lotsman/api/feedback", content=chunks(),
                      headers={"Content-Type": "application/json", "Authorization": "Bearer s3cret"})
    assert res.status_code == 413 and backend.votes == []
