"""The unit scorer's trainer (issue 38, item 3): it refuses held-out data as `train_ranker` does, and the same
cases file gives the same model bytes (no database: a cases file made here)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from evals import train_units
from evals.holdout import HoldoutError, holdout_ids
from evals.train_units import CASES_FORMAT, read_cases, write_cases
from nodes.context_retrieval.units import UNIT_FEATURES, parse_unit_model

CODE = "\n".join([
    "class Client:",
    "    def __init__(",
    "        self,",
    *(f"        option_{i}: int = {i}," for i in range(12)),
    "        retry_delay: float = 0.25,",
    "    ) -> None:",
    "        if retry_delay < 0:",
    '            raise ValueError("the delay is negative")',
    "        self.retry_delay = retry_delay",
])
DOC = "\n".join(["# Guide", "", *(f"Paragraph {i} is about berth {i}." for i in range(12)), "",
                 "The pilot boat waits 45 minutes at the buoy."])


def case(corpus: str, cid: str, question: str, facts: list[str], path: str) -> dict[str, Any]:
    core = {"id": f"{corpus}-{path}-head", "path": path, "layer": "D0_DOC_CHUNKS", "content": "head",
            "span_start": 1, "span_end": 1}
    return {"corpus": corpus, "id": cid, "question": question, "key_facts": facts, "gold": [path], "pseudo": False,
            "query": {"text": question, "key_terms": question.lower().strip("?").split()[-2:], "find_files": False,
                      "code_plan": path.endswith(".py"), "explicit_code": False, "general": False},
            "relevant": True, "core": 1, "files": [path], "pack": [core],
            "ranked": [{"id": core["id"], "path": path, "fused_score": 1.0, "learned": 1.0}],
            "similarity": {}, "row_distance": {}}


def data() -> dict[str, Any]:
    files: dict[str, Any] = {}
    cases = []
    for corpus in ("alpha", "beta"):
        files[corpus] = {
            "pkg/client.py": [{"id": f"{corpus}-c0", "path": "pkg/client.py", "layer": "C0_SOURCE_CHUNKS",
                               "title": "pkg.client.Client", "content": CODE, "span_start": 1,
                               "span_end": len(CODE.split("\n")), "metadata": {}}],
            "docs/guide.md": [{"id": f"{corpus}-d0", "path": "docs/guide.md", "layer": "D0_DOC_CHUNKS",
                               "title": "Guide", "content": DOC, "span_start": 1, "span_end": len(DOC.split("\n")),
                               "metadata": {}}],
        }
        cases += [case(corpus, f"{corpus}-1", "What is the default retry delay?", ["0.25"], "pkg/client.py"),
                  case(corpus, f"{corpus}-2", "Which error for a negative delay?", ["the delay is negative"],
                       "pkg/client.py"),
                  case(corpus, f"{corpus}-3", "How long does the pilot boat wait?", ["45 minutes"],
                       "docs/guide.md")]
    return {"format": CASES_FORMAT, "embedder": "fake", "datasets": {}, "cases": cases, "files": files}


def test_a_held_out_cases_file_is_refused_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "units_holdout.json.gz"
    write_cases(data(), path)
    with pytest.raises(HoldoutError):
        read_cases(path)
    assert train_units.main(["--cases", str(path), "--dry-run"]) == HoldoutError.exit_code


def test_a_cases_file_holding_a_held_out_case_is_refused(tmp_path: Path) -> None:
    held = sorted(holdout_ids())
    if not held:
        pytest.skip("no held-out dataset in this tree")
    d = data()
    d["cases"][0]["id"] = held[0]
    path = tmp_path / "units.json.gz"
    write_cases(d, path)
    with pytest.raises(HoldoutError):
        read_cases(path)


def test_a_held_out_dataset_is_refused_before_collecting(tmp_path: Path) -> None:
    assert train_units.main(["--collect", str(tmp_path / "x_holdout.json.gz")]) == HoldoutError.exit_code


def test_not_a_cases_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "units.json"
    path.write_text(json.dumps({"format": "other"}), encoding="utf-8")
    assert train_units.main(["--cases", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


def test_the_same_cases_file_trains_the_same_model_bytes(tmp_path: Path) -> None:
    pytest.importorskip("lightgbm")
    path = tmp_path / "units.json.gz"
    sha = write_cases(data(), path)
    assert write_cases(data(), tmp_path / "again.json.gz") == sha
    assert (tmp_path / "again.json.gz").read_bytes() == path.read_bytes()  # gzip without a name or a date
    out1, out2 = tmp_path / "m1.json", tmp_path / "m2.json"
    assert train_units.main(["--cases", str(path), "--out", str(out1), "--no-pseudo"]) == 0
    assert train_units.main(["--cases", str(path), "--out", str(out2), "--no-pseudo"]) == 0
    assert out1.read_bytes() == out2.read_bytes()
    model = json.loads(out1.read_text(encoding="utf-8"))
    assert model["features"] == list(UNIT_FEATURES) and model["meta"]["cases_sha256"] == sha
    assert set(model["meta"]["leave_one_corpus_out"]) == {"alpha", "beta", "macro"}
    parse_unit_model(model)
    assert gzip.decompress(path.read_bytes())  # a real gzip


def outcome(recall: float, chars: int) -> train_units.QuoteOutcome:
    return train_units.QuoteOutcome(f1=recall / 2, f05=recall / 3, recall=recall, chars=chars, quotes=1)


@pytest.mark.parametrize(("objective", "chars", "margin"), [
    # the best recall among the margins whose median answer fits the budget (longer answers state more)
    ("budget", {m: 900 + 150 * k for k, m in enumerate(train_units.MARGINS)}, None),
    # no margin fits: the shortest answers
    ("budget", {m: 5000 - k for k, m in enumerate(train_units.MARGINS)}, train_units.MARGINS[-1]),
    # F1 alone pays nothing for length: the widest margin
    ("f1", {m: 900 + 150 * k for k, m in enumerate(train_units.MARGINS)}, train_units.MARGINS[-1]),
], ids=["budget-fits", "budget-none-fits", "f1-ignores-length"])
def test_the_margin_objective_pays_for_length(objective: str, chars: dict[float, int], margin: float | None) -> None:
    outcomes = {m: {"a": outcome(0.1 + k / 10, chars[m]), "b": outcome(0.1 + k / 10, chars[m])}
                for k, m in enumerate(train_units.MARGINS)}
    if margin is None:
        margin = max(m for m in train_units.MARGINS if chars[m] <= train_units.ANSWER_BUDGET)
    assert train_units.choose_margin(["a", "b"], outcomes, objective) == margin


def test_a_card_gets_a_pseudo_question_targeting_its_lines() -> None:
    rows = [{"id": "k", "path": "app/main.py", "layer": "C3_ENTRYPOINTS", "title": "GET /heroes",
             "content": "GET /heroes → app.main.list_heroes\nauth: get_current_user", "span_start": 17,
             "span_end": 20, "metadata": {}}]
    got = train_units.pseudo_questions(rows, "alpha", 60)
    assert [(c["question"], c["target"]) for c in got] == [
        ("What handles GET /heroes and what does it take?", ["app/main.py", 17, 18])]
