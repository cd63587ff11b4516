"""Votes on answers in `rag_feedback` (issue 27): stored per session, refused with one line when malformed."""

from __future__ import annotations

import uuid

import pytest

from stores.errors import SessionNotFoundError, UsageError
from stores.feedback import list_feedback, record_feedback
from stores.sessions import create_session, delete_session


@pytest.fixture
def empty_session(db):
    name = f"fb-{uuid.uuid4().hex[:8]}"
    with db.connection() as conn:
        create_session(conn, name, "fake", 64)
    yield name
    with db.connection() as conn:
        delete_session(conn, name)


def _vote(conn, session, **over):
    args = dict(session_name=session, run_id=str(uuid.uuid4()), thread_id="t1", question="Как запустить?",
                answer="Запустите `lotsman serve` (docs/run.md:3-5).",
                citations=[], score=1, comment=None)  # this session indexes nothing: test_feedback_citations.py
    args.update(over)
    return record_feedback(conn, **args)


def test_a_vote_is_stored_with_everything_the_answer_carried(db, empty_session):
    with db.connection() as conn:
        fid = _vote(conn, empty_session, score=-1, comment="  нет примера  ")
        votes = list_feedback(conn, empty_session)
    assert [v.feedback_id for v in votes] == [fid]
    v = votes[0]
    assert (v.score, v.comment, v.thread_id, v.langsmith_sent) == (-1, "нет примера", "t1", False)
    assert v.citations == []
    assert v.question == "Как запустить?" and "lotsman serve" in v.answer


@pytest.mark.parametrize(("over", "error", "says"), [
    ({"session_name": "no-such-session-fb"}, SessionNotFoundError, "no session 'no-such-session-fb'"),
    ({"score": 0}, UsageError, "score must be 1"),
    ({"score": 5}, UsageError, "score must be 1"),
    ({"score": True}, UsageError, "score must be 1"),
    ({"question": "   "}, UsageError, "question"),
    ({"comment": "x" * 2001}, UsageError, "2001 characters"),
    ({"citations": [{"start_line": 1}]}, UsageError, "citation 1"),
    ({"citations": "docs/a.md"}, UsageError, "citations must be a list"),
    ({"citations": [{"path": "docs/run.md", "start_line": 3, "end_line": 5}]}, UsageError,
     "docs/run.md is not in session"),  # issue 37 item 11: an empty session holds no file to cite
])
def test_a_malformed_vote_is_one_line_and_stores_nothing(db, empty_session, over, error, says):
    with db.connection() as conn:
        with pytest.raises(error) as info:
            _vote(conn, empty_session, **over)
        assert says in str(info.value) and "\n" not in str(info.value)
        assert list_feedback(conn, empty_session) == []


def test_a_logged_turn_keeps_distinct_files_and_an_unknown_session_is_skipped(db, empty_session):
    from stores.question_log import MAX_TOP_FILES, list_questions, log_question

    files = [{"path": "docs/a.md"}, "docs/a.md", "docs/b.md", "", None] + [f"f{n}.md" for n in range(20)]
    with db.connection() as conn:
        assert log_question(conn, session_name="no-such-session-log", question="q", run_id=None, abstained=True,
                            confidence=None, top_files=[], source="cli") is None
        assert log_question(conn, session_name=empty_session, question="  \x00 ", run_id=None, abstained=True,
                            confidence=None, top_files=[], source="cli") is None
        qid = log_question(conn, session_name=empty_session, question=" Kafka?\x00 " + "x" * 9000, run_id="r1",
                           abstained=False, confidence=float("nan"), top_files=files, source="web")
        (row,) = list_questions(conn, empty_session)
    assert row.question_id == qid and row.question.startswith("Kafka?") and len(row.question) == 8000
    assert row.top_files[:3] == ["docs/a.md", "docs/b.md", "f0.md"] and len(row.top_files) == MAX_TOP_FILES
    assert row.confidence is None and row.source == "web" and row.run_id == "r1"
