"""Issue 37 item 2a: cancelling a `lotsman_index` run stops its job and keeps the previous index.

The run's node awaited the job on a thread: a cancel (langgraph-api cancels the run's asyncio task) ended the
await and the run showed `interrupted`, while the thread went on and committed the new snapshot. Now the
node's cancel sets the job's cancel event; the job checks it at each batch (walk, parse, embed, write) and last
inside its committing transaction, rolls back, marks its row failed with a `cancelled` reason, and the session
keeps answering from its previous index — while the job runs and after the cancel.

The tests are driven by events, not by the clock (the machine is shared): the fake embedder stops inside its
`HOLD_AT`th batch until the test has sampled the index and cancelled, so "during" is during, and what the job
did after the cancel is counted in batches. `HANG_S` only keeps a broken job from hanging the suite.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

import stores.indexing.service as service
from graph.deps import GraphDeps
from graph.index_graph import build_index_graph
from graph.settings import Settings
from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.indexing.jobs import CANCELLED, IndexCancelledError, get_job
from stores.indexing.service import index_repository
from stores.repository import RagRepository
from stores.sessions import delete_session, find_session, get_session

OLD_FILES, NEW_FILES = 4, 40
BATCH = 2
"""Texts per embedding batch: the new snapshot is ~40 batches."""
HOLD_AT = 3
"""The embedder's batch that waits for the test (batches 1-2 are done by then, the rest queued)."""
HANG_S = 60.0
"""A hang guard only: no assertion depends on how fast the machine is."""
QUESTION = "harbour pilot boarding ladder"


class GatedEmbeddings(FakeEmbeddings):
    """The fake embedder, counting its batches; batch `HOLD_AT` sets `held` and waits for `release`."""

    def __init__(self) -> None:
        super().__init__()
        self.held = threading.Event()
        self.release = threading.Event()
        self.batches = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.batches += 1
        if self.batches == HOLD_AT:
            self.held.set()
            assert self.release.wait(HANG_S), "the test never released the embedder"
        return super().embed_documents(texts)


@pytest.fixture
def embedders(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The jobs' embedder queues (`service._Embedder`), so a test can wait until every queued batch has run."""
    made: list[Any] = []

    class Recorded(service._Embedder):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(service, "_Embedder", Recorded)
    return made


def _drained(embedders: list[Any]) -> None:
    """Wait until every batch the jobs queued has run (embedded, or refused by the stop flag)."""
    for emb in embedders:
        emb.pool.shutdown(wait=True)


@pytest.fixture
def cancels(monkeypatch: pytest.MonkeyPatch) -> list[threading.Event]:
    """The cancel events the index graph hands its jobs (set by the node when its run is cancelled)."""
    seen: list[threading.Event] = []
    real = service.index_repository

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["cancel"])
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "index_repository", recording)
    return seen


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


def _wait_finished(db: Database, name: str) -> dict:
    """The job row once the job has ended (it has, when the node or the call returned; `HANG_S` guards)."""
    import time

    deadline = time.monotonic() + HANG_S
    while (job := _last_job(db, name))["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    return job


async def _cancel_while_held(run: asyncio.Task, slow: GatedEmbeddings, cancels: list[threading.Event]) -> None:
    """Cancel the graph's run while its embedder is held, let the embedder go once the job's cancel event is
    set, and wait for the node to end."""
    run.cancel()
    assert cancels and await asyncio.to_thread(cancels[-1].wait, HANG_S)
    slow.release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, HANG_S)


