"""Rag sessions: the unit of isolation. Every read and write is scoped by `rag_session_id`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg.rows import dict_row

from stores.errors import EmbedderMismatchError, SessionBusyError, SessionNotFoundError, UsageError
from stores.indexing.jobs import fail_interrupted, job_lock_key
from stores.schema import chunk_table, ensure_space


@dataclass(frozen=True)
class RagSession:
    """A named index of one repository built with one embedder."""

    rag_session_id: str
    name: str
    embedder: str
    embedding_dim: int
    active_generation: int
    project_id: str = ""
    root_path: str | None = None
    stop_lexemes: list[str] | None = None
    """Lexemes too frequent in this index to help lexical search (refreshed by every index job)."""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    repo_path: str | None = None
    """The git repository the index was read from (`lotsman index PATH --ref REF`); None for a folder."""
    git_ref: str | None = None
    """The ref as it was given (`v1.2`, `main`, a sha); None for a folder."""
    commit_sha: str | None = None
    """The commit the ref named when the index was built; None for a folder (its working tree)."""

    @property
    def revision(self) -> str | None:
        """`REF @ SHORT_SHA` of a session indexed from a git revision, None for a folder."""
        if self.commit_sha is None:
            return None
        return f"{self.git_ref} @ {self.commit_sha[:12]}" if self.git_ref else self.commit_sha[:12]

    @property
    def table(self) -> str:
        return chunk_table(self.embedding_dim)

    def check_embedder(self, embedder_name: str, dim: int) -> None:
        """Raise `EmbedderMismatchError` unless the session was built with this embedder."""
        if embedder_name != self.embedder or dim != self.embedding_dim:
            raise EmbedderMismatchError(
                f"session '{self.name}' was indexed with embedder '{self.embedder}' (dim {self.embedding_dim}), "
                f"not '{embedder_name}' (dim {dim}): use --embedder {self.embedder}, or re-index with "
                f"`lotsman index PATH --session {self.name} --embedder {embedder_name} --rebuild`"
            )


_COLUMNS = ("rag_session_id, name, embedder, embedding_dim, active_generation, project_id, root_path, "
            "stop_lexemes, created_at, updated_at, repo_path, git_ref, commit_sha")


def _row(row: dict | None) -> RagSession | None:
    return RagSession(**row) if row else None


def get_session(conn: psycopg.Connection, name_or_id: str) -> RagSession:
    """Find a session by name or id; `SessionNotFoundError` tells how to create one."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            f"SELECT {_COLUMNS} FROM rag_sessions WHERE name = %s OR rag_session_id = %s "
            "ORDER BY (name = %s) DESC LIMIT 1",
            (name_or_id, name_or_id, name_or_id),
        ).fetchone()
    session = _row(row)
    if session is None:
        raise SessionNotFoundError(
            f"no session '{name_or_id}': index a repository first with `lotsman index PATH --session {name_or_id}`"
        )
    return session


def find_session(conn: psycopg.Connection, name_or_id: str) -> RagSession | None:
    try:
        return get_session(conn, name_or_id)
    except SessionNotFoundError:
        return None


def create_session(
    conn: psycopg.Connection, name: str, embedder: str, embedding_dim: int, *, project_id: str = "",
    root_path: str | None = None,
) -> RagSession:
    """Create a session (and its embedding space's table when it is the first of that dimension)."""
    if not name.strip():
        raise ValueError("session name must not be empty")
    ensure_space(conn, embedding_dim)
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            "INSERT INTO rag_sessions (rag_session_id, name, embedder, embedding_dim, project_id, root_path) "
            f"VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
            (uuid.uuid4().hex, name, embedder, embedding_dim, project_id, root_path),
        ).fetchone()
    session = _row(row)
    assert session is not None
    return session


def get_or_create_session(
    conn: psycopg.Connection, name: str, embedder: str, embedding_dim: int, *, root_path: str | None = None
) -> RagSession:
    """The named session, created on first use; an existing one must match the embedder."""
    session = find_session(conn, name)
    if session is None:
        return create_session(conn, name, embedder, embedding_dim, root_path=root_path)
    session.check_embedder(embedder, embedding_dim)
    return session


def save_stop_lexemes(conn: psycopg.Connection, session_id: str, lexemes: list[str]) -> None:
    """Record the session's lexical stoplist (see `RagRepository.frequent_lexemes`)."""
    with conn.transaction():
        conn.execute("UPDATE rag_sessions SET stop_lexemes = %s WHERE rag_session_id = %s", (lexemes, session_id))


def list_sessions(conn: psycopg.Connection) -> list[dict]:
    """Sessions with their row counts (active generation only) and last job.

    A job left `running` by a process that died is reported (and recorded) as failed: interrupted.
    """
    reap_interrupted_jobs(conn)
    with conn.cursor(row_factory=dict_row) as cur:
        sessions = cur.execute(f"SELECT {_COLUMNS} FROM rag_sessions ORDER BY name").fetchall()
        out = []
        for s in sessions:
            table = chunk_table(s["embedding_dim"])
            count = cur.execute(
                f'SELECT count(*) AS n FROM "{table}" WHERE rag_session_id = %s AND generation = %s',
                (s["rag_session_id"], s["active_generation"]),
            ).fetchone()
            job = cur.execute(
                "SELECT kind, status, finished_at, error FROM rag_index_jobs WHERE rag_session_id = %s "
                "ORDER BY started_at DESC LIMIT 1",
                (s["rag_session_id"],),
            ).fetchone()
            out.append({**s, "rows": count["n"] if count else 0, "last_job": job})
    return out


