"""A no-op re-index, recognised before the embedder or the parse workers start.

Every job of `index_repository` records what it read (`tree`, kept on its job row): a folder's stat snapshot
(path, size, mtime_ns, inode, ctime_ns: `files.StatEntry`; the ctime catches a same-size rewrite whose mtime
was put back) with each file's blob sha, or a git revision's commit. The next run compares before anything
heavy: names and stats equal (a file whose stat moved but whose bytes hash to the same blob counts as equal)
or the same commit means nothing to do. Measured on fastapi-ru (174 files): a no-op re-index
took 1.7 s, nearly all of it importing the embedder and the graph's modules that it never used.

This module imports only what the check needs (no numpy, no pipelines, no embedder), so `lotsman index` can
ask it first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from stores.indexing.files import (
    LARGE_HINT,
    SkippedFile,
    SourceFile,
    StatEntry,
    changed_since,
    check_folder_size,
    read_source_file,
    stat_tree,
)
from stores.indexing.jobs import IndexReport, fail_interrupted, job_lock_key, last_done_job, record_noop
from stores.indexing.versions import PIPELINE_VERSION
from stores.indexing.writer import discard_inactive
from stores.schema import build_vector_index, chunk_table, existing_spaces
from stores.sessions import RagSession, find_session

if TYPE_CHECKING:
    from stores.indexing.git_source import Revision

FOLDER, GIT = "folder", "git"


def folder_tree(root: str, max_bytes: int, stats: dict[str, StatEntry], taken_ns: int,
                shas: dict[str, str | None]) -> dict[str, Any]:
    """The tree of a folder's job: its stat snapshot (taken at `taken_ns`, before the files were read) and the
    blob sha each file was indexed with (None for a file that was skipped)."""
    return {"kind": FOLDER, "root": root, "max_bytes": max_bytes, "taken_ns": taken_ns, "pipeline": PIPELINE_VERSION,
            "files": {path: [*stat, shas.get(path)] for path, stat in stats.items()}}


def revision_tree(revision: Revision, max_bytes: int, files: int) -> dict[str, Any]:
    """The tree of a git revision's job: the commit (its tree cannot change) and where it was read."""
    return {"kind": GIT, "root": revision.root, "repo": revision.repo_path, "prefix": revision.prefix,
            "commit": revision.commit_sha, "max_bytes": max_bytes, "files": files, "pipeline": PIPELINE_VERSION}


def same_source(previous: dict[str, Any] | None, kind: str, root: str, max_bytes: int,
                commit: str | None = None) -> bool:
    """Whether the last job read the same kind of source, from the same place, with the same size limit and
    the same pipelines (a new Lotsman that parses differently must re-index), and, for a revision, the same
    commit."""
    if not previous or previous.get("kind") != kind or previous.get("pipeline") != PIPELINE_VERSION:
        return False
    if previous.get("root") != root or previous.get("max_bytes") != max_bytes:
        return False
    return kind != GIT or previous.get("commit") == commit


def size_accepted(session: RagSession | None, root: Path) -> bool:
    """Whether the session's live index was built from the working tree of the folder at `root`: its size was
    accepted then (counted, or confirmed with `allow_large`), and its incremental runs (watch, hooks) are not
    counted again. A session row alone says nothing: a job that created it may have failed, been cancelled or
    read a git revision (whose folder may hold far more than the revision)."""
    return (session is not None and session.active_generation > 0 and session.commit_sha is None
            and session.root_path == str(Path(root).resolve()))


def check_source_size(root: Path, session: RagSession | None, revision: Revision | None, *, allow_large: bool,
                      hint: str = LARGE_HINT) -> None:
    """The size guard of every index job, asked before anything is created or read: a revision's candidates
    are counted from `git ls-tree` (`git_source.check_revision_size`), a folder's by a walk that stops at the
    limit + 1 (`files.check_folder_size`) unless `size_accepted`. `hint` ends a refusal: what the caller can
    pass.

    Raises:
        TooManyFilesError: more than `files.CONFIRM_ABOVE_FILES` candidates and not `allow_large`.
    """
    if revision is not None:
        from stores.indexing.git_source import check_revision_size

        check_revision_size(revision, allow_large=allow_large, hint=hint)
    else:
        check_folder_size(Path(root), allow_large=allow_large, known_root=size_accepted(session, root), hint=hint)


