"""Question logging for `lotsman gaps`: one row per answered turn in `rag_question_log`, only when
`LOTSMAN_LOG_QUESTIONS` is on (issue 27)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


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
    database: Any = None,
) -> None:
    """Record one turn when question logging is on; never raises (a log failure must not cost an answer).

    Args:
        settings: `graph.settings.Settings`; nothing is written unless `settings.log_questions`.
        session_name: the session (name or id) the turn read; an unknown one is not logged.
        run_id: the graph run's id (what a vote on the answer names, so `gaps` counts the turn once).
        abstained: the answer said the index does not answer the question.
        confidence: 0..1, how well the evidence covered the request (the relevance gate's key-term
            coverage); below `stores.question_log.DEFAULT_LOW_CONFIDENCE` the turn is a gap.
        top_files: the answer's nearest files, best first (cited files, or the nearest ones of a refusal).
        source: where the question came from (`cli`, `server`, `web`, `mcp`).
        database: the caller's `stores.database.Database` (its pool); without one a single connection is
            opened for the row.
    """
    if not getattr(settings, "log_questions", False):
        return
    try:
        from stores.question_log import log_question

        row: dict[str, Any] = dict(session_name=session_name, question=question, run_id=run_id, abstained=abstained,
                   confidence=confidence, top_files=top_files, source=source)
        if database is not None:
            with database.connection() as conn:
                log_question(conn, **row)
            return
        from stores.database import connect, resolve_database_url

        with connect(resolve_database_url(settings.database_url, settings.data_dir)) as conn:
            log_question(conn, **row)
    except Exception as exc:  # the log is a by-product: the answer has been given either way
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        log.warning("warning: question not logged (%s: %s)", type(exc).__name__, first)
