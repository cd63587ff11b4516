"""A relation question ("who uses X?") is answered with every edge of that relation the evidence holds, one per
other end, each cited; edges of other relations and the same fact from the other card are left out."""

from __future__ import annotations

import pytest

from nodes.answer_composition import compose_extractive
from nodes.context_analysis import analyze
from nodes.context_analysis.relations import fold_name, relation_edges, relation_targets
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteAnchors, RouteResult


def edge(path: str, line: int, src: str, relation: str, dst: str) -> EvidenceRow:
    verb = {"uses_logic": "uses", "used_by": "is used by", "writes_db": "writes to", "reads_db": "reads"}[relation]
    return EvidenceRow(id=f"{path}:{line}", path=path, layer="D5_RELATION_GRAPH", title=f"{src} {relation} {dst}",
                       content=f"{src} ({src.title()}) {verb} {dst}", span_start=line, span_end=line,
                       metadata={"src": src, "dst": dst, "relation": relation})


USES = ["uses_logic", "used_by"]
A_USES = edge("docs/a.md", 9, "mod.a", "uses_logic", "core.store")
B_USES = edge("docs/b.md", 7, "mod.b", "uses_logic", "core.store")
STORE_USED_BY_A = edge("docs/store.md", 12, "core.store", "used_by", "mod.a")
STORE_USED_BY_C = edge("docs/store.md", 13, "core.store", "used_by", "mod.c")
STORE_WRITES = edge("docs/store.md", 10, "core.store", "writes_db", "rows")
A_USES_OTHER = edge("docs/a.md", 10, "mod.a", "uses_logic", "core.cache")


@pytest.mark.parametrize(("rows", "predicates", "targets", "expected"), [
    # both directions count; the same pair stated from the other card is one fact, cited where it ranked first
    ([STORE_USED_BY_A, A_USES, B_USES, STORE_USED_BY_C], USES, {"core.store"},
     [STORE_USED_BY_A, B_USES, STORE_USED_BY_C]),
    # another relation of the target, and the same relation about another target, do not answer
    ([STORE_WRITES, A_USES_OTHER, A_USES], USES, {"core.store"}, [A_USES]),
    # nothing named by the question: no edge list (the passages chosen by score stay)
    ([A_USES, B_USES], USES, set(), []),
    # other layers never count
    ([EvidenceRow(id="x", path="docs/a.md", layer="D0_DOC_CHUNKS", content="mod.a uses core.store",
                  metadata={"src": "mod.a", "dst": "core.store", "relation": "uses_logic"})], USES, {"core.store"}, []),
], ids=["both-directions-one-per-end", "other-relations-left-out", "no-target", "edges-only"])
def test_relation_edges(rows: list[EvidenceRow], predicates: list[str], targets: set[str],
                        expected: list[EvidenceRow]) -> None:
    assert relation_edges(rows, predicates, targets) == expected


@pytest.mark.parametrize(("name", "folded"), [
    ("Core.Store", "core.store"), ("/internal/rag/retrieve", "internal/rag/retrieve"), ("`rows`", "rows")])
def test_names_compare_without_case_slashes_or_quotes(name: str, folded: str) -> None:
    assert fold_name(name) == folded


def test_targets_come_from_the_route_anchors_and_terms() -> None:
    route = RouteResult(user_query="who uses core.store?", target_terms=["store"],
                        anchors=RouteAnchors(matched_aliases=["core.store"], endpoint_paths=["/x/y"]))
    assert relation_targets(route, ["uses"]) == {"core.store", "x/y", "store", "uses"}


def test_a_who_uses_answer_quotes_every_user_with_its_citation() -> None:
    route = RouteResult(user_query="Who uses core.store?", intent="DOC_EXPLAIN", routing_domain="DOCS",
                        target_terms=["core.store"],
                        anchors=RouteAnchors(matched_aliases=["core.store"], relation_predicates=USES))
    rows = [STORE_USED_BY_A, STORE_WRITES, A_USES, B_USES, STORE_USED_BY_C]
    analysis = analyze("Who uses core.store?", ["core.store"], rows, True, route)
    answer = compose_extractive("Who uses core.store?", analysis, route)
    for user, cite in (("mod.a", "docs/store.md:12-12"), ("mod.b", "docs/b.md:7-7"), ("mod.c", "docs/store.md:13-13")):
        assert user in answer.text and f"[{cite}]" in answer.text, answer.text
    assert "rows" not in answer.text and "docs/a.md" not in answer.text, answer.text
    assert len(answer.citations) == 3
