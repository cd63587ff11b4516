"""Identifier words on the lexical side (issue 11, schema v7): parts of dotted, CamelCase and snake_case
names match a question's words, the whole names still match, and a database of the previous version is
upgraded in place without losing a row."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.repository import RagRepository
from stores.schema import SCHEMA_VERSION, _refresh_view, ensure_space, ensure_tables
from stores.sessions import RagSession
from tests.integration.conftest import indexed_session

DOC = """# Durations and files

A duration field is declared as datetime.timedelta and serialised as seconds.

## Sending files

Return a FileResponse to stream a file from disk; structlog.processors.JSONRenderer writes JSON lines.
The helper get_logger_factory builds the logger.
"""

OTHER = """# Unrelated

Background tasks run after the reply was sent.
"""

V6_TSV = """setweight(to_tsvector('russian', coalesce(title, '')), 'A')
        || setweight(to_tsvector('russian', translate(path, '/._-', '    ')), 'B')
        || to_tsvector('russian', left(content, 60000))"""
"""`tsv` as schema v6 generated it (no identifier words)."""


@pytest.fixture(scope="module")
def session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RagSession]:
    root: Path = tmp_path_factory.mktemp("identifiers")
    (root / "durations.md").write_text(DOC, encoding="utf-8")
    (root / "other.md").write_text(OTHER, encoding="utf-8")
    yield from indexed_session(db, root, "it-ident", FakeEmbeddings())


def _lexical_paths(db: Database, session: RagSession, query: str) -> set[str]:
    rows = RagRepository(db).retrieve(session, query_embedding=None, query_text=query, limit=20)
    return {r["path"] for r in rows if r["lexical_rank"] == 0}


@pytest.mark.parametrize("query", [
    "timedelta",            # the last part of a dotted name
    "How is a timedelta serialised?",
    "file response",        # the humps of a CamelCase name
    "FileResponse",         # ... and the whole name still
    "JSONRenderer",         # a CamelCase part of a dotted name, whole
    "json renderer",
    "get_logger_factory",   # snake_case: its parts and the whole name
])
def test_words_inside_identifiers_match_lexically(db: Database, session: RagSession, query: str) -> None:
    assert _lexical_paths(db, session, query) == {"durations.md"}


def test_the_whole_snake_case_name_is_one_lexeme(db: Database, session: RagSession) -> None:
    """`get_logger_factory` in a question matches the name as one word, not just its common parts."""
    with db.connection() as conn:
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND tsv @@ to_tsquery('simple', %s)")
            .format(sql.Identifier(session.table)), (session.rag_session_id, "getloggerfactori")).fetchone()
    assert row is not None and row[0] > 0


def test_upgrade_from_v6_recomputes_tsv_in_place(db: Database) -> None:
    """A table created by schema v6 keeps its rows (and vectors) and gains the identifier words; the
    sessions' stoplists, counted over the old tsv, are cleared so they are counted again."""
    dim = 5  # a space of its own
    with db.connection() as conn:
        table = ensure_space(conn, dim)
        t = sql.Identifier(table)
        conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN tsv, ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
                             + V6_TSV + ") STORED").format(t))
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(sql.Identifier(f"{table}_tsv"), t))
        sid = f"up7-{uuid.uuid4().hex[:8]}"
        conn.execute("INSERT INTO rag_sessions (rag_session_id, name, embedder, embedding_dim, stop_lexemes) "
                     "VALUES (%s, %s, 'fake', %s, %s)", (sid, sid, dim, ["fastapi"]))
        conn.execute(sql.SQL("INSERT INTO {} (rag_session_id, generation, layer, path, title, content, span_start, "
                             "span_end, blob_sha, embedding) VALUES (%s, 0, 'D0_DOC_CHUNKS', 'a.md', 'Durations', "
                             "%s, 1, 3, 'sha', '[1,0,0,0,0]')").format(t), (sid, DOC))
        assert conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE tsv @@ to_tsquery('russian', 'timedelta')")
                            .format(t)).fetchone() == (0,)
        conn.execute("UPDATE rag_schema_version SET version = 6")
        conn.commit()
        assert ensure_tables(conn) == SCHEMA_VERSION
        matched = conn.execute(sql.SQL("SELECT path, content, embedding::text FROM {} WHERE tsv @@ "
                                       "to_tsquery('russian', 'timedelta')").format(t)).fetchall()
        gin = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", (f"{table}_tsv",)).fetchone()
        stop = conn.execute("SELECT stop_lexemes FROM rag_sessions WHERE rag_session_id = %s", (sid,)).fetchone()
        assert ensure_tables(conn) == SCHEMA_VERSION  # idempotent once upgraded
        conn.execute("DELETE FROM rag_sessions WHERE rag_session_id = %s", (sid,))
        conn.execute("DROP VIEW IF EXISTS rag_chunks")
        conn.execute(sql.SQL("DROP TABLE {}").format(t))
        _refresh_view(conn)
    assert matched == [("a.md", DOC, "[1,0,0,0,0]")]
    assert gin is not None and "gin (tsv)" in gin[0]
    assert stop == (None,)
