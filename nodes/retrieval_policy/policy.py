"""Seed 000 `V2RetrievalPolicyResolver`: one deterministic `RetrievalPlan` per routed request."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nodes.intent_routing.models import Intent, RouteResult, Subintent
from stores.layers import Layer
from stores.statements import escape_like


class AnchorSignal(StrEnum):
    """Anchor signal types of seed 000 §6, in the order prefixes are merged."""

    FIND_FILES = "FIND_FILES"
    API_ENDPOINT = "API_ENDPOINT"
    ARCHITECTURE = "ARCHITECTURE"
    LOGIC_FLOW = "LOGIC_FLOW"
    DOMAIN_ENTITY = "DOMAIN_ENTITY"


class RetrievalProfile(StrEnum):
    """Profiles of seed 000 §8."""

    GENERAL_QA_GROUNDED_SUMMARY = "general_qa_grounded_summary"
    FILE_LOOKUP = "file_lookup"
    DOCS_SUMMARY_API_ENDPOINT = "docs_summary_api_endpoint"
    DOCS_SUMMARY_LOGIC_FLOW = "docs_summary_logic_flow"
    DOCS_SUMMARY_DOMAIN_ENTITY = "docs_summary_domain_entity"
    DOCS_SUMMARY_ARCHITECTURE = "docs_summary_architecture"
    DOCS_SUMMARY_GENERIC = "docs_summary_generic"


class LayerProfile(StrEnum):
    """Our profiles beside seed 000's (issue 30): a question whose answer one seed 003 layer holds."""

    DOCS_RELATION_GRAPH = "docs_relation_graph"
    """"who calls / writes / consumes X": the relation edges (frontmatter relation fields) first."""
    DOCS_POLICY_RULES = "docs_policy_rules"
    """"what are the rules for X": the policy layer first."""


class PlanFilters(BaseModel):
    """The filters of a plan (seed 000 §9-10). `None` means "no such filter" (the seed's absent key), which
    differs from an empty list only for `path_prefixes`: no prefixes at all vs. nothing may match."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    path_prefixes: list[str] | None = None
    """Hard filter: only paths under one of these prefixes."""
    prefer_path_prefixes: list[str] | None = None
    """Soft: rows under these prefixes get seed 001's `prefer_bonus`."""
    prefer_like_patterns: list[str] | None = None
    """Soft: rows whose path matches one of these LIKE patterns (`%term%`, already escaped) get the bonus."""
    target_doc_hints: list[str] | None = None
    """Files the router pinned the request to (seeded by exact path, then by path substring)."""
    metadata_domain: str | None = Field(default=None, alias="metadata.domain")
    """Hard filter on the catalog's `domain` (frontmatter)."""
    metadata_subdomain: str | None = Field(default=None, alias="metadata.subdomain")
    """Hard filter on the catalog's `subdomain`."""

    def seed_dict(self) -> dict[str, Any]:
        """The filters as seed 000 writes them: its key names, absent keys left out."""
        return self.model_dump(by_alias=True, exclude_none=True)


class RetrievalPlan(BaseModel):
    """What to retrieve for one request (seed 000 §1)."""

    model_config = ConfigDict(frozen=True)

    profile: str
    """One of the `RetrievalProfile` values (seed 000) or of ours, `LayerProfile`."""
    layers: list[str]
    """Index layers to search, in priority order (`Layer` values)."""
    limit: int
    """How many rows the retriever returns."""
    filters: PlanFilters = Field(default_factory=PlanFilters)
    """Seed 000's filters, typed; a dict with the seed's key names is accepted too."""


# Meaningful signals in merge order; FIND_FILES is excluded from profile choice (§7).
_MEANINGFUL_SIGNALS: tuple[AnchorSignal, ...] = (
    AnchorSignal.API_ENDPOINT,
    AnchorSignal.ARCHITECTURE,
    AnchorSignal.LOGIC_FLOW,
    AnchorSignal.DOMAIN_ENTITY,
)

# §6: substrings looked for in target_doc_hints / file_names / matched_aliases (lower-cased).
_SIGNAL_MARKERS: dict[AnchorSignal, tuple[str, ...]] = {
    AnchorSignal.API_ENDPOINT: ("/api/", "api", "endpoint"),
    AnchorSignal.ARCHITECTURE: ("/architecture/", "architecture", "arch"),
    AnchorSignal.LOGIC_FLOW: ("/logic/", "logic", "workflow", "flow", "process"),
    AnchorSignal.DOMAIN_ENTITY: ("/domains/", "domain", "entity", "component"),
}

