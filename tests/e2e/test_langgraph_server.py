"""`langgraph dev` started offline by the test; the langgraph-sdk client runs both graphs of langgraph.json.

The server's graphs use this test run's embedded PostgreSQL (DATABASE_URL) and the real offline `use`
embedder. Flow: index a small Russian corpus through `lotsman_index`, then two turns on one thread of
`lotsman`, the second a follow-up that only makes sense with the first.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from graph.builder import STAGES
from tests.e2e.conftest import CORS_DISABLE_LINES, SMALL_CORPUS, DevServer, cited_paths, covers, running_dev_server

TOKEN = "langgraph-server-e2e"
"""The index graph runs only for the holder of LOTSMAN_AUTH_TOKEN (tests/e2e/test_mcp_server.py shows that
nobody else may run it); these tests index through the server, so they hold it."""


def client_of(server: DevServer) -> Any:
    return get_client(url=server.url, headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.fixture(scope="module")
def dev_server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory,
               db) -> Iterator[DevServer]:
    env = offline_env(LOTSMAN_EMBEDDER="use", LOTSMAN_AUTH_TOKEN=TOKEN)
    with running_dev_server(env, tmp_path_factory.mktemp("langgraph-dev")) as server:
        yield server


def human(text: str) -> dict[str, object]:
    return {"messages": [{"role": "human", "content": text}]}


async def test_index_graph_then_two_turn_thread(dev_server: DevServer, small_corpus: Path, db) -> None:
    from stores.sessions import find_session

    client = client_of(dev_server)
    session = f"srv-{uuid.uuid4().hex[:8]}"

    graph_ids = {a["graph_id"] for a in await client.assistants.search(limit=20)}
    assert {"lotsman", "lotsman_index"} <= graph_ids

    # --- the index graph on the server --------------------------------------------------------------
    out = await client.runs.wait(None, "lotsman_index", input={"path": str(small_corpus), "session": session})
    report = out["report"]
    assert report["session"] == session
    assert report["kind"] == "snapshot"
    assert report["files_seen"] == report["files_indexed"] == len(SMALL_CORPUS)
    assert report["skipped"] == []
    layers = report["rows_per_layer"]
    assert layers["D0_DOC_CHUNKS"] >= 4 and layers["D1_DOCUMENT_CATALOG"] == 4
    assert layers["C3_ENTRYPOINTS"] >= 1, "the FastAPI-like route should be an entrypoint"
    with db.connection() as conn:  # the server wrote into this test run's database
        stored = find_session(conn, session)
    assert stored is not None and stored.embedder == "use"

    # --- two turns on one thread -----------------------------------------------------------------------
    thread = await client.threads.create()
    context = {"rag_session_id": session}
    first = await client.runs.wait(thread["thread_id"], "lotsman",
                                   input=human("Как настроить CORS в приложении?"), context=context)
    assert set(first) >= {"answer", "citations", "route", "abstained", "timings_ms"}
    assert first["abstained"] is False
    assert "docs/cors.md" in cited_paths(first["citations"])
    assert set(first["timings_ms"]) == set(STAGES)

    second = await client.runs.wait(thread["thread_id"], "lotsman", input=human("А как это отключить?"),
                                    context=context)
    assert second["abstained"] is False, second["answer"]
    assert covers(second["citations"], "docs/cors.md", CORS_DISABLE_LINES[0]), second["citations"]
    assert "docs/cors.md" in second["answer"]

    state = await client.threads.get_state(thread["thread_id"])
    kinds = [m["type"] for m in state["values"]["messages"]]
    assert kinds == ["human", "ai", "human", "ai"], "the server's checkpointer keeps the conversation"

    # Control: the same follow-up on a fresh thread has nothing to lean on.
    alone = await client.runs.wait(None, "lotsman", input=human("А как это отключить?"), context=context)
    assert alone["abstained"] is True, alone["answer"]
    assert not covers(alone["citations"], "docs/cors.md", CORS_DISABLE_LINES[0])


async def test_unknown_session_fails_the_run_with_our_message(dev_server: DevServer) -> None:
    """Item 5 of issue 14: the client used to read `SessionNotFoundError: An internal error occurred`."""
    client = client_of(dev_server)
    session = f"never-indexed-{uuid.uuid4().hex[:6]}"
    with pytest.raises(Exception, match=rf"^SessionNotFoundError: no session '{session}': .*lotsman index"):
        await client.runs.wait(None, "lotsman", input=human("Что такое CORS?"), context={"rag_session_id": session})
    assert httpx.get(f"{dev_server.url}/ok", timeout=5).status_code == 200


@pytest.mark.parametrize(("context", "says"), [
    ({"llm_timeout_s": 0}, "llm_timeout_s: Input should be greater than 0"),
    ({"top_k": -3}, "top_k: Input should be greater than or equal to 1"),
    ({"top_k": "lots"}, "top_k: Input should be a valid integer"),
    ({"rag_session_id": 12345}, "rag_session_id: Input should be a valid string"),
], ids=["timeout-zero", "top_k-negative", "top_k-word", "session-int"])
async def test_bad_run_context_is_rejected_with_our_message(dev_server: DevServer, context: dict,
                                                            says: str) -> None:
    client = client_of(dev_server)
    with pytest.raises(Exception, match=r"^InvalidInputError: invalid run context: ") as info:
        await client.runs.wait(None, "lotsman", input=human("Что такое CORS?"), context=context)
    assert says in str(info.value)


@pytest.mark.parametrize(("index_input", "says"), [
    ({"session": ""}, "InvalidInputError: invalid index request: session: must not be empty"),
    ({"path": "/nonexistent-lotsman-path"}, "IndexingError: path not found: /nonexistent-lotsman-path"),
], ids=["empty-session", "bad-path"])
async def test_index_graph_errors_reach_the_client(dev_server: DevServer, small_corpus: Path, db,
                                                   index_input: dict, says: str) -> None:
    from stores.sessions import find_session

    client = client_of(dev_server)
    with pytest.raises(Exception) as info:
        await client.runs.wait(None, "lotsman_index", input={"path": str(small_corpus), **index_input})
    assert str(info.value).startswith(says), str(info.value)
    with db.connection() as conn:  # an empty session name used to index into `default`
        assert find_session(conn, "default") is None


async def test_client_errors_are_one_line_in_the_server_log(dev_server: DevServer) -> None:
    """Issue 25: each client error (unknown session, bad context) printed a full traceback in the server log."""
    client = client_of(dev_server)
    session = f"log-probe-{uuid.uuid4().hex[:6]}"
    start = len(dev_server.log_text())
    with pytest.raises(Exception, match="SessionNotFoundError"):
        await client.runs.wait(None, "lotsman", input=human("Что такое CORS?"), context={"rag_session_id": session})
    with pytest.raises(Exception, match="InvalidInputError"):
        await client.runs.wait(None, "lotsman", input=human("Что такое CORS?"),
                               context={"rag_session_id": session, "top_k": -3})
    log = _log_until(dev_server, start, lambda text: text.count("Background run failed") >= 2)

    failed = [line for line in log.splitlines() if "Background run failed" in line]
    assert len(failed) == 2 and f"no session '{session}'" in failed[0] and "top_k" in failed[1], log
    assert "Traceback" not in log and 'File "' not in log, log
    assert httpx.get(f"{dev_server.url}/ok", timeout=5).status_code == 200


def _log_until(server: DevServer, start: int, done: Callable[[str], bool]) -> str:
    """The server log written since `start`, once `done` holds for it (the log is written after the reply)."""
    deadline = time.monotonic() + 30
    text = server.log_text()[start:]
    # A record (its event line and any traceback) is one write: a log that ends a line holds whole records.
    while not (done(text) and text.endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.2)
        text = server.log_text()[start:]
    return text
