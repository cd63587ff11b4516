"""The README demo question (`make demo`) answered over this repository's own docs and code: the answer cites the
retrieval-policy page first and quotes, in that citation, a line that says how a profile is chosen (issue 29).

Indexed: a copy of docs/, nodes/ and evals/bench/ (the smallest part of the repository on which the page's card
alone reached the evidence and a timing note that mentions «профиль» led the answer), with the real embedder.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator

import pytest

import graph.cli as cli
from stores.database import Database
from tests.integration.conftest import ROOT, indexed_session

QUESTION = "Как Lotsman выбирает профиль retrieval для вопроса про API?"
POLICY = "docs/logic/retrieval_policy.md"
INDEXED = ("docs", "nodes", "evals/bench")


@pytest.fixture(scope="module")
def repo_session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from stores.embedders import make_embedder

    root = tmp_path_factory.mktemp("lotsman-self")
    for part in INDEXED:
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for session in indexed_session(db, root, "it-demo", make_embedder("use")):
        yield session.name


def _profile_rules() -> dict[int, str]:
    """Line number → line of the policy page that maps a condition to a profile (`… → `profile``, or `→ его
    профиль`), the profiles being the names of the page's profile tables."""
    lines = (ROOT / POLICY).read_text(encoding="utf-8").split("\n")
    profiles = {m.group(1) for line in lines if (m := re.match(r"^\| `(\w+)`", line))}
    return {n: line.strip() for n, line in enumerate(lines, 1)
            if "→" in line and (any(f"`{p}`" in line for p in profiles) or "профиль" in line.lower())}


@pytest.mark.usefixtures("cli_on_test_db")
def test_demo_answer_quotes_how_the_profile_is_chosen(repo_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ask", QUESTION, "--session", repo_session, "--json"]) == 0, capsys.readouterr().err
    answer = json.loads(capsys.readouterr().out)
    text = answer["answer"]
    assert answer["abstained"] is False, text
    lead = answer["citations"][0]
    assert lead["path"] == POLICY, text
    rules = _profile_rules()
    assert rules, "the policy page lost its profile rules: update this test with the page"
    cited = {n: line for n, line in rules.items() if lead["start_line"] <= n <= lead["end_line"]}
    quoted = {" ".join(line.lstrip("> ").split()) for line in text.split("\n")}
    assert any(" ".join(line.split()) in quoted for line in cited.values()), (text, cited)
