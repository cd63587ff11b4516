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
                citations=[{"path": "docs/run.md", "start_line": 3, "end_line": 5}], score=1, comment=None)
    args.update(over)
    return record_feedback(conn, **args)


def test_a_vote_is_stored_with_everything_the_answer_carried(db, empty_session):
    with db.connection() as conn:
        fid = _vote(conn, empty_session, score=-1, comment="  нет примера  ")
        votes = list_feedback(conn, empty_session)
    assert [v.feedback_id for v in votes] == [fid]
    v = votes[0]
    assert (v.score, v.comment, v.thread_id, v.langsmith_sent) == (-1, "нет примера", "t1", False)
    assert v.citations == [{"path": "docs/run.md", "start_line": 3, "end_line": 5}]
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
])
def test_a_malformed_vote_is_one_line_and_stores_nothing(db, empty_session, over, error, says):
    with db.connection() as conn:
        with pytest.raises(error) as info:
            _vote(conn, empty_session, **over)
        assert says in str(info.value) and "\n" not in str(info.value)
        assert list_feedback(conn, empty_session) == []
