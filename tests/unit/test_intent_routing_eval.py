"""The labelled router set and `evals.router_accuracy` (on a tiny corpus made here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.router_accuracy import DEFAULT_DATASET, accuracy, aliases_from_markdown, load_cases, main
from nodes.intent_routing import IntentRouter
from nodes.tokens import words_of
from tests.unit.test_intent_routing_table import CASES

LABELS = {"GENERAL_QA", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/FIND_FILES"}


def test_labelled_set_is_valid_and_apart_from_the_unit_table() -> None:
    cases = load_cases(DEFAULT_DATASET)

    assert len(cases) >= 60
    assert all(set(c) == {"query", "expected_route"} and c["expected_route"] in LABELS for c in cases)
    assert {c["expected_route"] for c in cases} == LABELS
    assert len({c["query"] for c in cases}) == len(cases)
    assert not {c["query"] for c in cases} & {c.query for c in CASES}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs" / "ru" / "docs" / "tutorial"
    (docs / "dependencies").mkdir(parents=True)
    (docs / "dependencies" / "index.md").write_text(
        "# Зависимости { #dependencies }\n\nИспользуйте `Depends`.\n"
    )
    (docs / "cors.md").write_text("# CORS (Cross-Origin Resource Sharing) { #cors }\n\n`CORSMiddleware`\n")
    return tmp_path


def test_aliases_from_markdown(corpus: Path) -> None:
    index = aliases_from_markdown(corpus / "docs")

    assert {"зависимости", "cors", "depends", "corsmiddleware"} <= set(index.entries)
    assert index.entries["cors"].docs == ("ru/docs/tutorial/cors.md",)
    matches = index.find_aliases(words_of("что такое cross origin resource sharing"))
    assert [m.entry.term for m in matches] == ["cors"]


def test_accuracy_counts_misses(corpus: Path) -> None:
    cases = [
        {"query": "Как работают зависимости?", "expected_route": "DOC_EXPLAIN/SUMMARY"},
        {"query": "Привет!", "expected_route": "DOC_EXPLAIN/SUMMARY"},
    ]
    score, misses = accuracy(IntentRouter(aliases=aliases_from_markdown(corpus / "docs")), cases)

    assert score == 0.5
    assert misses == [("Привет!", "DOC_EXPLAIN/SUMMARY", "GENERAL_QA")]


def test_main_prints_both_runs(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "fallback router, no aliases: accuracy" in out
    assert "fallback router, corpus aliases" in out
