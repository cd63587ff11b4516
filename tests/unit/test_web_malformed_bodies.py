"""Issue 37 item 7: every malformed feedback body is a 400 with one line, never a 500."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from graph.web import routes
from tests.unit.test_web import FakeBackend

SURROGATE = b'"\\ud800"'


def _vote(**overrides: bytes) -> bytes:
    fields = {"session": b'"demo"', "score": b"1", "question": b'"q"', **overrides}
    return b"{" + b", ".join(b'"' + k.encode() + b'": ' + v for k, v in fields.items()) + b"}"


@pytest.mark.parametrize(("body", "says"), [
    (_vote(question=SURROGATE), "question: "),
    (_vote(session=SURROGATE), "session: "),
    (_vote(comment=b'"ok \\udfff"'), "comment: "),
    (_vote(answer=SURROGATE), "answer: "),
    (_vote(run_id=SURROGATE), "run_id: "),
    (_vote(citations=b'[{"path": ' + SURROGATE + b', "start_line": 1, "end_line": 2}]'), "citations[0].path: "),
    (b"[" * 100_000 + b"]" * 100_000, "expected a JSON object"),
    (b'{"session": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "expected a JSON object"),
    (b'{"a": 1e999999, "session": "demo", "score": 1, "question": "q"}', ""),
    (b"", "expected a JSON object"),
    (b"null", "expected a JSON object"),
], ids=["surrogate-question", "surrogate-session", "surrogate-comment", "surrogate-answer", "surrogate-run-id",
        "surrogate-citation", "deep-array", "deep-value", "huge-float-ignored", "empty", "null"])
def test_malformed_vote_is_a_400_with_one_line(body: bytes, says: str) -> None:
    backend = FakeBackend()
    client = TestClient(Starlette(routes=routes(backend, lambda: None)), raise_server_exceptions=False)
    res = client.post("/lotsman/api/feedback", content=body, headers={"Content-Type": "application/json"})
    if not says:  # a well-formed vote with an odd extra key is fine
        assert res.status_code == 200, res.text
        return
    assert res.status_code == 400, res.text
    error = res.json()["error"]
    assert error.startswith(says) and "\n" not in error and len(error) < 300
    assert backend.votes == []
