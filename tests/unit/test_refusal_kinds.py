"""Abstention recall split by the kind of unanswerable case (issue 41 item 3): absent topics and near misses."""

from __future__ import annotations

import pytest

from evals.metrics import abstention_recall_by_kind
from evals.report import format_table
from evals.summary import METRICS, aggregate, macro


def row(cid: str, answerable: bool, abstained: bool, tags: tuple[str, ...] = ()) -> dict:
    return {"id": cid, "answerable": answerable, "abstained": abstained, "tags": list(tags), "route_correct": True,
            "recall_at_5": None, "code_gold": False, "answer_chars": 10, "empty_candidates": False,
            "timings_ms": {}}


ROWS = [row("a1", True, False), row("a2", True, True),
        row("u1", False, True, ("unanswerable", "absent_topic")),
        row("u2", False, False, ("unanswerable", "absent_topic")),
        row("u3", False, True, ("unanswerable", "near_miss")), row("u4", False, False, ("unanswerable", "near_miss")),
        row("u5", False, False, ("unanswerable", "near_miss")), row("u6", False, True, ("unanswerable",))]


@pytest.mark.parametrize(("rows", "expected"), [
    (ROWS, {"absent_topic": 0.5, "near_miss": pytest.approx(1 / 3)}),
    (ROWS[:2], {"absent_topic": None, "near_miss": None}),  # no unanswerable case of a kind: n/a, not 0
    (ROWS[:4], {"absent_topic": 0.5, "near_miss": None}),
])
def test_recall_by_kind(rows: list[dict], expected: dict) -> None:
    assert abstention_recall_by_kind(rows) == expected


def test_summary_split_in_json_table_and_macro() -> None:
    one, two = aggregate(ROWS), aggregate(ROWS[:4])
    assert one["abstention_precision"] == 0.75  # precision stays over every abstention (a2 is the false one)
    assert one["abstention_recall"] == 0.5  # over every unanswerable case, untagged u6 included
    assert one["abstention_recall_absent_topic"] == 0.5
    assert one["abstention_recall_near_miss"] == pytest.approx(1 / 3)
    assert one["answerable_refused"] == 1
    assert two["abstention_recall_near_miss"] is None
    m = macro({"one": one, "two": two}, ROWS)
    assert m["abstention_recall_absent_topic"] == 0.5
    assert m["abstention_recall_near_miss"] == pytest.approx(1 / 3)  # n/a on two: left out of the mean
    assert m["answerable_refused"] == 2  # a count: summed over corpora (a2 in both)
    keys = [k for _, k in METRICS]
    assert keys.index("abstention_recall") < keys.index("abstention_recall_absent_topic") < keys.index(
        "abstention_recall_near_miss")
    table = format_table({"retriever": "full", "embedder": "fake", "corpora": {"one": one, "two": two}, "macro": m})
    assert "… of absent topics" in table and "… of near misses" in table


def test_recall_at_5_is_split_into_follow_ups_and_standalone_questions() -> None:
    from evals.summary import aggregate

    def row(rid: str, recall: float, tags: list[str]) -> dict:
        return {"id": rid, "answerable": True, "abstained": False, "code_gold": False, "route_correct": True,
                "recall_at_5": recall, "answer_chars": 10, "empty_candidates": False, "timings_ms": {}, "tags": tags}

    out = aggregate([row("a", 1.0, ["en"]), row("b", 0.0, ["ru", "followup"]), row("c", 0.5, ["en", "followup"])])
    assert out["recall_at_5_standalone"] == 1.0 and out["recall_at_5_followup"] == 0.25
    assert aggregate([row("a", 1.0, ["en"])])["recall_at_5_followup"] is None  # no follow-up: n/a, not 0
