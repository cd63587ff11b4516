"""A file that becomes empty loses its rows (review of issue 37, item 17).

A file that turns unindexable (a syntax error mid-edit, binary) keeps its last good rows; an emptied file was
treated the same, so answers went on citing lines that no longer exist. Empty is what the file now says.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.indexing.service import index_changes, index_repository
from stores.sessions import delete_session, find_session, get_session


@pytest.fixture
def name(db: Database) -> Iterator[str]:
    made = f"emptied-{uuid.uuid4().hex[:8]}"
    yield made
    with db.connection() as conn:
        if find_session(conn, made) is not None:
            delete_session(conn, made)


def _rows(db: Database, name: str, path: str) -> int:
    with db.connection() as conn:
        session = get_session(conn, name)
        row = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND generation = %s "
                                   "AND path = %s").format(sql.Identifier(session.table)),
                           (session.rag_session_id, session.active_generation, path)).fetchone()
    return int(row[0]) if row else 0


def _folder(root: Path) -> Path:
    salt = uuid.uuid4().hex
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/tool.py").write_text(f'def harbour_pilot():\n    """Board by the ladder. {salt}"""\n    return 1\n')
    (root / "docs").mkdir()
    (root / "docs/guide.md").write_text(f"# Guide\n\nThe pilot boards by the ladder. {salt}\n")
    (root / "docs/keep.md").write_text(f"# Keep\n\nStays. {salt}\n")
    return root


@pytest.mark.parametrize("emptied", [b"", b"  \n\n"], ids=["empty", "whitespace"])
@pytest.mark.parametrize("path", ["pkg/tool.py", "docs/guide.md"])
def test_a_file_that_became_empty_loses_its_rows(db: Database, tmp_path: Path, name: str, path: str,
                                                 emptied: bytes) -> None:
    root = _folder(tmp_path / "repo")
    index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    assert _rows(db, name, path) > 0
    (root / path).write_bytes(emptied)
    report = index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    assert report.kind == "changes" and report.files_deleted == 1
    assert _rows(db, name, path) == 0  # before: its last rows stayed, cited
    assert _rows(db, name, "docs/keep.md") > 0


def test_index_changes_of_an_emptied_file_drops_its_rows(db: Database, tmp_path: Path, name: str) -> None:
    """The same through a diff whose caller names the files (`index_changes`)."""
    root = _folder(tmp_path / "repo")
    index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    (root / "pkg/tool.py").write_bytes(b"")
    with db.connection() as conn:
        session = get_session(conn, name)
    report = index_changes(db, session, root, ["pkg/tool.py"], [], FakeEmbeddings(), parse_workers=0)
    assert report.files_deleted == 1 and _rows(db, name, "pkg/tool.py") == 0


def test_a_file_that_no_longer_parses_keeps_its_rows(db: Database, tmp_path: Path, name: str) -> None:
    """Unchanged: bad input mid-edit never loses what is indexed."""
    root = _folder(tmp_path / "repo")
    index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    before = _rows(db, name, "pkg/tool.py")
    (root / "pkg/tool.py").write_text("def broken(:\n")
    index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    assert _rows(db, name, "pkg/tool.py") == before
