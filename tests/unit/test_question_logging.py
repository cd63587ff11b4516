"""`record_turn` (issue 27): writes only with LOTSMAN_LOG_QUESTIONS on, and never costs an answer."""

from __future__ import annotations

import logging
from contextlib import contextmanager

import pytest

from graph.question_logging import record_turn
from graph.settings import Settings

TURN = dict(session_name="docs", question="Kafka?", run_id="r1", abstained=True, confidence=0.1,
            top_files=["README.md"], source="cli")


class Database:
    def __init__(self, fail: Exception | None = None) -> None:
        self.opened = 0
        self.fail = fail

    @contextmanager
    def connection(self):
        self.opened += 1
        if self.fail:
            raise self.fail
        yield None


def test_nothing_is_written_with_logging_off():
    db = Database()
    record_turn(Settings(log_questions=False), database=db, **TURN)
    assert db.opened == 0


def test_a_failing_log_is_one_warning_not_an_error(caplog: pytest.LogCaptureFixture):
    db = Database(fail=RuntimeError("pool closed\nsecond line"))
    with caplog.at_level(logging.WARNING, logger="graph.question_logging"):
        record_turn(Settings(log_questions=True), database=db, **TURN)
    assert db.opened == 1
    assert [r.getMessage() for r in caplog.records] == ["warning: question not logged (RuntimeError: pool closed)"]