def reap_interrupted_jobs(conn: psycopg.Connection) -> int:
    """Mark failed the `running` jobs whose process is gone; returns how many.

    A job holds its session's advisory lock (a session-level lock, released by PostgreSQL when the job's
    connection drops, e.g. after `kill -9`) from before its row is inserted until after it is finished. So a
    `running` row of a session whose lock this transaction can take has nobody running it. Taking the lock
    (not just looking at `pg_locks`) closes the race with a job that finishes between the two reads.
    """
    reaped = 0
    with conn.transaction():
        running = conn.execute(
            "SELECT DISTINCT rag_session_id FROM rag_index_jobs WHERE status = 'running'").fetchall()
        for (session_id,) in running:
            with conn.transaction():  # a savepoint: the xact lock is held until the outer commit, just after
                got = conn.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))",
                                   (job_lock_key(session_id),)).fetchone()
                if got and got[0]:
                    reaped += fail_interrupted(conn, session_id)
    return reaped


def delete_session(conn: psycopg.Connection, name_or_id: str) -> RagSession:
    """Delete a session; its rows and jobs go with it (foreign keys with ON DELETE CASCADE).

    Raises:
        SessionBusyError: an index job runs for the session. Deleting under it used to leave the rows the
            job wrote afterwards (and the job reported success); now the delete waits for nobody and says so.
    """
    session = get_session(conn, name_or_id)
    with conn.transaction():
        locked = conn.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))",
                              (job_lock_key(session.rag_session_id),)).fetchone()
        if not locked or not locked[0]:
            raise SessionBusyError(
                f"session '{session.name}' has an index job running: delete it when the job has finished"
            )
        conn.execute("DELETE FROM rag_sessions WHERE rag_session_id = %s", (session.rag_session_id,))
    return session


MIN_SHA_PREFIX = 7
"""A ref of at least this many hex digits also matches the commits it is a prefix of (git's short sha)."""


def ref_matches(ref: str, git_ref: str | None, commit_sha: str | None) -> bool:
    """Whether a session indexed from `git_ref` at `commit_sha` is the revision `ref` names: the same ref
    as given, the full sha, or a short sha (at least `MIN_SHA_PREFIX` hex digits)."""
    if commit_sha is None:
        return False
    ref = ref.strip()
    if ref == git_ref or ref.lower() == commit_sha:
        return True
    hexdigits = len(ref) >= MIN_SHA_PREFIX and all(c in "0123456789abcdef" for c in ref.lower())
    return hexdigits and commit_sha.startswith(ref.lower())


def pick_revision_session(ref: str, sessions: list[RagSession], *, repo_path: str | None = None) -> RagSession:
    """The one session indexed from the revision `ref` names (of `repo_path`'s repository when given).

    Raises:
        SessionNotFoundError: no session was indexed from that revision (the message lists the revisions
            that are).
        UsageError: several sessions were (the message names them: pick one with --session).
    """
    indexed = [s for s in sessions if s.commit_sha is not None and (repo_path is None or s.repo_path == repo_path)]
    found = [s for s in indexed if ref_matches(ref, s.git_ref, s.commit_sha)]
    if len(found) == 1:
        return found[0]
    if not found:
        known = ", ".join(sorted(f"{s.revision} (session '{s.name}')" for s in indexed)[:10]) or "none yet"
        raise SessionNotFoundError(
            f"no session is indexed from revision '{ref}': index it with `lotsman index REPO --ref {ref} "
            f"--session NAME` (indexed revisions: {known})")
    names = ", ".join(sorted(f"'{s.name}'" for s in found))
    raise UsageError(f"revision '{ref}' is indexed in several sessions ({names}): name one with --session")


def session_for_ref(conn: psycopg.Connection, ref: str, *, within: str | None = None) -> RagSession:
    """The session indexed from revision `ref` (`ask --ref`, the run context's `ref`).

    Args:
        within: a session name or id: look only among sessions of its repository (when it records one).

    Raises:
        SessionNotFoundError: none is; UsageError: several are (see `pick_revision_session`).
    """
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(f"SELECT {_COLUMNS} FROM rag_sessions WHERE commit_sha IS NOT NULL ORDER BY name"
                           ).fetchall()
    sessions = [RagSession(**row) for row in rows]
    repo_path = None
    if within is not None:
        anchor = find_session(conn, within)
        repo_path = anchor.repo_path if anchor is not None else None
    return pick_revision_session(ref, sessions, repo_path=repo_path)


def run_session(conn: psycopg.Connection, rag_session_id: str, ref: str | None, *,
                session_given: bool = True) -> str:
    """The session a run answers from: `rag_session_id` itself, or with `ref` the session indexed from that
    revision (of the named session's repository when `session_given`). Returns its id.

    Raises:
        SessionNotFoundError, UsageError: as `session_for_ref` and `get_session` do.
    """
    if ref is None or not ref.strip():
        return get_session(conn, rag_session_id).rag_session_id
    return session_for_ref(conn, ref, within=rag_session_id if session_given else None).rag_session_id
