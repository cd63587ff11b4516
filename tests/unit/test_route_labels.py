"""Issue 41 item 4: a dev case's `expected_route` is seed 002's fallback decision (file markers → FIND_FILES,
docs signals → SUMMARY, otherwise GENERAL_QA); our router's two additions in front of it are where the two
may differ. Route accuracy per corpus of a run can be read against the labels as they are now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.router_accuracy import dataset_labels, report_route_accuracy, seed_002_route
from nodes.intent_routing import AliasEntry, InMemoryAliasIndex, IntentRouter

ALIASES = InMemoryAliasIndex([AliasEntry("CORS", ("docs/tutorial/cors.md",))])

# (question, seed 002's decision, our fallback router's route)
CASES = [
    ("", "GENERAL_QA", "GENERAL_QA"),
    ("How do I grab one keystroke without waiting for Enter?", "GENERAL_QA", "GENERAL_QA"),
    ("Как сделать, чтобы программа сама спрашивала значение?", "GENERAL_QA", "GENERAL_QA"),
    ("В каком файле описан CORS?", "DOC_EXPLAIN/FIND_FILES", "DOC_EXPLAIN/FIND_FILES"),
    ("What does docs/thread-local.md say?", "DOC_EXPLAIN/FIND_FILES", "DOC_EXPLAIN/FIND_FILES"),
    ("Как работает APIRouter?", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/SUMMARY"),
    ("Как настроить CORS для фронтенда?", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/SUMMARY"),
    ("Explain the architecture of the indexer", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/SUMMARY"),
    # our additions: an explicit "in general" phrase beats an incidental alias; a relation phrase is
    # answered by its edges, not by a list of files
    ("Что такое CORS простыми словами?", "DOC_EXPLAIN/SUMMARY", "GENERAL_QA"),
    ("Какие модули пишут в таблицу rag_chunks?", "DOC_EXPLAIN/FIND_FILES", "DOC_EXPLAIN/SUMMARY"),
]


@pytest.mark.parametrize(("question", "seed", "ours"), CASES, ids=[c[0][:40] or "empty" for c in CASES])
def test_seed_002_decision(question: str, seed: str, ours: str) -> None:
    router = IntentRouter(aliases=ALIASES)
    assert seed_002_route(router.analyze(question)) == seed
    assert router.route(question).route_label == ours


def _result(cid: str, route: str, expected: str) -> dict[str, str]:
    return {"id": cid, "route": route, "expected_route": expected}


def test_route_accuracy_per_corpus_against_the_labels_of_the_run_or_now() -> None:
    report = {"corpora": {
        "click": {"results": [_result("ck-1", "GENERAL_QA", "DOC_EXPLAIN/SUMMARY"),
                              _result("ck-2", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/SUMMARY")]},
        "empty": {"results": []},
    }}
    assert report_route_accuracy(report) == {"click": 0.5}
    assert report_route_accuracy(report, {"ck-1": "GENERAL_QA"}) == {"click": 1.0}


def test_dataset_labels_skip_held_out_files(tmp_path: Path) -> None:
    (tmp_path / "click.jsonl").write_text(json.dumps({"id": "ck-1", "expected_route": "GENERAL_QA"}) + "\n")
    (tmp_path / "click_holdout.jsonl").write_text(json.dumps({"id": "ckh-1", "expected_route": "GENERAL_QA"}))
    assert dataset_labels(tmp_path) == {"ck-1": "GENERAL_QA"}


def test_every_dev_label_is_a_route_seed_002_allows() -> None:
    labels = dataset_labels(Path(__file__).resolve().parents[2] / "evals" / "datasets")
    assert labels and set(labels.values()) <= {"GENERAL_QA", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/FIND_FILES"}


def test_a_report_that_is_not_an_eval_run_is_one_error_line(tmp_path, capsys) -> None:
    from evals.router_accuracy import main

    bad_json, no_corpora = tmp_path / "bad.json", tmp_path / "other.json"
    bad_json.write_text("{", encoding="utf-8")
    no_corpora.write_text("{}", encoding="utf-8")
    for path in (tmp_path / "missing.json", bad_json, no_corpora):
        assert main(["--report", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {path}"), err
