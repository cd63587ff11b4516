"""Indexing jobs: `index_snapshot`, `index_changes` and the CLI's `index_repository`.

Embedding dominates the time, so files are parsed on the calling thread while a background thread embeds
finished batches, and rows are streamed into PostgreSQL with COPY as soon as their vectors exist: parsing
and writing hide behind the embedder. Unchanged files come from the blob cache and are neither parsed nor
embedded again.

The files come from a folder's working tree or from a git revision (`git_source`: a tag's tree and blobs, read
from git's object store); a run that finds nothing changed since the session's last job stops before any of
this starts (`unchanged`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from stores.artifacts import store_generation_artifacts
from stores.database import Database
from stores.embedders import LotsmanEmbeddings
from stores.errors import IndexingError, IndexInterruptedError, LotsmanError, SessionNotFoundError
from stores.indexing import cache, jobs, writer
from stores.indexing.code_pipeline import CodeParseError
from stores.indexing.files import (
    EMPTY_FILE,
    EMPTY_WHITESPACE,
    LARGE_HINT,
    CollectedFiles,
    SkippedFile,
    SourceFile,
    collect_files,
    escaped_path,
    read_source_file,
    stat_tree,
)
from stores.indexing.git_source import Revision, collect_revision, resolve_revision
from stores.indexing.jobs import CANCELLED, IndexCancelledError, IndexReport, last_done_job
from stores.indexing.parsing import parse_file, parse_files
from stores.indexing.records import ChunkRecord
from stores.indexing.unchanged import check_source_size, folder_tree, revision_tree, unchanged_report
from stores.indexing.versions import PIPELINE_VERSION
from stores.repository import RagRepository
from stores.schema import (
    build_vector_index,
    chunk_table,
    drop_vector_index,
    ensure_space,
    ensure_tables,
    existing_spaces,
)
from stores.sessions import (
    RagSession,
    create_session,
    find_session,
    get_session,
    job_lock_key,
    save_stop_lexemes,
)

__all__ = ["IndexCancelledError", "IndexReport", "index_changes", "index_repository", "index_snapshot", "parse_file"]

log = logging.getLogger(__name__)

CACHE_FLUSH_FILES = 32
CACHE_FLUSH_S = 2.0
"""Blob-cache entries are committed after this many files or seconds, whichever comes first."""

REBUILD_MIN_VECTORS = 5000
"""A job writing at least this many vectors into a table holding no more than that many builds the table's
HNSW index after its load instead of inserting into it row by row. Measured on the standard library (24.7k
vectors, 2 cores): row-by-row maintenance cost PostgreSQL ~100 s, loading without the index and building it
afterwards 9 s + 13 s; a rebuild also covers the table's other vectors, hence the bound on those."""

ANALYZE_MIN_ROWS = 5000
"""A job that wrote at least this many rows ANALYZEs the chunk table when it is done. Without statistics for
the new rows the planner misjudges the session filter and sorts the session's rows by exact distance instead
of walking the HNSW index: right after a cold index of the standard library (73k rows) the adapter took
p50 415 ms until autovacuum analysed the table, 38 ms after (two `make bench` runs). ANALYZE samples at most
30k rows: about a second."""

INDEX_EMBED_WORKERS = 2
"""An index job embeds each batch on this many workers of one compute (BLAS) thread each
(`LotsmanEmbeddings.embed_batch`). The job parses, writes and runs PostgreSQL beside the embedder, and
OpenBLAS's own two threads wait for each other whenever one of them loses its core: the embedder ran at half
speed inside the job (standard library: 344 s against 171 s alone). One BLAS thread alone is steady but
slower than two on an idle machine (job embedding 238 s against 162 s of pure embedding, 1.53× cold ÷ pure);
two single-threaded workers keep both cores busy without the stalls (600 texts beside a running index job:
2 BLAS threads 22.2 s, 1 thread 12.3 s, two 1-thread workers 5.9 s)."""

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stage is "parse", "embed" or "write"."""


@dataclass
class _Prepared:
    source: SourceFile
    key: str
    records: list[ChunkRecord]
    vectors: np.ndarray | None = None
    pending: list[tuple[Future, int, int]] = field(default_factory=list)
    """(batch future, start in batch, count) for vectors still being computed."""
    from_cache: bool = False
    warnings: list[str] = field(default_factory=list)
    """The file's parse warnings, without the path (kept in the blob cache with the records)."""

    def resolve(self) -> np.ndarray | None:
        if self.pending:
            parts = [fut.result()[start : start + n] for fut, start, n in self.pending]
            self.vectors = np.concatenate(parts).astype(np.float32)
            self.pending = []
        return self.vectors

    def rows(self):
        vectors = self.resolve()
        i = 0
        for record in self.records:
            vec = None
            if record.embed and vectors is not None:
                vec = vectors[i]
                i += 1
            yield record, self.source.blob_sha, vec


