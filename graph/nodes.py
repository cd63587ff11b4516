"""The six graph nodes: thin async wrappers doing I/O around the stages' pure functions.

Each node is built by a factory closing over the injected `GraphDeps`, reads the per-run `Context` from
LangGraph's `Runtime`, reads the stage models earlier nodes put in `State`, and records its own latency
in `timings_ms`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime

from graph import question_logging
from graph.context import Context
from graph.deps import GraphDeps, SessionBundle
from graph.errors import surface_errors
from graph.state import RetrievalReport, SessionRef, State
from graph.terminal import undecodable
from nodes.answer_composition import Answer, compose_extractive, compose_with_llm
from nodes.answer_composition.links import citation_href, link_citations
from nodes.answer_composition.llm import llm_answer_wanted
from nodes.context_analysis import Analysis, analyze, analyze_with_llm
from nodes.context_analysis.llm import reading_pool
from nodes.conversation_understanding import StandaloneRequest, rewrite_with_llm, standalone_request
from nodes.conversation_understanding.messages import content_text, unlink_citations
from nodes.intent_routing import RouteResult
from nodes.llm_budget import (
    DEGRADED,
    LLMBudget,
    LLMUnavailable,
    after_outage,
    allot,
    start_budget,
    with_offline_note,
)
from nodes.llm_events import collecting
from nodes.retrieval_policy import resolve_code_plan, resolve_plan
from stores.errors import InvalidInputError, session_deleted
from stores.sessions import find_session

logger = logging.getLogger(__name__)

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
    """The words of a turn: text blocks only (`content_text`), an answer's citation links read back as the
    citations they stand for (`unlink_citations`)."""
    text = content_text(message.content)
    return unlink_citations(text) if isinstance(message, AIMessage) else text


def split_conversation(messages: list[AnyMessage]) -> tuple[str, list[dict[str, str]]]:
    """The last user message (the question) and the turns before it as role/content dicts.

    Content may be a string or a list of content blocks (agent-chat-ui): only text blocks are read, and a
    turn without any is an empty question (docs/logic/conversation_understanding.md).
    """
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    if last < 0:
        return "", []
    history = [{"role": "user" if isinstance(m, HumanMessage) else "assistant", "content": _text(m)}
               for m in messages[:last] if isinstance(m, HumanMessage | AIMessage)]
    # NUL removed as the CLI does (`clean_question`): a Postgres checkpointer cannot store it in a text value.
    question = _text(messages[last]).replace("\x00", "").strip()[:MAX_QUESTION_CHARS]
    bad = undecodable(question)
    if bad is not None:  # lone surrogates from an in-process caller: PostgreSQL and JSON cannot take them
        raise InvalidInputError(f"the question is not valid UTF-8 (byte {bad}): send it as UTF-8 text")
    return question, history


def _empty_route() -> RouteResult:
    return RouteResult(user_query="", reason_short="empty question")


T = TypeVar("T")


def _start_budget(deps: GraphDeps, runtime: Runtime[Context]) -> LLMBudget:
    return start_budget(time.monotonic(), deps.settings.gigachat.request_deadline,
                        configured=deps.chat_model is not None, enabled=runtime.context.use_llm)


def _budget(deps: GraphDeps, state: State, runtime: Runtime[Context]) -> LLMBudget:
    """The request's LLM budget, set by its first node (a fresh one if a run did not start there)."""
    budget = state.get("llm_budget")
    return budget if budget is not None else _start_budget(deps, runtime)


async def _ask_llm(budget: LLMBudget, stage: str, own_timeout_s: float,
                   call: Callable[[float], Awaitable[T]]) -> tuple[T | None, LLMBudget]:
    """Make one LLM call of `stage` within the request's budget: `call(limit)` with limit = min(its own
    timeout, time left); None (and no call) once the request is offline. A call that gets no answer takes
    the rest of the request offline (`LLMUnavailable`), said once in the log."""
    budget, limit = allot(budget, own_timeout_s, time.monotonic(), stage)
    if limit is not None:
        with collecting() as events:  # what the reply needed (repaired, re-asked, fell back): `llm_events`
            try:
                return await call(limit), budget.noting(stage, events)
            except LLMUnavailable as outage:
                budget = after_outage(budget, stage, outage).noting(stage, events)
    if budget.offline in DEGRADED and budget.offline_stage == stage:
        logger.warning("LLM unavailable (%s); the rest of this request runs offline", budget.offline_reason)
    return None, budget


def conversation_understanding(deps: GraphDeps) -> Node:
    """Turns the conversation into one standalone request and starts the request's LLM deadline."""

    @timed("conversation_understanding", first=True)
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        budget = _start_budget(deps, runtime)  # monotonic: one deadline per run, in the process running it
        question, history = split_conversation(state.get("messages") or [])
        request = standalone_request(question, history)
        model = deps.chat_model
        if request.is_follow_up and model is not None:
            rewrite, budget = await _ask_llm(
                budget, "conversation_understanding", runtime.context.llm_timeout_s,
                lambda limit: rewrite_with_llm(model, question, history, limit, raise_unavailable=True))
            if rewrite:
                request = request.model_copy(update={"text": rewrite, "rewritten_by_llm": True})
        return {"request": request, "llm_budget": budget}

    return node


