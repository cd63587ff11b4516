"""The pure merge of context_retrieval (`merge_lanes`): ranking, test demotion, code slot, gate, cap."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.context_retrieval.merge import GatheredLanes, MergeSpec, merge_lanes, rank_rows
from nodes.retrieval_policy import CodePlan
from stores.errors import LaneBudgetExceeded


def row(rid: str, path: str, layer: str = "D0_DOC_CHUNKS", content: str = "", **scores: float) -> dict[str, Any]:
    return {"id": rid, "path": path, "layer": layer, "title": "", "content": content or f"text of {rid}",
            "span_start": 1, "span_end": 3, **scores}


DOC_A = row("a", "docs/a.md", content="cors middleware allow origins", distance=0.2)
DOC_B = row("b", "docs/b.md", content="security tutorial", distance=0.3)
DOC_C = row("c", "docs/c.md", content="deployment", distance=0.55)
TEST = row("t", "tests/test_cors.py", layer="C0_SOURCE_CHUNKS", content="def test_cors(): ...", distance=0.1)
CODE = row("k", "pkg/cors.py", layer="C1_SYMBOL_CATALOG", content="class CORSMiddleware", distance=0.5)
EXPLICIT = CodePlan(terms=["CORSMiddleware"], reason="words: реализация", explicit=True)
NAMED = CodePlan(terms=["CORSMiddleware"], reason="symbols: corsmiddleware", identifiers=["CORSMiddleware"])


def paths(lanes: dict[str, list[dict[str, Any]]], **spec: Any) -> list[str]:
    return [r.path for r in rank_rows(lanes, MergeSpec(query=spec.pop("query", "how to set up cors"), **spec))]


@pytest.mark.parametrize(("query", "first"), [
    ("how to set up cors", "docs/a.md"),           # a test file is demoted when the request is not about tests
    ("how is cors tested?", "tests/test_cors.py"),  # ... and keeps its place when it is
])
def test_test_files_are_demoted_unless_asked_about(query: str, first: str) -> None:
    assert paths({"semantic": [TEST, DOC_A, DOC_B]}, query=query)[0] == first


@pytest.mark.parametrize(("code_plan", "code_at"), [(None, 3), (NAMED, 2), (EXPLICIT, 0)])
def test_the_best_code_row_gets_its_reserved_slot(code_plan: CodePlan | None, code_at: int) -> None:
    lanes = {"semantic": [DOC_A, DOC_B, DOC_C, CODE]}
    assert paths(lanes, code_plan=code_plan).index("pkg/cors.py") == code_at


CODE_2 = row("k2", "pkg/ids.py", layer="C1_SYMBOL_CATALOG", content="def generate_unique_id", distance=0.6)
CODE_2B = row("k3", "pkg/ids.py", layer="C0_SOURCE_CHUNKS", content="return route.name", distance=0.65)


@pytest.mark.parametrize(("code_plan", "expected"), [
    (EXPLICIT, ["pkg/cors.py", "pkg/ids.py", "docs/a.md", "docs/b.md"]),  # two code files, one row each
    (NAMED, ["docs/a.md", "docs/b.md", "pkg/cors.py", "docs/c.md"]),      # one slot, after two doc rows
])
def test_an_explicit_code_request_lifts_two_code_files(code_plan: CodePlan, expected: list[str]) -> None:
    lanes = {"semantic": [DOC_A, DOC_B, DOC_C, CODE, CODE_2B, CODE_2]}
    assert paths(lanes, code_plan=code_plan)[:4] == expected


def test_plain_baselines_are_not_reshaped() -> None:
    lanes = {"semantic": [TEST, DOC_A, DOC_B, CODE]}
    assert paths(lanes, code_plan=EXPLICIT, plain=True) == ["tests/test_cors.py", "docs/a.md", "docs/b.md",
                                                            "pkg/cors.py"]


def test_rows_found_by_more_lanes_rank_higher() -> None:
    assert paths({"semantic": [DOC_B, DOC_A], "lexical": [DOC_A]})[0] == "docs/a.md"


@pytest.mark.parametrize(("lanes", "absent", "named", "terms", "relevant", "reason"), [
    ({}, [], [], ["cors"], False, "no rows"),
    ({"semantic": [DOC_A]}, ["Kafka"], [], ["cors"], False, "not in the index: Kafka"),
    ({}, ["Kafka"], [], ["kafka"], False, "no rows"),  # absent names only matter when something was found
    ({"semantic": [DOC_A]}, ["Kafka"], ["docs/a.md"], ["kafka"], True, "the file the user named"),
    ({"semantic": [DOC_A]}, [], [], ["cors", "origins"], True, "key terms covered (1.00)"),
    ({"semantic": [DOC_C]}, [], [], ["cors", "origins"], False, "key terms not covered"),
])
def test_gate(lanes: dict[str, list[dict[str, Any]]], absent: list[str], named: list[str], terms: list[str],
              relevant: bool, reason: str) -> None:
    result = merge_lanes(GatheredLanes(lanes=lanes, absent_names=absent),
                         MergeSpec(query="q", key_terms=terms, file_names=named))
    assert result.relevant is relevant and result.gate.reason.startswith(reason)


@pytest.mark.parametrize(("top_k", "plan_limit", "kept"), [(2, 1, 2), (1, 3, 3), (12, 8, 5)])
def test_the_core_is_the_larger_of_top_k_and_the_plan_limit(top_k: int, plan_limit: int, kept: int) -> None:
    lanes = {"semantic": [DOC_A, DOC_B, DOC_C, CODE, TEST]}
    result = merge_lanes(GatheredLanes(lanes=lanes), MergeSpec(query="q", top_k=top_k, plan_limit=plan_limit))
    assert result.core == kept and result.lane_sizes == {"semantic": 5}
    assert [r.id for r in result.rows[:kept]] == [r.id for r in rank_rows(lanes, MergeSpec(query="q"))[:kept]]


@pytest.mark.parametrize("plain", [False, True])
def test_the_caps_room_is_filled_with_further_candidates_except_for_plain_baselines(plain: bool) -> None:
    # top_k=2 of five small rows used to hand analysis two rows and leave the 4096-token cap nearly empty
    lanes = {"semantic": [DOC_A, DOC_B, DOC_C, CODE, TEST]}
    result = merge_lanes(GatheredLanes(lanes=lanes), MergeSpec(query="q", top_k=2, plan_limit=1, plain=plain))
    assert result.core == 2
    assert len(result.rows) == (2 if plain else 5)
    assert all(r.metadata.get("evidence_fill") for r in result.rows[2:])


def test_token_cap_keeps_rows_in_fused_order() -> None:
    big = [row(str(i), f"docs/{i}.md", content="x" * 300, distance=0.1 + i / 100) for i in range(6)]
    result = merge_lanes(GatheredLanes(lanes={"semantic": big}), MergeSpec(query="q", token_cap=250))
    assert [r.path for r in result.rows] == ["docs/0.md", "docs/1.md"]


def test_the_source_of_a_core_symbol_card_can_fill_the_cap() -> None:
    # the card names the definition; the constant that answers is in its source chunk, which no lane returned
    card = row("k", "pkg/cors.py", layer="C1_SYMBOL_CATALOG", content="def allow(origin)", distance=0.2)
    card["span_start"], card["span_end"] = 10, 30
    asked: list[list[tuple[str, int, int]]] = []

    def read(spans: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
        asked.append(list(spans))
        return [{"id": "src", "path": "pkg/cors.py", "layer": "C0_SOURCE_CHUNKS", "content": "MAX_AGE = 600",
                 "span_start": 10, "span_end": 30}]

    for plain, expected in ((False, ["k", "src"]), (True, ["k"])):
        result = merge_lanes(GatheredLanes(lanes={"semantic": [card]}),
                             MergeSpec(query="q", read_sources=read, plain=plain))
        assert [r.id for r in result.rows] == expected and result.core == 1
    assert asked == [[("pkg/cors.py", 10, 30)]]  # the plain baseline reads nothing


def test_a_source_read_the_database_cancels_only_costs_the_fill() -> None:
    card = row("k", "pkg/cors.py", layer="C1_SYMBOL_CATALOG", content="def allow(origin)", distance=0.2)
    card["span_start"], card["span_end"] = 10, 30

    def cancelled(spans: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
        raise LaneBudgetExceeded("statement timeout")

    result = merge_lanes(GatheredLanes(lanes={"semantic": [card]}), MergeSpec(query="q", read_sources=cancelled))
    assert [r.id for r in result.rows] == ["k"]


def test_a_source_row_takes_the_provenance_of_its_symbol_card_not_of_a_module_card() -> None:
    module = row("mod", "pkg/cors.py", layer="C1_SYMBOL_CATALOG", content="module pkg.cors", distance=0.1)
    module["span_start"], module["span_end"] = 1, 900  # a whole module: not read, and not the source's card
    card = row("k", "pkg/cors.py", layer="C1_SYMBOL_CATALOG", content="def allow(origin)", distance=0.2)
    card["span_start"], card["span_end"] = 10, 30

    def read(spans: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
        return [{"id": "src", "path": "pkg/cors.py", "layer": "C0_SOURCE_CHUNKS", "content": "MAX_AGE = 600",
                 "span_start": 10, "span_end": 30}]

    result = merge_lanes(GatheredLanes(lanes={"semantic": [module, card]}), MergeSpec(query="q", read_sources=read))
    by_id = {r.id: r for r in result.rows}
    assert by_id["src"].lanes == {**by_id["k"].lanes, "card_source": 1}
    assert by_id["src"].fused_score == by_id["k"].fused_score > 0