class _Embedder:
    """Batches texts and embeds them on one background thread (the models use both cores themselves).

    Each batch first asks `stop`: a job that was cancelled or failed meanwhile leaves its queued batches
    unembedded (they end at once with `IndexCancelledError`, which only a writer still waiting would see)."""

    def __init__(self, embedder: LotsmanEmbeddings, batch_size: int, progress: Progress | None,
                 stop: Callable[[], bool] = lambda: False) -> None:
        self.embedder = embedder
        self.stop = stop
        self.batch_size = batch_size
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lotsman-embed")
        self.buffer: list[tuple[_Prepared, str]] = []
        self.total = 0
        self.done = 0
        self.seconds = 0.0
        self.progress = progress

    def add(self, item: _Prepared, texts: list[str]) -> None:
        for text in texts:
            self.buffer.append((item, text))
        self.total += len(texts)
        while len(self.buffer) >= self.batch_size:
            self._flush(self.batch_size)

    def _flush(self, n: int) -> None:
        batch, self.buffer = self.buffer[:n], self.buffer[n:]
        if not batch:
            return
        fut = self.pool.submit(self._run, [t for _, t in batch])
        start = 0
        while start < len(batch):
            item = batch[start][0]
            count = 1
            while start + count < len(batch) and batch[start + count][0] is item:
                count += 1
            item.pending.append((fut, start, count))
            start += count

    def _run(self, texts: list[str]) -> np.ndarray:
        if self.stop():
            raise IndexCancelledError(CANCELLED)
        t0 = time.perf_counter()
        vectors = np.asarray(self.embedder.embed_batch(texts, workers=INDEX_EMBED_WORKERS), dtype=np.float32)
        self.seconds += time.perf_counter() - t0
        self.done += len(texts)
        if self.progress:
            self.progress("embed", self.done, self.total)
        return vectors

    def close(self) -> None:
        self._flush(len(self.buffer))
        self.pool.shutdown(wait=False)


def _prepare(
    db: Database, files: list[SourceFile], embedder: LotsmanEmbeddings, report: IndexReport,
    emb: _Embedder, progress: Progress | None, workers: int | None = None,
    checkpoint: Callable[[], None] = lambda: None,
) -> list[_Prepared]:
    """Cache hits first (ready to write at once), then every other file parsed in worker processes,
    its texts queued for the embedder as soon as it is parsed. `checkpoint` is called before each parsed
    file is taken (it raises to stop the job: the parse workers' pending files are dropped)."""
    keys = [cache.cache_key(f.blob_sha, f.path, embedder.name) for f in files]
    with db.connection() as conn:
        cached = cache.load_cached(conn, keys, embedder.dim)
    prepared: list[_Prepared] = []
    to_parse: list[tuple[SourceFile, str]] = []
    t0 = time.perf_counter()
    for source, key in zip(files, keys, strict=True):
        hit = cached.get(key)
        if hit is None:
            to_parse.append((source, key))
            continue
        report.cache_hits += 1
        report.vectors_reused += 0 if hit.vectors is None else len(hit.vectors)
        warnings = hit.warnings if hit.warnings is not None else _rewarn(source)
        report.warnings.extend(f"{source.path}: {w}" for w in warnings)
        prepared.append(_Prepared(source, key, hit.records, hit.vectors, from_cache=True))
    outcomes = parse_files([s for s, _ in to_parse], workers)
    try:
        for n, ((source, key), outcome) in enumerate(zip(to_parse, outcomes, strict=True), 1):
            checkpoint()
            if progress:
                progress("parse", n, len(to_parse))
            if outcome.skip_reason is not None:
                report.skipped.append(SkippedFile(source.path, outcome.skip_reason))
                continue
            report.parsed += 1
            report.warnings.extend(f"{source.path}: {w}" for w in outcome.warnings)
            item = _Prepared(source, key, outcome.records, warnings=outcome.warnings)
            texts = [r.embed_text or r.content for r in outcome.records if r.embed]
            if texts:
                emb.add(item, texts)
            prepared.append(item)
    finally:
        outcomes.close()  # now, not when the traceback lets go of it: the workers' pending files are dropped
    emb.close()
    report.timings["parse"] = time.perf_counter() - t0
    return prepared


def _rewarn(source: SourceFile) -> list[str]:
    """Warnings of a file cached before they were stored (schema < 6): parsing again is cheap, the cached
    vectors are still used."""
    try:
        return parse_file(source)[1]
    except (CodeParseError, RecursionError):
        return []