# §7
_SIGNAL_PROFILES: dict[AnchorSignal, RetrievalProfile] = {
    AnchorSignal.API_ENDPOINT: RetrievalProfile.DOCS_SUMMARY_API_ENDPOINT,
    AnchorSignal.ARCHITECTURE: RetrievalProfile.DOCS_SUMMARY_ARCHITECTURE,
    AnchorSignal.LOGIC_FLOW: RetrievalProfile.DOCS_SUMMARY_LOGIC_FLOW,
    AnchorSignal.DOMAIN_ENTITY: RetrievalProfile.DOCS_SUMMARY_DOMAIN_ENTITY,
}

# §8
_D0, _D1, _D2, _D3, _D4, _D5, _D6 = (
    Layer.D0_DOC_CHUNKS,
    Layer.D1_DOCUMENT_CATALOG,
    Layer.D2_FACT_INDEX,
    Layer.D3_ENTITY_CATALOG,
    Layer.D4_WORKFLOW_INDEX,
    Layer.D5_RELATION_GRAPH,
    Layer.D6_POLICY_INDEX,
)
_PROFILE_LAYERS: dict[RetrievalProfile | LayerProfile, tuple[tuple[Layer, ...], int]] = {
    RetrievalProfile.GENERAL_QA_GROUNDED_SUMMARY: ((_D1, _D0), 8),
    RetrievalProfile.FILE_LOOKUP: ((_D1, _D3), 12),
    RetrievalProfile.DOCS_SUMMARY_API_ENDPOINT: ((_D1, _D2, _D0), 8),
    RetrievalProfile.DOCS_SUMMARY_LOGIC_FLOW: ((_D4, _D1, _D0), 8),
    RetrievalProfile.DOCS_SUMMARY_DOMAIN_ENTITY: ((_D3, _D1, _D0), 8),
    RetrievalProfile.DOCS_SUMMARY_ARCHITECTURE: ((_D1, _D5, _D0), 8),
    RetrievalProfile.DOCS_SUMMARY_GENERIC: ((_D1, _D0), 8),
    # ours (issue 30): the layer that holds the answer first, the card and the text behind it
    LayerProfile.DOCS_RELATION_GRAPH: ((_D5, _D1, _D0), 8),
    LayerProfile.DOCS_POLICY_RULES: ((_D6, _D1, _D0), 8),
}

# §9
_GENERAL_PREFER_PATH_PREFIXES = ("docs/architecture/", "docs/")
_GENERAL_PREFER_LIKE_PATTERNS = ("%readme.md%", "%overview%")
_API_PATH_PREFIXES = ("docs/api/", "docs/")
_DEFAULT_PREFIXES = ("docs/",)
_SUMMARY_PREFER_PREFIXES: dict[AnchorSignal, tuple[str, ...]] = {
    AnchorSignal.API_ENDPOINT: _API_PATH_PREFIXES,
    AnchorSignal.ARCHITECTURE: ("docs/architecture/", "docs/"),
    AnchorSignal.LOGIC_FLOW: ("docs/logic/", "docs/architecture/", "docs/"),
    AnchorSignal.DOMAIN_ENTITY: ("docs/domains/", "docs/", "docs/api/"),
}
_FIND_FILES_FALLBACK_PREFIXES: dict[AnchorSignal, tuple[str, ...]] = {
    AnchorSignal.API_ENDPOINT: _API_PATH_PREFIXES,
    AnchorSignal.ARCHITECTURE: ("docs/architecture/", "docs/"),
    AnchorSignal.LOGIC_FLOW: ("docs/logic/", "docs/"),
    AnchorSignal.DOMAIN_ENTITY: ("docs/domains/", "docs/"),
}
_DOMAIN_PREFER_PREFIXES = ("docs/domains/", "docs/logic/")


def dedupe(values: Iterable[str]) -> list[str]:
    """Drops blanks and repeats, keeping the first occurrence's position."""
    return list(dict.fromkeys(value for value in values if value))


def like_pattern(term: str) -> str:
    """`%term%` over the lower-cased term; `\\`, `%` and `_` inside it are escaped (PostgreSQL's
    default LIKE escape is the backslash), so the pattern means "contains the term literally"."""
    return f"%{escape_like(term.strip().lower())}%"


