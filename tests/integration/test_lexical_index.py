"""The lexical index at schema v8 (issue 13): the pairs query written as a chain matches exactly the rows
the v4 list of every pair matched, and every chunk table's GIN index keeps a short pending list (new
tables, and tables upgraded from v7, whose pending list is merged by the upgrade)."""

from __future__ import annotations

import pytest
from psycopg import sql

from stores.database import Database
from stores.schema import GIN_WITH, SCHEMA_VERSION, _refresh_view, ensure_space, ensure_tables

V4_PAIRS = """CREATE OR REPLACE FUNCTION pg_temp.pairs_v4(q text, stop text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE AS $$
    WITH l AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('russian', q))
               WHERE lexeme <> ALL(coalesce(stop, '{}'::text[])))
    SELECT coalesce(to_tsquery('simple', string_agg(
               '(' || quote_literal(a.lexeme) || ' & ' || quote_literal(b.lexeme) || ')', ' | ')), ''::tsquery)
    FROM l a JOIN l b ON a.lexeme < b.lexeme
$$"""
"""`lotsman_pairs_tsquery` as schema v4 wrote it: every pair of the query's lexemes."""

DOCS = [
    "alpha", "beta", "alpha beta", "alpha gamma", "beta gamma delta", "gamma", "delta epsilon",
    "alpha beta gamma delta epsilon", "epsilon", "zeta eta", "Как работает блокировка потоков",
    "блокировка", "потоки и процессы", "",
]


@pytest.mark.parametrize(("query", "stop"), [
    ("alpha", []),
    ("alpha beta", []),
    ("alpha beta gamma", []),
    ("alpha beta gamma delta epsilon zeta", []),
    ("alpha beta gamma delta epsilon zeta", ["gamma"]),
    ("alpha alpha beta", ["beta"]),
    ("как работает блокировка потоков в процессах", []),
    ("", []),
])
def test_the_chain_matches_the_rows_every_pair_matched(db: Database, query: str, stop: list[str]) -> None:
    with db.connection() as conn:
        conn.execute(V4_PAIRS)
        rows = conn.execute(
            "SELECT d, to_tsvector('russian', d) @@ lotsman_pairs_tsquery(%(q)s, %(stop)s), "
            "to_tsvector('russian', d) @@ pg_temp.pairs_v4(%(q)s, %(stop)s) FROM unnest(%(docs)s::text[]) AS d",
            {"q": query, "stop": stop, "docs": DOCS}).fetchall()
        conn.rollback()
    assert [(d, new) for d, new, _ in rows] == [(d, old) for d, _, old in rows]
    if query == "alpha beta gamma":
        assert {d for d, new, _ in rows if new} == {"alpha beta", "alpha gamma", "beta gamma delta",
                                                    "alpha beta gamma delta epsilon"}


def _gin_options(conn, table: str) -> list[str]:
    row = conn.execute("SELECT reloptions FROM pg_class WHERE oid = to_regclass(%s)", (f"{table}_tsv",)).fetchone()
    return list(row[0] or []) if row else []


def test_new_chunk_tables_keep_a_short_gin_pending_list(db: Database) -> None:
    with db.connection() as conn:
        table = ensure_space(conn, 7)  # a space of its own
        options = _gin_options(conn, table)
        conn.execute("DROP VIEW IF EXISTS rag_chunks")
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
        _refresh_view(conn)
        conn.commit()
    assert options == [GIN_WITH.replace(" ", "")]


def test_upgrade_from_v7_shortens_the_pending_list_and_merges_it(db: Database) -> None:
    with db.connection() as conn:
        table = ensure_space(conn, 6)
        t, ix = sql.Identifier(table), sql.Identifier(f"{table}_tsv")
        conn.execute(sql.SQL("DROP INDEX {}").format(ix))
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(ix, t))  # as v7 created it
        conn.execute("INSERT INTO rag_sessions (rag_session_id, name, embedder, embedding_dim) "
                     "VALUES ('up8', 'up8', 'fake', 6)")
        conn.execute(sql.SQL("INSERT INTO {} (rag_session_id, generation, layer, path, content, span_start, "
                             "span_end, blob_sha) SELECT 'up8', 0, 'D0_DOC_CHUNKS', 'a.md', 'lock number ' || i, "
                             "1, 1, 'sha' FROM generate_series(1, 2000) AS i").format(t))
        conn.execute("UPDATE rag_schema_version SET version = 7")
        conn.commit()
        assert _gin_options(conn, table) == []
        pending = _index_scan_buffers(conn, t)
        assert ensure_tables(conn) == SCHEMA_VERSION
        options = _gin_options(conn, table)
        merged = _index_scan_buffers(conn, t)
        matched = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE tsv @@ 'lock'::tsquery").format(t)).fetchone()
        assert ensure_tables(conn) == SCHEMA_VERSION  # idempotent once upgraded
        conn.execute("DELETE FROM rag_sessions WHERE rag_session_id = 'up8'")
        conn.execute("DROP VIEW IF EXISTS rag_chunks")
        conn.execute(sql.SQL("DROP TABLE {}").format(t))
        _refresh_view(conn)
        conn.commit()
    assert options == [GIN_WITH.replace(" ", "")]
    assert matched == (2000,)
    # merged: a search no longer reads the pending pages, only the metapage and the entry tree
    assert pending > 4 and merged <= 4, (pending, merged)


def _index_scan_buffers(conn, table: sql.Identifier) -> int:
    """Shared buffers the GIN index scan of a one-word search touched."""
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")  # a small table would be read whole
        plan = [r[0] for r in conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT count(*) FROM {} "
                                                   "WHERE tsv @@ 'lock'::tsquery").format(table)).fetchall()]
    scan = next(i for i, line in enumerate(plan) if "Bitmap Index Scan" in line)
    buffers = next(line for line in plan[scan:] if "Buffers:" in line)
    return sum(int(part.split("=")[1]) for part in buffers.split(":")[1].split() if "=" in part)
