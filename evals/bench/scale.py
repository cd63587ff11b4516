"""Section `scale`: retrieval on the standard library at 62k rows, then 100k (and optionally 1M) rows.

Data: the `stdlib-use` session of the `stdlib` section (indexed here when that section did not run), ~62k
real rows. Larger sizes replicate its rows into one more session as the `retrieval` section does (copy 0
keeps the paths, copy N gets a `copyN/` prefix, every vector a small re-normalised perturbation); the
table then holds the real session too. The HNSW and GIN indexes are dropped during the COPY and rebuilt
after it (build times and the HNSW build rate are reported, so the 1M build can be extrapolated).

Per size: the adapter as the graph builds it (`GraphDeps.bundle`: stoplist, layout, symbols, exact-scan
threshold, shared lane pool) over `STDLIB_QUESTIONS` with precomputed query vectors, p50/p95 per request
and per lane, and EXPLAIN ANALYZE of every SQL statement the adapter ran for one question (the statements
are recorded by a `RagRepository` subclass, so they are exactly the production ones).

Recall: a 5k-row session beside every other row of the table; the vector lane's candidate set through the
HNSW index (at several `hnsw.ef_search`) against an exact scan of the session (`exact=True`).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from psycopg import sql

from evals.bench.common import Report, copy_binary, explain, fmt_lat, summary, verdict
from evals.bench.retrieval import COLUMNS, KINDS, FixedQueryEmbeddings, _real_rows, _synthetic
from evals.bench.texts import STDLIB_QUESTIONS

SMALL_SESSION, BIG_SESSION = "scale-5k", "scale-big"
SMALL_ROWS = 5_000
EF_SEARCH_VALUES = (40, 100, 200, 400)
P95_TARGETS_MS = {100_000: 50.0, 1_000_000: 150.0}
RECALL_TARGET = 0.95
ROUNDS = 2


class RecordingRepository:
    """Wraps `RagRepository._fetch` to keep (caller, statement, params, vector) of every query."""

    def __init__(self, repo: Any) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any], bool]] = []
        self.recording = False
        inner = repo._fetch

        def fetch(stmt: Any, params: dict[str, Any], *, vector: bool = False) -> Any:
            if self.recording:
                caller = sys._getframe(1).f_code.co_name
                if caller == "retrieve":
                    caller = ("retrieve:vector" if not params.get("qtext") else
                              "retrieve:ranked" if "qvec" in params else "retrieve:lexical")
                self.calls.append((caller, stmt, params, vector))
            return inner(stmt, params, vector=vector)

        repo._fetch = fetch


def _execution_ms(plan: list[str]) -> float | None:
    for line in plan:
        if line.strip().startswith("Execution Time:"):
            return float(line.split(":")[1].split()[0])
    return None


def _load(db: Any, real: list[tuple], session: Any, start: int, stop: int, rng: np.random.Generator,
          report: Report) -> dict[str, float]:
    """COPY rows [start, stop) of the replication with the HNSW and GIN indexes dropped, then rebuild."""
    from stores.schema import ensure_tables

    table = session.table
    with db.connection() as conn:
        defs = conn.execute(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid), a.amname FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
            "WHERE i.indrelid = %s::regclass AND a.amname IN ('hnsw', 'gin')", (table,)).fetchall()
        for name, _, _ in defs:
            conn.execute(sql.SQL("DROP INDEX {i}").format(i=sql.Identifier(name)))
    t0 = time.perf_counter()
    done = start
    while done < stop:
        n = min(20_000, stop - done)
        with db.connection() as conn:
            copy_binary(conn, table, COLUMNS, KINDS, _synthetic(real, session.rag_session_id, done, done + n, rng))
        done += n
        report.note(f"scale: {done:,} rows loaded")
    out = {"copy_s": round(time.perf_counter() - t0, 1)}
    with db.connection() as conn:
        conn.execute("SET maintenance_work_mem = '2GB'")
        for _name, ddl, am in defs:
            t = time.perf_counter()
            conn.execute(ddl)
            out[f"{am}_build_s"] = round(time.perf_counter() - t, 1)
            conn.commit()
        out["vectors_in_table"] = conn.execute(sql.SQL("SELECT count(embedding) FROM {t}").format(
            t=sql.Identifier(table))).fetchone()[0]
        out["hnsw_vectors_per_s"] = round(out["vectors_in_table"] / max(out.get("hnsw_build_s", 0), 0.01), 1)
        conn.execute(sql.SQL("ANALYZE {t}").format(t=sql.Identifier(table)))
        ensure_tables(conn)
    return out


def _measure(report: Report, ctx: Any, session: Any, vectors: dict[str, list[float]], use: Any,
             label: str) -> dict[str, Any]:
    from graph.deps import GraphDeps
    from graph.settings import Settings
    from nodes.retrieval_policy import resolve_code_plan, resolve_plan

    deps = GraphDeps(settings=Settings(data_dir=ctx.base), db=ctx.db, embedder=FixedQueryEmbeddings(use, vectors))
    try:
        t0 = time.perf_counter()
        bundle = deps.bundle(session.name)
        build_s = time.perf_counter() - t0
        rec = RecordingRepository(bundle.adapter.repository)
        items = []
        for q in vectors:
            route = bundle.router.route(q)
            items.append((q, route, resolve_plan(route), resolve_code_plan(route, bundle.symbols)))

        def ask(item: tuple) -> Any:
            q, route, plan, code_plan = item
            return bundle.adapter.fetch_rows(session, plan, code_plan, q, file_names=route.anchors.file_names,
                                             terms=route.target_terms, top_k=12, token_cap=4096)

        for item in items:
            ask(item)  # warm-up
        lat: list[float] = []
        lanes: dict[str, list[float]] = {}
        for _ in range(ROUNDS):
            for item in items:
                t = time.perf_counter()
                res = ask(item)
                lat.append((time.perf_counter() - t) * 1000)
                for lane, ms in res.timings_ms.items():
                    lanes.setdefault(lane, []).append(ms)
        rec.recording = True
        ask(items[0])
        rec.recording = False
        plans: dict[str, Any] = {}
        with ctx.db.connection() as conn:
            for k, (caller, stmt, params, vector) in enumerate(rec.calls):
                setup = ("SET LOCAL hnsw.iterative_scan = relaxed_order", "SET LOCAL hnsw.ef_search = 100") \
                    if vector else ()
                plan = explain(conn, stmt, params, setup=setup)
                plans[f"{k}:{caller}"] = {"execution_ms": _execution_ms(plan), "plan": plan}
    finally:
        if deps._lane_pool is not None:  # not deps.close(): the database is the benchmark's
            deps._lane_pool.shutdown(wait=True)
    out = {"bundle_build_s": round(build_s, 2), "exact_vectors": bundle.adapter.exact_vectors,
           "adapter_ms": summary(lat), "lanes_ms": {k: summary(v) for k, v in lanes.items()},
           "explain_question": items[0][0], "explain": plans}
    report.say(f"  [{label}] adapter fetch_rows {fmt_lat(out['adapter_ms'])}  "
               f"(exact vectors: {bundle.adapter.exact_vectors})")
    report.say("    lanes p50/p95 ms: " + ", ".join(
        f"{k} {v['p50']:.1f}/{v['p95']:.1f}" for k, v in out["lanes_ms"].items()))
    report.say("    EXPLAIN ANALYZE execution ms: " + ", ".join(
        f"{k.split(':', 1)[1]} {v['execution_ms']}" for k, v in plans.items()))
    return out


def _warm_ask(report: Report, ctx: Any, session: Any, questions: list[str]) -> dict[str, Any]:
    """End-to-end warm `ainvoke` of the QA graph on the session, offline (as the `ask` section does)."""
    import asyncio

    from langchain_core.messages import HumanMessage

    from graph.builder import build_graph
    from graph.context import Context
    from graph.deps import GraphDeps
    from graph.settings import Settings

    deps = GraphDeps(settings=Settings(data_dir=ctx.base), db=ctx.db, chat_model=None)
    graph = build_graph(deps)
    context = Context(rag_session_id=session.name, use_llm=False)

    async def main() -> tuple[list[float], list[float]]:
        for q in questions[:3]:
            await graph.ainvoke({"messages": [HumanMessage(q)]}, context=context)
        e2e, retrieval = [], []
        for q in questions:
            t0 = time.perf_counter()
            state = await graph.ainvoke({"messages": [HumanMessage(q)]}, context=context)
            e2e.append((time.perf_counter() - t0) * 1000)
            retrieval.append((state.get("timings_ms") or {}).get("context_retrieval", 0.0))
        return e2e, retrieval

    try:
        e2e, retrieval = asyncio.run(main())
    finally:
        if deps._lane_pool is not None:
            deps._lane_pool.shutdown(wait=True)
    out = {"end_to_end_ms": summary(e2e), "context_retrieval_ms": summary(retrieval)}
    out["target_met"] = out["end_to_end_ms"]["p50"] <= 150 and out["end_to_end_ms"]["p95"] <= 300
    report.say(f"  warm ask (QA graph, offline) end to end {fmt_lat(out['end_to_end_ms'])}; context_retrieval "
               f"{fmt_lat(out['context_retrieval_ms'])}; target p50 ≤ 150, p95 ≤ 300 ms: {verdict(out['target_met'])}")
    return out


def _recall(db: Any, small: Any, vectors: dict[str, list[float]]) -> dict[str, Any]:
    import stores.repository as repository_module
    from stores.repository import RagRepository

    repo = RagRepository(db)
    saved = repository_module.HNSW_EF_SEARCH
    out: dict[str, Any] = {}
    truth, exact_ms = {}, []
    for q, v in vectors.items():
        t = time.perf_counter()
        truth[q] = {r["id"] for r in repo.retrieve(small, query_embedding=v, query_text="", limit=60, candidates=60,
                                                    exact=True)}
        exact_ms.append((time.perf_counter() - t) * 1000)
    out["exact"] = {"recall": 1.0, "latency_ms": summary(exact_ms), "vectors": repo.embedded_rows(small)}
    try:
        for ef in EF_SEARCH_VALUES:
            repository_module.HNSW_EF_SEARCH = ef
            recalls, lat = [], []
            for q, v in vectors.items():
                t = time.perf_counter()
                got = {r["id"] for r in repo.retrieve(small, query_embedding=v, query_text="", limit=60,
                                                      candidates=60, exact=False)}
                lat.append((time.perf_counter() - t) * 1000)
                recalls.append(len(got & truth[q]) / max(1, len(truth[q])))
            out[str(ef)] = {"recall": round(float(np.mean(recalls)), 3), "min": round(float(np.min(recalls)), 3),
                            "latency_ms": summary(lat)}
    finally:
        repository_module.HNSW_EF_SEARCH = saved
    return out


def _recall_text(r: dict[str, Any]) -> str:
    ex, lat = r["exact"], r["exact"]["latency_ms"]
    return (f"exact scan of {ex['vectors']:,} vectors p50/p95 {lat['p50']:.0f}/{lat['p95']:.0f} ms; "
            "HNSW " + ", ".join(f"ef_search {k}: recall {v['recall']:.3f} (min {v['min']:.2f}) "
                                f"p50/p95 {v['latency_ms']['p50']:.0f}/{v['latency_ms']['p95']:.0f} ms"
                                for k, v in r.items() if k != "exact"))


def run(report: Report, ctx: Any) -> dict[str, Any]:
    from evals.bench import stdlib
    from graph.deps import EXACT_SCAN_MAX_ROWS
    from stores.embedders import make_embedder
    from stores.sessions import create_session, find_session, get_session

    out = report.section("scale", "8. scale: retrieval on the standard library at 62k / 100k (/ 1M) rows")
    db = ctx.db
    use = make_embedder("use", threads=2)
    with db.connection() as conn:
        real_session = find_session(conn, stdlib.SESSION)
    if real_session is None or real_session.active_generation == 0:
        report.note("scale: indexing the standard library (the stdlib section did not run)")
        stdlib._index(db, stdlib.stdlib_corpus(ctx.base), stdlib.SESSION, use)
        with db.connection() as conn:
            real_session = get_session(conn, stdlib.SESSION)
    questions = list(STDLIB_QUESTIONS[:8] if ctx.opts.quick else STDLIB_QUESTIONS)
    vectors = {q: use.embed_query(q) for q in questions}
    real = _real_rows(db, real_session)
    out.update(real_rows=len(real), questions=len(questions), rounds=ROUNDS, exact_scan_max_rows=EXACT_SCAN_MAX_ROWS)
    report.say(f"session '{real_session.name}': {len(real):,} real rows; {len(questions)} questions × {ROUNDS}")
    out[str(len(real))] = _measure(report, ctx, real_session, vectors, use, f"{len(real):,} rows (real)")
    out[str(len(real))]["warm_ask"] = _warm_ask(report, ctx, real_session, questions)
    real_recall = out[str(len(real))]["vector_lane_exact_vs_hnsw"] = _recall(db, real_session, vectors)
    report.say("  vector lane on this session, exact scan vs HNSW (what `EXACT_SCAN_MAX_ROWS` trades): "
               + _recall_text(real_recall))
    report.save()

    rng = np.random.default_rng(13)
    with db.connection() as conn:
        big = create_session(conn, BIG_SESSION, use.name, use.dim)
        small = create_session(conn, SMALL_SESSION, use.name, use.dim)
        for s in (big, small):
            conn.execute("UPDATE rag_sessions SET active_generation = 1 WHERE rag_session_id = %s", (s.rag_session_id,))
        conn.commit()
        big, small = get_session(conn, BIG_SESSION), get_session(conn, SMALL_SESSION)
    with db.connection() as conn:  # the small session: 5k real rows (copy 0: real paths and vectors)
        copy_binary(conn, small.table, COLUMNS, KINDS, _synthetic(real, small.rag_session_id, 0, SMALL_ROWS, rng))
    sizes = [100_000] + ([1_000_000] if getattr(ctx.opts, "scale_1m", False) else [])
    loaded = 0
    for size in sizes:
        stage = _load(db, real, big, loaded, size, rng, report)
        loaded = size
        report.say(f"{size:,} rows in one session ({stage['vectors_in_table']:,} vectors in the table): COPY "
                   f"{stage['copy_s']} s, GIN {stage.get('gin_build_s')} s, HNSW {stage.get('hnsw_build_s')} s "
                   f"= {stage['hnsw_vectors_per_s']} vectors/s")
        stage.update(_measure(report, ctx, big, vectors, use, f"{size:,} rows"))
        target = P95_TARGETS_MS.get(size)
        if target:
            stage["p95_target_met"] = stage["adapter_ms"]["p95"] <= target
            report.say(f"    target adapter p95 ≤ {target:.0f} ms: {verdict(stage['p95_target_met'])}")
        stage["recall_5k_session"] = _recall(db, small, vectors)
        report.say(f"    5k-row session beside {stage['vectors_in_table']:,} vectors — vector lane: "
                   + _recall_text(stage["recall_5k_session"])
                   + f"; sessions ≤ {EXACT_SCAN_MAX_ROWS:,} vectors take the exact scan (recall 1.0 by construction)")
        out[str(size)] = stage
        report.save()
    if not getattr(ctx.opts, "scale_1m", False):
        st = out["100000"]
        per_s = st["hnsw_vectors_per_s"]
        vec_share = st["vectors_in_table"] / max(1, 100_000 + len(real) + SMALL_ROWS)
        est = 1_000_000 * vec_share / max(per_s, 1)
        out["hnsw_1m_build_estimate_s"] = round(est)
        report.say(f"1M rows not loaded (--scale-1m): at the measured {per_s} vectors/s an HNSW build over "
                   f"~{1_000_000 * vec_share:,.0f} vectors would take ≈ {est / 60:.0f} min (linear; HNSW is "
                   "slightly worse than linear)")
    return out
