"""`RagRepository`: the retrieval contract of seed 001 over one session's chunk table (reads only)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from psycopg import errors as pg_errors
from psycopg.rows import dict_row

from stores.database import Database
from stores.errors import LaneBudgetExceeded
from stores.layers import Layer
from stores.sessions import RagSession
from stores.statements import RetrievalStatementBuilder, RetrieveFilters, vector_literal

HNSW_EF_SEARCH = 200
"""HNSW candidate list per vector query (with `hnsw.iterative_scan = relaxed_order`). Chosen by measured
recall against an exact scan on the standard library (62k rows, 24.7k vectors, 20 questions, top 60):
ef_search 40 → 0.975, 100 → 0.977, 200 → 0.991, 400 → 0.998, at 9–36 ms each on the shared 2 cores (the
differences in latency were within noise); `make bench` (`scale`) re-measures it at 100k rows."""


class RagRepository:
    """Session-scoped reads: ranked retrieval, exact files, path substrings, lexical code, catalogs."""

    def __init__(self, db: Database, *, statement_budget_ms: int | None = None) -> None:
        """
        Args:
            statement_budget_ms: PostgreSQL cancels a read that runs longer (`statement_timeout`) and
                `LaneBudgetExceeded` is raised; None → no budget.
        """
        self.db = db
        self.statement_budget_ms = statement_budget_ms
        self.lexical_rank_cap: int | None = None
        """Lexical matches ranked per set in `retrieve` (None → all); `GraphDeps` sets it for large sessions."""
        self.scope_after_match = False
        """Lexical match sets from the GIN index alone, scope checked after (`RetrievalStatementBuilder`);
        `GraphDeps` sets it for a session that holds most of its table."""

    def _builder(self, session: RagSession) -> RetrievalStatementBuilder:
        return RetrievalStatementBuilder(session.table, scope_after_match=self.scope_after_match)

    def _fetch(self, stmt, params: dict[str, Any], *, vector: bool = False) -> list[dict[str, Any]]:
        try:
            rows = self._execute(stmt, params, vector=vector)
        except pg_errors.QueryCanceled:
            raise LaneBudgetExceeded(f"a retrieval statement ran past its {self.statement_budget_ms} ms budget "
                                     "and was cancelled") from None
        for row in rows:
            row["metadata"] = row.get("metadata") or {}
        return rows

    def _execute(self, stmt, params: dict[str, Any], *, vector: bool) -> list[dict[str, Any]]:
        with self.db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            settings = [f"SET LOCAL statement_timeout = {int(self.statement_budget_ms)}"] \
                if self.statement_budget_ms else []
            if vector:
                # Filtered HNSW scans keep going until enough rows pass the filters (pgvector >= 0.8).
                settings += ["SET LOCAL hnsw.iterative_scan = relaxed_order",
                             f"SET LOCAL hnsw.ef_search = {HNSW_EF_SEARCH}"]
            if settings:  # one round trip for all of them
                cur.execute("; ".join(settings))
            # Never a prepared statement: a generic plan cannot fold lotsman_or_tsquery(…) into a constant,
            # so the GIN index goes unused and p95 jumps to seq-scan times after the fifth call.
            cur.execute(stmt, params, prepare=False)
            return cur.fetchall()

    def retrieve(
        self, session: RagSession, *, query_embedding: Sequence[float] | None, query_text: str,
        filters: RetrieveFilters | None = None, limit: int = 8, candidates: int = 80,
        stop_lexemes: Sequence[str] = (), exact: bool = False,
    ) -> list[dict[str, Any]]:
        """Seed 001 `retrieve`: rows with `prefer_bonus`, `test_penalty`, `layer_rank`, `lexical_rank`,
        `structural_rank`, `distance` (and `lexical_score`), in the seed's order; `exact` scans the
        session's vectors exactly instead of searching the shared HNSW index."""
        stmt, params = self._builder(session).build_retrieve(
            session.rag_session_id, query_embedding, query_text, filters or RetrieveFilters(),
            limit=limit, candidates=candidates, stop_lexemes=stop_lexemes, exact=exact,
            rank_cap=self.lexical_rank_cap,
        )
        if not params:
            return []
        return self._fetch(stmt, params, vector=query_embedding is not None and not exact)

    def distances(self, session: RagSession, ids: Sequence[str], query_embedding: Sequence[float]) -> dict[str, float]:
        """Cosine distance of each of these rows (by id) to the query, for rows with a vector: what the
        learned ranker reads for candidates that only the lexical or path lanes found (primary-key look-ups,
        no index scan)."""
        if not ids:
            return {}
        rows = self._fetch(
            f'SELECT id::text AS id, (embedding <=> %(qvec)s::vector) AS distance FROM "{session.table}" '
            "WHERE id = ANY(%(ids)s::uuid[]) AND rag_session_id = %(sid)s AND embedding IS NOT NULL",
            {"ids": list(ids), "sid": session.rag_session_id, "qvec": vector_literal(query_embedding)},
        )
        return {r["id"]: float(r["distance"]) for r in rows}

    def retrieve_exact_files(self, session: RagSession, paths: Sequence[str], *, layers: Sequence[str] = (),
                             limit: int = 50) -> list[dict[str, Any]]:
        """Rows of exactly these paths (normalised; empty paths dropped; no SQL when none remain)."""
        built = RetrievalStatementBuilder(session.table).build_exact_files(
            session.rag_session_id, paths, layers, limit)
        return self._fetch(*built) if built else []

    def retrieve_chunks_by_path_substrings(self, session: RagSession, substrings: Sequence[str], *,
                                           layers: Sequence[str] = (), limit: int = 50) -> list[dict[str, Any]]:
        """Rows whose path contains a substring (`%`, `_`, `\\` literal); no SQL without substrings."""
        built = RetrievalStatementBuilder(session.table).build_path_substrings(
            session.rag_session_id, substrings, layers, limit)
        return self._fetch(*built) if built else []

    def retrieve_overlapping(self, session: RagSession, spans: Sequence[tuple[str, int, int]], *,
                             layers: Sequence[str] = (), limit: int = 50) -> list[dict[str, Any]]:
        """Rows that overlap one of `spans` (path, first line, last line), by path and line; no SQL without
        spans."""
        built = RetrievalStatementBuilder(session.table).build_overlapping(
            session.rag_session_id, spans, layers, limit)
        return self._fetch(*built) if built else []

    def retrieve_lexical_code(self, session: RagSession, query_text: str, *, limit: int = 20,
                              layers: Sequence[str] = (Layer.C0_SOURCE_CHUNKS.value,),
                              names: Sequence[str] = (), stop_lexemes: Sequence[str] = ()
                              ) -> list[dict[str, Any]]:
        """Lexical code rows (seed 001: C0 by default); no SQL when the query has no terms."""
        built = self._builder(session).build_lexical_code(
            session.rag_session_id, query_text, limit, layers, names, stop_lexemes)
        return self._fetch(*built) if built else []

    def frequent_lexemes(self, session: RagSession, max_share: float = 0.3, min_files: int = 20) -> list[str]:
        """Lexemes found in more than `max_share` of the session's files (none for small sessions, where
        shares are noise). The lexical lane leaves them out of its query, as BM25's IDF would."""
        rows = self._fetch(
            f"""WITH r AS (SELECT path, tsv FROM "{session.table}" WHERE rag_session_id = %(sid)s AND generation =
                    (SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s)),
                 n AS (SELECT count(DISTINCT path) AS files FROM r)
            SELECT l.lexeme AS word FROM r, unnest(r.tsv) AS l(lexeme, positions, weights), n
            WHERE n.files >= %(min_files)s
            GROUP BY l.lexeme, n.files HAVING count(DISTINCT r.path) > %(share)s * n.files""",
            {"sid": session.rag_session_id, "min_files": min_files, "share": max_share},
        )
        return sorted(r["word"] for r in rows)

    def absent_terms(self, session: RagSession, words: Sequence[str]) -> list[str]:
        """The words that occur nowhere in the session's index (compared as stemmed lexemes: the whole
        token, or the parts of `API-key` / `os.path` together in one row; words that stem to nothing are
        never reported)."""
        words = [w for w in dict.fromkeys(words) if w.strip()][:16]
        if not words:
            return []
        rows = self._fetch(
            f"""SELECT w FROM unnest(%(words)s::text[]) AS w
            WHERE numnode(plainto_tsquery('russian', translate(w, '-.', '  '))) > 0 AND NOT EXISTS (
                SELECT 1 FROM "{session.table}" c WHERE c.rag_session_id = %(sid)s AND c.generation =
                    (SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s)
                AND (c.tsv @@ plainto_tsquery('russian', translate(w, '-.', '  '))
                     OR c.tsv @@ plainto_tsquery('russian', w)))""",
            {"sid": session.rag_session_id, "words": words},
        )
        return [r["w"] for r in rows]

    def symbol_names(self, session: RagSession) -> set[str]:
        """Lower-cased short and qualified names of the session's C1 symbols (for the code plan)."""
        rows = self._fetch(
            f'SELECT DISTINCT lower(metadata_json->>\'name\') AS name, lower(metadata_json->>\'qname\') AS qname '
            f'FROM "{session.table}" WHERE rag_session_id = %(sid)s AND layer = %(layer)s AND generation = '
            "(SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s)",
            {"sid": session.rag_session_id, "layer": Layer.C1_SYMBOL_CATALOG.value},
        )
        names: set[str] = set()
        for r in rows:
            names.update(x for x in (r["name"], r["qname"]) if x)
        return names

    def catalog_rows(self, session: RagSession, layers: Sequence[str]) -> list[dict[str, Any]]:
        """Titles and metadata of catalog-like rows (the alias index is built from them)."""
        return self._fetch(
            f'SELECT path, layer, title, metadata_json AS metadata FROM "{session.table}" '
            "WHERE rag_session_id = %(sid)s AND layer = ANY(%(layers)s) AND generation = "
            "(SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s)",
            {"sid": session.rag_session_id, "layers": list(layers)},
        )

    def estimated_rows(self, session: RagSession) -> tuple[int, int]:
        """(the session's rows, its chunk table's rows) by the planner's statistics: the table's `reltuples`
        and the session's share of them among the most common values of `rag_session_id` (`pg_stats`);
        (0, 0) for a table not analysed yet, (0, n) for a session that is not among them."""
        rows = self._fetch(
            "SELECT greatest(t.reltuples, 0)::bigint AS total, coalesce((SELECT m.f FROM pg_stats s, "
            "unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS m(v, f) "
            "WHERE s.schemaname = current_schema() AND s.tablename = %(t)s AND s.attname = 'rag_session_id' "
            "AND m.v = %(sid)s), 0) AS share FROM pg_class t WHERE t.oid = to_regclass(%(qt)s)",
            {"t": session.table, "qt": f'"{session.table}"', "sid": session.rag_session_id},
        )
        if not rows:
            return 0, 0
        total = int(rows[0]["total"])
        return round(total * float(rows[0]["share"])), total

    def embedded_rows(self, session: RagSession) -> int:
        """How many rows of the session's active generation carry a vector."""
        rows = self._fetch(
            f'SELECT count(*) AS n FROM "{session.table}" WHERE rag_session_id = %(sid)s AND embedding IS NOT NULL '
            "AND generation = (SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s)",
            {"sid": session.rag_session_id},
        )
        return int(rows[0]["n"]) if rows else 0

    def present_layers(self, session: RagSession) -> frozenset[str]:
        """The layers that hold rows in the session's active generation."""
        rows = self._fetch(
            f'SELECT DISTINCT layer FROM "{session.table}" WHERE rag_session_id = %(sid)s AND generation = '
            "(SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s)",
            {"sid": session.rag_session_id},
        )
        return frozenset(r["layer"] for r in rows)

    def indexed_paths(self, session: RagSession) -> list[str]:
        rows = self._fetch(
            f'SELECT DISTINCT path FROM "{session.table}" WHERE rag_session_id = %(sid)s AND generation = '
            "(SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s) ORDER BY path",
            {"sid": session.rag_session_id},
        )
        return [r["path"] for r in rows]

    # Async twins: psycopg's sync driver releases the GIL on I/O; a thread keeps the event loop free.
    async def aretrieve(self, session: RagSession, **kwargs: Any) -> list[dict[str, Any]]:
        return await asyncio.to_thread(lambda: self.retrieve(session, **kwargs))
