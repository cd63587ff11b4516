"""Index job rows (`rag_index_jobs`): one per snapshot or changes run, with counts, skips and errors."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from stores.errors import LotsmanError
from stores.indexing.files import SkippedFile, is_empty_module

INTERRUPTED = ("interrupted: the process running this job ended before finishing it (killed or crashed); "
               "the session keeps its previous index — run the index again")
"""The error of a job found `running` with nobody running it (`finished_at` is when that was found)."""

CANCELLED = "cancelled before the job committed: its rows were rolled back and the session keeps its previous index"
"""The error of a job stopped through its cancel event (the index graph's run was cancelled)."""


class IndexCancelledError(LotsmanError):
    """An index job stopped at a batch because its cancel event was set: nothing of it went live."""

    exit_code = 130


@dataclass
class IndexReport:
    """What one indexing job did (printed by `lotsman index`, stored on the job row)."""

    session: str
    job_id: str
    kind: str
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    cache_hits: int = 0
    parsed: int = 0
    embedded: int = 0
    vectors_reused: int = 0
    """Vectors taken from the blob cache instead of being embedded again."""
    rows_written: int = 0
    rows_per_layer: dict[str, int] = field(default_factory=dict)
    noop: bool = False
    """Nothing changed since the last job: recognised from the stat snapshot (or the commit) before any file
    was parsed or embedded."""
    revision: dict[str, str] | None = None
    """`{"repo", "ref", "commit"}` when the job read a git revision (`--ref`)."""
    skipped: list[SkippedFile] = field(default_factory=list)
    empty: list[SkippedFile] = field(default_factory=list)
    """Empty `.py` files (`files.is_empty_module`, mostly `__init__.py`): not indexed like the skipped ones,
    but reports count them (`files_empty`) instead of listing them: they are normal. The job row's `skipped`
    still holds them (`all_skips`): the row records every file the job did not index."""
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def add_skips(self, skips: list[SkippedFile]) -> None:
        """Record files that were not indexed: empty modules into `empty`, the others into `skipped`."""
        for skip in skips:
            (self.empty if is_empty_module(skip) else self.skipped).append(skip)

    def all_skips(self) -> list[dict]:
        """Every file the job did not index, empty modules included, as the job row's `skipped` keeps them."""
        return [{"path": s.path, "reason": s.reason}
                for s in sorted([*self.skipped, *self.empty], key=lambda s: s.path)]

    @property
    def not_indexed(self) -> set[str]:
        """Paths of every file this job found but could not index (skipped or empty): a diff keeps their rows."""
        return {s.path for s in [*self.skipped, *self.empty]}

    @property
    def reembedded_share(self) -> float | None:
        """Share of the written vectors that were embedded by this job (the rest came from the blob cache):
        about the share of changed files when a second tag of a repository is indexed; None with no vectors."""
        total = self.embedded + self.vectors_reused
        return round(self.embedded / total, 4) if total else None

    def counts(self) -> dict:
        out = {k: v for k, v in self.__dict__.items()
               if k not in ("skipped", "empty", "warnings", "session", "job_id")}
        out["files_empty"] = len(self.empty)
        out["reembedded_share"] = self.reembedded_share
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report as `lotsman index --json` and the index graph return it."""
        return {"session": self.session, "job_id": self.job_id, "kind": self.kind, **self.counts(),
                "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
                "warnings": self.warnings[:200]}


def job_lock_key(session_id: str) -> str:
    """Key of the session's advisory lock: held by an index job for its whole run, taken by a delete."""
    return f"lotsman_index:{session_id}"


def start_job(conn: psycopg.Connection, session_id: str, kind: str) -> str:
    job_id = uuid.uuid4().hex
    with conn.transaction():
        conn.execute(
            "INSERT INTO rag_index_jobs (job_id, rag_session_id, kind, status) VALUES (%s, %s, %s, 'running')",
            (job_id, session_id, kind),
        )
    return job_id


def complete_job(conn: psycopg.Connection, job_id: str, *, counts: dict, skipped: list[dict],
                 tree: dict[str, Any] | None = None) -> None:
    """Mark the job `done`. Call it inside the transaction that makes the job's rows live (the generation
    swap, or a changes job's writes): the status and the rows commit together, so an interrupt at any moment
    leaves either live rows and `done`, or the old rows and a job that is not done.

    Args:
        tree: what the index now holds was read from (`stat_tree` entries with blob shas, or a git commit),
            kept in `counts` under `tree`: the next job compares against it (`last_tree`).
    """
    row = conn.execute(
        "UPDATE rag_index_jobs SET status = 'done', counts = %s, skipped = %s, error = NULL, finished_at = now() "
        "WHERE job_id = %s RETURNING rag_session_id",
        (Jsonb({**counts, "tree": tree} if tree is not None else counts), Jsonb(skipped), job_id),
    ).fetchone()
    if row is not None:
        _forget_older_trees(conn, row[0], job_id)


def _forget_older_trees(conn: psycopg.Connection, session_id: str, job_id: str) -> None:
    """Only the last job's tree is ever read: older ones are dropped (a tree is ~100 bytes a file, and a
    watched folder records one per run)."""
    conn.execute("UPDATE rag_index_jobs SET counts = counts - 'tree' WHERE rag_session_id = %s AND job_id <> %s "
                 "AND counts ? 'tree'", (session_id, job_id))


def record_counts(conn: psycopg.Connection, job_id: str, counts: dict) -> None:
    """Update a finished job's counts (the timings of the steps after its commit: ANALYZE, the stoplist),
    keeping the tree it recorded."""
    with conn.transaction():
        conn.execute("UPDATE rag_index_jobs SET counts = jsonb_strip_nulls(jsonb_build_object('tree', "
                     "counts->'tree')) || %s WHERE job_id = %s", (Jsonb(counts), job_id))


@dataclass(frozen=True)
class LastJob:
    """The session's last finished job, as the no-op check reads it."""

    job_id: str
    tree: dict[str, Any] | None
    """What it read (None when it recorded nothing, e.g. a diff applied through `index_changes`)."""
    skipped: list[dict]


def last_done_job(conn: psycopg.Connection, session_id: str) -> LastJob | None:
    """The session's last finished job. Jobs of a session run one at a time under its lock, and only a `done`
    job changes its rows: the last one describes what the index holds."""
    row = conn.execute(
        "SELECT job_id, counts->'tree', skipped FROM rag_index_jobs WHERE rag_session_id = %s AND status = 'done' "
        "ORDER BY finished_at DESC, started_at DESC LIMIT 1", (session_id,)).fetchone()
    return LastJob(row[0], row[1], row[2] or []) if row else None


def record_noop(conn: psycopg.Connection, session_id: str, *, counts: dict, skipped: list[dict],
                tree: dict[str, Any]) -> str:
    """Record a job that found nothing to change (`done` at once, `counts.noop` true) with the tree it saw;
    returns its id. Like every run of `index_repository` it is a job, so `lotsman sessions` shows when the
    index was last checked."""
    job_id = uuid.uuid4().hex
    with conn.transaction():
        conn.execute(
            "INSERT INTO rag_index_jobs (job_id, rag_session_id, kind, status, counts, skipped, finished_at) "
            "VALUES (%s, %s, 'changes', 'done', %s, %s, now())",
            (job_id, session_id, Jsonb({**counts, "tree": tree}), Jsonb(skipped)))
        _forget_older_trees(conn, session_id, job_id)
    return job_id


def fail_job(conn: psycopg.Connection, job_id: str, *, counts: dict, skipped: list[dict], error: str) -> bool:
    """Mark a still-running job failed; a job already `done` (its rows committed) stays done. Returns whether
    the row was changed."""
    with conn.transaction():
        cur = conn.execute(
            "UPDATE rag_index_jobs SET status = 'failed', counts = %s, skipped = %s, error = %s, finished_at = now() "
            "WHERE job_id = %s AND status = 'running'",
            (Jsonb(counts), Jsonb(skipped), error, job_id),
        )
    return cur.rowcount > 0


def fail_interrupted(conn: psycopg.Connection, session_id: str) -> int:
    """Mark the session's `running` jobs failed as interrupted; returns how many.

    Call it only while the session's job lock is held (by this caller): an index job holds that lock from
    before its row is inserted until after it is finished, so under the lock a `running` row is a dead one.
    """
    cur = conn.execute(
        "UPDATE rag_index_jobs SET status = 'failed', error = %s, finished_at = now() "
        "WHERE rag_session_id = %s AND status = 'running'",
        (INTERRUPTED, session_id),
    )
    return cur.rowcount


def get_job(conn: psycopg.Connection, job_id: str) -> dict | None:
    row = conn.execute(
        "SELECT job_id, rag_session_id, kind, status, counts, skipped, error, started_at, finished_at "
        "FROM rag_index_jobs WHERE job_id = %s",
        (job_id,),
    ).fetchone()
    if row is None:
        return None
    keys = ("job_id", "rag_session_id", "kind", "status", "counts", "skipped", "error", "started_at", "finished_at")
    return dict(zip(keys, row, strict=True))
