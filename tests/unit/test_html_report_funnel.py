"""The HTML report's fact budget is a funnel (a fact counts at a step only when it reached every earlier known
step), runs written before `fact_trace` are counted by their shares, the candidates step (top five files) is
shown and counted, each case's facts table has a column for it, and the page is written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from evals.html_report import render
from evals.html_report.cases import _facts_table
from evals.html_report.model import MACRO, STEPS, Run, facts_of, funnel, load_run, lost_at, outcome
from evals.html_report.render import page
from tests.eval_report_runs import BASE, NEW, data
from tests.unit.test_html_report import Parsed, value

ORDER = [s for s, _ in STEPS]


def old_row(facts: list[str], evidence: float, reader: float | None, answer: float, r5: float = 1.0
            ) -> dict[str, Any]:
    """A case as written before the runner recorded `fact_trace`: only the case's shares."""
    return {"id": "-".join(facts), "answerable": True, "key_facts": facts, "recall_at_5": r5,
            "evidence_key_fact_recall": evidence, "reader_key_fact_recall": reader, "key_fact_coverage": answer}


def test_a_run_without_the_fact_trace_counts_a_partial_case_by_its_share() -> None:
    rows = [old_row(["a", "b"], 0.5, 0.5, 0.5), old_row(["c", "d"], 1.0, 1.0, 1.0)]
    counts = funnel(rows)
    assert counts["all"] == 4 and counts["top5"] == 4
    assert counts["evidence"] == 3 and counts["reader"] == 3 and counts["answer"] == 3  # was 2 of 4
    assert counts["candidates"] is None  # not recorded: n/a
    shares = Parsed(page([Run("old", "old.json", {"corpora": {"c": {"results": rows}}, "macro": {}})])).cells
    assert float(shares[("0", "c", "funnel_evidence")]["data-value"]) == pytest.approx(0.75)
    assert float(shares[("0", "c", "alone_evidence")]["data-value"]) == pytest.approx(0.75)


def test_old_shares_nest_by_the_smallest_share_so_far() -> None:
    # evidence 0.5 but the reader 1.0 (read from a file outside the pack): the funnel keeps 1 fact of 2
    counts = funnel([old_row(["a", "b"], 0.5, 1.0, 0.5), old_row(["c"], 1.0, None, 1.0, r5=0.0)])
    assert counts == {"all": 3, "top5": 2, "candidates": None, "evidence": 1, "reader": 1, "answer": 1}


def traced(r5: float, trace: list[dict[str, Any]]) -> dict[str, Any]:
    return {"answerable": True, "key_facts": [t["fact"] for t in trace], "recall_at_5": r5, "fact_trace": trace}


def test_the_budget_is_a_funnel_even_when_the_steps_are_not_nested() -> None:
    rows = [traced(1.0, [
        {"fact": "a", "files_top5": True, "evidence": True, "reader": True, "answer": True},
        {"fact": "b", "files_top5": True, "evidence": False, "reader": True, "answer": False},  # read elsewhere
        {"fact": "c", "files_top5": False, "evidence": True, "reader": True, "answer": False}]),
        traced(0.0, [{"fact": "d", "files_top5": True, "evidence": True, "reader": None, "answer": True}])]
    counts = funnel(rows)
    assert counts == {"all": 4, "top5": 3, "candidates": 2, "evidence": 1, "reader": 1, "answer": 1}
    assert all(counts[a] >= counts[b] for a, b in zip(ORDER[1:], ORDER[2:], strict=False))  # type: ignore[operator]
    lost = [f["lost_at"] for r in rows for f in facts_of(r)]
    assert lost == [None, "evidence", "candidates", None]  # d is in the answer: not lost, though not counted


@pytest.mark.parametrize(("steps", "where"), [
    ({"top5": False, "candidates": True, "evidence": False}, "top5"),  # the doc: retrieval
    ({"top5": True, "candidates": False, "evidence": True, "reader": True, "answer": False}, "candidates"),
    ({"top5": True, "candidates": None, "evidence": False, "reader": True, "answer": False}, "evidence"),
    ({"top5": True, "candidates": True, "evidence": True, "reader": None, "answer": False}, "answer"),
    ({"top5": False, "evidence": True, "reader": True, "answer": False}, "top5"),
    ({"top5": False, "evidence": True, "reader": True, "answer": True}, None),  # in the answer: not lost
])
def test_a_missed_fact_is_lost_at_the_first_known_step_it_did_not_reach(steps: dict[str, bool | None],
                                                                        where: str | None) -> None:
    assert lost_at(steps) == where


