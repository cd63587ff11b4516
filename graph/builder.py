"""`build_graph(deps)`: the six-stage QA graph over one typed state."""

from __future__ import annotations

import copy
from typing import Any

import psycopg
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from graph import nodes
from graph.context import Context
from graph.deps import GraphDeps
from graph.state import InputState, OutputState, State

STAGES = ("conversation_understanding", "intent_routing", "retrieval_policy", "context_retrieval",
          "context_analysis", "answer_composition")

# Transient database trouble (a restarted server, a dropped pooled connection) is retried, not answered.
DB_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.2, retry_on=(psycopg.OperationalError,))


def build_graph(deps: GraphDeps | None = None, *, checkpointer: Any = None, name: str = "lotsman") -> Any:
    """Compile the QA graph.

    Args:
        deps: injected dependencies (database, chat model, embedder); production wiring by default.
        checkpointer: keeps multi-turn state per thread (omit on a LangGraph server: it brings its own).
        name: graph name (shown in LangSmith and when embedded as a subgraph).
    """
    deps = deps or GraphDeps.from_settings()
    builder: StateGraph[State, Context, InputState, OutputState] = StateGraph(
        State, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("conversation_understanding", nodes.conversation_understanding(deps))
    builder.add_node("intent_routing", nodes.intent_routing(deps), retry_policy=DB_RETRY)
    builder.add_node("retrieval_policy", nodes.retrieval_policy(deps), retry_policy=DB_RETRY)
    builder.add_node("context_retrieval", nodes.context_retrieval(deps), retry_policy=DB_RETRY)
    builder.add_node("context_analysis", nodes.context_analysis(deps))
    builder.add_node("answer_composition", nodes.answer_composition(deps))
    builder.add_edge(START, "conversation_understanding")
    builder.add_edge("conversation_understanding", "intent_routing")
    builder.add_edge("intent_routing", "retrieval_policy")
    builder.add_edge("retrieval_policy", "context_retrieval")
    builder.add_conditional_edges("context_retrieval", nodes.route_after_retrieval,
                                  ["context_analysis", "answer_composition"])
    builder.add_edge("context_analysis", "answer_composition")
    builder.add_edge("answer_composition", END)
    return builder.compile(checkpointer=strict_checkpointer(checkpointer), name=name)


def strict_checkpointer(checkpointer: Any) -> Any:
    """A copy of `checkpointer` that deserializes only the types our state declares (and LangChain's
    messages): the state holds the stages' pydantic models, which LangGraph's default serializer would
    load from any module with a warning per type (and will refuse in a later release)."""
    if checkpointer is None or isinstance(checkpointer, bool) or not hasattr(checkpointer, "serde"):
        return checkpointer
    from langgraph._internal._serde import build_serde_allowlist  # langgraph is pinned < 2

    allowed = build_serde_allowlist(schemas=[State, InputState, OutputState, Context])
    clone = copy.copy(checkpointer)
    clone.serde = JsonPlusSerializer(allowed_msgpack_modules=allowed)
    return clone