def _write(db: Database, session: RagSession, generation: int, prepared: list[_Prepared], report: IndexReport,
           emb: _Embedder, *, replace_paths: list[str] | None, origin: writer.RowOrigin,
           job: _Job | None = None, checkpoint: Callable[[], None] = lambda: None) -> None:
    """Write rows: a whole new generation (snapshot) or, for changes, replace the given paths in place.

    The rows go into one transaction (readers see the whole job or none of it), but each file's parse and
    vectors enter the blob cache in their own small commits as they are written: a job killed half-way
    leaves half its embeddings behind, and the next run embeds only the rest. With `job` (a changes job,
    whose rows go live with this transaction) the job is marked done in the same transaction.

    `checkpoint` is called before each file's rows are streamed and last inside the transaction, after the
    job row and the generation's artifacts, just before the commit: when it raises (the job was cancelled),
    the transaction rolls back and no row of the job goes live.
    """
    layers: Counter[str] = Counter()
    t0 = time.perf_counter()
    flusher = _CacheFlusher(db, emb.embedder.name)

    def rows():
        for item in prepared:
            checkpoint()
            for row in item.rows():
                layers[row[0].layer.value] += 1
                yield row
            if not item.from_cache:
                flusher.add(item)

    rebuild = _drop_vector_index_for_load(db, session, prepared)
    try:
        with db.connection() as conn:
            if replace_paths is not None:
                writer.delete_paths(conn, session.table, session.rag_session_id, generation, replace_paths)
            report.rows_written = writer.copy_rows(conn, session.table, session.rag_session_id, generation, rows(),
                                                   origin=origin)
            flusher.flush()
            if job is not None:
                _note_rows(report, layers, emb, t0)
                job.complete(conn)
                store_generation_artifacts(conn, session.rag_session_id, generation, table=session.table)
            checkpoint()  # the last one: a cancel during the artifacts (seconds on a large session) rolls back
        if job is not None:
            job.committed = True
    finally:
        if rebuild:  # also after a failed load: the table must not stay without its index
            t1 = time.perf_counter()
            with db.connection() as conn:
                build_vector_index(conn, session.table)
            report.timings["vector_index"] = time.perf_counter() - t1
    _note_rows(report, layers, emb, t0)


def _note_rows(report: IndexReport, layers: Counter[str], emb: _Embedder, t0: float) -> None:
    report.embedded = emb.done
    report.rows_per_layer = dict(sorted(layers.items()))
    report.timings["embed"] = emb.seconds
    report.timings["write"] = max(0.0, time.perf_counter() - t0 - emb.seconds)


def _drop_vector_index_for_load(db: Database, session: RagSession, prepared: list[_Prepared]) -> bool:
    """Drop the table's HNSW index when this load is large and the table holds no more vectors than it
    (`REBUILD_MIN_VECTORS`); the caller builds it again after the load. Meanwhile every session of the
    table gets exact vector scans: the same rows, slower. Returns whether it was dropped."""
    to_load = sum(r.embed for item in prepared for r in item.records)
    if to_load < REBUILD_MIN_VECTORS:
        return False
    with db.connection() as conn:
        row = conn.execute(  # counts no further than the bound: cheap on a table of 10⁶ rows
            sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} WHERE embedding IS NOT NULL LIMIT %s) v").format(
                sql.Identifier(session.table)), (to_load + 1,)).fetchone()
        if row is None or row[0] > to_load:
            return False
        return drop_vector_index(conn, session.table)


class _CacheFlusher:
    """Stores finished files in the blob cache, committed every `CACHE_FLUSH_FILES` files or seconds."""

    def __init__(self, db: Database, embedder_name: str) -> None:
        self.db, self.embedder_name = db, embedder_name
        self.entries: list[tuple[str, str, str, str, list[ChunkRecord], np.ndarray | None]] = []
        self.warnings: dict[str, list[str]] = {}
        self.last = time.monotonic()

    def add(self, item: _Prepared) -> None:
        self.entries.append((item.key, item.source.blob_sha, item.source.path, self.embedder_name,
                             item.records, item.vectors))
        self.warnings[item.key] = item.warnings
        if len(self.entries) >= CACHE_FLUSH_FILES or time.monotonic() - self.last >= CACHE_FLUSH_S:
            self.flush()

    def flush(self) -> None:
        if self.entries:
            with self.db.connection() as conn:  # its own transaction, committed now
                cache.store_cached(conn, self.entries, self.warnings)
        self.entries, self.warnings, self.last = [], {}, time.monotonic()


@dataclass
class _Job:
    """The job row of a running job. `committed` turns true once its rows and its `done` status have gone
    live in one transaction; from then on nothing may mark it failed."""

    job_id: str
    report: IndexReport
    t0: float
    committed: bool = False
    tree: dict | None = None
    """What the job read (`unchanged.folder_tree` / `revision_tree`), recorded with its done status; None for
    a diff whose caller named the files (`index_changes`): the next run then cannot skip as a no-op."""
    cancel: threading.Event | None = None
    """The caller's cancel event (the index graph sets it when its run is cancelled)."""
    abort: threading.Event = field(default_factory=threading.Event)
    """Set when the job is failing or interrupted (Ctrl-C): its embedder thread and parse workers stop."""

    def stopping(self) -> bool:
        """Whether the job's background work should stop (cancelled, or the job is failing)."""
        return self.abort.is_set() or (self.cancel is not None and self.cancel.is_set())

    def checkpoint(self) -> None:
        """Called at each batch (file walked or read, parsed file, embedding batch, file written) and last
        inside the committing transaction, just before its commit.

        Raises:
            IndexCancelledError: the cancel event is set.
        """
        if self.cancel is not None and self.cancel.is_set():
            raise IndexCancelledError(CANCELLED)

    def complete(self, conn: psycopg.Connection) -> None:
        """Mark the job done inside the caller's transaction (the one that makes its rows live)."""
        self.report.timings["total"] = time.perf_counter() - self.t0
        jobs.complete_job(conn, self.job_id, counts=self.report.counts(), skipped=_skips(self.report),
                          tree=self.tree)


