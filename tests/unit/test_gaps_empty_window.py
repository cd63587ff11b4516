"""Issue 37 item 19: the line `lotsman gaps` prints when no topic came out tells an empty log from an empty window."""

from __future__ import annotations

import pytest

from graph.cli_feedback import no_gaps_line

BASE = {"session": "docs", "since": None, "logged_questions": 0, "logged_total": 0, "last_logged_at": None,
        "votes": 0}


@pytest.mark.parametrize(("report", "logging_on", "says", "never"), [
    ({}, False, "no question is logged for session 'docs': questions are logged only where "
                "LOTSMAN_LOG_QUESTIONS=true (off by default); 0 votes", "window"),
    ({}, True, "no question is logged for session 'docs'; 0 votes", "LOTSMAN_LOG_QUESTIONS"),
    ({"since": "2026-12-02T00:00:00+00:00", "logged_total": 7, "last_logged_at": "2026-11-30T08:15:00+00:00",
      "votes": 1}, False,
     "no coverage gaps in session 'docs' since 2026-12-02T00:00:00+00:00: none was asked in this window "
     "(7 logged in total, the last at 2026-11-30 08:15 UTC), 1 votes", "no question is logged"),
    ({"since": "2026-12-02T00:00:00+00:00", "logged_total": 3, "last_logged_at": "2026-12-01T23:00:00-03:00"},
     False, "(3 logged in total, the last at 2026-12-02 02:00 UTC)", "LOTSMAN_LOG_QUESTIONS"),
    ({"logged_questions": 4, "logged_total": 4, "last_logged_at": "2026-11-30T08:15:00+00:00"}, False,
     "no coverage gaps in session 'docs': 4 logged questions, 0 votes", "LOTSMAN_LOG_QUESTIONS"),
], ids=["empty-log", "empty-log-logging-on", "empty-window", "window-time-in-utc", "no-gaps"])
def test_no_gaps_line(report: dict, logging_on: bool, says: str, never: str) -> None:
    line = no_gaps_line({**BASE, **report}, logging_on=logging_on)
    assert says in line and never not in line and "\n" not in line, line
