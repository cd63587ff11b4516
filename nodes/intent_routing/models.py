"""Route contract of seed 002 §2: `RouteResult` and `RouteAnchors` with the seed's field names (plus two anchors
of ours that select the relation and policy layers)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class RoutingDomain(StrEnum):
    DOCS = "DOCS"
    GENERAL = "GENERAL"


class Intent(StrEnum):
    DOC_EXPLAIN = "DOC_EXPLAIN"
    GENERAL_QA = "GENERAL_QA"


class Subintent(StrEnum):
    SUMMARY = "SUMMARY"
    FIND_FILES = "FIND_FILES"


class RouteAnchors(BaseModel):
    """Anchors of a request (seed 002 §2): never terms, only things that pin retrieval down."""

    model_config = ConfigDict(frozen=True)

    entity_names: list[str] = Field(default_factory=list)
    """PascalCase-like names of domain entities (`RagSession`)."""
    file_names: list[str] = Field(default_factory=list)
    """Real file/doc paths only (`*.md`, `*.yaml`, `*.yml`, `*.json`, `docs/...`)."""
    endpoint_paths: list[str] = Field(default_factory=list)
    """HTTP paths like `/health` (never file names)."""
    target_doc_hints: list[str] = Field(default_factory=list)
    """Document paths the request points at (from aliases, the endpoint map, file names)."""
    matched_aliases: list[str] = Field(default_factory=list)
    """Canonical alias terms from the session's index that occur in the request."""
    process_domain: str | None = None
    """Domain of the process the request is about, when an alias pins it down."""
    process_subdomain: str | None = None
    """Subdomain of that process, when known."""
    relation_predicates: list[str] = Field(default_factory=list)
    """Our addition: seed 003 relation fields the request asks about (`writes_db`; `calls_api` and
    `called_by` together), when it names a target ("кто вызывает /internal/rag/retrieve?")."""
    policy_markers: list[str] = Field(default_factory=list)
    """Our addition: rule words of the request («правила», "conventions", «нельзя»): it asks for the project's
    rules, which the policy layer holds."""


class RouteResult(BaseModel):
    """Output of the intent router (seed 002 §2 `V2RouteResult`)."""

    model_config = ConfigDict(frozen=True)

    routing_domain: str = RoutingDomain.GENERAL.value
    intent: str = Intent.GENERAL_QA.value
    subintent: str = Subintent.SUMMARY.value
    user_query: str
    normalized_query: str = ""
    target_terms: list[str] = Field(default_factory=list)
    anchors: RouteAnchors = Field(default_factory=RouteAnchors)
    confidence: float = 0.0
    routing_mode: str = "fallback"
    llm_router_used: bool = False
    reason_short: str = ""

    @property
    def route_label(self) -> str:
        """The route as datasets spell it: `GENERAL_QA`, `DOC_EXPLAIN/SUMMARY`, `DOC_EXPLAIN/FIND_FILES`."""
        if self.intent == Intent.GENERAL_QA.value:
            return Intent.GENERAL_QA.value
        return f"{self.intent}/{self.subintent}"


class RoutingMode(StrEnum):
    """How a `RouteResult` was decided; every fallback mode starts with `fallback`."""

    LLM_DEFAULT = "llm_default"
    """The LLM chose the route and the validator accepted it."""
    FALLBACK = "fallback"
    """No LLM configured (or nothing to ask it): the deterministic fallback decided."""
    FALLBACK_LLM_ERROR = "fallback_llm_error"
    """The LLM call failed (transport, HTTP status, timeout): the fallback decided."""
    FALLBACK_LLM_INVALID = "fallback_llm_invalid"
    """The LLM answered, but with no JSON, broken JSON or a route outside the catalog."""