INTERRUPTED_BY_USER = "interrupted (Ctrl-C) before the job committed: the session keeps its previous index"


def _session_lock(db: Database, session: RagSession):
    conn = db.pool.getconn()
    got = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (job_lock_key(session.rag_session_id),)
                       ).fetchone()
    conn.commit()
    if not got or not got[0]:
        db.pool.putconn(conn)
        raise IndexingError(f"another index job (or a delete) is running for session '{session.name}': "
                            "wait for it to finish")
    # With the lock held no other job of the session is alive: a `running` row left is a killed job's.
    jobs.fail_interrupted(conn, session.rag_session_id)
    conn.commit()
    return conn


def _release(db: Database, conn, session: RagSession) -> None:
    try:
        conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (job_lock_key(session.rag_session_id),))
        conn.commit()
    except psycopg.Error:  # the server went away mid-job: closing the connection is what releases the lock
        conn.close()
    db.pool.putconn(conn)


def _check_not_deleted(db: Database, session: RagSession) -> RagSession:
    # A delete that won the lock before this job leaves nothing to index into (and `start_job` would hit
    # the foreign key); with the lock held no delete can happen until the job ends.
    with db.connection() as conn:
        current = find_session(conn, session.rag_session_id)
    if current is None:
        raise SessionNotFoundError(f"session '{session.name}' was deleted before its index job started: "
                                   "run the index again to recreate it")
    return current


Body = Callable[[IndexReport, "_Job"], None]
"""What a job does once it holds the session's lock and has its row: read the files, parse, embed, write."""


def _run_job(db: Database, session: RagSession, kind: str | Callable[[RagSession], str], body: Body,
             cancel: threading.Event | None = None) -> IndexReport:
    """Run `body` as the session's one job: its lock, its job row, and a status that tells the truth.

    The body reads the files it indexes itself, under the lock: a job that read them before taking it could
    wait behind another job of the session and then write the older state it read over the newer one the
    other had committed. `kind` may be chosen from the session as it is under the lock.

    The body marks the job done in the transaction that makes its rows live (`_Job.complete`). A failure
    or Ctrl-C before that marks it failed and the session keeps its previous index; after it, the job stays
    done (a Ctrl-C then is reported as `IndexInterruptedError`, saying the new index is live).

    `cancel`, set by another thread, stops the job at its next batch (`_Job.checkpoint`), the last one inside
    the committing transaction just before its commit: its rows roll back, its row is failed with
    `jobs.CANCELLED`, and `IndexCancelledError` is raised. A cancel that comes after that check finds the job
    done: it stays done, and a warning is logged. A Ctrl-C or a failure stops the job's embedder thread the
    same way (`_Job.abort`) instead of letting it embed the rest of its queue for nobody; one handler maps
    each to the error its row records (`_failure`) and what is raised (`_reported`).
    """
    lock = _session_lock(db, session)
    try:
        current = _check_not_deleted(db, session)
        chosen = kind if isinstance(kind, str) else kind(current)
        with db.connection() as conn:  # a job killed between dropping the index and building it again
            # (every space: a killed rebuild may have been loading another embedder's table)
            for dim in existing_spaces(conn):
                build_vector_index(conn, chunk_table(dim), lock_timeout_ms=1000)
            writer.discard_inactive(conn, current.rag_session_id, current.table, current.active_generation)
        with db.connection() as conn:
            job_id = jobs.start_job(conn, session.rag_session_id, chosen)
        report = IndexReport(session=session.name, job_id=job_id, kind=chosen)
        job = _Job(job_id, report, time.perf_counter(), cancel=cancel)
        try:
            body(report, job)
            report.timings["total"] = time.perf_counter() - job.t0
            with db.connection() as conn:
                jobs.record_counts(conn, job_id, report.counts())
        except BaseException as exc:
            job.abort.set()  # the embedder thread's queued batches are dropped, not embedded for nobody
            # `job.committed` is set just after the commit returns: a Ctrl-C in between finds the row done
            failed = not job.committed and _fail(db, job, _failure(exc))
            if (instead := _reported(exc, failed, session.name, report)) is not None:
                raise instead from None
            raise
        if cancel is not None and cancel.is_set():
            log.warning("index job %s of session '%s' committed before its cancel was seen: the new index is live",
                        job_id, session.name)
        return report
    finally:
        _release(db, lock, session)


def _failure(exc: BaseException) -> str:
    """The error a failed job's row records for `exc`."""
    if isinstance(exc, IndexCancelledError):
        return CANCELLED
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED_BY_USER
    return f"{type(exc).__name__}: {exc}"[:2000]


