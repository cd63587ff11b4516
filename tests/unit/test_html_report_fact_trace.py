"""The per-case fact trace the HTML report's fact budget reads: which step each key fact reached."""

from __future__ import annotations

from evals.scoring import score_case
from tests.unit.test_eval_report import case, span, state


def test_each_fact_records_the_steps_it_reached_and_agrees_with_the_shares() -> None:
    # `zeta is 7` is quoted in the answer; `omega` is in the evidence row but not in any passage read.
    quoted = span("docs/a.md", "zeta is 7")
    got = state([quoted], ["docs/a.md"])
    got["evidence"][0]["content"] += "\nomega"
    row = score_case(case("t", ["docs/a.md"], ["zeta is 7", "omega"]), got)
    trace = {t["fact"]: t for t in row["fact_trace"]}
    assert trace["zeta is 7"] == {"fact": "zeta is 7", "evidence": True, "reader": None, "answer": True}
    assert trace["omega"]["evidence"] is True and trace["omega"]["answer"] is False
    assert sum(t["evidence"] for t in row["fact_trace"]) / 2 == row["evidence_key_fact_recall"]
    assert sum(t["answer"] for t in row["fact_trace"]) / 2 == row["key_fact_coverage"]


def test_an_unanswerable_case_has_no_trace() -> None:
    assert score_case(case("u", [], [], answerable=False), state([], []))["fact_trace"] is None