def intent_routing(deps: GraphDeps) -> Node:
    """Routes the request and pins the session generation the rest of the turn reads."""

    @timed("intent_routing")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        request = state["request"]
        if not request.text.strip():
            route = _empty_route()
            return {"route_result": route, "route": route.model_dump()}
        key = runtime.context.rag_session_id
        if runtime.context.ref is not None:  # the session indexed from that git revision
            key = await asyncio.to_thread(_revision_session, deps, runtime.context)
        bundle = await asyncio.to_thread(deps.bundle, key)
        router = bundle.router
        routed, budget = await _ask_llm(
            _budget(deps, state, runtime), "intent_routing", router.timeout_s,
            lambda limit: router.aroute(request.text, timeout_s=limit, raise_unavailable=True))
        # Offline: the fallback route, naming the outage when this very call met it (fallback_llm_error).
        route = routed if routed is not None else router.route_offline(request.text, budget.outage_in("intent_routing"))
        return {"route_result": route, "route": route.model_dump(), "session": bundle.ref,
                "request": request.with_route_terms(route.target_terms), "llm_budget": budget}

    return node


def _revision_session(deps: GraphDeps, context: Context) -> str:
    from stores.sessions import run_session

    with deps.database().connection() as conn:
        return run_session(conn, context.rag_session_id, context.ref)


async def _bundle(deps: GraphDeps, state: State) -> SessionBundle:
    return await asyncio.to_thread(deps.bundle_for, state["session"])


def retrieval_policy(deps: GraphDeps) -> Node:
    @timed("retrieval_policy")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        route = state["route_result"]
        symbols = (await _bundle(deps, state)).symbols if "session" in state else frozenset[str]()
        return {"plan": resolve_plan(route), "code_plan": resolve_code_plan(route, symbols)}

    return node


def context_retrieval(deps: GraphDeps) -> Node:
    @timed("context_retrieval")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        request = state["request"]
        if not request.text.strip() or "session" not in state:
            return {"evidence": [], "retrieval": RetrievalReport(gate="empty question")}
        bundle = await _bundle(deps, state)
        result = await asyncio.to_thread(deps.retrieve, bundle, request, state["route_result"], state["plan"],
                                         state.get("code_plan"), runtime.context)
        report = RetrievalReport(
            relevant=result.relevant, gate=result.gate.reason, coverage=result.gate.coverage,
            best_similarity=result.gate.best_similarity, lane_sizes=result.lane_sizes,
            timings_ms=result.timings_ms, relaxation=result.relaxation,
            signals=dataclasses.asdict(result.gate.signals) if result.gate.signals else {},
            provenance=[r.provenance() for r in result.rows],
        )
        if not result.relevant and await asyncio.to_thread(_session_gone, deps, state["session"]):
            raise session_deleted(state["session"].name)  # not "the index does not answer this"
        return {"evidence": result.rows, "retrieval": report}

    return node


def _session_gone(deps: GraphDeps, ref: SessionRef) -> bool:
    """Whether the turn's session was deleted since the turn began (by id: a session deleted and created
    again under the same name is another index). Asked only when retrieval found nothing relevant."""
    with deps.database().connection() as conn:
        return find_session(conn, ref.rag_session_id) is None


def route_after_retrieval(state: State) -> str:
    """Nothing relevant found → straight to an honest "not found" answer (analysis has nothing to do)."""
    report = state.get("retrieval")
    return "context_analysis" if report is not None and report.relevant else "answer_composition"


def _analyze(state: State, relevant: bool) -> Analysis:
    request = state["request"]
    report = state.get("retrieval")
    signals = report.signals if report is not None else {}
    return analyze(request.text, request.key_terms, state.get("evidence") or [], relevant,
                   state.get("route_result"), question=request.question, overview=bool(signals.get("overview")),
                   cross_lingual=bool(signals.get("cross_lingual")))


def context_analysis(deps: GraphDeps) -> Node:
    """Deterministic passage selection; with a chat model, the model chooses and orders the same passages
    and judges sufficiency (any failure keeps the deterministic analysis)."""

    @timed("context_analysis")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        report = state.get("retrieval")
        relevant = report is not None and report.relevant
        analysis = await asyncio.to_thread(_analyze, state, relevant)
        evidence = state.get("evidence") or []
        budget, model = _budget(deps, state, runtime), deps.chat_model
        if model is not None and analysis.passages:
            # the model reads the pack within the cap, not only the rules' passages (`reading_pool`)
            pack = state.get("evidence") or []  # what retrieval handed over, within the cap
            analysis = analysis.model_copy(update={"passages": reading_pool(analysis.passages, pack,
                                                                            runtime.context.token_cap)})
            request, route, rules = state["request"], state.get("route_result"), analysis
            chosen, budget = await _ask_llm(
                budget, "context_analysis", runtime.context.llm_timeout_s,
                lambda limit: analyze_with_llm(model, request.text, rules, evidence, route, limit,
                                               raise_unavailable=True))
            analysis = chosen or analysis
        update: dict[str, Any] = {"analysis": analysis, "llm_budget": budget}
        return update

    return node


