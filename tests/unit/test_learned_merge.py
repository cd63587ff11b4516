"""The learned ranker inside the merge (issue 29): it orders the evidence, the gate keeps reading the RRF
order it was calibrated on, and the learned order is spread over files like RRF's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nodes.context_retrieval.learned_ranker import LearnedRanker, Tree
from nodes.context_retrieval.merge import GatheredLanes, MergeSpec, merge_lanes, spread_files
from nodes.context_retrieval.rank_features import FEATURES
from nodes.evidence import EvidenceRow


def row(rid: str, path: str, content: str = "", distance: float = 0.5) -> dict[str, Any]:
    return {"id": rid, "path": path, "layer": "D0_DOC_CHUNKS", "title": "", "content": content or f"text {rid}",
            "span_start": 1, "span_end": 2, "distance": distance}


def ranker_preferring(feature: str) -> LearnedRanker:
    """A one-split model: candidates whose `feature` exceeds 0.5 score 10 more (no RRF prior)."""
    tree = Tree(feature=np.array([FEATURES.index(feature)]), threshold=np.array([0.5]), left=np.array([~0]),
                right=np.array([~1]), value=np.array([0.0, 10.0]))
    return LearnedRanker(trees=(tree,), features=FEATURES, prior_weight=0.0, meta={})


def ev(rid: str, path: str) -> EvidenceRow:
    return EvidenceRow(id=rid, path=path, layer="D0_DOC_CHUNKS")


@pytest.mark.parametrize(("given", "expected"), [
    ([("a1", "a"), ("a2", "a"), ("b1", "b")], ["a1", "b1", "a2"]),               # a's second row makes room
    ([("a1", "a"), ("b1", "b"), ("a2", "a"), ("c1", "c")], ["a1", "b1", "c1", "a2"]),
    ([("a1", "a"), ("b1", "b"), ("c1", "c")], ["a1", "b1", "c1"]),                # one row per file: unchanged
    ([("a1", "a"), ("a2", "a"), ("a3", "a")], ["a1", "a2", "a3"]),                # one file: unchanged
])
def test_spread_files(given: list[tuple[str, str]], expected: list[str]) -> None:
    assert [r.id for r in spread_files([ev(i, p) for i, p in given])] == expected


def test_spreading_never_changes_the_order_of_files() -> None:
    rows = [ev(f"{p}{k}", p) for p, k in zip("aabcbadcc", range(9), strict=True)]
    first = list(dict.fromkeys(r.path for r in rows))
    assert list(dict.fromkeys(r.path for r in spread_files(rows))) == first


LANES = {"semantic": [row("far", "docs/far.md", distance=0.2), row("near", "docs/near.md", distance=0.4)],
         "lexical": [row("near", "docs/near.md", content="cors cors", distance=0.4)]}


def test_the_model_orders_the_evidence_and_the_gate_reads_the_rrf_order() -> None:
    spec = MergeSpec(query="how to enable cors", key_terms=["cors"])
    rrf = merge_lanes(GatheredLanes(lanes=dict(LANES)), spec)
    # RRF puts `near` first (two lanes); a model that prefers the nearest vector puts `far` (0.2) first
    learned = merge_lanes(GatheredLanes(lanes=dict(LANES), similarity={"far": 0.2, "near": 0.4}),
                          MergeSpec(query=spec.query, key_terms=["cors"], ranker=ranker_preferring("inv_cos_rank")))
    assert [r.id for r in rrf.rows] == ["near", "far"]
    assert [r.id for r in learned.rows] == ["far", "near"]
    assert learned.rows[0].scores["learned"] == pytest.approx(10.0)
    assert (learned.gate.passed, learned.gate.reason, learned.relevant) == (
        rrf.gate.passed, rrf.gate.reason, rrf.relevant)
    assert learned.gate.signals is not None and rrf.gate.signals is not None
    assert (learned.gate.signals.ranker_top, learned.gate.signals.ranker_margin) == (10.0, 10.0)  # recorded
    assert (rrf.gate.signals.ranker_top, rrf.gate.signals.ranker_margin) == (None, None)


def test_plain_baselines_ignore_the_ranker() -> None:
    spec = MergeSpec(query="how to enable cors", key_terms=["cors"], plain=True, ranker=ranker_preferring("rr_lexical"))
    plain = merge_lanes(GatheredLanes(lanes=dict(LANES)), spec)
    assert all("learned" not in r.scores for r in plain.rows)


def test_a_code_request_keeps_its_reserved_code_slot_under_the_model() -> None:
    from nodes.retrieval_policy import CodePlan

    code = {**row("k", "pkg/cors.py", content="class CORSMiddleware", distance=0.6), "layer": "C1_SYMBOL_CATALOG"}
    lanes = {"semantic": [row("a", "docs/a.md", distance=0.2), row("b", "docs/b.md", distance=0.3), code]}
    explicit = CodePlan(terms=["CORSMiddleware"], reason="words: реализация", explicit=True)
    # the model prefers prose rows (+10 for the D0 layer), yet "where in the code" still leads with code
    spec = MergeSpec(query="где в коде CORSMiddleware", code_plan=explicit, ranker=ranker_preferring("layer_D0"))
    got = merge_lanes(GatheredLanes(lanes=lanes, similarity={"a": 0.2, "b": 0.3, "k": 0.6}), spec)
    assert [r.path for r in got.rows] == ["pkg/cors.py", "docs/a.md", "docs/b.md"]
