"""Reader and evidence key-fact recall over every answerable case (issue 41, item 5): a case the relevance gate
refused scores 0 (nothing was handed to analysis, so nothing was read), and what the reader reads is bounded by
the run's token cap, not the context's default."""

from __future__ import annotations

import asyncio
from typing import Any

from evals.runner import run_cases
from evals.scoring import score_case
from evals.summary import aggregate
from graph.context import Context
from nodes.context_analysis import Analysis, Span
from nodes.evidence import EvidenceRow

CASE = {"id": "r-1", "question": "Какой порт по умолчанию?", "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
        "gold_paths": ["docs/b.md"], "key_facts": ["port 8080"], "answerable": True, "tags": ["ru"]}
QUOTED = Span(path="docs/a.md", start_line=1, end_line=1, row_id="r1", text="alpha", section="A")
ROWS = [EvidenceRow(id="r1", path="docs/a.md", layer="D0_DOC_CHUNKS", content="alpha " * 300),
        EvidenceRow(id="r2", path="docs/b.md", layer="D0_DOC_CHUNKS", content="the port 8080 is the default")]


def refused_state() -> dict[str, Any]:
    """What the graph leaves when the gate refuses: the rows retrieval found, no analysis, a "not found"."""
    return {"answer": "Не найдено в индексе.", "abstained": True, "citations": [], "citations_removed": [],
            "evidence": [r.model_dump() for r in ROWS], "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"},
            "retrieval": {"relevant": False, "gate": "low coverage"}, "timings_ms": {}}


def answered_state() -> dict[str, Any]:
    return {"answer": "> alpha\n\n[docs/a.md:1-1]", "abstained": False, "citations": [], "citations_removed": [],
            "evidence": list(ROWS), "analysis": Analysis(spans=[QUOTED], passages=[QUOTED]),
            "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"},
            "retrieval": {"relevant": True, "gate": "ok"}, "timings_ms": {}}


def test_a_gate_refused_answerable_case_scores_zero_not_n_a() -> None:
    row = score_case(CASE, refused_state())
    # before issue 41: reader recall None (the case dropped from the mean), evidence recall 1.0 (rows never read)
    assert row["reader_key_fact_recall"] == 0.0
    assert row["evidence_key_fact_recall"] == 0.0
    summary = aggregate([row, score_case(CASE, answered_state())])
    assert summary["reader_key_fact_recall"] == 0.5 and summary["evidence_key_fact_recall"] == 0.5


def test_an_unanswerable_refused_case_stays_n_a() -> None:
    unanswerable = {**CASE, "gold_paths": [], "key_facts": [], "answerable": False, "tags": ["ru", "unanswerable"]}
    row = score_case(unanswerable, refused_state())
    assert row["reader_key_fact_recall"] is None and row["evidence_key_fact_recall"] is None


def test_reader_recall_reads_within_the_run_s_token_cap() -> None:
    # The first row costs ~300+ tokens: under a cap of 200 the reader reads the second row only,
    # under the default cap (4096) both.
    assert score_case(CASE, answered_state())["reader_key_fact_recall"] == 1.0
    small = {**CASE, "key_facts": ["alpha alpha alpha alpha"]}
    assert score_case(small, answered_state())["reader_key_fact_recall"] == 1.0
    assert score_case(small, answered_state(), token_cap=200)["reader_key_fact_recall"] == 0.0


class FakeGraph:
    """The two calls `run_cases` makes, returning a fixed final state."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    async def ainvoke(self, *_: Any, **__: Any) -> None:
        return None

    async def aget_state(self, _: Any) -> Any:
        return type("Snapshot", (), {"values": self.state})()


def test_the_runner_scores_with_the_context_s_token_cap() -> None:
    small = {**CASE, "key_facts": ["alpha alpha alpha alpha"]}
    rows = asyncio.run(run_cases(FakeGraph(answered_state()), [small], Context(rag_session_id="s", token_cap=200)))
    assert rows[0]["reader_key_fact_recall"] == 0.0
    rows = asyncio.run(run_cases(FakeGraph(answered_state()), [small], Context(rag_session_id="s")))
    assert rows[0]["reader_key_fact_recall"] == 1.0


def test_langsmith_s_reduced_outputs_keep_both_recalls_n_a_for_a_refused_case() -> None:
    # neither recall can be measured there for any case: a refused case's 0 would make an n/a mean read 0.0
    row = score_case(CASE, {**refused_state(), "evidence_reduced": True})
    assert row["reader_key_fact_recall"] is None and row["evidence_key_fact_recall"] is None
