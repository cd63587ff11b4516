"""`lotsman retrieve`: routing, policy and retrieval only; the fused rows with their provenance."""

from __future__ import annotations

import argparse
import json

from graph.cli_commands import clean_question, open_deps, positive_int, session_name
from graph.settings import Settings
from graph.terminal import printable


def _retrieve(args: argparse.Namespace, settings: Settings) -> int:
    from nodes.retrieval_policy import resolve_code_plan, resolve_plan

    question = clean_question(args.question)
    with open_deps(settings, production=False) as deps:  # retrieval debugging is offline: the deterministic router
        bundle = deps.bundle(args.session)
        route = bundle.router.route(question)
        plan, code_plan = resolve_plan(route), resolve_code_plan(route, bundle.symbols)
        result = bundle.adapter.fetch_rows(bundle.session, plan, code_plan, question,
                                           file_names=route.anchors.file_names, terms=route.target_terms,
                                           top_k=args.k or settings.top_k, token_cap=settings.token_cap)
    if args.json:
        print(json.dumps({
            "route": route.model_dump(), "plan": plan.model_dump(),
            "code_plan": code_plan.model_dump() if code_plan else None,
            "relevant": result.relevant, "gate": result.gate.reason, "relaxation": result.relaxation,
            "lane_sizes": result.lane_sizes,
            "timings_ms": result.timings_ms,
            "rows": [{**r.provenance(), "title": r.title, "scores": r.scores} for r in result.rows],
        }, ensure_ascii=False, indent=2))
        return 0
    print(f"route {route.intent}/{route.subintent} ({route.routing_mode}); plan {plan.profile} "
          f"{plan.layers}; code plan: {code_plan.reason if code_plan else '-'}")
    print(f"gate: {'relevant' if result.relevant else 'NOTHING RELEVANT'} ({result.gate.reason}); "
          f"plan filters: {result.relaxation}; lanes {result.lane_sizes}")
    print(f"{'#':>2} {'fused':>7}  {'layer':<20} {'lanes':<34} citation")
    for i, r in enumerate(result.rows, 1):
        lanes = ",".join(f"{k}#{v}" for k, v in sorted(r.lanes.items(), key=lambda kv: kv[1]))
        print(f"{i:>2} {r.fused_score:7.4f}  {r.layer:<20} {lanes:<34} {printable(r.citation)}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retrieve", help="routing + policy + retrieval only: the fused rows with provenance")
    p.add_argument("question")
    p.add_argument("--session", default="default", type=session_name)
    p.add_argument("-k", type=positive_int, help="rows to show (default LOTSMAN_TOP_K)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_retrieve)
