"""`lotsman eval`: index a corpus into its own session, run every case through the graph, score it.

The same runner serves the full pipeline and the plain baselines (`--retriever vector|bm25`), so their
numbers compare side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from evals.metrics import (
    aggregate,
    citation_precision,
    distinct_files,
    key_fact_coverage,
    recall_at_k,
    reciprocal_rank,
)
from stores.errors import LotsmanError

ROUTES = {"GENERAL_QA", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/FIND_FILES"}
REQUIRED = ("id", "question", "expected_route", "gold_paths", "answerable")


def load_dataset(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL dataset; a malformed line is a clear error naming the line."""
    if not path.exists():
        raise LotsmanError(f"dataset not found: {path}")
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LotsmanError(f"{path}:{n}: not JSON ({exc.msg})") from None
        missing = [k for k in REQUIRED if k not in case]
        if missing:
            raise LotsmanError(f"{path}:{n}: missing fields {missing}")
        if case["expected_route"] not in ROUTES:
            raise LotsmanError(f"{path}:{n}: unknown expected_route {case['expected_route']!r}")
        case.setdefault("history", [])
        case.setdefault("key_facts", [])
        cases.append(case)
    return cases


def route_label(route: dict[str, Any]) -> str:
    if route.get("intent") == "GENERAL_QA":
        return "GENERAL_QA"
    return f"{route.get('intent')}/{route.get('subintent')}"


def score_case(case: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Per-case metrics from the graph's final state."""
    # the graph state holds EvidenceRow models; the metrics read plain dicts
    evidence = [e.model_dump() if hasattr(e, "model_dump") else e for e in state.get("evidence") or []]
    retrieved = distinct_files(e["path"] for e in evidence)
    gold = case["gold_paths"]
    answer = state.get("answer") or ""
    route = route_label(state.get("route") or {})
    return {
        "id": case["id"],
        "question": case["question"],
        "answerable": bool(case["answerable"]),
        "expected_route": case["expected_route"],
        "route": route,
        "route_correct": route == case["expected_route"],
        "retrieved_files": retrieved[:10],
        "gold_paths": gold,
        "recall_at_5": recall_at_k(retrieved, gold, 5),
        "recall_at_10": recall_at_k(retrieved, gold, 10),
        "mrr": reciprocal_rank(retrieved, gold),
        "key_fact_coverage": key_fact_coverage(case.get("key_facts") or [], answer),
        "citation_precision": citation_precision(state.get("citations") or [], evidence),
        "abstained": bool(state.get("abstained")),
        "timings_ms": state.get("timings_ms") or {},
        "answer": answer,
        "tags": case.get("tags", []),
    }


async def run_cases(graph: Any, cases: list[dict[str, Any]], context: Any) -> list[dict[str, Any]]:
    from langchain_core.messages import AIMessage, HumanMessage

    results = []
    for case in cases:
        messages = [HumanMessage(t["content"]) if t["role"] == "user" else AIMessage(t["content"])
                    for t in case["history"]] + [HumanMessage(case["question"])]
        config = {"configurable": {"thread_id": f"eval-{case['id']}-{time.time_ns()}"}}
        await graph.ainvoke({"messages": messages}, config=config, context=context)
        state = (await graph.aget_state(config)).values
        results.append(score_case(case, state))
    return results


def run(dataset: Path, corpus: Path, *, settings: Any, retriever: str = "full", embedder: str | None = None,
        session: str | None = None, limit: int | None = None, deps: Any = None) -> dict[str, Any]:
    """Index `corpus` (incrementally, reusing the cache), run the dataset, return the JSON report."""
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.builder import build_graph
    from graph.context import Context
    from graph.deps import GraphDeps
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    cases = load_dataset(dataset)[:limit]
    if not corpus.is_dir():
        raise LotsmanError(f"corpus not found: {corpus}")
    from evals.baselines import RETRIEVERS

    # offline by default: evals measure the deterministic path
    deps = deps or GraphDeps(settings=settings, retrieve=RETRIEVERS[retriever])
    emb = deps.embedder or make_embedder(embedder or settings.embedder, settings)
    session = session or f"eval-{corpus.resolve().name}-{emb.name.replace(':', '-')}"
    t0 = time.perf_counter()
    report = index_repository(deps.database(), corpus, session_name=session, embedder=emb,
                              max_bytes=settings.max_file_bytes, batch_size=settings.embed_batch_size)
    index_s = time.perf_counter() - t0
    graph = build_graph(deps, checkpointer=InMemorySaver())
    context = Context(rag_session_id=session, token_cap=settings.token_cap, top_k=settings.top_k)
    results = asyncio.run(run_cases(graph, cases, context))
    summary = aggregate(results)
    return {
        "dataset": str(dataset), "corpus": str(corpus), "retriever": retriever, "embedder": emb.name,
        "session": session, "index_seconds": round(index_s, 2), "index_kind": report.kind,
        **summary, "cases": summary["cases"], "results": results,
    }


def format_table(report: dict[str, Any]) -> str:
    rows = [("route accuracy", "route_accuracy"), ("recall@5", "recall_at_5"), ("recall@10", "recall_at_10"),
            ("MRR", "mrr"), ("key-fact coverage", "key_fact_coverage"),
            ("citation precision", "citation_precision"), ("abstention precision", "abstention_precision"),
            ("abstention recall", "abstention_recall")]
    lines = [f"{report['dataset']} · retriever={report['retriever']} · embedder={report['embedder']} · "
             f"{report['cases']} cases"]
    lines += [f"  {label:<22} {report[key]:.3f}" for label, key in rows]
    lat = report["latency_ms"]
    lines.append("  latency ms (p50/p95): " + ", ".join(
        f"{node} {v['p50']:.0f}/{v['p95']:.0f}" for node, v in lat.items()))
    return "\n".join(lines)


def run_cli(args: argparse.Namespace, settings: Any) -> int:
    report = run(Path(args.dataset), Path(args.corpus), settings=settings, retriever=args.retriever,
                 embedder=args.embedder, session=args.session, limit=args.limit)
    print(format_table(report))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
        print(f"wrote {out}")
    if getattr(args, "langsmith", False):
        from evals.langsmith_eval import upload_and_evaluate

        print(upload_and_evaluate(Path(args.dataset), report, settings))
    return 0