def _reported(exc: BaseException, failed: bool, session: str, report: IndexReport) -> BaseException | None:
    """What `_run_job` raises instead of `exc` (None: `exc` itself), `failed` telling whether the job's row was
    marked failed (False: the job had committed)."""
    if isinstance(exc, IndexCancelledError) and failed:
        return IndexCancelledError(f"index job cancelled: session '{session}' keeps its previous index (nothing of "
                                   "the job was committed)")
    if isinstance(exc, KeyboardInterrupt) and not failed:
        return IndexInterruptedError(
            f"interrupted after the index job had committed: session '{session}' answers from its new index "
            f"({report.rows_written} rows written, job done); only the housekeeping after the commit was skipped "
            "(autovacuum redoes the statistics; the next index job that changes a file refreshes the stoplist)")
    return None


def _fail(db: Database, job: _Job, error: str) -> bool:
    """Mark the job failed unless it is already done; returns False when it was done (its rows committed).
    When the database itself is gone, leave it: the row stays `running` until the next job or `lotsman
    sessions` finds nobody holding its lock and marks it interrupted."""
    try:
        with db.connection() as conn:
            return jobs.fail_job(conn, job.job_id, counts=job.report.counts(), skipped=_skips(job.report),
                                 error=error)
    except (psycopg.Error, LotsmanError):
        return True


def _skips(report: IndexReport) -> list[dict]:
    return report.all_skips()


def read_sources(root: Path, *, max_bytes: int, revision: Revision | None = None,
                 checkpoint: Callable[[], None] | None = None) -> tuple[CollectedFiles, dict]:
    """The files of a folder (or of a git revision under it) and the tree a job records for them: the
    folder's stat snapshot, taken before any file is read, with each file's blob sha. `checkpoint` is called
    for each file of a folder's walks and each blob of a revision (a cancelled job stops there)."""
    if revision is not None:
        collected = collect_revision(revision, max_bytes=max_bytes, checkpoint=checkpoint)
        return collected, revision_tree(revision, max_bytes, len(collected.files))
    taken_ns = time.time_ns()
    stats = stat_tree(root, checkpoint=checkpoint)
    collected = collect_files(root, max_bytes=max_bytes, checkpoint=checkpoint)
    shas: dict[str, str | None] = {f.path: f.blob_sha for f in collected.files}
    return collected, folder_tree(str(root), max_bytes, stats, taken_ns, shas)


def _origin(root: Path, revision: Revision | None) -> writer.RowOrigin:
    """What the job's code rows record as their repository and commit (the folder itself for a working tree)."""
    if revision is not None:
        return writer.RowOrigin(repo_id=revision.repo_path, commit_sha=revision.commit_sha)
    return writer.RowOrigin(repo_id=str(root), commit_sha=None)


def index_snapshot(
    db: Database, session: RagSession, root: Path, embedder: LotsmanEmbeddings, *, max_bytes: int = 1_000_000,
    batch_size: int = 32, progress: Progress | None = None, parse_workers: int | None = None,
    rebuild: bool = False, revision: Revision | None = None, allow_large: bool = False,
    cancel: threading.Event | None = None, large_hint: str = LARGE_HINT,
) -> IndexReport:
    """Build a complete new index of `root` and swap it in atomically (readers never see it half-built).

    Args:
        rebuild: the new generation may use another embedder than the session's (`lotsman index --rebuild`):
            it is built in that embedder's table beside the old one, and the swap records the new embedder.
            Until the swap the session answers from its old generation; a failure leaves it so.
        revision: read the files of this git revision instead of the folder's working tree; the swap records
            it on the session (a folder's snapshot clears it).
        allow_large, cancel, large_hint: as for `index_repository`.
    """
    if not rebuild:
        session.check_embedder(embedder.name, embedder.dim)
    root = _check_root(root)
    check_source_size(root, session, revision, allow_large=allow_large, hint=large_hint)
    body = _snapshot_body(db, session, root, embedder, max_bytes=max_bytes, batch_size=batch_size,
                          progress=progress, parse_workers=parse_workers, rebuild=rebuild, revision=revision)
    return _run_job(db, session, "snapshot", body, cancel)


def _snapshot_body(
    db: Database, session: RagSession, root: Path, embedder: LotsmanEmbeddings, *, max_bytes: int,
    batch_size: int, progress: Progress | None, parse_workers: int | None, rebuild: bool, revision: Revision | None,
) -> Body:
    def body(report: IndexReport, job: _Job) -> None:
        collected, job.tree = read_sources(root, max_bytes=max_bytes, revision=revision, checkpoint=job.checkpoint)
        job.checkpoint()
        report.files_seen = len(collected.files) + len(collected.skipped)
        report.add_skips(collected.skipped)
        report.revision = _revision_dict(revision)
        current = get_session_fresh(db, session)
        if not rebuild:  # a rebuild that won the lock first may have changed the session's embedder
            current.check_embedder(embedder.name, embedder.dim)
        target = replace(current, embedder=embedder.name, embedding_dim=embedder.dim) if rebuild else current
        old, new = current.active_generation, current.active_generation + 1
        emb = _Embedder(embedder, batch_size, progress, job.stopping)
        prepared = _prepare(db, collected.files, embedder, report, emb, progress, parse_workers, job.checkpoint)
        report.files_indexed = len(prepared)
        space = writer.Space(embedder.name, embedder.dim, str(root)) if rebuild else None
        try:
            _write(db, target, new, prepared, report, emb, replace_paths=None,
                   origin=_origin(root, revision), checkpoint=job.checkpoint)
            with db.connection() as conn, conn.transaction():
                writer.swap_generation(conn, current.table, session.rag_session_id, old, new, space=space,
                                       revision=_session_revision(revision))
                job.complete(conn)
                # the first question of a fresh process then loads them instead of scanning the new rows
                store_generation_artifacts(conn, session.rag_session_id, new, table=target.table)
                job.checkpoint()  # the last one, just before the commit: from then on the new index is live
            job.committed = True
        except BaseException:
            _discard_unless_live(db, session, target.table, new)
            raise
        _analyze_after_load(db, target, report)
        _refresh_stop_lexemes(db, session)

    return body


