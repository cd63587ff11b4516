"""Typed state of the QA graph, with the narrow input and output schemas a parent graph sees."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class InputState(TypedDict, total=False):
    """What a caller sends: the conversation (the last user message is the question)."""

    messages: Annotated[list[AnyMessage], add_messages]
    """Conversation so far; kept per thread by the checkpointer, so a turn only sends its new message."""


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation, ending with the assistant's cited answer."""
    answer: str
    """The answer text (citations inline as `path:start-end`)."""
    citations: list[dict[str, Any]]
    """Verified citations: `{path, start_line, end_line}`, each inside retrieved evidence."""
    route: dict[str, Any]
    """The intent router's `RouteResult` (seed 002)."""
    abstained: bool
    """True when the evidence did not answer the question and the answer says so."""
    timings_ms: dict[str, float]
    """Milliseconds per node of this turn."""


class State(InputState, OutputState, total=False):
    """Everything the six nodes read and write during one turn."""

    standalone_query: str
    """The request rewritten to stand alone (follow-ups carry terms from earlier turns)."""
    plan: dict[str, Any]
    """The seed 000 `RetrievalPlan`."""
    code_plan: dict[str, Any] | None
    """Our code plan (C3→C1→C2→C0), or None when the request is not about implementation."""
    evidence: list[dict[str, Any]]
    """Fused, capped `EvidenceRow`s with provenance (lanes, ranks, fused score)."""
    retrieval: dict[str, Any]
    """Gate verdict and lane diagnostics of context_retrieval."""
    analysis: dict[str, Any]
    """context_analysis output: evidence by file, answering spans, sufficiency."""
