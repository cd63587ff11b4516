"""Issue 37 item 2a through the real server: `runs.cancel` of a `lotsman_index` run stops its job.

Before, the run showed `interrupted` while the job's thread went on and committed the new snapshot. The
job here is slowed by the real `use` embedder at 2 texts a batch; the test cancels it with langgraph-sdk's
`runs.cancel` and measures, on the database the server writes, that a retrieval returns the previous
index while the job runs and after the cancel, that the job row says cancelled, and that no row of the
new snapshot exists.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from psycopg import sql

from stores.indexing.files import git_blob_sha
from tests.e2e.conftest import DevServer, running_dev_server

TOKEN = "index-cancel-e2e-token"
HANG_S = 120.0
"""Hang guards only: the test waits for what the job does, not for a time."""
NEW_FILES = 600
"""Uncancelled, the job ran ~16 s here (2 cores; it committed 14.6 s after the cancel before the fix)."""
QUERY = "harbour pilot ladder"


@pytest.fixture(scope="module")
def dev_server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory,
               db) -> Iterator[DevServer]:
    env = offline_env(LOTSMAN_EMBEDDER="use", LOTSMAN_AUTH_TOKEN=TOKEN, LOTSMAN_EMBED_BATCH_SIZE="2",
                      LOTSMAN_PARSE_WORKERS="0")
    with running_dev_server(env, tmp_path_factory.mktemp("langgraph-dev-cancel")) as server:
        yield server


def _write(root: Path, pages: dict[str, str]) -> Path:
    for rel, text in pages.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _session(db, name: str) -> Any:  # type: ignore[no-untyped-def]
    from stores.sessions import get_session

    with db.connection() as conn:
        return get_session(conn, name)


def _retrieved_paths(db, name: str) -> set[str]:  # type: ignore[no-untyped-def]
    """A lexical retrieval on the session's live index (the test process has no `use` model loaded)."""
    from stores.repository import RagRepository

    rows = RagRepository(db).retrieve(_session(db, name), query_embedding=None, query_text=QUERY, limit=8)
    return {r["path"] for r in rows}


def _rows_under(db, name: str, prefix: str) -> int:  # type: ignore[no-untyped-def]
    session = _session(db, name)
    with db.connection() as conn:
        row = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND path LIKE %s").format(
            sql.Identifier(session.table)), (session.rag_session_id, prefix + "%")).fetchone()
    return int(row[0]) if row else 0


def _cached(db, shas: list[str]) -> int:  # type: ignore[no-untyped-def]
    """Files of the new snapshot in the blob cache: the job stores each file there as its rows are written
    (every 32 files or 2 s), so a count above 0 says the job is embedding and writing."""
    with db.connection() as conn:
        row = conn.execute("SELECT count(DISTINCT blob_sha) FROM rag_blob_cache WHERE blob_sha = ANY(%s)",
                           (shas,)).fetchone()
    return int(row[0]) if row else 0


def _jobs(db, name: str) -> list[dict]:  # type: ignore[no-untyped-def]
    session = _session(db, name)
    with db.connection() as conn:
        rows = conn.execute("SELECT status, error FROM rag_index_jobs WHERE rag_session_id = %s "
                            "ORDER BY started_at", (session.rag_session_id,)).fetchall()
    return [{"status": s, "error": e} for s, e in rows]