def _discard_unless_live(db: Database, session: RagSession, table: str, generation: int) -> None:
    """Remove a failed snapshot's rows, unless its swap committed (an interrupt just after the commit): the
    session then reads them. With the database gone, the next job's housekeeping removes them."""
    try:
        with db.connection() as conn:
            live = find_session(conn, session.rag_session_id)
            if live is None or live.active_generation != generation:
                writer.discard_generation(conn, table, session.rag_session_id, generation)
    except (psycopg.Error, LotsmanError):
        log.warning("could not remove the rows of a failed snapshot of session '%s' (the next job does)",
                    session.name)


def _revision_dict(revision: Revision | None) -> dict[str, str] | None:
    if revision is None:
        return None
    return {"repo": revision.repo_path, "ref": revision.ref, "commit": revision.commit_sha}


def _session_revision(revision: Revision | None) -> writer.SessionRevision:
    if revision is None:
        return writer.SessionRevision(None, None, None)
    return writer.SessionRevision(revision.repo_path, revision.ref, revision.commit_sha)


def index_changes(
    db: Database, session: RagSession, root: Path, upserts: list[str], deletes: list[str],
    embedder: LotsmanEmbeddings, *, max_bytes: int = 1_000_000, batch_size: int = 32,
    progress: Progress | None = None, parse_workers: int | None = None, cancel: threading.Event | None = None,
) -> IndexReport:
    """Apply a diff: re-index `upserts` (paths relative to `root`) and drop `deletes`, in one transaction.

    The job records no tree: the next `index_repository` makes a diff of the folder instead of a no-op. It
    reads only the files it is given (no walk): the folder-size guard of `index_repository` does not apply.
    `cancel`: as for `index_repository`.

    Raises:
        IndexingError: the session was indexed from a git revision (its rows carry that commit): index the
            folder with `index_repository`, which builds a new snapshot for it.
    """
    session.check_embedder(embedder.name, embedder.dim)
    root = _check_root(root)
    apply = _changes_body(db, session, root, embedder, batch_size=batch_size, progress=progress,
                          parse_workers=parse_workers)

    def body(report: IndexReport, job: _Job) -> None:
        report.files_seen = len(upserts) + len(deletes)
        sources: list[SourceFile] = []
        emptied: list[str] = []
        for path in upserts:
            got = read_source_file(root, path, max_bytes=max_bytes)
            if isinstance(got, SkippedFile):
                report.add_skips([got])
                if _emptied(got):
                    emptied.append(path)
            else:
                sources.append(got)
        apply(report, job, sources, [p for p in upserts if p not in emptied], [*deletes, *emptied])

    return _run_job(db, session, "changes", body, cancel)


def _folder_diff_body(
    db: Database, session: RagSession, root: Path, embedder: LotsmanEmbeddings, *, max_bytes: int,
    batch_size: int, progress: Progress | None, parse_workers: int | None,
) -> Body:
    """The body of an incremental job: read the folder (under the lock), diff it against the blob shas the
    session's rows were made from, and apply the diff."""
    apply = _changes_body(db, session, root, embedder, batch_size=batch_size, progress=progress,
                          parse_workers=parse_workers)

    def body(report: IndexReport, job: _Job) -> None:
        collected, job.tree = read_sources(root, max_bytes=max_bytes, checkpoint=job.checkpoint)
        job.checkpoint()
        report.files_seen = len(collected.files) + len(collected.skipped)
        report.add_skips(collected.skipped)
        current = get_session_fresh(db, session)
        with db.connection() as conn:
            indexed = writer.indexed_blobs(conn, current.table, current.rag_session_id, current.active_generation)
        shas = {f.path: f.blob_sha for f in collected.files}
        upserts = [p for p, sha in shas.items() if indexed.get(p) != sha]
        # A file still present but now skipped (turned binary, too large) keeps its last good rows, like a
        # file that fails to parse: only files gone from the tree, or emptied (`_emptied`), are deleted.
        skipped_now = {s.path for s in collected.skipped if not _emptied(s)}
        deletes = [p for p in indexed if p not in shas and p not in skipped_now]
        # Files that produce no rows are never "indexed": skip them when the cache already knows them.
        upserts = _drop_known_empty(db, collected.files, upserts, embedder)
        report.files_unchanged = len(shas) - len(upserts)
        # the files as this job read them, not read again: the rows match the tree the job records
        wanted = set(upserts)
        apply(report, job, [f for f in collected.files if f.path in wanted], upserts, deletes)

    return body


