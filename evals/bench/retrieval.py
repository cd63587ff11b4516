"""Section `retrieval`: the full adapter vs a plain `PGVectorStore` search, same data, same query vectors.

Data: the fastapi-ru `use` session's real rows (layers, paths, titles, Russian/English content, metadata,
spans; `tsv` is generated) replicated into a dedicated session up to 10k and then 100k rows. Copy 0 keeps
the real paths, copies 1..N get a `copyN/` prefix and every embedding gets a small random perturbation
(re-normalised), so no two rows are identical. The HNSW index of `rag_chunks_d512` is dropped during the
COPY and rebuilt after it, and the synthetic rows are removed at the end.

Queries: ~30 Russian and English questions; routes and plans come from the real session's router
(`resolve_plan(router.route(q))`, plus the code plan), as the graph computes them. Both sides get the same
precomputed `use` query vectors (the adapter through an embedder that returns them), so the comparison is
SQL + Python on each side; the model's query-embedding time is printed separately.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from psycopg import sql

from evals.bench.common import (
    Report,
    copy_binary,
    explain,
    fmt_lat,
    hnsw_index,
    ratio,
    sqlalchemy_url,
    summary,
    uses_index,
    vector_literal,
    verdict,
)
from evals.bench.texts import QUESTIONS

SESSION = "bench-retrieval"
SIZES = (10_000, 100_000)
QUICK_SIZES = (3_000, 10_000)
ROUNDS, QUICK_ROUNDS = 3, 1
NOISE = 0.01
"""Per-dimension standard deviation of the perturbation (≈0.23 in norm before re-normalising)."""
P95_TARGET_MS = 50.0
RATIO_TARGET = 2.0
COLUMNS = ("rag_session_id", "generation", "layer", "path", "title", "content", "metadata_json", "span_start",
           "span_end", "blob_sha", "embedding")
KINDS = ("text", "int4", "text", "text", "text", "text", "jsonb", "int4", "int4", "text", "vector")


class FixedQueryEmbeddings(Embeddings):
    """Returns precomputed query vectors (falls back to the wrapped model for unknown texts)."""

    def __init__(self, inner: Any, vectors: dict[str, list[float]]) -> None:
        self.inner, self.vectors = inner, vectors
        self.name, self.dim = inner.name, inner.dim

    def embed_query(self, text: str) -> list[float]:
        vec = self.vectors.get(text)
        return vec if vec is not None else self.inner.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)


def _real_rows(db: Any, session: Any) -> list[tuple]:
    with db.connection() as conn:
        return conn.execute(sql.SQL(
            "SELECT layer, path, title, content, metadata_json, span_start, span_end, blob_sha, embedding "
            "FROM {t} WHERE rag_session_id = %s AND generation = %s ORDER BY path, span_start, layer"
        ).format(t=sql.Identifier(session.table)),
            (session.rag_session_id, session.active_generation)).fetchall()


def _synthetic(real: list[tuple], sid: str, start: int, stop: int, rng: np.random.Generator):
    n = len(real)
    for i in range(start, stop):
        copy = i // n
        layer, path, title, content, meta, s0, s1, sha, emb = real[i % n]
        if emb is not None:
            v = np.asarray(emb, dtype=np.float32)
            if copy:
                v = v + rng.normal(0.0, NOISE, v.shape[0]).astype(np.float32)
                v /= np.linalg.norm(v)
            emb = v
        new_path = path if copy == 0 else f"copy{copy}/{path}"
        yield (sid, 1, layer, new_path, title, content, meta, s0, s1, sha, emb)


def _plans(db: Any, real_session: Any, questions: list[str]) -> list[dict[str, Any]]:
    from nodes.intent_routing import IntentRouter
    from nodes.intent_routing.alias_index import load_alias_index
    from nodes.retrieval_policy import resolve_code_plan, resolve_plan
    from stores.repository import RagRepository

    repo = RagRepository(db)
    router = IntentRouter(llm=None, aliases=load_alias_index(repo, real_session))
    symbols = frozenset(repo.symbol_names(real_session))
    out = []
    for q in questions:
        route = router.route(q)
        out.append({"q": q, "route": route, "plan": resolve_plan(route),
                    "code_plan": resolve_code_plan(route, symbols)})
    return out


def _explain_adapter(conn: Any, table: str, sid: str, item: dict[str, Any], vec: list[float],
                     stop: list[str]) -> list[str]:
    from nodes.context_retrieval.adapter import CANDIDATES, plan_filters
    from stores.repository import HNSW_EF_SEARCH
    from stores.statements import RetrievalStatementBuilder

    stmt, params = RetrievalStatementBuilder(table).build_retrieve(
        sid, vec, item["q"], plan_filters(item["plan"]), limit=CANDIDATES, candidates=CANDIDATES,
        stop_lexemes=stop)
    return explain(conn, stmt, params, setup=("SET LOCAL hnsw.iterative_scan = relaxed_order",
                                              f"SET LOCAL hnsw.ef_search = {HNSW_EF_SEARCH}"))


def run(report: Report, ctx: Any) -> dict[str, Any]:
    from langchain_postgres import PGEngine, PGVectorStore

    from nodes.context_retrieval.adapter import RetrievalAdapter
    from stores.embedders import make_embedder
    from stores.repository import RagRepository
    from stores.sessions import create_session, get_session

    out = report.section("retrieval", "4. retrieval: full adapter vs plain PGVectorStore, same rows")
    db, opts = ctx.db, ctx.opts
    sizes = QUICK_SIZES if opts.quick else SIZES
    rounds = QUICK_ROUNDS if opts.quick else ROUNDS
    questions = list(QUESTIONS[:12] if opts.quick else QUESTIONS)
    use = make_embedder("use", threads=2)
    real_session = ctx.use_session()
    items = _plans(db, real_session, questions)
    embed_ms, vectors = [], {}
    for q in questions:
        t0 = time.perf_counter()
        vectors[q] = use.embed_query(q)
        embed_ms.append((time.perf_counter() - t0) * 1000)
    out["query_embedding_ms"] = summary(embed_ms)
    real = _real_rows(db, real_session)
    if not real:
        raise RuntimeError(f"session {real_session.name} has no rows")
    with db.connection() as conn:
        bench = create_session(conn, SESSION, use.name, use.dim)
        conn.execute("UPDATE rag_sessions SET active_generation = 1 WHERE rag_session_id = %s",
                     (bench.rag_session_id,))
        conn.commit()
        bench = get_session(conn, SESSION)
        index_name, index_def = hnsw_index(conn, bench.table) or (None, None)
    if index_name is None:
        raise RuntimeError(f"{bench.table} has no HNSW index")
    routes = Counter(i["route"].route_label for i in items)
    out.update(real_rows=len(real), questions=len(questions), rounds=rounds, noise_sd=NOISE,
               routes=dict(routes),
               plain="PGVectorStore.similarity_search_by_vector(k=10, filter={rag_session_id: $eq})")
    report.say(f"{len(real)} real rows of '{real_session.name}' replicated into session '{SESSION}'; "
               f"{len(questions)} questions × {rounds} rounds, adapter and plain search alternating; "
               f"code plan on {sum(1 for i in items if i['code_plan'])} of them")
    report.say(f"query embedding with use (not in the figures below): {fmt_lat(out['query_embedding_ms'])}")
    from stores.repository import HNSW_EF_SEARCH

    report.say(f"adapter: ranking SQL with hnsw.ef_search={HNSW_EF_SEARCH} + iterative scan, code lane, fusion, "
               "gate, cap; plain: PGVectorStore defaults (ef_search 40), top 10")

    engine = PGEngine.from_connection_string(url=sqlalchemy_url(ctx.url))
    rng = np.random.default_rng(7)
    repo = RagRepository(db)
    loaded = 0
    try:
        for size in sizes:
            stage: dict[str, Any] = {}
            t0 = time.perf_counter()
            with db.connection() as conn:
                conn.execute(sql.SQL("DROP INDEX IF EXISTS {i}").format(i=sql.Identifier(index_name)))
                while loaded < size:
                    n = min(10_000, size - loaded)
                    rows = _synthetic(real, bench.rag_session_id, loaded, loaded + n, rng)
                    copy_binary(conn, bench.table, COLUMNS, KINDS, rows)
                    loaded += n
                    report.note(f"retrieval: loaded {loaded} rows")
            stage["copy_s"] = round(time.perf_counter() - t0, 2)
            t0 = time.perf_counter()
            with db.connection() as conn:
                conn.execute("SET maintenance_work_mem = '1GB'")
                conn.execute("SET max_parallel_maintenance_workers = 1")
                conn.execute(index_def)
                conn.execute(sql.SQL("ANALYZE {t}").format(t=sql.Identifier(bench.table)))
                conn.execute("RESET maintenance_work_mem")
                conn.execute("RESET max_parallel_maintenance_workers")
                total_rows = conn.execute(sql.SQL("SELECT count(*) FROM {t}").format(
                    t=sql.Identifier(bench.table))).fetchone()[0]
            stage["index_build_s"] = round(time.perf_counter() - t0, 2)
            stage["table_rows"] = total_rows
            stop, stage["stop_lexemes_s"] = _timed_stop(repo, bench)
            adapter = RetrievalAdapter(repo, FixedQueryEmbeddings(use, vectors), stop_lexemes=stop)
            store = PGVectorStore.create_sync(
                engine, table_name=bench.table, embedding_service=use, id_column="id",
                content_column="content", embedding_column="embedding", metadata_json_column="metadata_json",
                metadata_columns=["rag_session_id", "layer", "path"])
            flt = {"rag_session_id": {"$eq": bench.rag_session_id}}

            def full(item: dict[str, Any], adapter=adapter) -> Any:
                route = item["route"]
                return adapter.fetch_rows(bench, item["plan"], item["code_plan"], item["q"],
                                          file_names=route.anchors.file_names, terms=route.target_terms,
                                          top_k=12, token_cap=4096)

            def plain(item: dict[str, Any], store=store, flt=flt) -> Any:
                return store.similarity_search_by_vector(vectors[item["q"]], k=10, filter=flt)

            for item in items:  # warm-up round
                full(item)
                plain(item)
            lat_full: list[float] = []
            lat_plain: list[float] = []
            lanes: dict[str, list[float]] = {}
            plain_hits = []
            for r in range(rounds):
                for k, item in enumerate(items):
                    order = (full, plain) if (k + r) % 2 == 0 else (plain, full)
                    for fn in order:
                        t = time.perf_counter()
                        res = fn(item)
                        ms = (time.perf_counter() - t) * 1000
                        if fn is full:
                            lat_full.append(ms)
                            for lane, v in res.timings_ms.items():
                                lanes.setdefault(lane, []).append(v)
                        else:
                            lat_plain.append(ms)
                            plain_hits.append(len(res))
            stage["adapter_ms"] = summary(lat_full)
            stage["plain_ms"] = summary(lat_plain)
            stage["adapter_lanes_ms"] = {k: summary(v) for k, v in lanes.items()}
            stage["plain_rows_returned_min"] = min(plain_hits)
            stage["ratio_p50"] = ratio(stage["adapter_ms"]["p50"], stage["plain_ms"]["p50"])
            stage["ratio_p95"] = ratio(stage["adapter_ms"]["p95"], stage["plain_ms"]["p95"])
            with db.connection() as conn:
                first = items[0]
                stage["explain_item"] = first["q"]
                stage["explain_adapter"] = _explain_adapter(conn, bench.table, bench.rag_session_id, first,
                                                            vectors[first["q"]], stop)
                stage["explain_adapter_uses_hnsw"] = uses_index(stage["explain_adapter"], index_name)
                plain_plan = explain(conn, sql.SQL(
                    "SELECT id FROM {t} WHERE rag_session_id = %s ORDER BY embedding <=> %s::vector LIMIT 10"
                ).format(t=sql.Identifier(bench.table)),
                    (bench.rag_session_id, vector_literal(vectors[first["q"]])))
                stage["explain_plain_uses_hnsw"] = uses_index(plain_plan, index_name)
            out[str(size)] = stage
            _print_stage(report, size, stage, last=size == sizes[-1])
            report.save()
    finally:
        engine._run_as_sync(engine._pool.dispose())
        _cleanup(ctx, bench, index_name, index_def)
    return out


def _timed_stop(repo: Any, session: Any) -> tuple[list[str], float]:
    t0 = time.perf_counter()
    stop = repo.frequent_lexemes(session)
    return stop, round(time.perf_counter() - t0, 2)


def _print_stage(report: Report, size: int, s: dict[str, Any], *, last: bool) -> None:
    report.say(f"{size:>7,} rows in the session ({s['table_rows']:,} in the table; COPY {s['copy_s']:.1f} s, "
               f"HNSW build {s['index_build_s']:.1f} s):")
    report.say(f"  adapter fetch_rows   {fmt_lat(s['adapter_ms'])}")
    report.say(f"  plain PGVectorStore  {fmt_lat(s['plain_ms'])}  "
               f"(≥ {s['plain_rows_returned_min']} rows each)")
    report.say(f"  ratio adapter/plain  p50 {s['ratio_p50']:.2f}×  p95 {s['ratio_p95']:.2f}×")
    report.say("  adapter lanes p50/p95 ms: " + ", ".join(
        f"{k} {v['p50']:.1f}/{v['p95']:.1f}" for k, v in s["adapter_lanes_ms"].items()))
    if last:
        ok_abs = s["adapter_ms"]["p95"] <= P95_TARGET_MS
        ok_ratio = s["ratio_p95"] is not None and s["ratio_p95"] <= RATIO_TARGET
        report.say(f"  target adapter p95 ≤ {P95_TARGET_MS:.0f} ms at this size: {verdict(ok_abs)};  "
                   f"p95 ≤ {RATIO_TARGET:.0f}× plain: {verdict(ok_ratio)}")
        report.say(f"  EXPLAIN ANALYZE of the adapter's ranking SQL (vector ∪ lexical candidates) for "
                   f"“{s['explain_item']}” — HNSW used: {s['explain_adapter_uses_hnsw']}; "
                   f"plain search uses HNSW: {s['explain_plain_uses_hnsw']}")
        for line in s["explain_adapter"]:
            report.say(f"    {line}")


def _cleanup(ctx: Any, bench: Any, index_name: str | None, index_def: str | None) -> None:
    """Remove the synthetic rows and rebuild the HNSW index on what remains (a clean table for `ask`)."""
    import psycopg

    db = ctx.db
    with db.connection() as conn:
        if index_name:
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {i}").format(i=sql.Identifier(index_name)))
        conn.execute(sql.SQL("DELETE FROM {t} WHERE rag_session_id = %s").format(
            t=sql.Identifier(bench.table)), (bench.rag_session_id,))
        conn.execute("DELETE FROM rag_sessions WHERE rag_session_id = %s", (bench.rag_session_id,))
    with psycopg.connect(ctx.url, autocommit=True) as conn:
        conn.execute(sql.SQL("VACUUM ANALYZE {t}").format(t=sql.Identifier(bench.table)))
    if index_def:
        with db.connection() as conn:
            conn.execute(index_def)
