"""Issue 25 item 8: `lotsman ask` and `lotsman retrieve` give one verdict for one question.

On a 50,000-line module `retrieve "what is x49999?"` showed the right row as relevant while `ask` said the
index does not answer it: the gate passed the row, then the passage cut of a long run of module-level code
kept its first 14 lines and dropped the one asked about, so the analysis found nothing to quote.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import graph.cli as cli
from stores.database import Database

QUESTIONS = [("what is x49999?", 49999), ("what is x25000?", 25000), ("x123 value", 123)]
"""Questions and the `xN` each asks about (the last line of the module, one in the middle, one near the top)."""



@pytest.fixture
def big_module_session(db: Database, tmp_path: Path) -> Iterator[str]:
    """A session over one module of 50,000 lines `xN = N` (N = 0 … 49999), fake embedder."""
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository
    from stores.sessions import delete_session

    root = tmp_path / "repo"
    root.mkdir()
    (root / "big.py").write_text("".join(f"x{i} = {i}\n" for i in range(50_000)))
    name = f"big-{tmp_path.name[-12:]}"
    index_repository(db, root, session_name=name, embedder=make_embedder("fake"))
    yield name
    with db.connection() as conn:
        delete_session(conn, name)


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert cli.main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize(("question", "number"), QUESTIONS)
def test_ask_and_retrieve_agree_on_a_50k_line_module(question: str, number: int, big_module_session: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    found = _json(["retrieve", question, "--session", big_module_session, "--json"], capsys)
    asked = _json(["ask", question, "--session", big_module_session, "--json"], capsys)

    line = number + 1  # `xN = N` is line N + 1
    top = found["rows"][0]
    start, end = top["lines"]
    assert found["relevant"] is True and top["path"] == "big.py" and start <= line <= end
    # one verdict: retrieve says what ask does with this evidence, and ask quotes the row it was given
    assert found["answered"] is True and asked["abstained"] is False
    assert f"x{number} = {number}" in asked["answer"]
    assert asked["citations"] and asked["citations"][0]["path"] == "big.py"
    assert found["lead"] == "{path}:{start_line}-{end_line}".format(**asked["citations"][0])


@pytest.mark.usefixtures("cli_on_test_db")
def test_retrieve_says_when_ask_abstains(big_module_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A question the module does not answer: both refuse, and retrieve says so in its table."""
    question = "how is the OAuth2 token refreshed in Kubernetes?"
    found = _json(["retrieve", question, "--session", big_module_session, "--json"], capsys)
    asked = _json(["ask", question, "--session", big_module_session, "--json"], capsys)
    assert found["answered"] is False and asked["abstained"] is True and found["lead"] is None

    assert cli.main(["retrieve", question, "--session", big_module_session]) == 0
    assert "ask answers: no" in capsys.readouterr().out
