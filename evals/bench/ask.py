"""Section `ask`: warm end-to-end latency of the QA graph on fastapi-ru, offline (no LLM), per node.

`build_graph(GraphDeps(...))` over the benchmark's own database, `Context(use_llm=False)`, no checkpointer
(every question is a fresh one-turn conversation). Three warm-up questions first (they build the session
bundle: alias index, symbols, stop lexemes), then each question once. End to end = wall time of
`graph.ainvoke`; per node = the graph's own `timings_ms` (context_analysis runs only when retrieval found
something relevant, so its n can be smaller). The learned ranker's cost: each question once more under
`ranker=rrf` and once more under `learned`, interleaved, and the difference of their context_retrieval
times per question (target ≤ 20 ms p95, issue 29).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from evals.bench.common import Report, fmt_lat, summary, verdict
from evals.bench.texts import QUESTIONS

WARMUP = 3
P50_TARGET_MS = 250.0
RANKER_P95_TARGET_MS = 20.0


def run(report: Report, ctx: Any) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    from graph.builder import STAGES, build_graph
    from graph.context import Context
    from graph.deps import GraphDeps
    from graph.settings import Settings

    out = report.section("ask", "5. ask: warm end-to-end latency per node on fastapi-ru (offline, no LLM)")
    session = ctx.use_session()
    questions = list(QUESTIONS[:10] if ctx.opts.quick else QUESTIONS)
    deps = GraphDeps(settings=Settings(data_dir=ctx.base), db=ctx.db, chat_model=None)
    graph = build_graph(deps)
    context = Context(rag_session_id=session.name, use_llm=False)

    async def ask(q: str, run_context: Context = context) -> tuple[dict[str, Any], float]:
        t0 = time.perf_counter()
        state = await graph.ainvoke({"messages": [HumanMessage(q)]}, context=run_context)
        return state, (time.perf_counter() - t0) * 1000

    async def main() -> list[tuple[dict[str, Any], float]]:
        for q in questions[:WARMUP]:
            await ask(q)
        return [await ask(q) for q in questions]

    async def ranker_cost() -> list[float]:
        orders = {r: Context(rag_session_id=session.name, use_llm=False, ranker=r) for r in ("rrf", "learned")}
        added = []
        for q in questions:
            got = {r: (await ask(q, c))[0]["timings_ms"]["context_retrieval"] for r, c in orders.items()}
            added.append(got["learned"] - got["rrf"])
        return added

    results = asyncio.run(main())
    added = asyncio.run(ranker_cost())
    per_node: dict[str, list[float]] = {}
    for state, _ in results:
        for node, ms in (state.get("timings_ms") or {}).items():
            per_node.setdefault(node, []).append(ms)
    e2e = [ms for _, ms in results]
    nodes_sum = [sum((s.get("timings_ms") or {}).values()) for s, _ in results]
    out.update(session=session.name, questions=len(questions), warmup=WARMUP,
               abstained=sum(1 for s, _ in results if s.get("abstained")),
               cited=sum(1 for s, _ in results if s.get("citations")),
               nodes={n: summary(per_node[n]) for n in STAGES if n in per_node},
               nodes_sum_ms=summary(nodes_sum), end_to_end_ms=summary(e2e))
    report.say(f"session '{session.name}', {len(questions)} questions after {WARMUP} warm-up runs "
               f"({out['cited']} answered with citations, {out['abstained']} abstained)")
    for node, s in out["nodes"].items():
        report.say(f"  {node:<27} {fmt_lat(s)}")
    report.say(f"  {'sum of nodes':<27} {fmt_lat(out['nodes_sum_ms'])}")
    report.say(f"  {'end to end (ainvoke wall)':<27} {fmt_lat(out['end_to_end_ms'])}")
    ok = out["end_to_end_ms"]["p50"] <= P50_TARGET_MS
    out["target_p50_met"] = ok
    report.say(f"  target p50 ≤ {P50_TARGET_MS:.0f} ms end to end: {verdict(ok)}")
    out["ranker_added_ms"] = summary(added)
    ranker_ok = out["ranker_added_ms"]["p95"] <= RANKER_P95_TARGET_MS
    out["ranker_target_p95_met"] = ranker_ok
    report.say(f"  learned ranker: context_retrieval learned − rrf, same question {fmt_lat(out['ranker_added_ms'])}; "
               f"target p95 ≤ {RANKER_P95_TARGET_MS:.0f} ms: {verdict(ranker_ok)}")
    return out
