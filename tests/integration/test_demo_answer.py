"""The README demo (`make demo`) as it runs on a fresh clone: the whole checkout indexed, the Makefile's question
asked; the answer must state how the API profile is chosen (the `API_ENDPOINT` signal and its profile), citing
the retrieval-policy page first (issue 38, item 6).

Indexed: a copy of every file `git ls-files` lists (what a fresh clone holds; `lotsman index .` walks all of
it, tests and evals included), with the real embedder, as `make demo` runs it. Indexing takes ~4.5 minutes on
2 shared cores (~430 files, ~35k rows, ~7.6k embedded): this is the slowest integration test, and the only one
that sees what the whole repository does to the demo (the test fixtures' pages among the route's hints, the
code's words in the lexical stoplist).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

import graph.cli as cli
from stores.database import Database
from tests.integration.conftest import ROOT, indexed_session

POLICY = "docs/logic/retrieval_policy.md"
SIGNAL = "API_ENDPOINT"


def demo_question() -> str:
    """The question `make demo` asks (the Makefile's `QUESTION ?= …`)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = re.search(r"^QUESTION\s*\?=\s*(.+?)\s*$", text, re.MULTILINE)
    assert found, "the Makefile lost its demo QUESTION: update this test with it"
    return found.group(1)


def tracked_files() -> list[str]:
    """The checkout's files as a fresh clone has them (`git ls-files`)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True,
                             timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"not a git checkout ({exc}): CI runs on a clone, the demo test must run", pytrace=False)
        pytest.skip(f"not a git checkout ({exc}): the demo indexes a clone")
    return [p for p in out.decode("utf-8").split("\0") if p]


@pytest.fixture(scope="module")
def demo_session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    """The whole checkout indexed (a copy of its tracked files), and how long indexing took (seconds)."""
    from stores.embedders import make_embedder

    root = tmp_path_factory.mktemp("lotsman-clone")
    for rel in tracked_files():
        source = ROOT / rel
        if source.is_file():  # a tracked file deleted in the working tree is not in the clone's commit either
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / rel)
    t0 = time.perf_counter()
    sessions = indexed_session(db, root, "it-demo", make_embedder("use"))
    session = next(sessions)
    took = time.perf_counter() - t0
    yield session.name, took
    next(sessions, None)


def lines_naming(name: str) -> set[int]:
    """Line numbers of the policy page's table rows that define `name` (`| `name` | …`)."""
    lines = (ROOT / POLICY).read_text(encoding="utf-8").split("\n")
    return {n for n, line in enumerate(lines, 1) if line.startswith(f"| `{name}`")}


def api_profile() -> str:
    """The profile the page gives the API signal: the profile table's `docs_summary_…` name holding `api`."""
    text = (ROOT / POLICY).read_text(encoding="utf-8")
    names = set(re.findall(r"^\| `(docs_summary_\w*api\w*)`", text, re.MULTILINE))
    assert len(names) == 1, f"the policy page's API profile is not one table row ({names}): update this test"
    return names.pop()


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "issue 38 item 6, not met: with the exact lane asking for test paths last (ed9ad09) the policy page reaches "
    "the candidates, but over the whole repository the answer leads with evals/bench/texts.py, a module whose "
    "docstring lists benchmark questions about profiles and APIs; the unit scorer ranks the policy page's "
    "API_ENDPOINT signal row and profile row far below (their rows are not first-stage candidates, so their "
    "row-standing features are empty)"))
@pytest.mark.usefixtures("cli_on_test_db")
def test_demo_answer_states_how_the_api_profile_is_chosen(demo_session: tuple[str, float],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    session, took = demo_session
    assert cli.main(["ask", demo_question(), "--session", session, "--json"]) == 0, capsys.readouterr().err
    answer = json.loads(capsys.readouterr().out)
    text = answer["answer"]
    context = (f"indexing took {took:.0f} s", text)
    assert answer["abstained"] is False, context
    assert answer["citations"][0]["path"] == POLICY, context
    profile = api_profile()
    signal_rows, profile_rows = lines_naming(SIGNAL), lines_naming(profile)
    assert signal_rows and profile_rows, "the policy page lost its signal or profile table: update this test"
    cited = {n for c in answer["citations"] if c["path"] == POLICY for n in range(c["start_line"], c["end_line"] + 1)}
    # the answer names both, each quoted from the page: the signal's row and the profile's row are cited
    assert SIGNAL in text and profile in text, context
    assert cited & signal_rows and cited & profile_rows, (cited, signal_rows, profile_rows, *context)
