"""Section `hnsw`: p50/p95 of a filtered HNSW top-10 cosine query at 10k and 100k synthetic rows.

The rows live in `bench_hnsw_d512`, a copy of the production chunk table (`LIKE rag_chunks_d512 INCLUDING
ALL`: same columns, generated tsvector, btree/GIN/HNSW indexes), filled with random unit vectors spread over
4 sessions; queries filter one session (25% of the rows) exactly as the ranking SQL's vector lane does, with
the repository's settings (`hnsw.iterative_scan = relaxed_order`, `hnsw.ef_search`). Rows are loaded with a
binary COPY with the HNSW index dropped, and the index is built after loading (faster than maintaining it
row by row; the build time is printed). Random vectors are the hardest case for HNSW (no clusters), so the
recall@10 against an exact scan is printed next to the latency.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from psycopg import sql

from evals.bench.common import (
    Report,
    copy_binary,
    explain,
    fmt_lat,
    hnsw_index,
    summary,
    unit_rows,
    uses_index,
    vector_literal,
)

DIM = 512
SESSIONS = 4
QUERY_SESSION = 1
TABLE = "bench_hnsw_d512"
SIZES = (10_000, 100_000)
QUICK_SIZES = (2_000, 10_000)
QUERIES, QUICK_QUERIES = 60, 25
WARMUP = 5
LAYERS = ("D3_SECTION_INDEX", "D4_SEMANTIC_CHUNKS", "C0_SOURCE_CHUNKS", "C1_SYMBOL_CATALOG")
COLUMNS = ("rag_session_id", "generation", "layer", "path", "content", "span_start", "span_end", "blob_sha",
           "embedding")
KINDS = ("text", "int4", "text", "text", "text", "int4", "int4", "text", "vector")

QUERY = ("SELECT path FROM {t} WHERE rag_session_id = %s AND generation = 1 AND embedding IS NOT NULL "
         "ORDER BY embedding <=> %s::vector LIMIT 10")


def _rows(start: int, vectors: np.ndarray):
    for k, vec in enumerate(vectors):
        i = start + k
        s = i % SESSIONS
        yield (f"bench-s{s}", 1, LAYERS[i % len(LAYERS)], f"s{s}/doc{i}.md", f"row {i}", 1, 10, "0" * 40,
               vec)


def run(report: Report, db: Any, opts: Any) -> dict[str, Any]:
    from stores.repository import HNSW_EF_SEARCH
    from stores.schema import ensure_space, ensure_tables

    out = report.section("hnsw", "2. hnsw: filtered top-10 cosine query on synthetic rows (dim 512)")
    sizes = QUICK_SIZES if opts.quick else SIZES
    nq = QUICK_QUERIES if opts.quick else QUERIES
    rng = np.random.default_rng(20240601)
    queries = unit_rows(rng, nq + WARMUP, DIM)
    qlits = [vector_literal(q) for q in queries]
    session_vectors: list[np.ndarray] = []  # the queried session's vectors, for exact top-10
    session_paths: list[str] = []
    with db.connection() as conn:
        ensure_tables(conn)
        ensure_space(conn, DIM)
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=sql.Identifier(TABLE)))
        conn.execute(sql.SQL("CREATE TABLE {t} (LIKE rag_chunks_d512 INCLUDING ALL)").format(
            t=sql.Identifier(TABLE)))
        conn.commit()
        index_name, index_def = hnsw_index(conn, TABLE) or (None, None)
    if index_name is None:
        raise RuntimeError(f"{TABLE} has no HNSW index (rag_chunks_d512 should have one)")
    out.update(table=TABLE, sessions=SESSIONS, filter_share=1 / SESSIONS, index=index_def,
               ef_search=HNSW_EF_SEARCH, iterative_scan="relaxed_order", index_built="after loading")
    report.say(f"table {TABLE} = LIKE rag_chunks_d512 (same indexes); {SESSIONS} sessions, the query "
               f"filters one (25% of rows); ef_search={HNSW_EF_SEARCH}, iterative_scan=relaxed_order; "
               "index built after COPY")
    loaded = 0
    try:
        for size in sizes:
            stage: dict[str, Any] = {}
            # --- load (binary COPY without the HNSW index), then build the index
            t0 = time.perf_counter()
            with db.connection() as conn:
                conn.execute(sql.SQL("DROP INDEX IF EXISTS {i}").format(i=sql.Identifier(index_name)))
                while loaded < size:
                    n = min(10_000, size - loaded)
                    vecs = unit_rows(rng, n, DIM)
                    for k in range(n):
                        if (loaded + k) % SESSIONS == QUERY_SESSION:
                            session_vectors.append(vecs[k])
                            session_paths.append(f"s{QUERY_SESSION}/doc{loaded + k}.md")
                    copy_binary(conn, TABLE, COLUMNS, KINDS, _rows(loaded, vecs))
                    loaded += n
                    report.note(f"hnsw: loaded {loaded} rows")
            stage["copy_s"] = round(time.perf_counter() - t0, 2)
            t0 = time.perf_counter()
            with db.connection() as conn:
                conn.execute("SET maintenance_work_mem = '1GB'")
                conn.execute("SET max_parallel_maintenance_workers = 1")
                conn.execute(index_def)
                conn.execute(sql.SQL("ANALYZE {t}").format(t=sql.Identifier(TABLE)))
                conn.execute("RESET maintenance_work_mem")
                conn.execute("RESET max_parallel_maintenance_workers")
            stage["index_build_s"] = round(time.perf_counter() - t0, 2)
            # --- query: a dedicated autocommit connection with the repository's settings
            stmt = sql.SQL(QUERY).format(t=sql.Identifier(TABLE))
            lat: list[float] = []
            recalls: list[float] = []
            exact = np.vstack(session_vectors)
            with db.pool.connection() as conn:
                conn.execute("SET hnsw.iterative_scan = relaxed_order")
                conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")
                for i, lit in enumerate(qlits):
                    t = time.perf_counter()
                    got = conn.execute(stmt, (f"bench-s{QUERY_SESSION}", lit)).fetchall()
                    ms = (time.perf_counter() - t) * 1000
                    if i < WARMUP:
                        continue
                    lat.append(ms)
                    truth = {session_paths[j] for j in np.argsort(-(exact @ queries[i]))[:10]}
                    recalls.append(sum(1 for r in got if r[0] in truth) / 10)
                conn.execute("RESET hnsw.iterative_scan")
                conn.execute("RESET hnsw.ef_search")
                plan = explain(conn, stmt, (f"bench-s{QUERY_SESSION}", qlits[-1]),
                               setup=("SET LOCAL hnsw.iterative_scan = relaxed_order",
                                      f"SET LOCAL hnsw.ef_search = {HNSW_EF_SEARCH}"))
            stage["latency_ms"] = summary(lat)
            stage["recall_at_10"] = round(float(np.mean(recalls)), 3)
            stage["plan"] = plan
            stage["plan_uses_hnsw"] = uses_index(plan, index_name)
            out[str(size)] = stage
            report.say(f"{size:>7,} rows: {fmt_lat(stage['latency_ms'])}  "
                       f"recall@10 ≈ {stage['recall_at_10']:.2f}  "
                       f"(COPY {stage['copy_s']:.1f} s, HNSW build {stage['index_build_s']:.1f} s)")
            report.say(f"  EXPLAIN at {size:,} rows (HNSW used: {stage['plan_uses_hnsw']}):")
            for line in plan:
                report.say(f"    {line}")
    finally:
        with db.connection() as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=sql.Identifier(TABLE)))
    return out