def _emptied(skip: SkippedFile) -> bool:
    """A file skipped because it is now empty (or whitespace only): unlike a file that turned binary or fails
    to parse mid-edit, it says what it holds, nothing, so its old rows go (answers cited lines no longer
    there)."""
    return skip.reason in (EMPTY_FILE, EMPTY_WHITESPACE)


def _changes_body(
    db: Database, session: RagSession, root: Path, embedder: LotsmanEmbeddings, *, batch_size: int,
    progress: Progress | None, parse_workers: int | None,
) -> Callable[[IndexReport, _Job, list[SourceFile], list[str], list[str]], None]:
    """Apply a diff under the lock: `sources` (the readable ones among `upserts`) replace their rows, the
    other upserts keep theirs (skipped), `deletes` lose theirs, in one transaction."""

    def apply(report: IndexReport, job: _Job, sources: list[SourceFile], upserts: list[str],
              deletes: list[str]) -> None:
        # the session as it is under the lock: a rebuild that ran first may have moved it to another
        # embedder's table, and writing through the object read before the lock would put the rows where no
        # reader looks
        current = get_session_fresh(db, session)
        current.check_embedder(embedder.name, embedder.dim)
        if current.commit_sha is not None:
            raise IndexingError(
                f"session '{current.name}' was indexed from git revision {current.revision}: a diff of the "
                f"working tree would mix two revisions; run `lotsman index {escaped_path(str(root))} --session "
                f"{current.name}` (a new snapshot of the folder) or index a --ref again")
        generation = current.active_generation
        emb = _Embedder(embedder, batch_size, progress, job.stopping)
        prepared = _prepare(db, sources, embedder, report, emb, progress, parse_workers, job.checkpoint)
        report.files_indexed = len(prepared)
        report.files_deleted = len(deletes)
        # A file that became unindexable (a syntax error mid-edit, turned binary) keeps its last good rows:
        # bad input never loses what is already indexed; the skip is reported on the job.
        unreadable = report.not_indexed
        replaced = [*(p for p in upserts if p not in unreadable), *deletes]
        _write(db, current, generation, prepared, report, emb, replace_paths=replaced,
               origin=_origin(root, None), job=job, checkpoint=job.checkpoint)
        _analyze_after_load(db, current, report)
        if prepared or deletes:
            _refresh_stop_lexemes(db, session)

    return apply


def _analyze_after_load(db: Database, session: RagSession, report: IndexReport) -> None:
    """ANALYZE the chunk table after a large write (`ANALYZE_MIN_ROWS`), so the next question is planned
    with the new rows' statistics instead of waiting for autovacuum."""
    if report.rows_written < ANALYZE_MIN_ROWS:
        return
    t0 = time.perf_counter()
    with db.connection() as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(session.table)))
    report.timings["analyze"] = time.perf_counter() - t0


def _refresh_stop_lexemes(db: Database, session: RagSession) -> None:
    """Compute the lexical stoplist once per job (a scan of the session's tsv), so that questions never
    pay for it (it took seconds on the first question at 100k rows)."""
    current = get_session_fresh(db, session)
    lexemes = RagRepository(db).frequent_lexemes(current)
    with db.connection() as conn:
        save_stop_lexemes(conn, session.rag_session_id, lexemes)


def get_session_fresh(db: Database, session: RagSession) -> RagSession:
    with db.connection() as conn:
        return get_session(conn, session.rag_session_id)


def _check_root(root: Path) -> Path:
    root = Path(root).expanduser()
    if not root.exists():
        raise IndexingError(f"path not found: {escaped_path(str(root))}")
    if not root.is_dir():
        raise IndexingError(f"not a directory: {escaped_path(str(root))} (index a repository folder)")
    resolved = root.resolve()
    if escaped_path(str(resolved)) != str(resolved):
        # The session records its root, and PostgreSQL text is UTF-8: the bytes of such a name cannot be stored.
        raise IndexingError(f"the folder's path is not valid UTF-8: {escaped_path(str(resolved))}: rename it "
                            "(or index a copy under a UTF-8 name)")
    return resolved