def unchanged_report(conn: psycopg.Connection, session: RagSession, root: Path, *, max_bytes: int,
                     revision: Revision | None = None, embedder: str | None = None,
                     checkpoint: Callable[[], None] | None = None) -> IndexReport | None:
    """The report of a no-op job when `root` (or `revision`) is what the session's index already holds, None
    when a real job must run (something changed, no tree recorded, another embedder asked for, a job running).

    The check and the no-op job's row happen in one transaction under the session's job lock (committed with
    the caller's transaction: any connection will do, no pool and no pgvector types needed). `checkpoint` is
    called for each file of the folder's stat walk (it raises to stop: a cancelled run).
    """
    if session.active_generation == 0 or (embedder is not None and embedder != session.embedder):
        return None
    root_text = str(Path(root).resolve())
    taken_ns = time.time_ns()
    stats = stat_tree(root, checkpoint=checkpoint) if revision is None else {}
    with conn.transaction():
        got = conn.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))",
                           (job_lock_key(session.rag_session_id),)).fetchone()
        if not got or not got[0]:
            return None  # a job is running: the real path says so
        current = find_session(conn, session.rag_session_id)
        if current is None or current.active_generation != session.active_generation:
            return None
        fail_interrupted(conn, current.rag_session_id)
        _housekeeping(conn, current)
        last = last_done_job(conn, current.rag_session_id)
        previous = last.tree if last is not None else None
        if last is None or previous is None:
            return None
        if revision is not None:
            if current.commit_sha != revision.commit_sha or not same_source(
                    previous, GIT, revision.root, max_bytes, revision.commit_sha):
                return None
            tree, files = previous, int(previous.get("files", 0))
        else:
            if current.commit_sha is not None or not same_source(previous, FOLDER, root_text, max_bytes):
                return None
            shas = _unchanged_shas(Path(root_text), previous, stats, max_bytes)
            if shas is None:
                return None
            # the stats of files touched but unchanged are recorded now: the next run need not read them
            tree = folder_tree(root_text, max_bytes, stats, taken_ns, shas)
            files = sum(1 for sha in shas.values() if sha is not None)
        report = IndexReport(session=current.name, job_id="", kind="changes", files_seen=files + len(last.skipped),
                             files_unchanged=files, noop=True, revision=_revision_dict(current))
        report.add_skips([SkippedFile(s["path"], s["reason"]) for s in last.skipped])  # empty modules counted
        report.timings["total"] = (time.time_ns() - taken_ns) / 1e9
        report.job_id = record_noop(conn, current.rag_session_id, counts=report.counts(), skipped=last.skipped,
                                    tree=tree)
    return report


def _housekeeping(conn: psycopg.Connection, session: RagSession) -> None:
    """What every job does first, under the same lock: give back a vector index a killed job dropped, and
    remove rows no reader sees (a job killed after writing its generation, before the swap). Re-running
    `lotsman index` is what an interrupted job's message tells users to do, and a no-op must not skip it."""
    for dim in existing_spaces(conn):
        build_vector_index(conn, chunk_table(dim), lock_timeout_ms=1000)
    discard_inactive(conn, session.rag_session_id, session.table, session.active_generation)


def _unchanged_shas(root: Path, previous: dict[str, Any], stats: dict[str, StatEntry],
                    max_bytes: int) -> dict[str, str | None] | None:
    """Each file's blob sha when the folder holds what the last job indexed, None when it changed: the files
    whose stat moved (or was too recent to trust) are read and hashed."""
    recorded: dict[str, list] = previous.get("files") or {}
    to_read = changed_since(recorded, stats, int(previous.get("taken_ns", 0)))
    if to_read is None:
        return None
    shas: dict[str, str | None] = {path: entry[3] for path, entry in recorded.items()}
    for path in to_read:
        got = read_source_file(root, path, max_bytes)
        sha = got.blob_sha if isinstance(got, SourceFile) else None
        if sha != shas[path]:
            return None
    return shas


def _revision_dict(session: RagSession) -> dict[str, str] | None:
    if session.commit_sha is None:
        return None
    return {"repo": session.repo_path or "", "ref": session.git_ref or "", "commit": session.commit_sha}
