"""The dataset checker's rule against key facts that only repeat the question (a case an answer quoting the
question's own words would pass measures nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evals.suites import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "evals" / "datasets"))
from check_dataset import Corpus, check_case  # noqa: E402


@pytest.mark.parametrize(("question", "facts", "echoed"), [
    ("Why is 'me' treated as /users/{user_id}?", ["/users/{user_id}"], True),
    ("Why is 'me' treated as /users/{user_id}?", ["/users/{user_id}", "объявлен раньше"], False),
    ("Какое значение по умолчанию у max_age?", ["600"], False),
])
def test_a_case_whose_every_fact_is_in_the_question_is_a_problem(tmp_path: Path, question: str,
                                                                  facts: list[str], echoed: bool) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "p.md").write_text("Путь /users/{user_id} объявлен раньше; max_age 600.\n",
                                            encoding="utf-8")
    rec = {"id": "x-1", "question": question, "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
           "gold_paths": ["docs/p.md"], "key_facts": facts, "answerable": True, "tags": ["en" if "Why" in question
                                                                                         else "ru"]}
    problems: list[str] = []
    check_case(1, rec, Corpus(tmp_path), {}, problems)
    assert any("every key fact is in the question" in p for p in problems) is echoed, problems
