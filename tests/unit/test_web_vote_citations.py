"""Issue 37 item 11 at the web endpoint (fake backend): a vote's citations go to the store with the voted run's own
citations, read by the server; a vote that cites without naming its run, or names a run the server never gave,
is a 400."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from graph.web import routes
from tests.unit.test_web import GOOD_VOTE, FakeBackend

RUN_CITES = [{"path": "docs/a.md", "start_line": 1, "end_line": 2}]


def _post(backend: FakeBackend, vote: dict) -> tuple[int, dict]:
    client = TestClient(Starlette(routes=routes(backend, lambda: None)), raise_server_exceptions=False)
    res = client.post("/lotsman/api/feedback", json=vote)
    return res.status_code, res.json()


def test_the_store_gets_the_runs_own_citations_not_the_clients() -> None:
    backend = FakeBackend()
    forged = [{"path": "../../etc/passwd", "start_line": 1, "end_line": 1}]
    status, _ = _post(backend, {**GOOD_VOTE, "citations": forged})
    assert status == 200  # the fake store does not judge; it is handed what to judge by
    assert backend.votes[0].citations == forged and backend.votes[0].run_citations == RUN_CITES


@pytest.mark.parametrize(("change", "says"), [
    ({"run_id": None}, "citations: send the run_id and thread_id of the answer they came from"),
    ({"thread_id": None}, "citations: send the run_id and thread_id of the answer they came from"),
    ({"run_id": "r2"}, "run_id: no answer of run 'r2' in thread 't1' on this server"),
    ({"thread_id": "t" * 150}, "run_id: no answer of run 'r1' in thread '" + "t" * 80 + "…'"),
], ids=["no-run", "no-thread", "unknown-run", "long-thread-cut"])
def test_citations_need_a_run_this_server_gave(change: dict, says: str) -> None:
    backend = FakeBackend()
    status, body = _post(backend, {**GOOD_VOTE, **change})
    assert status == 400 and body["error"].startswith(says), body
    assert backend.votes == []


def test_a_vote_without_citations_needs_no_run() -> None:
    backend = FakeBackend()
    status, _ = _post(backend, {**GOOD_VOTE, "citations": [], "run_id": None, "thread_id": None})
    assert status == 200 and backend.votes[0].run_citations is None


def test_a_run_lookup_that_fails_is_a_503_with_one_line() -> None:
    class Broken(FakeBackend):
        async def answer_citations(self, thread_id: str, run_id: str) -> list[dict] | None:
            raise RuntimeError("checkpointer exploded at /srv/secret")

    backend = Broken()
    status, body = _post(backend, GOOD_VOTE)
    assert status == 503 and "/srv/secret" not in body["error"] and backend.votes == []
