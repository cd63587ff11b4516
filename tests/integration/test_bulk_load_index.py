"""Issue 13: a large load into a small table builds the HNSW index after the load instead of row by row.

The table must never be left without its index: not after a load, not after a failed one, and a job killed
in between is healed by the next job. Vector search answers the same with the rebuilt index.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from psycopg import sql

from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.indexing import service
from stores.indexing.service import index_repository
from stores.schema import chunk_table, drop_vector_index, has_vector_index
from stores.sessions import delete_session

DIM = 48
"""A table of its own (no other test writes 48-dim vectors), so that its size is known here."""


class Exploding(FakeEmbeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedder exploded mid-load")


def corpus(root: Path, files: int) -> Path:
    tag = uuid.uuid4().hex
    for i in range(files):
        path = root / "docs" / f"page{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Page {i} {tag}\n\nText about loading {i} {tag}.\n\n## Part\n\nMore text {i}.\n")
    return root


def vector_hits(db: Database, name: str) -> list[str]:
    """The 5 nearest rows of one session by the index (what the vector lane's ORDER BY uses)."""
    with db.connection() as conn:
        sid = conn.execute("SELECT rag_session_id FROM rag_sessions WHERE name = %s", (name,)).fetchone()[0]
        q = FakeEmbeddings(DIM).embed_query("loading text page")
        rows = conn.execute(sql.SQL(
            "SELECT path, layer, span_start FROM {} WHERE rag_session_id = %s AND embedding IS NOT NULL "
            "ORDER BY embedding <=> %s::vector, path, layer, span_start LIMIT 5").format(
                sql.Identifier(chunk_table(DIM))), (sid, str(q))).fetchall()
    return [f"{p}:{layer}:{s}" for p, layer, s in rows]


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "REBUILD_MIN_VECTORS", 5)


def drop(db: Database, *names: str) -> None:
    with db.connection() as conn:
        for name in names:
            delete_session(conn, name)


@pytest.mark.usefixtures("small_threshold")
def test_a_large_load_builds_the_index_after_it_and_a_small_one_maintains_it(db: Database, tmp_path: Path) -> None:
    big, small = f"bulk-big-{uuid.uuid4().hex[:8]}", f"bulk-small-{uuid.uuid4().hex[:8]}"
    try:
        first = index_repository(db, corpus(tmp_path / "big", 12), session_name=big, embedder=FakeEmbeddings(DIM))
        assert "vector_index" in first.timings  # dropped and built again
        with db.connection() as conn:
            assert has_vector_index(conn, chunk_table(DIM))
        # A load smaller than what the table holds keeps the index and inserts into it.
        second = index_repository(db, corpus(tmp_path / "small", 3), session_name=small,
                                  embedder=FakeEmbeddings(DIM))
        assert second.embedded >= service.REBUILD_MIN_VECTORS and "vector_index" not in second.timings
        with db.connection() as conn:
            assert has_vector_index(conn, chunk_table(DIM))
    finally:
        drop(db, big, small)


@pytest.mark.usefixtures("small_threshold")
def test_a_failed_load_leaves_the_index_in_place(db: Database, tmp_path: Path) -> None:
    name = f"bulk-fail-{uuid.uuid4().hex[:8]}"
    try:
        with pytest.raises(RuntimeError, match="exploded mid-load"):
            index_repository(db, corpus(tmp_path, 12), session_name=name, embedder=Exploding(DIM))
        with db.connection() as conn:
            assert has_vector_index(conn, chunk_table(DIM))
    finally:
        drop(db, name)


def test_the_next_job_rebuilds_an_index_a_killed_job_left_dropped(db: Database, tmp_path: Path) -> None:
    name = f"bulk-heal-{uuid.uuid4().hex[:8]}"
    root = corpus(tmp_path, 4)
    try:
        index_repository(db, root, session_name=name, embedder=FakeEmbeddings(DIM))
        before = vector_hits(db, name)
        with db.connection() as conn:  # what a job killed between its drop and its build leaves
            assert drop_vector_index(conn, chunk_table(DIM))
        report = index_repository(db, root, session_name=name, embedder=FakeEmbeddings(DIM))  # nothing changed
        assert report.embedded == 0
        with db.connection() as conn:
            assert has_vector_index(conn, chunk_table(DIM))
        assert vector_hits(db, name) == before
    finally:
        drop(db, name)


def analyze_count(db: Database, at_least: int = 0) -> int:
    """The table's ANALYZE count; waits up to 5 s for `at_least` (backends flush statistics when idle)."""
    deadline = time.monotonic() + 5
    with db.connection() as conn:
        while True:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            n = conn.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = %s",
                             (chunk_table(DIM),)).fetchone()[0]
            if n >= at_least or time.monotonic() > deadline:
                return n
            time.sleep(0.1)


def test_a_large_write_analyzes_the_table_and_a_small_one_leaves_it_to_autovacuum(
        db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next question is planned with the new rows' statistics (without them the planner sorted a large
    session by exact distance instead of using the HNSW index)."""
    big, small = f"bulk-an-{uuid.uuid4().hex[:8]}", f"bulk-an-s-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(service, "ANALYZE_MIN_ROWS", 20)
    try:
        before = analyze_count(db)
        report = index_repository(db, corpus(tmp_path / "big", 12), session_name=big, embedder=FakeEmbeddings(DIM))
        assert report.rows_written >= 20 and "analyze" in report.timings
        assert analyze_count(db, at_least=before + 1) >= before + 1
        report = index_repository(db, corpus(tmp_path / "small", 1), session_name=small, embedder=FakeEmbeddings(DIM))
        assert report.rows_written < 20 and "analyze" not in report.timings
    finally:
        drop(db, big, small)

