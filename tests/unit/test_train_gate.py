"""`python -m evals.train_gate`: the learned gate beside the rules, leave-one-corpus-out; held-out refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals import train_gate


def result(cid: str, answerable: bool, kind: str | None = None, **signals: Any) -> dict[str, Any]:
    base = {"rows": 20, "has_terms": True, "terms": 6, "coverage": 0.7, "candidate_coverage": 0.9,
            "row_coverage": 0.6, "file_coverage": 0.7, "top_file_coverage": 0.6, "best_similarity": 0.5,
            "similarity_10th": 0.4, "absent_names": []}
    tags = ["unanswerable", kind] if kind else []
    return {"id": cid, "answerable": answerable, "tags": tags, "retrieval": {"signals": base | signals}}


def corpus(prefix: str) -> dict[str, Any]:
    rows = [result(f"{prefix}-a{i}", True, best_similarity=0.4 + i / 100) for i in range(12)]
    rows += [result(f"{prefix}-u1", False, "absent_topic", absent_names=["Kafka"]),
             result(f"{prefix}-u2", False, "absent_topic", candidate_coverage=0.0, coverage=0.0, row_coverage=0.0,
                    file_coverage=0.0, top_file_coverage=0.0, best_similarity=0.2),
             result(f"{prefix}-u3", False, "near_miss")]
    return {"split": "dev", "results": rows}


def test_the_table_splits_recall_by_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "eval-dev.json"
    path.write_text(json.dumps({"split": "dev", "corpora": {"one": corpus("o"), "two": corpus("t")}}), encoding="utf-8")
    assert train_gate.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "hard verdicts only" in out and "the shipped rules" in out and "learned, leave-one-corpus-out" in out
    # the hard verdict catches the absent name; the rules also the topic with no key term among the candidates;
    # the near miss looks like the answerable cases and is answered
    assert "| one | 1.00 | 0.50 | 0.00 | 0.33 | 0 | 0.33 |" in out
    assert "| one | 1.00 | 1.00 | 0.00 | 0.67 | 0 | 0.67 |" in out


@pytest.mark.parametrize(("name", "data", "says"), [
    ("eval-holdout.json", {"corpora": {"one": corpus("o"), "two": corpus("t")}}, "eval-holdout.json"),
    ("eval.json", {"split": "holdout", "corpora": {"one": corpus("o"), "two": corpus("t")}}, "split holdout"),
])
def test_a_held_out_report_is_refused(name: str, data: dict[str, Any], says: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    assert train_gate.main([str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0] and "refuses" in err[0]


def test_a_report_without_the_new_signals_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = corpus("o")
    for r in old["results"]:
        del r["retrieval"]["signals"]["row_coverage"]
    path = tmp_path / "eval-dev.json"
    path.write_text(json.dumps({"corpora": {"one": old, "two": corpus("t")}}), encoding="utf-8")
    assert train_gate.main([str(path)]) == 2
    assert "run the eval again" in capsys.readouterr().err