def _basename(path: str) -> str:
    return posixpath.basename(path.strip().rstrip("/"))


def _directory(path: str) -> str:
    directory = posixpath.dirname(path.strip())
    return f"{directory}/" if directory else ""


def _has_marker(values: Iterable[str], markers: tuple[str, ...]) -> bool:
    return any(marker in value.lower() for value in values for marker in markers)


def anchor_signal_types(route: RouteResult) -> frozenset[AnchorSignal]:
    """Signals of seed 000 §6; process_domain/subdomain deliberately take no part."""
    anchors = route.anchors
    marked = (*anchors.target_doc_hints, *anchors.file_names, *anchors.matched_aliases)
    signals: set[AnchorSignal] = set()
    if route.subintent == Subintent.FIND_FILES:
        signals.add(AnchorSignal.FIND_FILES)
    for signal in _MEANINGFUL_SIGNALS:
        if _has_marker(marked, _SIGNAL_MARKERS[signal]):
            signals.add(signal)
    if anchors.endpoint_paths:
        signals.add(AnchorSignal.API_ENDPOINT)
    if anchors.entity_names:
        signals.add(AnchorSignal.DOMAIN_ENTITY)
    return frozenset(signals)


def _ordered(signals: frozenset[AnchorSignal]) -> list[AnchorSignal]:
    return [signal for signal in _MEANINGFUL_SIGNALS if signal in signals]


def _metadata_filters(route: RouteResult) -> dict[str, str]:
    # The repository compares `lower(metadata_json->>'domain') = :metadata_domain` (§11).
    values = {
        "metadata.domain": route.anchors.process_domain,
        "metadata.subdomain": route.anchors.process_subdomain,
    }
    return {key: value.strip().lower() for key, value in values.items() if value and value.strip()}


class _AnchorTermCollector:
    """Terms for `prefer_like_patterns` (seed 000 §5)."""

    def terms(self, route: RouteResult) -> list[str]:
        anchors = route.anchors
        return dedupe(
            term.strip().lower()
            for term in (
                *(_basename(hint) for hint in anchors.target_doc_hints),
                *anchors.endpoint_paths,
                *anchors.file_names,
                *anchors.entity_names,
                *anchors.matched_aliases,
                anchors.process_domain or "",
                anchors.process_subdomain or "",
            )
        )

    def patterns(self, route: RouteResult) -> list[str]:
        return dedupe(like_pattern(term) for term in self.terms(route))

    def find_files_patterns(self, route: RouteResult) -> list[str]:
        """With target_doc_hints only their basenames count; otherwise all collected terms."""
        hints = route.anchors.target_doc_hints
        if not hints:
            return self.patterns(route)
        return dedupe(like_pattern(name) for name in (_basename(hint) for hint in hints) if name)


