"""The six graph nodes: thin async wrappers doing I/O around the stages' pure functions.

Each node is built by a factory closing over the injected `GraphDeps`, reads the per-run `Context` from
LangGraph's `Runtime`, and records its own latency in `timings_ms`.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.errors import surface_errors
from graph.state import State

# `(state, runtime) -> update`; typed loosely because LangGraph matches node signatures structurally.
Node = Callable[..., Awaitable[dict[str, Any]]]

MAX_QUESTION_CHARS = 8000
"""Longer questions are cut (documented fallback): nobody asks 8,000 characters, pastes do."""


def timed(name: str, first: bool = False) -> Callable[[Node], Node]:
    """Add the node's wall time to `timings_ms` (the first node starts a fresh dict for the turn)."""

    def wrap(fn: Node) -> Node:
        @functools.wraps(fn)
        async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
            t0 = time.perf_counter()
            update = await fn(state, runtime)
            timings = {} if first else dict(state.get("timings_ms") or {})
            timings[name] = round((time.perf_counter() - t0) * 1000, 2)
            return {**update, "timings_ms": timings}

        return surface_errors(node)  # our one-line errors reach LangGraph server clients (graph/errors.py)

    return wrap


def _text(message: AnyMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


def split_conversation(messages: list[AnyMessage]) -> tuple[str, list[dict[str, str]]]:
    """The last user message (the question) and the turns before it as role/content dicts."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    if last < 0:
        return "", []
    history = [{"role": "user" if isinstance(m, HumanMessage) else "assistant", "content": _text(m)}
               for m in messages[:last] if isinstance(m, HumanMessage | AIMessage)]
    # NUL removed as the CLI does (`clean_question`): a Postgres checkpointer cannot store it in a text value.
    return _text(messages[last]).replace("\x00", "").strip()[:MAX_QUESTION_CHARS], history


def conversation_understanding(deps: Any) -> Node:
    from nodes.conversation_understanding import rewrite_with_llm, standalone_request

    @timed("conversation_understanding", first=True)
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        question, history = split_conversation(state.get("messages") or [])
        request = standalone_request(question, history)
        text = request.text
        if request.is_follow_up and deps.chat_model is not None and runtime.context.use_llm:
            text = await rewrite_with_llm(deps.chat_model, question, history, runtime.context.llm_timeout_s) or text
        return {"standalone_query": text}

    return node


def intent_routing(deps: Any) -> Node:
    @timed("intent_routing")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        query = state.get("standalone_query") or ""
        if not query.strip():
            from nodes.intent_routing import RouteResult

            return {"route": RouteResult(user_query="", reason_short="empty question").model_dump()}
        bundle = await asyncio.to_thread(deps.bundle, runtime.context.rag_session_id)
        router = bundle.router if runtime.context.use_llm else _offline(bundle.router)
        route = await router.aroute(query)
        return {"route": route.model_dump()}

    return node


def _offline(router: Any) -> Any:
    from nodes.intent_routing import IntentRouter

    return IntentRouter(llm=None, aliases=router.aliases)


def retrieval_policy(deps: Any) -> Node:
    from nodes.intent_routing import RouteResult
    from nodes.retrieval_policy import resolve_code_plan, resolve_plan

    @timed("retrieval_policy")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        route = RouteResult.model_validate(state["route"])
        bundle = await asyncio.to_thread(deps.bundle, runtime.context.rag_session_id)
        code_plan = resolve_code_plan(route, bundle.symbols)
        return {"plan": resolve_plan(route).model_dump(),
                "code_plan": code_plan.model_dump() if code_plan else None}

    return node


BASELINE_LANES = {"vector": ["semantic"], "bm25": ["lexical"]}


def context_retrieval(deps: Any) -> Node:
    from nodes.intent_routing import RouteResult
    from nodes.retrieval_policy import CodePlan, RetrievalPlan
    from stores.retriever import broad_plans

    @timed("context_retrieval")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = runtime.context
        query = state.get("standalone_query") or ""
        if not query.strip():
            return {"evidence": [], "retrieval": {"relevant": False, "gate": "empty question"}}
        bundle = await asyncio.to_thread(deps.bundle, ctx.rag_session_id)
        route = RouteResult.model_validate(state["route"])
        plan = RetrievalPlan.model_validate(state["plan"])
        code_plan = CodePlan.model_validate(state["code_plan"]) if state.get("code_plan") else None
        lanes = BASELINE_LANES.get(ctx.retriever)
        if lanes is not None:  # plain baselines: no policy, no code lane, every layer
            plan, _, _ = broad_plans(query)
            code_plan = None
        result = await asyncio.to_thread(
            bundle.adapter.fetch_rows, bundle.session, plan, code_plan, query,
            file_names=route.anchors.file_names, terms=route.target_terms, top_k=ctx.top_k,
            token_cap=ctx.token_cap, lanes_enabled=lanes,
        )
        rows = [r.model_dump() for r in result.rows]
        return {
            "evidence": rows,
            "retrieval": {
                "relevant": result.relevant, "gate": result.gate.reason, "coverage": result.gate.coverage,
                "best_similarity": result.gate.best_similarity, "lane_sizes": result.lane_sizes,
                "timings_ms": result.timings_ms,
                "provenance": [r.provenance() for r in result.rows],
            },
        }

    return node


def route_after_retrieval(state: State) -> str:
    """Nothing relevant found → straight to an honest "not found" answer (analysis has nothing to do)."""
    return "context_analysis" if (state.get("retrieval") or {}).get("relevant") else "answer_composition"


def context_analysis(deps: Any) -> Node:
    from nodes.context_analysis import analyze
    from nodes.context_retrieval.gate import key_terms
    from nodes.evidence import EvidenceRow
    from nodes.intent_routing import RouteResult

    @timed("context_analysis")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        route = RouteResult.model_validate(state["route"])
        query = state.get("standalone_query") or ""
        rows = [EvidenceRow.model_validate(r) for r in state.get("evidence") or []]
        relevant = bool((state.get("retrieval") or {}).get("relevant"))
        analysis = analyze(query, key_terms(query, route.target_terms), rows, relevant, route)
        return {"analysis": analysis.model_dump()}

    return node


def answer_composition(deps: Any) -> Node:
    from nodes.answer_composition import compose_extractive, compose_with_llm
    from nodes.context_analysis import Analysis, analyze
    from nodes.context_retrieval.gate import key_terms
    from nodes.evidence import EvidenceRow
    from nodes.intent_routing import RouteResult

    @timed("answer_composition")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        route = RouteResult.model_validate(state.get("route") or {"user_query": ""})
        query = state.get("standalone_query") or ""
        rows = [EvidenceRow.model_validate(r) for r in state.get("evidence") or []]
        relevant = bool((state.get("retrieval") or {}).get("relevant"))
        if relevant and state.get("analysis"):
            analysis = Analysis.model_validate(state["analysis"])
        else:  # skipped by the conditional edge: analyse "not relevant" to list the nearest files
            analysis = analyze(query, key_terms(query, route.target_terms), rows, False, route)
        answer = None
        if deps.chat_model is not None and runtime.context.use_llm and analysis.sufficient:
            answer = await compose_with_llm(deps.chat_model, query, analysis, rows, route,
                                            runtime.context.llm_timeout_s)
        if answer is None:
            answer = compose_extractive(query, analysis, route)
        citations = [c.model_dump() for c in answer.citations]
        return {
            "answer": answer.text, "citations": citations, "abstained": answer.abstained,
            "messages": [AIMessage(content=answer.text, response_metadata={"citations": citations,
                                                                           "abstained": answer.abstained})],
        }

    return node
