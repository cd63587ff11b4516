"""Issue 37 item 2a: cancelling a `lotsman_index` run stops its job and keeps the previous index.

The run's node awaited the job on a thread: a cancel (langgraph-api cancels the run's asyncio task) ended the
await and the run showed `interrupted`, while the thread went on and committed the new snapshot. Now the
node's cancel sets the job's cancel event; the job checks it at each batch (parse, embed, write), rolls back,
marks its row failed with a `cancelled` reason, and the session keeps answering from its previous index —
while the job runs and after the cancel.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

from graph.deps import GraphDeps
from graph.index_graph import build_index_graph
from graph.settings import Settings
from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.indexing.jobs import get_job
from stores.indexing.service import index_repository
from stores.repository import RagRepository
from stores.sessions import delete_session, find_session, get_session

OLD_FILES, NEW_FILES = 4, 40
BATCH = 2
"""Texts per embedding batch: the new snapshot is ~40 batches, each held `SLOW_S` by the embedder."""
SLOW_S = 0.15
QUESTION = "harbour pilot boarding ladder"


class SlowEmbeddings(FakeEmbeddings):
    """The fake embedder at `SLOW_S` a batch, counting its batches; `started` is set by the first one."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.batches = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.started.set()
        time.sleep(SLOW_S)
        self.batches += 1
        return super().embed_documents(texts)


@pytest.fixture
def name(db: Database) -> Iterator[str]:
    made = f"cancel-{uuid.uuid4().hex[:8]}"
    yield made
    with db.connection() as conn:
        if find_session(conn, made) is not None:
            delete_session(conn, made)


def _corpora(tmp_path: Path) -> tuple[Path, Path]:
    """The previous snapshot and the new one, in words no other test run wrote (the blob cache, keyed by the
    bytes, would otherwise serve the new one without a single parse or embedding)."""
    old, new = tmp_path / "old", tmp_path / "new"
    salt = uuid.uuid4().hex
    for i in range(OLD_FILES):
        page = old / f"docs/pilot{i}.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"# Harbour pilot {i}\n\nThe harbour pilot boards by the ladder on the lee side, step {i}."
                        f"\n\n{salt}\n")
    for i in range(NEW_FILES):
        page = new / f"guide/lighthouse{i}.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"# Lighthouse {i}\n\nThe keeper lights lamp {i} at dusk; the harbour pilot boarding "
                        f"ladder is described in chapter {i}.\n\n{salt}\n")
    return old, new


def _answer_paths(db: Database, name: str) -> list[str]:
    """The paths a retrieval of `QUESTION` returns from the session's live index, as a question would read it."""
    with db.connection() as conn:
        session = get_session(conn, name)
    rows = RagRepository(db).retrieve(session, query_embedding=FakeEmbeddings().embed_query(QUESTION),
                                      query_text=QUESTION, limit=8)
    return [r["path"] for r in rows]


def _rows_of(db: Database, name: str, prefix: str) -> int:
    """Rows of the session under `prefix`, in any generation (a half-written one included)."""
    with db.connection() as conn:
        session = get_session(conn, name)
        row = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND path LIKE %s").format(
            sql.Identifier(session.table)), (session.rag_session_id, prefix + "%")).fetchone()
    return int(row[0]) if row else 0


def _last_job(db: Database, name: str) -> dict:
    with db.connection() as conn:
        session = get_session(conn, name)
        row = conn.execute("SELECT job_id FROM rag_index_jobs WHERE rag_session_id = %s ORDER BY started_at DESC "
                           "LIMIT 1", (session.rag_session_id,)).fetchone()
        assert row is not None
        job = get_job(conn, row[0])
    assert job is not None
    return job


