"""Indexing reliability on a real database: a backslash in a POSIX file name survives an incremental re-index,
a same-size rewrite with its mtime put back is re-indexed, files are read under the session's lock, and
`lotsman index --ref` inside another repository's git hook reads its own repository."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from psycopg import sql

import stores.indexing.service as service
from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.errors import IndexingError
from stores.indexing.service import index_repository
from stores.repository import RagRepository
from stores.sessions import delete_session, find_session, get_session, job_lock_key
from tests.gitrepo import git

EMBEDDER = FakeEmbeddings()
POSIX = os.sep == "/"


@pytest.fixture
def name(db: Database) -> Iterator[str]:
    made = f"h2-rel-{uuid.uuid4().hex[:8]}"
    yield made
    with db.connection() as conn:
        if find_session(conn, made) is not None:
            delete_session(conn, made)


def _write(path: Path, text: str, *, mtime_ns: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def _contents(db: Database, name: str, path: str) -> str:
    """All the text the session's live rows hold for `path` (what a question can be answered from)."""
    with db.connection() as conn:
        session = get_session(conn, name)
        rows = conn.execute(
            sql.SQL("SELECT content FROM {} WHERE rag_session_id = %s AND generation = %s AND path = %s").format(
                sql.Identifier(session.table)),
            (session.rag_session_id, session.active_generation, path)).fetchall()
    return "\n".join(r[0] for r in rows)


# -- 1. a backslash in a POSIX file name ---------------------------------------------------------------------


@pytest.mark.skipif(not POSIX, reason="a backslash is a separator on Windows")
def test_an_incremental_reindex_keeps_a_file_with_a_backslash_in_its_name(db: Database, tmp_path: Path,
                                                                         name: str) -> None:
    """The changed file was looked up as `back/slash.md`: "file not found", and the job deleted its rows."""
    root = tmp_path / "repo"
    _write(root / "back\\slash.md", "# Back slash\n\nThe first version mentions ferntoken.\n")
    _write(root / "docs/a.md", "# A\n\nAnother page.\n")
    index_repository(db, root, session_name=name, embedder=EMBEDDER)
    assert "ferntoken" in _contents(db, name, "back\\slash.md")

    _write(root / "back\\slash.md", "# Back slash\n\nThe second version mentions mosstoken.\n")
    report = index_repository(db, root, session_name=name, embedder=EMBEDDER)
    text = _contents(db, name, "back\\slash.md")
    assert "mosstoken" in text and "ferntoken" not in text
    assert report.kind == "changes" and report.files_indexed == 1 and not report.skipped

    again = index_repository(db, root, session_name=name, embedder=EMBEDDER)
    assert again.noop and not again.skipped  # its stat was too recent to trust: it was read, and found equal
    with db.connection() as conn:
        session = get_session(conn, name)
    found = RagRepository(db).retrieve_exact_files(session, ["back\\slash.md"])
    assert {r["path"] for r in found} == {"back\\slash.md"}


# -- 4. a same-size rewrite whose mtime was put back -----------------------------------------------------------


def test_a_same_size_rewrite_with_its_mtime_put_back_is_reindexed(db: Database, tmp_path: Path,
                                                                  name: str) -> None:
    """`touch -r`, an editor that keeps the mtime, a checkout within the mtime's tick: size and mtime match the
    last job's snapshot, the bytes do not. Without the ctime the run was a no-op and the old text stayed."""
    root = tmp_path / "repo"
    an_hour_ago = (os.stat(tmp_path).st_mtime_ns // 10**9 - 3600) * 10**9
    page = _write(root / "docs/limits.md", "# Limits\n\nThe upload limit is 10 MB.\n", mtime_ns=an_hour_ago)
    _write(root / "docs/other.md", "# Other\n\nNothing to see.\n", mtime_ns=an_hour_ago)
    index_repository(db, root, session_name=name, embedder=EMBEDDER)
    assert "10 MB" in _contents(db, name, "docs/limits.md")

    inode = page.stat().st_ino
    _write(page, "# Limits\n\nThe upload limit is 99 MB.\n", mtime_ns=an_hour_ago)
    assert (page.stat().st_ino, page.stat().st_mtime_ns) == (inode, an_hour_ago)  # only the ctime moved
    report = index_repository(db, root, session_name=name, embedder=EMBEDDER)
    assert not report.noop and report.files_indexed == 1
    assert "99 MB" in _contents(db, name, "docs/limits.md")


def test_a_snapshot_recorded_before_the_ctime_is_read_without_error(db: Database, tmp_path: Path,
                                                                    name: str) -> None:
    """A session indexed by an earlier Lotsman holds `[size, mtime_ns, inode, blob_sha]` entries: no stat
    matches them, so each file's blob sha decides; unchanged, the run is still a no-op, and it records the
    snapshot with the ctime."""
    from psycopg.types.json import Jsonb

    root = tmp_path / "repo"
    an_hour_ago = (os.stat(tmp_path).st_mtime_ns // 10**9 - 3600) * 10**9
    for i in range(3):
        _write(root / f"docs/p{i}.md", f"# Page {i}\n\nText {i}.\n", mtime_ns=an_hour_ago)
    index_repository(db, root, session_name=name, embedder=EMBEDDER)
    with db.connection() as conn:
        session_id = get_session(conn, name).rag_session_id
        job_id, tree = conn.execute(
            "SELECT job_id, counts->'tree' FROM rag_index_jobs WHERE rag_session_id = %s AND counts ? 'tree'",
            (session_id,)).fetchone()
        tree["files"] = {p: [size, mtime, ids[0], sha] for p, (size, mtime, ids, sha) in tree["files"].items()}
        conn.execute("UPDATE rag_index_jobs SET counts = jsonb_set(counts, '{tree}', %s) WHERE job_id = %s",
                     (Jsonb(tree), job_id))

    report = index_repository(db, root, session_name=name, embedder=EMBEDDER)
    assert report.noop and report.files_unchanged == 3
    with db.connection() as conn:
        (files,) = conn.execute("SELECT counts->'tree'->'files' FROM rag_index_jobs WHERE job_id = %s",
                                (report.job_id,)).fetchone()
    assert all(isinstance(entry[2], list) and len(entry[2]) == 2 for entry in files.values())

    _write(root / "docs/p1.md", "# Page 1\n\nText one.\n", mtime_ns=an_hour_ago)
    assert index_repository(db, root, session_name=name, embedder=EMBEDDER).files_indexed == 1


# -- 5. the files are read under the session's lock -----------------------------------------------------------


def _lock_is_held(db: Database, session_id: str) -> bool:
    with db.connection() as conn:
        got = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (job_lock_key(session_id),)).fetchone()
        if got and got[0]:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (job_lock_key(session_id),))
            return False
    return True


