"""Relation answers: every edge of the asked relation that the evidence holds, one per other end (issue 29).

A "who uses / calls / reads X" question is routed with the relation and its inverse
(`anchors.relation_predicates`) and answered from D5 edges. An edge and its inverse from the other end's card
state one fact ("a uses X" in a's card, "X used_by a" in X's card), so the answer lists each other end once,
cited by the edge that ranked first; edges of other relations of the same module ("X writes_db t") do not
answer the question and are not quoted beside them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodes.context_analysis.models import Span
from nodes.context_analysis.spans import quotable_text
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult

RELATION_LAYER = "D5_RELATION_GRAPH"
MAX_EDGES = 8
"""Other ends listed at most: an edge is one short line, and a module used by more than this is better
answered by its card's own list."""


def fold_name(name: str) -> str:
    """A module id, table, event or endpoint compared without case and surrounding slashes or quotes."""
    return name.strip().strip("/\"'`").lower()


def relation_targets(route: RouteResult | None, terms: Iterable[str] = ()) -> set[str]:
    """The names the question asks about, folded: its aliases, entities, endpoints and key terms."""
    if route is None:
        return {fold_name(t) for t in terms if t.strip()}
    anchors = route.anchors
    names = [*anchors.matched_aliases, *anchors.entity_names, *anchors.endpoint_paths, *route.target_terms, *terms]
    return {fold_name(n) for n in names if n.strip()}


def relation_edges(rows: Sequence[EvidenceRow], predicates: Iterable[str], targets: set[str]) -> list[EvidenceRow]:
    """The D5 rows of one of `predicates` with one end in `targets`, one per other end, in evidence order.

    Args:
        rows: The evidence, best first.
        predicates: The asked relation and its inverse (`anchors.relation_predicates`).
        targets: Folded names the question asks about (`relation_targets`).

    Returns:
        At most MAX_EDGES rows; an edge whose other end an earlier edge already names is left out (the same
        fact stated from the other card).
    """
    wanted = set(predicates)
    seen: set[str] = set()
    out: list[EvidenceRow] = []
    for row in rows:
        meta = row.metadata
        if row.layer != RELATION_LAYER or meta.get("relation") not in wanted:
            continue
        src, dst = fold_name(str(meta.get("src") or "")), fold_name(str(meta.get("dst") or ""))
        other = src if dst in targets else dst if src in targets else None
        if not other or other in seen:
            continue
        seen.add(other)
        out.append(row)
    return out[:MAX_EDGES]


def edge_span(row: EvidenceRow) -> Span:
    """An edge quoted as the line that states it (no section label: its title repeats the edge with the
    relation's search words)."""
    return Span(path=row.path, start_line=row.span_start, end_line=row.span_end, text=quotable_text(row),
                row_id=row.id, layer=row.layer, kind=row.layer)


def with_edges(edges: Sequence[EvidenceRow], spans: Sequence[Span], room: int) -> list[Span]:
    """The answer's passages for a relation question: every edge first, then the passages already chosen that
    are not edges (prose about the relation) while fewer than `room` passages are listed."""
    listed = [edge_span(row) for row in edges]
    for span in spans:
        if len(listed) >= room:
            break
        if span.layer != RELATION_LAYER:
            listed.append(span)
    return listed