def test_the_page_shows_the_funnel_and_each_step_alone_and_the_candidates_step() -> None:
    base, new = load_run(BASE), load_run(NEW)
    cells = Parsed(page([base, new])).cells
    for scope in new.corpora:
        rows = [r for r in data(NEW)["corpora"][scope]["results"] if r["answerable"]]
        top5 = [r for r in rows if r["recall_at_5"] > 0]
        alone = {"all": sum(len(r["key_facts"]) for r in rows), "top5": sum(len(r["key_facts"]) for r in top5),
                 **{s: sum(bool(t[k]) for r in rows for t in r["fact_trace"])
                    for s, k in (("candidates", "files_top5"), ("evidence", "evidence"), ("reader", "reader"),
                                 ("answer", "answer"))}}
        nested = {"all": alone["all"], "top5": alone["top5"]}
        for s, keys in (("candidates", ["files_top5"]), ("evidence", ["files_top5", "evidence"]),
                        ("reader", ["files_top5", "evidence", "reader"]),
                        ("answer", ["files_top5", "evidence", "reader", "answer"])):
            nested[s] = sum(all(t[k] for k in keys) for r in top5 for t in r["fact_trace"])
        for s in ORDER:
            assert float(cells[("1", scope, f"funnel_{s}")]["data-count"]) == nested[s], (scope, s)
            assert float(cells[("1", scope, f"alone_{s}")]["data-count"]) == alone[s], (scope, s)
            assert float(cells[("1", scope, f"funnel_{s}")]["data-value"]) == pytest.approx(nested[s] / alone["all"])
        assert cells[("0", scope, "funnel_candidates")]["data-value"] == ""  # the RRF run predates it: n/a
        assert alone["candidates"] == nested["candidates"] > 0
    # ck-005: "pass internal objects around" is read but not in the evidence: counted alone, not in the funnel
    assert float(cells[("1", "click", "alone_reader")]["data-count"]) == 10
    assert float(cells[("1", "click", "funnel_reader")]["data-count"]) == 9
    for key in ("files_top5_key_fact_recall", "files_top10_key_fact_recall"):  # the two new summary rows
        for scope in [*new.corpora, MACRO]:
            assert cells[("1", scope, key)]["data-value"] == value(new.summary(scope)[key]) == value(1.0)
            assert cells[("0", scope, key)]["data-value"] == ""
    html = page([new])
    assert ">key facts in the top 5 files<" in html and ">key facts in the top 10 files<" in html
    assert "reached this and every earlier step" in html and "this step alone" in html


def test_the_facts_table_has_a_top_five_files_column() -> None:
    row = traced(1.0, [{"fact": "a", "files_top5": True, "evidence": True, "reader": True, "answer": True},
                       {"fact": "b", "files_top5": False, "evidence": False, "reader": False, "answer": False}])
    table = _facts_table(row)
    assert "<th>top 5 files</th>" in table
    assert "<td><code>a</code></td><td class=ok>✓</td><td class=ok>✓</td>" in table
    assert "<td><code>b</code></td><td class=ok>✓</td><td class=bad>✗</td>" in table


def test_an_answerable_case_without_key_facts_has_no_fact_outcome() -> None:
    assert outcome({"answerable": True, "abstained": False, "key_fact_coverage": None}) == "n/a"
    assert outcome({"answerable": True, "abstained": False, "key_fact_coverage": 0.0}) == "no facts"


def test_the_page_is_written_to_a_temp_file_then_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "report.html"
    out.write_text("old page", encoding="utf-8")
    moves: list[tuple[str, str]] = []
    real = os.replace

    def spy(src: Any, dst: Any) -> None:
        moves.append((str(src), str(dst)))
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    size = render.write([load_run(NEW)], out)
    assert len(moves) == 1 and Path(moves[0][0]).parent == tmp_path and moves[0][1] == str(out)
    assert out.stat().st_size == size and sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]

    def broken(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    out.write_text("old page", encoding="utf-8")
    with pytest.raises(OSError):
        render.write([load_run(NEW)], out)
    assert out.read_text(encoding="utf-8") == "old page"  # the old page stays whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temp file left
