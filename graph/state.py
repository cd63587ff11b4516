"""Typed state of the QA graph, with the narrow input and output schemas a parent graph sees.

Inside the graph every stage result is the stage's frozen model, derived once and read as is by later
stages. The output schema stays JSON-shaped (`route` and `citations` as plain dicts): it is what SDK
clients, parent graphs and `lotsman ask --json` read, and it must not change when a model grows a field.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from nodes.context_analysis import Analysis
from nodes.conversation_understanding import StandaloneRequest
from nodes.evidence import EvidenceRow
from nodes.intent_routing import RouteResult
from nodes.llm_budget import LLMBudget
from nodes.retrieval_policy import CodePlan, RetrievalPlan


class SessionRef(BaseModel):
    """The session a turn reads, pinned to one index generation for the whole turn."""

    model_config = ConfigDict(frozen=True)

    rag_session_id: str
    name: str
    generation: int
    """`active_generation` when the turn began: every stage of the turn uses the same bundle."""
    revision: dict[str, str] | None = None
    """The git revision the session was indexed from (`{repo, ref, commit}`), None for a working tree."""


class RetrievalReport(BaseModel):
    """The gate's verdict and per-lane diagnostics of context_retrieval (what LangSmith shows)."""

    model_config = ConfigDict(frozen=True)

    relevant: bool = False
    gate: str = ""
    """Why the gate passed or failed (`key terms covered (0.40)`, `not in the index: Kafka`)."""
    coverage: float = 0.0
    best_similarity: float = 0.0
    lane_sizes: dict[str, int] = Field(default_factory=dict)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    relaxation: str = "hard"
    """How far the plan's hard filters were loosened to find enough rows (`hard`, `preference`, `none`)."""
    signals: dict[str, Any] = Field(default_factory=dict)
    """What the gate measured (`GateSignals`): coverage, best row coverage, similarity, cross-lingual."""
    provenance: list[dict[str, Any]] = Field(default_factory=list)
    """Per returned row: path, lines, layer, lanes → rank, fused score."""


class InputState(TypedDict, total=False):
    """What a caller sends: the conversation (the last user message is the question)."""

    messages: Annotated[list[AnyMessage], add_messages]
    """Conversation so far; kept per thread by the checkpointer, so a turn only sends its new message. Content
    is a string or content blocks (agent-chat-ui); only text blocks are read (docs/api/chat_ui.md)."""


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation, ending with the assistant's answer as an `AIMessage` for chat UIs: each verified
    citation a Markdown link to the server's citation view (docs/api/chat_ui.md)."""
    answer: str
    """The answer text (citations inline as `[path:start-end]`, no links): what `ask` prints and evals score."""
    citations: list[dict[str, Any]]
    """Verified citations: `{path, start_line, end_line}`, each inside retrieved evidence."""
    citations_removed: list[str]
    """Citations the LLM wrote outside the evidence it was shown, removed from the answer (`[]` offline)."""
    route: dict[str, Any]
    """The intent router's `RouteResult` (seed 002), as JSON."""
    abstained: bool
    """True when the evidence did not answer the question and the answer says so."""
    timings_ms: dict[str, float]
    """Milliseconds per node of this turn."""
    answer_mode: str
    """`llm` when the chat model was there for the whole request (a stage still falls back on its own when
    a reply is unusable); `offline` when the request ran without it: none configured, `use_llm: false`, or
    it stopped answering (a timeout, a connection failure, the request's LLM deadline used up), in which
    case the answer text ends with a line saying so."""
    offline_reason: str
    """Why the request ran offline (`intent_routing: no answer within 3s`); "" in `llm` mode."""
    llm_events: list[str]
    """What the model's replies needed, `stage: event` in call order (`nodes/llm_events.py`): `intent_routing:
    route json repaired`, `answer_composition: citations removed: 1`, `answer_composition: answer in the wrong
    language, re-asked`; a clean reply says so too (`route tool call`, `citations verified`); `[]` when no
    call was made."""
    revision: dict[str, str] | None
    """The git revision the answer was read from (`{repo, ref, commit}`; `lotsman index --ref`), None when
    the session holds a working tree."""


class State(InputState, OutputState, total=False):
    """Everything the six nodes read and write during one turn."""

    llm_budget: LLMBudget
    """The request's one LLM deadline (set by the first node) and, once the model stopped answering, why
    the rest of the request runs offline."""
    request: StandaloneRequest
    """The request rewritten to stand alone, with its key terms (after routing)."""
    session: SessionRef
    """The session and index generation this turn reads."""
    route_result: RouteResult
    """The router's result; `route` is its JSON for callers."""
    plan: RetrievalPlan
    """The seed 000 `RetrievalPlan`."""
    code_plan: CodePlan | None
    """Our code plan (C3→C1→C2→C0), or None when the request is not about implementation."""
    evidence: list[EvidenceRow]
    """Fused, capped evidence rows with provenance (lanes, ranks, fused score)."""
    retrieval: RetrievalReport
    """Gate verdict and lane diagnostics of context_retrieval."""
    analysis: Analysis
    """context_analysis output: evidence by file, answering spans, sufficiency."""
