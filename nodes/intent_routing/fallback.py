"""Deterministic fallback routing (seed 002 §5 routers/fallback.py): used only when the LLM can't decide."""

from __future__ import annotations

import re

from nodes.intent_routing.features import QueryFeatures
from nodes.intent_routing.models import RouteAnchors, RouteResult, RoutingMode
from nodes.intent_routing.route_catalog import DOC_FIND_FILES, DOC_SUMMARY, GENERAL_QA, Route
from nodes.intent_routing.validator import MAX_REASON_CHARS

# Fixed, documented confidences: a rule match is weaker evidence than an LLM judgement, and a route chosen
# on markers alone is weaker than one chosen on anchors the index knows.
FIND_FILES_CONFIDENCE = 0.6
DOCS_WITH_ANCHORS_CONFIDENCE = 0.55
DOCS_MARKERS_ONLY_CONFIDENCE = 0.4
GENERAL_CONFIDENCE = 0.45
EMPTY_QUERY_CONFIDENCE = 0.0


# The user asks for the general idea, not for what the project documents: "в общих чертах", "in general".
GENERAL_MARKERS = re.compile(
    r"\b(?:в\s+общих\s+чертах|простыми\s+словами|в\s+целом|вообще|в\s+программировании|в\s+общем\s+случае"
    r"|in\s+general|generally\s+speaking|in\s+simple\s+terms|in\s+plain\s+(?:english|words)|conceptually"
    r"|in\s+programming)\b",
    re.IGNORECASE,
)


def general_markers(query: str) -> list[str]:
    """Phrases asking for a general explanation rather than the project's documentation."""
    return [m.group(0).lower() for m in GENERAL_MARKERS.finditer(query)]


def choose_fallback_route(features: QueryFeatures) -> tuple[Route, float, str]:
    """Pick the fallback route, its confidence and a short reason.

    Rules (seed 002 §5): relation phrases with a named target → DOCS/DOC_EXPLAIN/SUMMARY (our addition);
    file markers → DOCS/DOC_EXPLAIN/FIND_FILES; general markers without file or
    endpoint anchors → GENERAL (our addition); docs signals (endpoint paths,
    doc hints, aliases, entities, files, identifiers, any marker group) → DOCS/DOC_EXPLAIN/SUMMARY;
    otherwise GENERAL/GENERAL_QA/SUMMARY.
    """
    if not features.normalized_query:
        return GENERAL_QA, EMPTY_QUERY_CONFIDENCE, "empty query"
    if features.markers.relation_markers:
        # «какие модули пишут в rag_chunks?» reads like a file question, but the answer is the relation's
        # other end, cited from its frontmatter line: an explanation, not a list of files.
        return DOC_SUMMARY, DOCS_WITH_ANCHORS_CONFIDENCE, f"relation: {_show(features.markers.relation_markers)}"
    if features.markers.file_markers:
        return DOC_FIND_FILES, FIND_FILES_CONFIDENCE, f"file markers: {_show(features.markers.file_markers)}"
    general = general_markers(features.normalized_query)
    if general and not (features.anchors.file_names or features.anchors.endpoint_paths):
        # Our one addition to seed 002's fallback: an explicit request for the general idea wins over
        # incidental aliases ("Что такое CORS простыми словами?").
        return GENERAL_QA, GENERAL_CONFIDENCE, f"general markers: {_show(tuple(general))}"
    if features.has_strong_anchors or features.anchors.target_doc_hints:
        return DOC_SUMMARY, DOCS_WITH_ANCHORS_CONFIDENCE, f"docs anchors: {_show(_anchor_sample(features))}"
    if features.has_docs_signals:
        return DOC_SUMMARY, DOCS_MARKERS_ONLY_CONFIDENCE, f"docs markers: {_show(features.markers.groups())}"
    return GENERAL_QA, GENERAL_CONFIDENCE, "no project anchors or markers"


def fallback_route(
    user_query: str,
    features: QueryFeatures,
    anchors: RouteAnchors,
    llm_attempted: bool,
    *,
    routing_mode: RoutingMode | None = None,
    note: str = "",
) -> RouteResult:
    """Build the fallback `RouteResult`.

    Args:
        user_query: The request as the user wrote it.
        features: Signals of the normalized query.
        anchors: Anchors to return (normally `features.anchors`).
        llm_attempted: Whether an LLM was asked first (and failed or answered invalidly).
        routing_mode: Overrides the mode; default `fallback_llm_invalid` after an attempt, else `fallback`.
        note: Why the LLM answer was not used (e.g. `"LLM error: ServerError 500"`), prefixed to the reason.

    Returns:
        A result with `llm_router_used=False`: the route did not come from the LLM.
    """
    route, confidence, reason = choose_fallback_route(features)
    mode = routing_mode or (RoutingMode.FALLBACK_LLM_INVALID if llm_attempted else RoutingMode.FALLBACK)
    return RouteResult(
        routing_domain=route.routing_domain,
        intent=route.intent,
        subintent=route.subintent,
        user_query=user_query,
        normalized_query=features.normalized_query,
        target_terms=list(features.target_terms),
        anchors=anchors,
        confidence=confidence,
        routing_mode=mode.value,
        llm_router_used=False,
        reason_short=(f"{note}; fallback: {reason}" if note else f"fallback: {reason}")[:MAX_REASON_CHARS],
    )


def _anchor_sample(features: QueryFeatures) -> tuple[str, ...]:
    a = features.anchors
    names = (*a.endpoint_paths, *a.file_names, *a.entity_names, *a.matched_aliases, *features.identifiers)
    return tuple(dict.fromkeys(names))


def _show(items: tuple[str, ...], limit: int = 3, width: int = 40) -> str:
    return ", ".join(item[:width] for item in items[:limit]) or "-"