async def test_cancelling_the_index_graph_stops_the_job_and_keeps_the_previous_index(
        db: Database, tmp_path: Path, name: str, embedders: list[Any], cancels: list[threading.Event]) -> None:
    old, new = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _answer_paths(db, name)
    assert before and all(p.startswith("docs/pilot") for p in before)

    slow = GatedEmbeddings()
    settings = Settings(embed_batch_size=BATCH, parse_workers=0)
    graph = build_index_graph(GraphDeps(settings=settings, db=db, embedder=slow))
    run = asyncio.create_task(graph.ainvoke({"path": str(new), "session": name, "incremental": False}))
    assert await asyncio.to_thread(slow.held.wait, HANG_S)  # the job is inside its embedding

    during = await asyncio.to_thread(_answer_paths, db, name)  # a question while the job runs
    assert during == before
    assert _last_job(db, name)["status"] == "running"

    await _cancel_while_held(run, slow, cancels)
    job = await asyncio.to_thread(_wait_finished, db, name)
    _drained(embedders)
    print(f"cancel: {slow.batches} of {NEW_FILES // BATCH} batches embedded, job {job['status']}: {job['error']}")

    # before the fix: the job went on embedding all ~40 batches and committed the new snapshot (status done)
    assert job["status"] == "failed", job
    assert job["error"].startswith("cancelled"), job["error"]
    assert "previous index" in job["error"]
    assert slow.batches == HOLD_AT  # the batch in flight ended, no queued batch was embedded after the cancel
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
        db: Database, tmp_path: Path, name: str, embedders: list[Any]) -> None:
    """`lotsman index` runs the job on its main thread: Ctrl-C stopped the parse and the writer at once, but
    the embedder thread went on through every batch already queued (the process then waited for it at exit).
    The interrupt now sets the job's stop flag, which each queued batch checks first."""
    from stores.indexing.service import INTERRUPTED_BY_USER

    old, new = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _answer_paths(db, name)
    slow = GatedEmbeddings()

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "parse" and done == total - 2:  # most batches queued, one held in the embedder
            assert slow.held.wait(HANG_S)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_repository(db, new, session_name=name, embedder=slow, parse_workers=0, incremental=False,
                         batch_size=BATCH, progress=progress)
    slow.release.set()
    _drained(embedders)
    print(f"ctrl-c: {slow.batches} batches embedded of the {NEW_FILES // BATCH - 2} queued at the interrupt")

    assert slow.batches == HOLD_AT  # before: the queued batches went on being embedded
    job = _last_job(db, name)
    assert job["status"] == "failed" and job["error"] == INTERRUPTED_BY_USER
    assert _answer_paths(db, name) == before and _rows_of(db, name, "guide/") == 0


def test_a_cancel_stops_the_jobs_walk_of_the_folder(db: Database, tmp_path: Path, name: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder is walked and read before anything is parsed: the cancel is checked for each file of the walk
    too, not only once the whole folder has been read (a folder of 50,000 files indexed with `allow_large`
    took minutes to read)."""
    import stores.indexing.files as files

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


async def test_cancelling_a_changes_job_rolls_its_rows_back(db: Database, tmp_path: Path, name: str,
                                                            embedders: list[Any],
                                                            cancels: list[threading.Event]) -> None:
    """The same through a diff of the session's own folder (`kind` changes: rows replaced in place, in one
    transaction): the cancel rolls that transaction back."""
    old, new = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _answer_paths(db, name)
    (old / "guide").mkdir()
    for page in (new / "guide").iterdir():
        (old / "guide" / page.name).write_text(page.read_text())

    slow = GatedEmbeddings()
    graph = build_index_graph(GraphDeps(settings=Settings(embed_batch_size=BATCH, parse_workers=0), db=db,
                                        embedder=slow))
    run = asyncio.create_task(graph.ainvoke({"path": str(old), "session": name}))
    assert await asyncio.to_thread(slow.held.wait, HANG_S)
    assert await asyncio.to_thread(_answer_paths, db, name) == before
    await _cancel_while_held(run, slow, cancels)
    job = await asyncio.to_thread(_wait_finished, db, name)
    _drained(embedders)

    assert job["kind"] == "changes" and job["status"] == "failed" and job["error"].startswith("cancelled"), job
    assert slow.batches == HOLD_AT
    assert _rows_of(db, name, "guide/") == 0 and _answer_paths(db, name) == before


# ---- review of issue 37: the last check is just before the commit; the work before a job checks too --------


def _cancel_during(monkeypatch: pytest.MonkeyPatch, cancel: threading.Event) -> list[str]:
    """Set `cancel` while the job stores its generation's artifacts (seconds on a large session): after every
    other checkpoint of the job, inside its committing transaction."""
    calls: list[str] = []
    real = service.store_generation_artifacts

    def artifacts(*args: Any, **kwargs: Any) -> Any:
        calls.append("artifacts")
        cancel.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "store_generation_artifacts", artifacts)
    return calls


@pytest.mark.parametrize("kind", ["changes", "snapshot"])
def test_a_cancel_during_the_last_steps_before_the_commit_rolls_back(
        db: Database, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The last checkpoint ran before `job.complete` and the artifacts: a cancel meanwhile committed the job."""
    old, new = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _answer_paths(db, name)
    if kind == "changes":
        (old / "guide").mkdir()
        for page in (new / "guide").iterdir():
            (old / "guide" / page.name).write_text(page.read_text())
    cancel = threading.Event()
    calls = _cancel_during(monkeypatch, cancel)

    with pytest.raises(IndexCancelledError, match="keeps its previous index"):
        index_repository(db, old if kind == "changes" else new, session_name=name, embedder=FakeEmbeddings(),
                         parse_workers=0, incremental=kind == "changes", cancel=cancel)

    job = _last_job(db, name)
    assert calls == ["artifacts"] and job["kind"] == kind
    assert job["status"] == "failed" and job["error"] == CANCELLED, job  # before: done, the new rows live
    assert _rows_of(db, name, "guide/") == 0 and _answer_paths(db, name) == before
    with db.connection() as conn:
        assert get_session(conn, name).active_generation == 1


