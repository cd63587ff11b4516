"""The fact budget's ceiling (`evals/ceilings.py`): a key fact stated anywhere in the first k retrieved files."""

from __future__ import annotations

from pathlib import Path

from evals.ceilings import add_file_ceilings
from evals.html_report.model import facts_of


def test_facts_in_the_top_files_text_are_the_ceiling(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"f{i}.py").write_text(f"VALUE_{i} = {i}\n", encoding="utf-8")
    row = {"answerable": True, "recall_at_5": 1.0, "key_facts": ["VALUE_1", "VALUE_7", "VALUE_11"],
           "retrieved_files": [f"f{i}.py" for i in range(12)],
           "fact_trace": [{"fact": f, "evidence": False, "reader": False, "answer": False}
                          for f in ("VALUE_1", "VALUE_7", "VALUE_11")]}
    add_file_ceilings([row], tmp_path)
    assert [(f["files_top5"], f["files_top10"]) for f in row["fact_trace"]] == [(True, True), (False, True),
                                                                                 (False, False)]
    assert row["files_top5_key_fact_recall"] == 1 / 3 and row["files_top10_key_fact_recall"] == 2 / 3
    # the report's budget: the first fact was lost reading the top files, the second by retrieval
    lost = [f["lost_at"] for f in facts_of(row)]
    assert lost == ["evidence", "candidates", "candidates"]


def test_unanswerable_cases_and_missing_files_are_left_alone(tmp_path: Path) -> None:
    rows = [{"answerable": False, "fact_trace": None},
            {"answerable": True, "retrieved_files": ["gone.md"], "fact_trace": [{"fact": "x"}]}]
    add_file_ceilings(rows, tmp_path)
    assert rows[0] == {"answerable": False, "fact_trace": None}
    assert rows[1]["fact_trace"][0]["files_top5"] is False