def test_a_job_reads_the_files_under_the_sessions_lock(db: Database, tmp_path: Path, name: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Run A reads the folder; the file changes; run B indexes the change and commits; A then took the lock and
    wrote the older state it had read over B's: the index went back to an edit the user had already seen
    indexed. Read under the lock, A's read and A's write are one step: B is refused until A is done."""
    root = tmp_path / "repo"
    page = _write(root / "docs/state.md", "# State\n\nThe answer is alpha.\n")
    index_repository(db, root, session_name=name, embedder=EMBEDDER)
    with db.connection() as conn:
        session_id = get_session(conn, name).rag_session_id
    _write(page, "# State\n\nThe answer is beta.\n")

    real_collect: Callable = service.collect_files
    seen: dict[str, object] = {}

    def collect_then_race(*args, **kwargs):  # type: ignore[no-untyped-def]
        collected = real_collect(*args, **kwargs)
        if seen:  # B's own read
            return collected
        seen["lock held while reading"] = _lock_is_held(db, session_id)
        _write(page, "# State\n\nThe answer is gamma.\n")
        try:
            seen["b"] = index_repository(db, root, session_name=name, embedder=EMBEDDER)
        except IndexingError as exc:
            seen["b"] = exc
        return collected

    monkeypatch.setattr(service, "collect_files", collect_then_race)
    a = index_repository(db, root, session_name=name, embedder=EMBEDDER)
    monkeypatch.undo()

    # before: B said it had indexed gamma, then A's commit put beta back
    assert isinstance(seen["b"], IndexingError) and "another index job" in str(seen["b"])
    assert a.files_indexed == 1 and "beta" in _contents(db, name, "docs/state.md")
    assert seen["lock held while reading"] is True
    again = index_repository(db, root, session_name=name, embedder=EMBEDDER)
    assert not again.noop and "gamma" in _contents(db, name, "docs/state.md")


# -- 2. `--ref` inside another repository's hook ----------------------------------------------------------------




def _tagged(root: Path, text: str) -> Path:
    _write(root / "docs/guide.md", text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    git(root, "tag", "v1")
    return root


def test_index_ref_from_another_repositorys_hook_reads_its_own_repository(db: Database, tmp_path: Path,
                                                                          name: str, lotsman) -> None:
    """A post-commit hook in a worktree exports GIT_DIR and GIT_INDEX_FILE of its repository: `lotsman index
    PATH --ref v1` run from it indexed the hook's repository's v1 under PATH's name."""
    mine = _tagged(tmp_path / "mine", "# Guide\n\nThe retry budget is seven (mine).\n")
    other = _tagged(tmp_path / "other", "# Guide\n\nThe retry budget is three (the hook's repository).\n")
    hook_env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other),
                "GIT_INDEX_FILE": str(other / ".git/index"), "GIT_PREFIX": ""}
    done = lotsman("index", str(mine), "--ref", "v1", "--session", name, "--embedder", "fake", **hook_env)
    assert done.returncode == 0, done.stderr
    assert git(mine, "rev-parse", "v1")[:12] in done.stdout
    text = _contents(db, name, "docs/guide.md")
    assert "seven (mine)" in text and "hook's repository" not in text


# -- a no-op re-index loads only what the check needs --------------------------------------------------------


def test_a_noop_reindex_loads_neither_numpy_nor_the_connection_pool(db: Database, tmp_path: Path, name: str,
                                                                   pg_data_dir: Path) -> None:
    """The no-op check reads job rows and stats files: pgvector's types (numpy) and psycopg_pool were ~0.1 s
    of a 0.4 s CPU no-op (fastapi-ru) that it never used."""
    import sys

    from tests.integration.conftest import cli_env

    root = tmp_path / "repo"
    _write(root / "docs/a.md", "# A\n\nA page.\n")
    index_repository(db, root, session_name=name, embedder=EMBEDDER)
    code = ("import sys; from graph.cli import main; code = main(['index', sys.argv[1], '--session', sys.argv[2]]); "
            "print(code, sorted(m for m in ('numpy', 'psycopg_pool') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(root), name], capture_output=True, text=True,
                          env=cli_env(pg_data_dir), timeout=120)
    assert "nothing changed since the last index job" in done.stdout, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0 []"
