"""`lotsman retrieve`: the fused rows with their provenance, and what `ask` does with them.

It runs the QA graph itself, wired as `ask` is (GigaChat's router and analysis when configured), and shows
its retrieval: the route, the gate, the evidence and the analysis's verdict come from the same nodes and
the same dependencies as `ask`, so the two cannot disagree about one question (they did when this command
called the adapter on its own, with the offline router, and stopped at the gate).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from typing import Any

from graph.cli_commands import clean_question, open_deps, positive_int, session_name
from graph.settings import Settings
from graph.terminal import printable


async def _run_turn(deps: Any, question: str, session: str, *, top_k: int, token_cap: int) -> dict[str, Any]:
    """The graph's whole state after one turn, with the run context `ask` uses."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.builder import build_graph
    from graph.context import Context

    graph = build_graph(deps, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = Context(rag_session_id=session, top_k=top_k, token_cap=token_cap)
    await graph.ainvoke({"messages": [HumanMessage(question)]}, config=config, context=context)
    return dict((await graph.aget_state(config)).values)


def verdict(state: dict[str, Any]) -> tuple[bool, str | None, str]:
    """What `ask` does with this evidence: whether it answers, the citation it leads with, and why not."""
    report = state.get("retrieval")
    citations = state.get("citations") or []
    if not state.get("abstained", True) and citations:
        return True, "{path}:{start_line}-{end_line}".format(**citations[0]), ""
    if report is None or not report.relevant:
        return False, None, f"the gate found nothing relevant ({report.gate if report else 'no retrieval'})"
    return False, None, "no passage of the evidence carries a key term of the question"


def _retrieve(args: argparse.Namespace, settings: Settings) -> int:
    question = clean_question(args.question)
    with open_deps(settings) as deps:  # as `ask` opens them: one router, one gate, one analysis
        state = asyncio.run(_run_turn(deps, question, args.session, top_k=args.k or settings.top_k,
                                      token_cap=settings.token_cap))
    route, report = state["route_result"], state["retrieval"]
    plan, code_plan = state.get("plan"), state.get("code_plan")
    # The analysis appends the source rows it quoted to the evidence: the retrieved rows come first.
    rows = (state.get("evidence") or [])[: len(report.provenance)]
    answered, lead, why_not = verdict(state)
    if args.json:
        print(json.dumps({
            "route": route.model_dump(), "plan": plan.model_dump() if plan else None,
            "code_plan": code_plan.model_dump() if code_plan else None,
            "relevant": report.relevant, "gate": report.gate, "relaxation": report.relaxation,
            "answered": answered, "lead": lead, "lane_sizes": report.lane_sizes,
            "timings_ms": report.timings_ms,
            "rows": [{**r.provenance(), "title": r.title, "scores": r.scores} for r in rows],
        }, ensure_ascii=False, indent=2))
        return 0
    print(f"route {route.intent}/{route.subintent} ({route.routing_mode}); "
          f"plan {plan.profile if plan else '-'} {plan.layers if plan else []}; "
          f"code plan: {code_plan.reason if code_plan else '-'}")
    print(f"gate: {'relevant' if report.relevant else 'NOTHING RELEVANT'} ({report.gate}); "
          f"plan filters: {report.relaxation}; lanes {report.lane_sizes}")
    print(f"ask answers: yes, quoting {printable(lead or '')}" if answered else f"ask answers: no — {why_not}")
    print(f"{'#':>2} {'fused':>7}  {'layer':<20} {'lanes':<34} citation")
    for i, r in enumerate(rows, 1):
        lanes = ",".join(f"{k}#{v}" for k, v in sorted(r.lanes.items(), key=lambda kv: kv[1]))
        print(f"{i:>2} {r.fused_score:7.4f}  {r.layer:<20} {lanes:<34} {printable(r.citation)}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retrieve", help="the fused rows with provenance, and whether ask answers from them")
    p.add_argument("question")
    p.add_argument("--session", default="default", type=session_name)
    p.add_argument("-k", type=positive_int, help="rows to keep after fusion (default LOTSMAN_TOP_K)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_retrieve)
