"""Issue 37 item 11 on a real `langgraph dev`: the web page's vote endpoint reads the voted run's citations from the
server's own thread, and refuses a citation the answer did not give (`../../etc/passwd`, line 10^20, another file
of the index); `feedback export` then holds only the run's files."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import VENV_BIN, DevServer, running_dev_server


@pytest.fixture(scope="module")
def server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[DevServer]:
    env = offline_env(LOTSMAN_EMBEDDER="use")
    env.pop("LOTSMAN_AUTH_TOKEN", None)
    with running_dev_server(env, tmp_path_factory.mktemp("web-votes")) as running:
        yield running


def _answer(client: httpx.Client, session: str, question: str) -> tuple[str, str, dict]:
    thread = client.post("/threads", json={}).json()["thread_id"]
    run = client.post(f"/threads/{thread}/runs", json={
        "assistant_id": "lotsman", "context": {"rag_session_id": session},
        "input": {"messages": [{"role": "human", "content": question}]}})
    assert run.status_code == 200, run.text
    run_id = run.json()["run_id"]
    values = client.get(f"/threads/{thread}/runs/{run_id}/join").json()
    assert values.get("citations"), values
    return thread, run_id, values


def test_a_vote_may_cite_only_what_its_answer_cited(server: DevServer, small_session: str, db,
                                                     offline_env: Callable[..., dict[str, str]],
                                                     tmp_path: Path) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        thread, run_id, first = _answer(client, small_session, "Как настроить CORS в приложении?")
        own = [{k: c[k] for k in ("path", "start_line", "end_line")} for c in first["citations"]]
        vote = {"session": small_session, "score": 1, "question": "Как настроить CORS в приложении?",
                "answer": first["answer"], "run_id": run_id, "thread_id": thread}

        cited = {c["path"] for c in own}
        from stores.sessions import get_session

        with db.connection() as conn:
            found = get_session(conn, small_session)
            paths = conn.execute(f'SELECT DISTINCT path FROM "{found.table}" WHERE rag_session_id = %s',
                                 (found.rag_session_id,)).fetchall()
        elsewhere = next(p for (p,) in paths if p not in cited)  # a real file of the index the answer did not cite
        forged = [
            ({"path": "../../etc/passwd", "start_line": 1, "end_line": 1}, "is not in session"),
            ({**own[0], "start_line": 10**20, "end_line": 10**20}, "are outside"),
            ({"path": elsewhere, "start_line": 1, "end_line": 1}, "is not one of the run's citations"),
        ]
        for cite, says in forged:
            res = client.post("/lotsman/api/feedback", json={**vote, "citations": [*own, cite]})
            assert res.status_code == 400 and says in res.json()["error"], res.text
        res = client.post("/lotsman/api/feedback", json={**vote, "citations": own, "thread_id": "not-a-thread"})
        assert res.status_code == 400 and "no answer of run" in res.json()["error"], res.text

        res = client.post("/lotsman/api/feedback", json={**vote, "citations": own})
        assert res.status_code == 200, res.text

    done = subprocess.run([str(VENV_BIN / "lotsman"), "feedback", "export", "--session", small_session],
                          capture_output=True, text=True, env=offline_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    cases = [json.loads(line) for line in done.stdout.splitlines()]
    mine = [c for c in cases if c["source"]["run_id"] == run_id]
    assert len(mine) == 1 and set(mine[0]["gold_paths"]) == cited, mine
    assert "etc/passwd" not in done.stdout and elsewhere not in json.dumps(mine)


@pytest.mark.parametrize("body", [
    b'{"session": "s", "score": 1, "question": "\\ud800"}',
    b'{"session": "s", "score": 1, "question": "q", "comment": "\\udfff"}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"session": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
], ids=["surrogate-question", "surrogate-comment", "deep-array", "deep-value"])
def test_a_malformed_vote_is_a_400_on_the_real_server(server: DevServer, body: bytes) -> None:
    """Issue 37 item 7: these were 500s."""
    res = httpx.post(f"{server.url}/lotsman/api/feedback", content=body, headers={"Content-Type": "application/json"},
                     timeout=60)
    assert res.status_code == 400, res.text
    assert "\n" not in res.json()["error"] and len(res.json()["error"]) < 200
