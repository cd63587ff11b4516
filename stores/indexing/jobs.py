"""Index job rows (`rag_index_jobs`): one per snapshot or changes run, with counts, skips and errors."""

from __future__ import annotations

import uuid

import psycopg
from psycopg.types.json import Jsonb

INTERRUPTED = ("interrupted: the process running this job ended before finishing it (killed or crashed); "
               "the session keeps its previous index — run the index again")
"""The error of a job found `running` with nobody running it (`finished_at` is when that was found)."""


def start_job(conn: psycopg.Connection, session_id: str, kind: str) -> str:
    job_id = uuid.uuid4().hex
    with conn.transaction():
        conn.execute(
            "INSERT INTO rag_index_jobs (job_id, rag_session_id, kind, status) VALUES (%s, %s, %s, 'running')",
            (job_id, session_id, kind),
        )
    return job_id


def complete_job(conn: psycopg.Connection, job_id: str, *, counts: dict, skipped: list[dict]) -> None:
    """Mark the job `done`. Call it inside the transaction that makes the job's rows live (the generation
    swap, or a changes job's writes): the status and the rows commit together, so an interrupt at any moment
    leaves either live rows and `done`, or the old rows and a job that is not done."""
    conn.execute(
        "UPDATE rag_index_jobs SET status = 'done', counts = %s, skipped = %s, error = NULL, finished_at = now() "
        "WHERE job_id = %s",
        (Jsonb(counts), Jsonb(skipped), job_id),
    )


def record_counts(conn: psycopg.Connection, job_id: str, counts: dict) -> None:
    """Update a finished job's counts (the timings of the steps after its commit: ANALYZE, the stoplist)."""
    with conn.transaction():
        conn.execute("UPDATE rag_index_jobs SET counts = %s WHERE job_id = %s", (Jsonb(counts), job_id))


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