async def test_runs_cancel_stops_the_index_job_and_keeps_the_previous_index(dev_server: DevServer, db,
                                                                             tmp_path: Path) -> None:
    client = get_client(url=dev_server.url, headers={"Authorization": f"Bearer {TOKEN}"})
    name = f"srv-cancel-{uuid.uuid4().hex[:8]}"
    salt = uuid.uuid4().hex  # nothing of the new snapshot may come from the blob cache of an earlier run
    old = _write(tmp_path / "old", {f"docs/pilot{i}.md": f"# Harbour pilot {i}\n\nThe harbour pilot climbs the "
                                    f"ladder on the lee side, rule {i}.\n" for i in range(3)})
    new = _write(tmp_path / "new", {
        f"guide/light{i}.md": f"# Lighthouse {i}\n\nThe keeper lights lamp {i}; the harbour pilot ladder is in "
                              f"chapter {i}. {salt}\n\n## Watch {i}\n\nThe night watch of lamp {i} lasts four "
                              f"hours. {salt}\n" for i in range(NEW_FILES)})

    await client.runs.wait(None, "lotsman_index", input={"path": str(old), "session": name})
    before = _retrieved_paths(db, name)
    assert before and all(p.startswith("docs/") for p in before)

    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "lotsman_index",
                                   input={"path": str(new), "session": name, "incremental": False})
    shas = [git_blob_sha(page.read_bytes()) for page in (new / "guide").iterdir()]
    deadline = time.monotonic() + HANG_S  # a hang guard: the steps below wait for events, not for time
    while _cached(db, shas) == 0:  # the job is embedding and writing (the first files reached the cache)
        assert time.monotonic() < deadline, _jobs(db, name)
        await asyncio.sleep(0.1)
    during = _retrieved_paths(db, name)
    assert _jobs(db, name)[-1]["status"] == "running"  # most of its 600 files are still to embed
    assert during == before

    t0 = time.perf_counter()
    await client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    while _jobs(db, name)[-1]["status"] == "running":
        assert time.perf_counter() - t0 < HANG_S, "the cancelled job never ended"
        await asyncio.sleep(0.1)
    stopped_s = time.perf_counter() - t0
    job = _jobs(db, name)[-1]
    cached = _cached(db, shas)
    print(f"runs.cancel: job {job['status']} {stopped_s:.2f}s after the cancel, {cached} of {NEW_FILES} files "
          f"embedded: {job['error']}")

    # before the fix: the run showed `interrupted` and the job went on to commit (status done)
    assert job["status"] == "failed" and job["error"].startswith("cancelled"), job
    assert cached < NEW_FILES  # it stopped part way, not after embedding everything
    await asyncio.sleep(2)
    assert _jobs(db, name)[-1] == job and _cached(db, shas) == cached  # nothing went on after the cancel
    assert _retrieved_paths(db, name) == before
    assert _rows_under(db, name, "guide/") == 0
    assert _session(db, name).active_generation == 1
    status = (await client.runs.get(thread["thread_id"], run["run_id"]))["status"]
    assert status in ("interrupted", "error", "cancelled"), status

    from stores.sessions import delete_session

    with db.connection() as conn:
        delete_session(conn, name)


async def test_the_server_refuses_a_huge_folder_with_one_clear_error(dev_server: DevServer, db,
                                                                      tmp_path: Path) -> None:
    """Item 2b over HTTP: the token holder's `lotsman_index` run on a folder of more than 5000 files is
    refused before the session is created (it used to read the folder: `/` ran at 100 % CPU and ~16 MB/s)."""
    from stores.indexing.files import CONFIRM_ABOVE_FILES
    from stores.sessions import find_session

    big = tmp_path / "big"
    for d in range(CONFIRM_ABOVE_FILES // 100 + 1):
        (big / f"d{d}").mkdir(parents=True)
        for i in range(100):
            (big / f"d{d}" / f"m{i}.py").write_bytes(b"x = 1\n")
    client = get_client(url=dev_server.url, headers={"Authorization": f"Bearer {TOKEN}"})
    name = f"srv-big-{uuid.uuid4().hex[:8]}"

    t0 = time.perf_counter()
    with pytest.raises(Exception) as refused:
        await client.runs.wait(None, "lotsman_index", input={"path": str(big), "session": name})
    took = time.perf_counter() - t0
    print(f"refused in {took:.2f}s: {refused.value}")

    text = str(refused.value)
    assert text.startswith(f"TooManyFilesError: {big} holds more than {CONFIRM_ABOVE_FILES} .md/.py files"), text
    assert "allow_large: true" in text and "\n" not in text
    with db.connection() as conn:
        assert find_session(conn, name) is None