def test_a_job_that_committed_before_its_cancel_was_seen_says_so(
        db: Database, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    old, _ = _corpora(tmp_path)
    cancel = threading.Event()
    real = service.jobs.record_counts

    def late(*args: Any, **kwargs: Any) -> Any:  # after the commit: the job is done
        cancel.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(service.jobs, "record_counts", late)
    with caplog.at_level(logging.WARNING, logger="stores.indexing.service"):
        report = index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0,
                                  cancel=cancel)
    assert report.files_indexed == OLD_FILES and _last_job(db, name)["status"] == "done"
    assert "committed before its cancel was seen" in caplog.text


def test_a_cancel_stops_the_no_op_checks_walk(db: Database, tmp_path: Path, name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The check whether anything changed walks the whole folder before any job starts: it ignored the cancel
    (an unchanged session answered with a no-op report; a walk of a large folder ran to its end)."""
    import stores.indexing.files as files

    old, _ = _corpora(tmp_path)
    index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    first = _last_job(db, name)
    cancel = threading.Event()
    stats: list[str] = []
    real_walk = files._walk

    def walk(*args: Any, **kwargs: Any) -> Any:
        for n, entry in enumerate(real_walk(*args, **kwargs), 1):
            stats.append(entry[0])
            if n == 2:
                cancel.set()
            yield entry

    monkeypatch.setattr(files, "_walk", walk)
    with pytest.raises(IndexCancelledError, match="nothing was indexed"):
        index_repository(db, old, session_name=name, embedder=FakeEmbeddings(), parse_workers=0, cancel=cancel)
    assert len(stats) == 2  # stopped at the file the cancel came with, not after all 4
    assert _last_job(db, name)["job_id"] == first["job_id"]  # no job row: nothing was recorded


def test_a_cancel_stops_reading_a_revisions_blobs(db: Database, tmp_path: Path, name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`collect_revision` read every blob of a tag before the job looked at its cancel."""
    import stores.indexing.git_source as git_source
    from tests.gitrepo import git

    repo, _ = _corpora(tmp_path)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "tag", "v1")
    cancel, vetted = threading.Event(), []
    real_vet = git_source.vet_bytes

    def vet(*args: Any, **kwargs: Any) -> Any:
        vetted.append(args[0])
        if len(vetted) == 2:
            cancel.set()
        return real_vet(*args, **kwargs)

    monkeypatch.setattr(git_source, "vet_bytes", vet)
    with pytest.raises(IndexCancelledError):
        index_repository(db, repo, session_name=name, embedder=FakeEmbeddings(), parse_workers=0, ref="v1",
                         cancel=cancel)
    assert len(vetted) == 2  # before: all 4 blobs were read