class _RouteFilterBuilder:
    """Filters of the three branches (seed 000 §9)."""

    def __init__(self, collector: _AnchorTermCollector) -> None:
        self._collector = collector

    def general_filters(self, route: RouteResult) -> dict[str, Any]:
        # Overview plan, deliberately without hard path_prefixes.
        return {
            "prefer_path_prefixes": list(_GENERAL_PREFER_PATH_PREFIXES),
            "prefer_like_patterns": list(_GENERAL_PREFER_LIKE_PATTERNS),
            "target_doc_hints": list(route.anchors.target_doc_hints),
        }

    def summary_filters(self, route: RouteResult) -> dict[str, Any]:
        filters: dict[str, Any] = {"target_doc_hints": list(route.anchors.target_doc_hints)}
        filters.update(_metadata_filters(route))
        # §12 quirk: the API signal narrows even when a conflict made the profile generic.
        if AnchorSignal.API_ENDPOINT in anchor_signal_types(route):
            filters["path_prefixes"] = list(_API_PATH_PREFIXES)
        filters["prefer_path_prefixes"] = self._summary_prefixes(route)
        filters["prefer_like_patterns"] = self._collector.patterns(route)
        return filters

    def relation_filters(self, route: RouteResult) -> dict[str, Any]:
        """Summary filters without hard filters (the API signal's prefixes, the alias's domain) and without
        doc hints: the edge that answers "who calls /x" lives in the caller's card, wherever and in whichever
        domain the caller is documented, while the hints point at the target's own page."""
        filters = self.summary_filters(route)
        # the other end of a relation lives in another card, often of another domain: no hard filters
        for hard in ("path_prefixes", "metadata.domain", "metadata.subdomain"):
            filters.pop(hard, None)
        filters["target_doc_hints"] = []
        filters["prefer_like_patterns"] = _RELATION_COLLECTOR.patterns(route)
        return filters

    def find_files_filters(self, route: RouteResult) -> dict[str, Any]:
        path_prefixes = self._find_files_prefixes(route)
        filters: dict[str, Any] = {"target_doc_hints": list(route.anchors.target_doc_hints)}
        filters.update(_metadata_filters(route))
        filters["path_prefixes"] = path_prefixes
        filters["prefer_path_prefixes"] = self._find_files_prefer_prefixes(route, path_prefixes)
        filters["prefer_like_patterns"] = self._collector.find_files_patterns(route)
        return filters

    def _summary_prefixes(self, route: RouteResult) -> list[str]:
        signals = _ordered(anchor_signal_types(route))
        if not signals:
            return list(_DEFAULT_PREFIXES)
        return dedupe(prefix for signal in signals for prefix in _SUMMARY_PREFER_PREFIXES[signal])

    def _find_files_prefixes(self, route: RouteResult) -> list[str]:
        """Priority: hint directories, then `docs/` file-name directories, then signals, then `docs/`."""
        anchors = route.anchors
        from_hints = dedupe(_directory(hint) for hint in anchors.target_doc_hints)
        if from_hints:
            return from_hints
        docs_files = (name for name in anchors.file_names if name.strip().startswith("docs/"))
        from_files = dedupe(_directory(name) for name in docs_files)
        if from_files:
            return from_files
        signals = _ordered(anchor_signal_types(route))
        from_signals = dedupe(p for signal in signals for p in _FIND_FILES_FALLBACK_PREFIXES[signal])
        return from_signals or list(_DEFAULT_PREFIXES)

    def _find_files_prefer_prefixes(self, route: RouteResult, path_prefixes: list[str]) -> list[str]:
        anchors = route.anchors
        if not (anchors.process_domain or anchors.process_subdomain):
            return list(path_prefixes)
        return dedupe([*path_prefixes, *_DOMAIN_PREFER_PREFIXES])


class _RelationTermCollector(_AnchorTermCollector):
    """A relation plan's preferred paths: the named target's words, not the hinted page's name."""

    def terms(self, route: RouteResult) -> list[str]:
        return super().terms(route.model_copy(update={"anchors": route.anchors.model_copy(
            update={"target_doc_hints": []})}))


_RELATION_COLLECTOR = _RelationTermCollector()
_FILTERS = _RouteFilterBuilder(_AnchorTermCollector())


def _summary_profile(route: RouteResult) -> RetrievalProfile:
    meaningful = anchor_signal_types(route) - {AnchorSignal.FIND_FILES}
    if len(meaningful) != 1:
        return RetrievalProfile.DOCS_SUMMARY_GENERIC
    (signal,) = meaningful
    return _SIGNAL_PROFILES[signal]


def _plan(profile: RetrievalProfile | LayerProfile, filters: dict[str, Any]) -> RetrievalPlan:
    layers, limit = _PROFILE_LAYERS[profile]
    return RetrievalPlan(profile=profile.value, layers=[layer.value for layer in layers], limit=limit,
                         filters=PlanFilters.model_validate(filters))


def resolve_plan(route: RouteResult) -> RetrievalPlan:
    """Builds the docs retrieval plan for a routed request (seed 000 §4).

    Args:
        route: The router's result; `target_terms` take no part in the decision (§3, §12).

    Returns:
        Exactly one valid plan: GENERAL_QA → general; a relation question (our addition) → the relation
        graph, whichever subintent; FIND_FILES → file lookup; a rules question (ours) → the policy layer;
        else a summary profile.
    """
    if route.intent == Intent.GENERAL_QA:
        return _plan(RetrievalProfile.GENERAL_QA_GROUNDED_SUMMARY, _FILTERS.general_filters(route))
    if route.anchors.relation_predicates:
        return _plan(LayerProfile.DOCS_RELATION_GRAPH, _FILTERS.relation_filters(route))
    if route.subintent == Subintent.FIND_FILES:
        return _plan(RetrievalProfile.FILE_LOOKUP, _FILTERS.find_files_filters(route))
    if route.anchors.policy_markers:
        return _plan(LayerProfile.DOCS_POLICY_RULES, _FILTERS.summary_filters(route))
    return _plan(_summary_profile(route), _FILTERS.summary_filters(route))
