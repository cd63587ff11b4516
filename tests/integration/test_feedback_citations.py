"""Issue 37 item 11: a vote carries only citations of the answer it votes on, and `feedback export` never turns a
forged one (`../../etc/passwd`, line 10^20) into a gold path."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.types.json import Jsonb

from graph.cli import main
from stores.database import Database
from stores.embedders import make_embedder
from stores.errors import UsageError
from stores.feedback import list_feedback, record_feedback
from stores.question_log import log_question
from stores.sessions import RagSession
from tests.integration.conftest import indexed_session

pytestmark = pytest.mark.integration

RUN_MD = "".join(f"Line {n} of the run page: start the server with lotsman serve.\n" for n in range(1, 11))
GOOD = {"path": "docs/run.md", "start_line": 3, "end_line": 5}
FORGED = [
    ({"path": "../../etc/passwd", "start_line": 1, "end_line": 1}, "is not in session"),
    ({"path": "/etc/passwd", "start_line": 1, "end_line": 1}, "is not in session"),
    ({"path": "docs/nope.md", "start_line": 1, "end_line": 1}, "is not in session"),
    ({"path": "docs/run.md", "start_line": 10**20, "end_line": 10**20}, "outside docs/run.md: it has 10 lines"),
    ({"path": "docs/run.md", "start_line": 3, "end_line": 11}, "outside docs/run.md: it has 10 lines"),
    ({"path": "docs/run.md", "start_line": 0, "end_line": 2}, "lines are numbered from 1"),
    ({"path": "docs/run.md", "start_line": 5, "end_line": 3}, "ends before it starts"),
    ({"path": "docs/run.md"}, "line numbers"),
]


@pytest.fixture(scope="module")
def session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RagSession]:
    root = tmp_path_factory.mktemp("fb-cites")
    (root / "docs").mkdir()
    (root / "docs" / "run.md").write_text(RUN_MD, encoding="utf-8")
    (root / "docs" / "other.md").write_text("# Other\n\nSomething else entirely.\n", encoding="utf-8")
    yield from indexed_session(db, root, "fb-cites", make_embedder("fake"))


@pytest.fixture
def clean(db: Database, session: RagSession) -> Iterator[None]:
    yield
    with db.connection() as conn:
        conn.execute("DELETE FROM rag_feedback WHERE rag_session_id = %s", (session.rag_session_id,))
        conn.execute("DELETE FROM rag_question_log WHERE rag_session_id = %s", (session.rag_session_id,))


def _vote(db: Database, session: RagSession, citations: list, **over) -> str:
    args = dict(run_id=str(uuid.uuid4()), thread_id=None, question="How do I start the server?",
                answer="Run lotsman serve.", citations=citations, score=1, comment=None)
    args.update(over)
    with db.connection() as conn:
        return record_feedback(conn, session.name, **args)


@pytest.mark.parametrize(("citation", "says"), FORGED, ids=[
    "traversal", "absolute", "not-indexed", "line-1e20", "past-the-end", "line-zero", "reversed", "no-lines"])
def test_a_citation_outside_the_session_is_refused(db: Database, session: RagSession, clean: None, citation: dict,
                                                    says: str) -> None:
    with pytest.raises(UsageError) as info:
        _vote(db, session, [GOOD, citation])
    assert says in str(info.value) and "\n" not in str(info.value), str(info.value)
    with db.connection() as conn:
        assert list_feedback(conn, session.name) == []


def test_a_citation_the_run_did_not_give_is_refused(db: Database, session: RagSession, clean: None) -> None:
    other = {"path": "docs/other.md", "start_line": 1, "end_line": 3}
    with pytest.raises(UsageError) as info:
        _vote(db, session, [other], run_citations=[GOOD])
    assert "not one of the run's citations" in str(info.value), str(info.value)
    _vote(db, session, [GOOD], run_citations=[GOOD, other])  # a subset of the run's own is fine

    run_id = str(uuid.uuid4())  # a logged run: its top files are what it cited
    with db.connection() as conn:
        log_question(conn, session_name=session.name, question="How do I start the server?", run_id=run_id,
                     abstained=False, confidence=0.9, top_files=["docs/run.md"], source="web")
    with pytest.raises(UsageError) as info:
        _vote(db, session, [other], run_id=run_id)
    assert "not one of the run's citations" in str(info.value), str(info.value)
    _vote(db, session, [GOOD], run_id=run_id)
    with db.connection() as conn:
        assert [v.citations for v in list_feedback(conn, session.name)] == [[GOOD], [GOOD]]


def test_export_never_emits_a_forged_citation(db: Database, session: RagSession, clean: None, cli_on_test_db: None,
                                              capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Rows stored before the check (or written around it) are cleaned on the way out."""
    _vote(db, session, [GOOD], question="Good question?")
    forged = [{"path": "../../etc/passwd", "start_line": 1, "end_line": 1},
              {"path": "/etc/shadow", "start_line": 1, "end_line": 2},
              {"path": "docs/run.md", "start_line": 10**20, "end_line": 10**20},
              {"path": "docs/gone.md", "start_line": 1, "end_line": 2}]
    with db.connection() as conn:
        for n, (cites, score) in enumerate([(forged, 1), (forged + [GOOD], 1), (forged, -1)]):
            conn.execute("INSERT INTO rag_feedback (feedback_id, rag_session_id, session_name, question, citations, "
                         "score) VALUES (%s, %s, %s, %s, %s, %s)",
                         (uuid.uuid4().hex, session.rag_session_id, session.name, f"Forged {n}?", Jsonb(cites), score))
    out = tmp_path / "votes.jsonl"
    assert main(["feedback", "export", "--session", session.name, "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "etc/passwd" not in text and "etc/shadow" not in text and "gone.md" not in text and "e+20" not in text
    assert str(10**20) not in text
    cases = {c["question"]: c for c in map(json.loads, text.splitlines())}
    assert cases["Good question?"]["gold_paths"] == ["docs/run.md"] and cases["Good question?"]["answerable"]
    assert cases["Forged 1?"]["gold_paths"] == ["docs/run.md"]
    assert "citations-dropped" in cases["Forged 1?"]["tags"]
    # an up-vote whose every citation was forged is not "the index does not answer it": a person decides
    assert cases["Forged 0?"]["gold_paths"] == [] and cases["Forged 0?"]["answerable"] is None
    assert cases["Forged 0?"]["needs_review"] is True
    assert cases["Forged 2?"]["review"]["cited"] == []
    capsys.readouterr()
