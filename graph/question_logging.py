"""Question logging for `lotsman gaps`: one row per answered turn in `rag_question_log`, only when
`LOTSMAN_LOG_QUESTIONS` is on (issue 27)."""

from __future__ import annotations

from typing import Any


def record_turn(
    settings: Any,
    *,
    session_name: str,
    question: str,
    run_id: str | None,
    abstained: bool,
    confidence: float | None,
    top_files: list[str],
    source: str,
) -> None:
    """Record one turn when question logging is on; never raises (a log failure must not cost an answer)."""