def _wait_finished(db: Database, name: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = _last_job(db, name)
        if job["status"] != "running" or time.monotonic() > deadline:
            return job
        time.sleep(0.1)


async def test_cancelling_the_index_graph_stops_the_job_and_keeps_the_previous_index(
        db: Database, tmp_path: Path, name: str) -> None:
    old, new = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _answer_paths(db, name)
    assert before and all(p.startswith("docs/pilot") for p in before)

    slow = SlowEmbeddings()
    settings = Settings(embed_batch_size=BATCH, parse_workers=0)
    graph = build_index_graph(GraphDeps(settings=settings, db=db, embedder=slow))
    run = asyncio.create_task(graph.ainvoke({"path": str(new), "session": name, "incremental": False}))
    assert await asyncio.to_thread(slow.started.wait, 30)
    await asyncio.sleep(3 * SLOW_S)

    during = await asyncio.to_thread(_answer_paths, db, name)  # a question while the job runs
    assert during == before
    assert _last_job(db, name)["status"] == "running"

    t0 = time.perf_counter()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    stopped_s = time.perf_counter() - t0
    job = await asyncio.to_thread(_wait_finished, db, name)
    batches_at_end = slow.batches
    await asyncio.sleep(4 * SLOW_S)
    print(f"cancel: node returned after {stopped_s:.2f}s, {batches_at_end} of {NEW_FILES // BATCH} batches "
          f"embedded, job {job['status']}: {job['error']}")

    # before the fix: the job went on embedding all ~40 batches and committed the new snapshot (status done)
    assert job["status"] == "failed", job
    assert job["error"].startswith("cancelled"), job["error"]
    assert "previous index" in job["error"]
    assert slow.batches == batches_at_end < NEW_FILES // BATCH  # stopped at a batch, and nothing runs on
    assert stopped_s < 20 * SLOW_S  # the node returned once the job had stopped: at its next batch
    after = _answer_paths(db, name)
    assert after == before
    assert _rows_of(db, name, "guide/") == 0  # no row of the new snapshot, in any generation
    with db.connection() as conn:
        assert get_session(conn, name).active_generation == 1

    # the session's lock is free: the next job runs (and commits the new snapshot)
    report = index_repository(db, new, session_name=name, embedder=FakeEmbeddings(), parse_workers=0,
                              incremental=False)
    assert report.files_indexed == NEW_FILES
    assert any(p.startswith("guide/") for p in _answer_paths(db, name))


def test_ctrl_c_stops_the_jobs_embedder_thread_and_keeps_the_previous_index(
        db: Database, tmp_path: Path, name: str) -> None:
    """`lotsman index` runs the job on its main thread: Ctrl-C stopped the parse and the writer at once, but
    the embedder thread went on through every batch already queued (the process then waited for it at exit).
    The interrupt now sets the job's stop flag, which each queued batch checks first."""
    from stores.indexing.service import INTERRUPTED_BY_USER

    old, new = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _answer_paths(db, name)
    slow = SlowEmbeddings()

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "parse" and done == total - 2:  # most batches queued, one being embedded
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_repository(db, new, session_name=name, embedder=slow, parse_workers=0, incremental=False,
                         batch_size=BATCH, progress=progress)
    at_interrupt = slow.batches
    time.sleep(6 * SLOW_S)
    print(f"ctrl-c: {at_interrupt} batches embedded at the interrupt, {slow.batches} after {6 * SLOW_S:.1f}s")

    assert slow.batches <= at_interrupt + 1  # before: the queued batches went on being embedded
    job = _last_job(db, name)
    assert job["status"] == "failed" and job["error"] == INTERRUPTED_BY_USER
    assert _answer_paths(db, name) == before and _rows_of(db, name, "guide/") == 0


def test_a_cancel_stops_the_jobs_walk_of_the_folder(db: Database, tmp_path: Path, name: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder indexed with `allow_large` is walked and read before anything is parsed: the cancel is
    checked for each file of the walk too, not only once the whole folder has been read."""
    import stores.indexing.files as files
    from stores.indexing.jobs import CANCELLED, IndexCancelledError

    old, _ = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    big = tmp_path / "big"
    (big / "docs").mkdir(parents=True)
    for i in range(300):
        (big / f"docs/page{i}.md").write_text(f"# Page {i}\n\nText {i}.\n")
    cancel, reads = threading.Event(), []
    real_load = files._load

    def load(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(args[1])
        if len(reads) == 20:
            cancel.set()
        return real_load(*args, **kwargs)

    monkeypatch.setattr(files, "_load", load)
    with pytest.raises(IndexCancelledError, match="keeps its previous index"):
        index_repository(db, big, session_name=name, embedder=FakeEmbeddings(), parse_workers=0, incremental=False,
                         cancel=cancel)

    assert len(reads) == 20  # before: all 300 files were read, then the job stopped
    job = _last_job(db, name)
    assert job["status"] == "failed" and job["error"] == CANCELLED
    assert _rows_of(db, name, "docs/page") == 0 and _answer_paths(db, name)


async def test_cancelling_a_changes_job_rolls_its_rows_back(db: Database, tmp_path: Path, name: str) -> None:
    """The same through a diff of the session's own folder (`kind` changes: rows replaced in place, in one
    transaction): the cancel rolls that transaction back."""
    old, new = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _answer_paths(db, name)
    (old / "guide").mkdir()
    for page in (new / "guide").iterdir():
        (old / "guide" / page.name).write_text(page.read_text())

    slow = SlowEmbeddings()
    graph = build_index_graph(GraphDeps(settings=Settings(embed_batch_size=BATCH, parse_workers=0), db=db,
                                        embedder=slow))
    run = asyncio.create_task(graph.ainvoke({"path": str(old), "session": name}))
    assert await asyncio.to_thread(slow.started.wait, 30)
    await asyncio.sleep(3 * SLOW_S)
    assert await asyncio.to_thread(_answer_paths, db, name) == before
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    job = await asyncio.to_thread(_wait_finished, db, name)

    assert job["kind"] == "changes" and job["status"] == "failed" and job["error"].startswith("cancelled"), job
    assert _rows_of(db, name, "guide/") == 0 and _answer_paths(db, name) == before