def answer_composition(deps: GraphDeps) -> Node:
    @timed("answer_composition")
    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        route = state.get("route_result") or _empty_route()
        request = state.get("request") or StandaloneRequest(text="")
        report = state.get("retrieval")
        analysis = state.get("analysis")
        if analysis is None or report is None or not report.relevant:
            # skipped by the conditional edge: analyse "not relevant" to list the nearest files
            analysis = _analyze(state, False) if "request" in state else Analysis()
        answer, budget, model = None, _budget(deps, state, runtime), deps.chat_model
        evidence = state.get("evidence") or []
        if model is not None and llm_answer_wanted(analysis, evidence, route):
            shown = analysis
            answer, budget = await _ask_llm(
                budget, "answer_composition", runtime.context.llm_timeout_s,
                lambda limit: compose_with_llm(model, request.text, shown, evidence, route, limit,
                                               raise_unavailable=True))
        if answer is None:
            answer = compose_extractive(request.text, analysis, route)
        text = with_offline_note(answer.text, budget, analysis.language)
        citations = [c.model_dump() for c in answer.citations]
        config = get_config()
        session = state["session"].name if "session" in state else runtime.context.rag_session_id
        base = link_base(config)
        linked = link_citations(text, answer.citations, lambda cite: citation_href(cite, session, base))
        if deps.settings.log_questions:
            await asyncio.to_thread(_log_turn, deps, config, session, request, report, answer, analysis)
        return {
            "answer": text, "citations": citations, "abstained": answer.abstained,
            "citations_removed": list(answer.removed_citations),
            "answer_mode": budget.answer_mode, "offline_reason": budget.offline_reason, "llm_budget": budget,
            "llm_events": list(budget.events),
            "revision": state["session"].revision if "session" in state else None,
            # The chat UIs' answer: citations as links; the streamed message's id, so it is replaced in place.
            "messages": [AIMessage(id=answer.stream_id, content=linked, response_metadata={
                "citations": citations, "abstained": answer.abstained, "answer_mode": budget.answer_mode})],
        }

    return node


BASE_URL_KEY = "lotsman_base_url"
"""Run-metadata (or `configurable`) key with the server's URL, the base of the answer's citation links. The
assistants `lotsman assistants create` makes carry it in their metadata, which the server merges into each
run's; without it the links are server-relative."""


def link_base(config: RunnableConfig) -> str:
    """The base URL of the answer's citation links for this run ("" gives server-relative links)."""
    value = (config.get("metadata") or {}).get(BASE_URL_KEY) or (config.get("configurable") or {}).get(BASE_URL_KEY)
    return value.rstrip("/") if isinstance(value, str) and value.startswith(("http://", "https://")) else ""


SOURCE_KEY = "lotsman_source"
"""Run-metadata key naming the door a question came through (`cli`, `mcp`, `web`); without it, `server`."""


def turn_record(config: RunnableConfig, session: str, request: StandaloneRequest, report: RetrievalReport | None,
                answer: Answer, analysis: Analysis) -> dict[str, Any]:
    """The keyword arguments of `record_turn` for one answered turn: the run's id, the relevance gate's
    key-term coverage as its confidence (what `lotsman gaps` calls low), the files cited (or, when nothing
    is cited, the nearest ones)."""
    metadata = config.get("metadata") or {}
    # The server puts its run id in `configurable`; the CLI in the metadata (and as the root run's id).
    run_id = metadata.get("run_id") or (config.get("configurable") or {}).get("run_id") or config.get("run_id")
    cited = [c.path for c in answer.citations] or [f.path for f in analysis.files]
    return {"session_name": session, "question": request.question or request.text,
            "run_id": str(run_id) if run_id else None, "abstained": answer.abstained,
            "confidence": report.coverage if report is not None else None, "top_files": list(dict.fromkeys(cited))[:5],
            "source": str(metadata.get(SOURCE_KEY) or "server")}


def _log_turn(deps: GraphDeps, config: RunnableConfig, session: str, request: StandaloneRequest,
              report: RetrievalReport | None, answer: Answer, analysis: Analysis) -> None:
    """Record the turn for `lotsman gaps`; a failure costs a log line, never the answer."""
    try:
        question_logging.record_turn(deps.settings, database=deps.db,  # the pool, once a stage opened it
                                     **turn_record(config, session, request, report, answer, analysis))
    except Exception:  # record_turn promises not to raise; an answer is worth more than a log row
        logger.warning("question log: the turn was not recorded", exc_info=True)
