"""Eval metrics (SPEC §7) on hand-made results."""

from __future__ import annotations

import pytest

from evals.metrics import (
    abstention_scores,
    aggregate,
    citation_precision,
    fact_covered,
    latency_summary,
    recall_at_k,
    reciprocal_rank,
)


def case(**kw):
    base = {"answerable": True, "route_correct": True, "recall_at_5": 1.0, "recall_at_10": 1.0, "mrr": 1.0,
            "key_fact_coverage": 1.0, "citation_precision": 1.0, "abstained": False,
            "timings_ms": {"a": 10.0, "b": 20.0}}
    return {**base, **kw}


def test_perfect_run_scores_one() -> None:
    m = aggregate([case(), case(), case(answerable=False, abstained=True, citation_precision=None)])
    for key in ("route_accuracy", "recall_at_5", "recall_at_10", "mrr", "key_fact_coverage", "citation_precision",
                "abstention_precision", "abstention_recall"):
        assert m[key] == 1.0, key


def test_empty_retrieval_scores_zero() -> None:
    assert recall_at_k([], ["a.md"], 5) == 0.0
    assert reciprocal_rank([], ["a.md"]) == 0.0


@pytest.mark.parametrize(
    ("retrieved", "gold", "k", "expected"),
    [
        (["a", "a", "b", "c"], ["c"], 3, 1.0),  # distinct files: a, b, c
        (["a", "b", "c", "d", "e", "f"], ["f"], 5, 0.0),
        (["x", "g1", "y", "g2"], ["g1", "g2"], 2, 0.5),
    ],
)
def test_recall_counts_distinct_files_in_rank_order(retrieved, gold, k, expected) -> None:
    assert recall_at_k(retrieved, gold, k) == expected


def test_mrr_is_inverse_rank_of_first_gold_distinct_file() -> None:
    assert reciprocal_rank(["a", "a", "b", "g"], ["g"]) == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("fact", "answer", "covered"),
    [
        ("allow_origins", "Use `allow_origins=[...]`", True),
        ("Значение по умолчанию", "значения по-умолчанию!", True),  # 5-letter stems, punctuation folded
        ("HTTP 422 error", "returns 404", False),
        ("ошибка валидации запроса", "ошибку валидации", True),  # 2 of 3 words ≥ 60%
    ],
)
def test_key_fact_rule(fact: str, answer: str, covered: bool) -> None:
    assert fact_covered(fact, answer) is covered


def test_citation_precision_is_share_inside_evidence() -> None:
    ev = [{"path": "a.md", "span_start": 10, "span_end": 20}]
    cits = [{"path": "a.md", "start_line": 12, "end_line": 15}, {"path": "a.md", "start_line": 18, "end_line": 25}]
    assert citation_precision(cits, ev) == 0.5
    assert citation_precision([], ev) is None


def test_abstention_counted_right() -> None:
    cases = [case(answerable=False, abstained=True), case(answerable=False, abstained=False),
             case(answerable=True, abstained=True), case(answerable=True, abstained=False)]
    precision, recall = abstention_scores(cases)
    assert precision == 0.5 and recall == 0.5


def test_latency_summary_has_nodes_and_total() -> None:
    lat = latency_summary([{"a": 10.0, "b": 20.0}, {"a": 30.0, "b": 40.0}])
    assert lat["a"]["p50"] == 20.0 and lat["total"]["p95"] == pytest.approx(68.0)
