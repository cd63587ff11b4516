"""Votes as eval cases and as LangSmith feedback (issue 27): the pure decisions of `stores.feedback`."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from evals.cases import load_dataset
from graph.settings import Settings
from stores.errors import UsageError
from stores.feedback import (
    Feedback,
    LangSmithTarget,
    feedback_case,
    feedback_cases,
    langsmith_run_id,
    langsmith_score,
    langsmith_target,
    normalize_citations,
    send_to_langsmith,
    validate_vote,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CITES = [{"path": "docs/run.md", "start_line": 3, "end_line": 5}, {"path": "app/main.py", "start_line": 1,
                                                                     "end_line": 9},
         {"path": "docs/run.md", "start_line": 10, "end_line": 12}]


def vote(question: str = "Как запустить?", score: int = 1, citations=None, comment: str | None = None,
         minutes: int = 0, fid: str | None = None) -> Feedback:
    return Feedback(fid or uuid.uuid4().hex, "s", "run", "thread", question, "answer",
                    CITES if citations is None else citations, score, comment, False, T0 + timedelta(minutes=minutes))


@pytest.mark.parametrize(("score", "citations", "answerable", "gold", "review"), [
    (1, CITES, True, ["docs/run.md", "app/main.py"], False),  # up: cited files are gold, in citation order
    (1, [], False, [], False),                                # up on a refusal: the docs do not answer it
    (-1, CITES, None, [], True),                              # down: nobody knows the gold yet
    (-1, [], None, [], True),
])
def test_a_vote_becomes_a_case(score, citations, answerable, gold, review):
    case = feedback_case(vote(score=score, citations=citations, comment="нет примера"))
    assert (case["answerable"], case["gold_paths"], case.get("needs_review", False)) == (answerable, gold, review)
    assert case["expected_route"] == "DOC_EXPLAIN/SUMMARY" and "route-unreviewed" in case["tags"]
    assert case["history"] == [] and case["key_facts"] == [] and case["id"].startswith("fb-")
    if review:
        assert case["review"] == {"answer": "answer", "cited": ["docs/run.md", "app/main.py"] if citations else [],
                                  "comment": "нет примера"}


def test_the_latest_vote_on_a_question_decides():
    votes = [vote("Как запустить?", 1), vote("Kafka?", -1, minutes=1), vote("как запустить", -1, minutes=2),
             vote("Helm?", 1, minutes=3)]
    cases = feedback_cases(votes)
    assert [(c["question"], c["answerable"]) for c in cases] == [("Kafka?", None), ("как запустить", None),
                                                                  ("Helm?", True)]
    assert [c["question"] for c in feedback_cases(votes, up_only=True)] == ["Helm?"]


def test_up_voted_cases_load_as_a_dataset_and_down_voted_ones_are_refused_until_reviewed(tmp_path: Path):
    up = tmp_path / "up.jsonl"
    up.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n"
                          for c in feedback_cases([vote(), vote("Refused?", 1, [])])), encoding="utf-8")
    assert [c["answerable"] for c in load_dataset(up)] == [True, False]
    down = tmp_path / "down.jsonl"
    down.write_text(json.dumps(feedback_case(vote(score=-1))) + "\n", encoding="utf-8")
    with pytest.raises(Exception, match="answerable"):
        load_dataset(down)


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"score": 0}, "score"), ({"score": -2}, "score"), ({"score": 1.5}, "score"), ({"score": "1"}, "score"),
    ({"score": False}, "score"), ({"question": ""}, "empty"), ({"question": " \n "}, "empty"),
    ({"question": None}, "must be text"), ({"comment": "я" * 2001}, "2001 characters"), ({"comment": 5}, "text"),
])
def test_validate_vote_refuses_with_one_line(kwargs, says):
    args = {"score": 1, "question": "q", "comment": None, **kwargs}
    with pytest.raises(UsageError) as info:
        validate_vote(**args)
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(("kwargs", "want"), [
    ({"score": -1, "question": "  q\x00 ", "comment": "  "}, (-1, "q", None)),
    ({"score": 1, "question": "q" * 9000, "comment": "ok"}, (1, "q" * 8000, "ok")),
    ({"score": 1, "question": "q", "comment": "я" * 2000}, (1, "q", "я" * 2000)),
])
def test_validate_vote_cleans(kwargs, want):
    assert validate_vote(**kwargs) == want


@pytest.mark.parametrize(("citations", "ok"), [
    (None, True), ([], True), (CITES, True), ([{"path": "a.md"}], False),  # lines are required (issue 37 item 11)
    ([{"path": ""}], False), ([{"path": "a.md", "start_line": -1}], False),
    ([{"path": "a.md", "start_line": "3"}], False), ([{"path": "a.md", "end_line": True}], False),
    ("a.md", False), ([["a.md", 1, 2]], False), ([{"path": "a.md"}] * 201, False),
])
def test_normalize_citations(citations, ok):
    if ok:
        assert all(set(c) == {"path", "start_line", "end_line"} for c in normalize_citations(citations))
    else:
        with pytest.raises(UsageError):
            normalize_citations(citations)


@pytest.mark.parametrize(("score", "want"), [(1, 1), (-1, 0)])
def test_langsmith_score(score, want):
    assert langsmith_score(score) == want


@pytest.mark.parametrize(("run_id", "sendable"), [
    (None, False), ("", False), ("not-a-uuid", False), ("0f8fad5b-d9cb-469f-a165-70867728950e", True),
    ("0f8fad5bd9cb469fa16570867728950e", True),
])
def test_langsmith_run_id(run_id, sendable):
    assert (langsmith_run_id(run_id) is not None) is sendable


class RecordingClient:
    def __init__(self, fail: Exception | None = None) -> None:
        self.calls: list[tuple[tuple, dict]] = []
        self.fail = fail

    def create_feedback(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        if self.fail:
            raise self.fail


def test_a_vote_goes_to_langsmith_as_run_feedback():
    client = RecordingClient()
    run = str(uuid.uuid4())
    assert send_to_langsmith(client, run_id=run, score=-1, comment="wrong file") is True
    (args, kwargs), = client.calls
    assert args == (run,) and kwargs["key"] == "user_score" and kwargs["score"] == 0
    assert kwargs["comment"] == "wrong file"


def test_a_vote_without_a_traced_run_is_not_sent():
    client = RecordingClient()
    assert send_to_langsmith(client, run_id="local-123", score=1, comment=None) is False
    assert client.calls == []


def test_a_langsmith_failure_is_one_warning(caplog: pytest.LogCaptureFixture):
    client = RecordingClient(fail=ConnectionError("connection refused\nmore detail"))
    with caplog.at_level(logging.WARNING):
        assert send_to_langsmith(client, run_id=str(uuid.uuid4()), score=1, comment=None) is False
    (record,) = caplog.records
    assert record.getMessage() == ("warning: feedback not sent to LangSmith (ConnectionError: connection refused); "
                                   "the vote is stored")


@pytest.mark.parametrize(("tracing", "key", "client"), [
    (False, None, False), (True, None, False), (False, "k", False), (True, "", False), (True, "k", True),
])
def test_langsmith_target_only_when_tracing_with_a_key(tracing, key, client):
    settings = Settings(LANGSMITH_TRACING=tracing, LANGSMITH_API_KEY=SecretStr(key) if key is not None else None,
                        LANGSMITH_PROJECT="docs-bot")
    target = langsmith_target(settings)
    assert (target is not None) is client
    if target is not None:
        assert target.project == "docs-bot"


class Project:
    id = "0f8fad5b-d9cb-469f-a165-70867728950e"


def test_a_vote_names_the_runs_project_read_once():
    client = RecordingClient()
    reads = []
    client.read_project = lambda project_name: reads.append(project_name) or Project()
    target = LangSmithTarget(client, "docs-bot")
    for _ in range(2):
        assert send_to_langsmith(target, run_id=str(uuid.uuid4()), score=1, comment=None)
    assert reads == ["docs-bot"] and [kw["session_id"] for _, kw in client.calls] == [Project.id] * 2


def test_a_project_that_cannot_be_read_is_left_out_of_the_vote():
    client = RecordingClient()

    def missing(project_name):
        raise LookupError(project_name)

    client.read_project = missing
    assert send_to_langsmith(LangSmithTarget(client, "gone"), run_id=str(uuid.uuid4()), score=1, comment=None)
    assert "session_id" not in client.calls[0][1]
