"""`QueryFeatures`: everything the deterministic layer knows about a query, assembled once per request."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.intent_routing.anchors import AnchorAnalysis, MarkerSignals
from nodes.intent_routing.models import RouteAnchors
from nodes.intent_routing.target_terms import TargetTermsAnalysis

SHORT_QUERY_WORDS = 3


@dataclass(frozen=True)
class QueryFeatures:
    """Signals of one query for the LLM payload, the confidence adjuster and the fallback."""

    normalized_query: str
    word_count: int
    target_terms: tuple[str, ...]
    identifiers: tuple[str, ...]
    anchors: RouteAnchors
    markers: MarkerSignals

    @property
    def has_strong_anchors(self) -> bool:
        """Something the index can pin down: an endpoint, file, entity, alias or identifier."""
        a = self.anchors
        return bool(
            a.endpoint_paths or a.file_names or a.entity_names or a.matched_aliases or self.identifiers
        )

    @property
    def has_explicit_signal(self) -> bool:
        """The user named what they want: file markers, an endpoint path or endpoint markers."""
        m = self.markers
        return bool(m.file_markers or self.anchors.endpoint_paths or m.endpoint_markers)

    @property
    def is_short_or_vague(self) -> bool:
        """Fewer than three words, or nothing retrieval could search for."""
        return self.word_count < SHORT_QUERY_WORDS or not self.target_terms

    @property
    def has_docs_signals(self) -> bool:
        """Anything tying the query to the project: strong anchors, doc hints or any marker group."""
        return self.has_strong_anchors or bool(self.anchors.target_doc_hints or self.markers.groups())


def build_features(
    normalized_query: str, terms: TargetTermsAnalysis, anchors: AnchorAnalysis
) -> QueryFeatures:
    """Assemble `QueryFeatures` from the extractors' outputs (seed 002 §4 step 5)."""
    return QueryFeatures(
        normalized_query=normalized_query,
        word_count=len(normalized_query.split()),
        target_terms=terms.target_terms,
        identifiers=terms.identifiers,
        anchors=anchors.anchors,
        markers=anchors.markers,
    )
