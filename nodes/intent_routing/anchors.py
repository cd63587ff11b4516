"""Anchors and marker signals of a query (seed 002 §5 modules/anchors.py), kept apart from target terms."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from nodes.intent_routing.aliases import AliasIndex
from nodes.intent_routing.lexicon import (
    ARCHITECTURE_MARKERS,
    DOMAIN_MARKERS,
    ENDPOINT_MARKERS,
    FILE_MARKER_PATTERNS,
    HTTP_METHODS,
    LOGIC_MARKERS,
    POLICY_PATTERNS,
    RELATION_VERBS,
)
from nodes.intent_routing.models import RouteAnchors
from nodes.intent_routing.target_terms import TargetTermsAnalysis, classify_token
from nodes.tokens import clean_token, is_entity_name, words_of

MAX_DOC_HINTS = 12


@dataclass(frozen=True)
class MarkerSignals:
    """Marker words/phrases found per group; they steer the fallback and confidence, never retrieval."""

    file_markers: tuple[str, ...] = ()
    architecture_markers: tuple[str, ...] = ()
    logic_markers: tuple[str, ...] = ()
    domain_markers: tuple[str, ...] = ()
    endpoint_markers: tuple[str, ...] = ()
    relation_markers: tuple[str, ...] = ()
    """Relation phrases («кто вызывает», "which modules write"); only with a named target."""
    policy_markers: tuple[str, ...] = ()
    """Rule words («правила», "conventions", «нельзя»)."""

    def groups(self) -> tuple[str, ...]:
        """Names of the groups that fired, e.g. `("file_markers", "domain_markers")`."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name))


@dataclass(frozen=True)
class AnchorAnalysis:
    """Output of `extract_anchors`."""

    anchors: RouteAnchors
    markers: MarkerSignals


def relation_phrases(normalized_query: str) -> list[tuple[str, tuple[str, ...]]]:
    """Relation phrases of a query with the seed 003 relation fields each asks about, in query order."""
    found = [(m.start(), m.group(0).lower(), predicates) for pattern, predicates in RELATION_VERBS
             if (m := pattern.search(normalized_query))]
    return [(phrase, predicates) for _, phrase, predicates in sorted(found)]


def relation_predicates(normalized_query: str, has_target: bool) -> list[str]:
    """The relation fields a question asks about (`["writes_db"]`), both ends of a pair (`calls_api`,
    `called_by`); none without a named target (an endpoint, identifier or entity): "what uses less memory?"
    names nothing the edges could hold."""
    if not has_target:
        return []
    return list(dict.fromkeys(p for _, predicates in relation_phrases(normalized_query) for p in predicates))


def policy_words(normalized_query: str) -> list[str]:
    """Rule words of a query («правила», "conventions", «нельзя»), lower-cased, in pattern order."""
    return list(dict.fromkeys(m.group(0).lower() for p in POLICY_PATTERNS if (m := p.search(normalized_query))))


def detect_markers(normalized_query: str, *, has_target: bool = False) -> MarkerSignals:
    """Find marker signals: file markers are phrases, the other groups are (stemmed) words."""
    lowered = normalized_query.lower()
    words = words_of(lowered)
    methods = tuple(dict.fromkeys(t for t in map(clean_token, normalized_query.split()) if t in HTTP_METHODS))
    return MarkerSignals(
        file_markers=tuple(
            dict.fromkeys(m.group(0) for p in FILE_MARKER_PATTERNS if (m := p.search(lowered)))
        ),
        architecture_markers=ARCHITECTURE_MARKERS.first_hits(words),
        logic_markers=LOGIC_MARKERS.first_hits(words),
        domain_markers=DOMAIN_MARKERS.first_hits(words),
        endpoint_markers=(*ENDPOINT_MARKERS.first_hits(words), *methods),
        relation_markers=tuple(phrase for phrase, _ in relation_phrases(normalized_query)) if has_target else (),
        policy_markers=tuple(policy_words(normalized_query)),
    )


def process_domain_entry(entries: Sequence[Any]) -> Any | None:
    """The matched alias entry whose `domain` (and `subdomain`) the route takes: the first one with a domain,
    when every matched entry with a domain names the same one. Entries naming different domains leave the
    process domain unset: the domain becomes a hard retrieval filter, and the first match's domain (a test
    fixture's `rag`) had kept the page that answers («как выбирается профиль», domain `qa`) out of retrieval."""
    with_domain = [e for e in entries if e.domain]
    if not with_domain or len({e.domain for e in with_domain}) > 1:
        return None
    return with_domain[0]


def extract_anchors(
    normalized_query: str, terms: TargetTermsAnalysis, aliases: AliasIndex | None = None
) -> AnchorAnalysis:
    """Build `RouteAnchors` and marker signals.

    Args:
        normalized_query: Output of `normalize_query`.
        terms: Output of `extract_target_terms` for the same query.
        aliases: The session's alias index (for the endpoint map); `None` when unknown.

    Returns:
        Anchors (entities, files, endpoints, doc hints, aliases, process domain) and marker signals.
    """
    entity_names: list[str] = []
    file_names: list[str] = []
    for raw in normalized_query.split():
        kind, token = classify_token(raw)
        if kind == "file":
            file_names.append(token)
        elif is_entity_name(token):
            entity_names.append(token)
    endpoint_docs = [d for p in terms.endpoint_paths for d in (aliases.endpoint_docs(p) if aliases else [])]
    hints = dict.fromkeys([*terms.alias_docs, *endpoint_docs, *file_names])
    with_domain = process_domain_entry([m.entry for m in terms.alias_matches])
    has_target = bool(terms.identifiers or terms.endpoint_paths or entity_names)
    anchors = RouteAnchors(
        entity_names=list(dict.fromkeys(entity_names)),
        file_names=list(dict.fromkeys(file_names)),
        endpoint_paths=list(terms.endpoint_paths),
        target_doc_hints=list(hints)[:MAX_DOC_HINTS],
        matched_aliases=list(terms.matched_aliases),
        process_domain=with_domain.domain if with_domain else None,
        process_subdomain=with_domain.subdomain if with_domain else None,
        relation_predicates=relation_predicates(normalized_query, has_target),
        policy_markers=policy_words(normalized_query),
    )
    return AnchorAnalysis(anchors=anchors, markers=detect_markers(normalized_query, has_target=has_target))