def index_repository(
    db: Database, root: Path, *, session_name: str, embedder: LotsmanEmbeddings, incremental: bool = True,
    max_bytes: int = 1_000_000, batch_size: int = 32, progress: Progress | None = None,
    parse_workers: int | None = None, rebuild: bool = False, ref: str | None = None,
    check_unchanged: bool = True, allow_large: bool = False, cancel: threading.Event | None = None,
    large_hint: str = LARGE_HINT, size_checked: bool = False,
) -> IndexReport:
    """Index `root` into the named session: incremental diff when it already has an index, else a snapshot.

    Args:
        db: the database.
        root: repository folder.
        session_name: created on first use with this embedder.
        embedder: must match the session's recorded embedder (unless `rebuild`).
        incremental: False forces a full snapshot (still reusing the blob cache).
        parse_workers: processes that parse files (None → cores − 1, at most 4; 0 → on this thread).
        rebuild: a full snapshot that may change the session's embedder; the old index answers until the
            new one is complete, and stays if the job fails.
        ref: index this git revision (tag, branch, commit) of the repository at `root` instead of its working
            tree; the session records the repository, the ref and the commit. A new revision is a new snapshot
            (its unchanged blobs come from the blob cache, neither parsed nor embedded again).
        check_unchanged: first look whether nothing changed since the last job (`unchanged_report`); the
            CLI passes False when it has just asked itself.
        allow_large: index a folder or revision with more than `files.CONFIRM_ABOVE_FILES` candidate files
            (`lotsman index --yes`, the index graph's `allow_large`); without it such a source is refused
            before anything is created, read or written (`unchanged.check_source_size`), unless it is the
            folder whose working tree the session's live index was built from (`unchanged.size_accepted`).
            A folder's count stops at the limit + 1; a revision's is read from `git ls-tree`.
        cancel: set from another thread to stop the job at its next batch (a file walked or read, parsed,
            embedded or written; the no-op check's walk too; last just before the commit): it rolls back, its
            row is failed with `jobs.CANCELLED`, the session keeps its previous index, `IndexCancelledError`
            is raised. Set after the commit, it changes nothing (the job is done; a warning is logged).
        large_hint: what a refusal tells the caller to pass (`files.LARGE_HINT`: the graph's `allow_large`).
        size_checked: the caller has just asked `unchanged.check_source_size` (`lotsman index`): not twice.

    Raises:
        IndexingError: a `ref` that names no commit, a `root` that is not a git repository with `ref`, a
            missing root; nothing is created or changed then.
        TooManyFilesError: (an `IndexingError`) the folder is too large and `allow_large` is not set; nothing
            is created or changed.
        IndexCancelledError: `cancel` was set before the job committed.
    """
    revision = resolve_revision(root, ref) if ref is not None else None
    root = _check_root(root)
    stop = _cancel_checkpoint(cancel)
    with db.connection() as conn:
        ensure_tables(conn)
        known = find_session(conn, session_name)
    if not size_checked:  # before the session is created: a refused source leaves nothing behind
        check_source_size(root, known, revision, allow_large=allow_large, hint=large_hint)
    with db.connection() as conn:
        session = find_session(conn, session_name)
        if session is None:
            session = create_session(conn, session_name, embedder.name, embedder.dim, root_path=str(root))
        elif not rebuild:
            session.check_embedder(embedder.name, embedder.dim)
        elif session.embedding_dim != embedder.dim:
            ensure_space(conn, embedder.dim)  # the new generation's table
    if check_unchanged and incremental and not rebuild:
        with db.connection() as conn:
            noop = unchanged_report(conn, session, root, max_bytes=max_bytes, revision=revision,
                                    embedder=embedder.name, checkpoint=stop)
        if noop is not None:
            return noop
    options: dict[str, Any] = {"max_bytes": max_bytes, "batch_size": batch_size, "progress": progress,
                               "parse_workers": parse_workers}
    snapshot = _snapshot_body(db, session, root, embedder, rebuild=rebuild, revision=revision, **options)
    diff = _folder_diff_body(db, session, root, embedder, **options)

    def kind(current: RagSession) -> str:
        # A revision is always a new snapshot (its rows carry its commit), and so is a folder after a revision.
        if (rebuild or not incremental or current.active_generation == 0 or revision is not None
                or current.commit_sha is not None or _pipeline_changed(db, current)):
            return "snapshot"
        return "changes"

    def body(report: IndexReport, job: _Job) -> None:
        (snapshot if report.kind == "snapshot" else diff)(report, job)

    return _run_job(db, session, kind, body, cancel)


def _cancel_checkpoint(cancel: threading.Event | None) -> Callable[[], None]:
    """The checkpoint of the work before a job has its row (the no-op check's walk): raises
    `IndexCancelledError` once `cancel` is set; nothing was written then."""

    def check() -> None:
        if cancel is not None and cancel.is_set():
            raise IndexCancelledError("index run cancelled before its job started: nothing was indexed or changed")

    return check


def _pipeline_changed(db: Database, session: RagSession) -> bool:
    """The session's rows were made by other pipelines (its last job recorded another version, or none): a
    diff by blob sha would keep every unchanged file's old rows, so the job must be a snapshot (a Lotsman
    that parses differently re-indexes once; issue 30's new layers reached sessions only with --full)."""
    with db.connection() as conn:
        last = last_done_job(conn, session.rag_session_id)
    return last is None or not last.tree or last.tree.get("pipeline") != PIPELINE_VERSION


def _drop_known_empty(db: Database, files: list[SourceFile], upserts: list[str],
                      embedder: LotsmanEmbeddings) -> list[str]:
    by_path = {f.path: f for f in files}
    keys = {cache.cache_key(by_path[p].blob_sha, p, embedder.name): p for p in upserts}
    with db.connection() as conn:
        cached = cache.load_cached(conn, list(keys), embedder.dim)
    empty = {keys[k] for k, v in cached.items() if not v.records}
    return [p for p in upserts if p not in empty]
