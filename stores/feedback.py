"""Votes on answers (`rag_feedback`): stored per session, sent to LangSmith as run feedback when tracing is on."""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from stores.errors import UsageError
from stores.sessions import get_session

log = logging.getLogger(__name__)

MAX_COMMENT_CHARS = 2000
"""A vote's comment says why in a sentence or two; a longer one is refused, not cut (its end may be the point)."""
MAX_QUESTION_CHARS = 8000
"""The graph reads at most this much of a question (`graph.nodes.MAX_QUESTION_CHARS`); the rest is kept out."""
MAX_ANSWER_CHARS = 100_000
MAX_CITATIONS = 200
LANGSMITH_KEY = "user_score"
"""Feedback key on the LangSmith run (the key LangSmith's own chat examples use for thumbs up/down)."""


@dataclass(frozen=True)
class Feedback:
    """One stored vote."""

    feedback_id: str
    session_name: str
    run_id: str | None
    thread_id: str | None
    question: str
    answer: str
    citations: list[dict[str, Any]]
    score: int
    """1 (helped) or -1 (did not)."""
    comment: str | None
    langsmith_sent: bool
    created_at: datetime


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"feedback {field} must be text, got {type(value).__name__}")
    return value.replace("\x00", "")  # PostgreSQL text cannot hold NUL


def _optional_id(value: Any, field: str) -> str | None:
    if value is None or value == "":
        return None
    text = _text(value, field).strip()
    if len(text) > 200:
        raise UsageError(f"feedback {field} is {len(text)} characters long: give the id the answer carried")
    return text or None


def normalize_citations(citations: Any) -> list[dict[str, Any]]:
    """Citations as stored: `[{path, start_line, end_line}]`; anything else is a `UsageError` naming the item."""
    if citations is None:
        return []
    if not isinstance(citations, Sequence) or isinstance(citations, str | bytes):
        raise UsageError("feedback citations must be a list of {path, start_line, end_line}")
    if len(citations) > MAX_CITATIONS:
        raise UsageError(f"feedback carries {len(citations)} citations, more than {MAX_CITATIONS}")
    out = []
    for n, item in enumerate(citations, 1):
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str) or not item["path"].strip():
            raise UsageError(f"feedback citation {n} must be {{path, start_line, end_line}} with a path")
        lines = [item.get("start_line"), item.get("end_line")]
        if not all(v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0) for v in lines):
            raise UsageError(f"feedback citation {n} ({item['path'][:80]}): line numbers must be whole numbers")
        out.append({"path": item["path"].replace("\x00", ""), "start_line": lines[0], "end_line": lines[1]})
    return out


def validate_vote(*, score: Any, question: Any, comment: Any) -> tuple[int, str, str | None]:
    """The vote's score, question and comment as stored, or a one-line `UsageError` saying what is wrong."""
    if isinstance(score, bool) or score not in (1, -1):
        raise UsageError(f"feedback score must be 1 (helped) or -1 (did not help), got {score!r}")
    text = _text(question, "question").strip()
    if not text:
        raise UsageError("feedback needs the question that was answered: it is empty")
    note = None
    if comment is not None:
        note = _text(comment, "comment").strip() or None
        if note is not None and len(note) > MAX_COMMENT_CHARS:
            raise UsageError(f"feedback comment is {len(note)} characters long, more than {MAX_COMMENT_CHARS}: "
                             "shorten it")
    return int(score), text[:MAX_QUESTION_CHARS], note


def langsmith_score(score: int) -> int:
    """The score LangSmith records: 1 helped, 0 did not (so its average is the share of helpful answers)."""
    return 1 if score > 0 else 0


def langsmith_run_id(run_id: str | None) -> str | None:
    """The run id as LangSmith accepts it (a UUID), or None when the vote names no traced run."""
    if not run_id:
        return None
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return None


def record_feedback(
    conn: psycopg.Connection,
    session_name: str,
    *,
    run_id: str | None,
    thread_id: str | None,
    question: str,
    answer: str,
    citations: Sequence[Mapping[str, Any]] | None,
    score: int,
    comment: str | None,
    langsmith: Any = None,
) -> str:
    """Store one vote on an answer and return its id.

    Args:
        session_name: the session (name or id) the answer was read from.
        run_id: the graph run that produced the answer (LangSmith's run id when traced).
        thread_id: the conversation thread, when there is one.
        citations: the answer's `[{path, start_line, end_line}]`.
        score: 1 (helped) or -1 (did not).
        comment: optional, at most `MAX_COMMENT_CHARS` characters.
        langsmith: a `LangSmithTarget` (`langsmith_target(settings)`) or a `langsmith.Client`: when given and
            the run id is a UUID, the vote is also sent as feedback on that run; a failure there is one
            warning and the vote stays stored with `langsmith_sent` false.

    Raises:
        SessionNotFoundError: no such session.
        UsageError: a score other than ±1, an empty question, an oversized comment, malformed citations.
    """
    score, text, note = validate_vote(score=score, question=question, comment=comment)
    cites = normalize_citations(citations)
    answer_text = _text(answer if answer is not None else "", "answer")[:MAX_ANSWER_CHARS]
    run, thread = _optional_id(run_id, "run_id"), _optional_id(thread_id, "thread_id")
    session = get_session(conn, session_name)
    feedback_id = uuid.uuid4().hex
    with conn.transaction():
        conn.execute(
            "INSERT INTO rag_feedback (feedback_id, rag_session_id, session_name, run_id, thread_id, question, "
            "answer, citations, score, comment) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (feedback_id, session.rag_session_id, session.name, run, thread, text, answer_text, Jsonb(cites),
             score, note),
        )
    if langsmith is not None and send_to_langsmith(langsmith, run_id=run, score=score, comment=note):
        with conn.transaction():
            conn.execute("UPDATE rag_feedback SET langsmith_sent = true WHERE feedback_id = %s", (feedback_id,))
    return feedback_id


@dataclass
class LangSmithTarget:
    """Where votes go in LangSmith: a `langsmith.Client` and the project the runs are traced into."""

    client: Any
    project: str | None = None
    """Project (tracer session) name; its id goes with each vote, as LangSmith asks of run feedback."""
    _project_id: str | None = field(default=None, repr=False)

    def project_id(self) -> str | None:
        """The project's id, read once; None when it cannot be read (the vote is then sent without it)."""
        if self._project_id is None and self.project:
            try:
                self._project_id = str(self.client.read_project(project_name=self.project).id)
            except Exception as exc:  # not found, network: the feedback can still be sent
                log.info("LangSmith project %r not read (%s)", self.project, type(exc).__name__)
                self.project = None
        return self._project_id


def send_to_langsmith(target: Any, *, run_id: str | None, score: int, comment: str | None) -> bool:
    """Send one vote as feedback on its LangSmith run; True when sent. Never raises: a failure is one warning.

    `target` is a `LangSmithTarget` or a bare `langsmith.Client`.
    """
    run = langsmith_run_id(run_id)
    if run is None:
        return False
    if not isinstance(target, LangSmithTarget):
        target = LangSmithTarget(target)
    try:
        project = target.project_id()
        extra = {"session_id": project} if project else {}
        target.client.create_feedback(run, key=LANGSMITH_KEY, score=langsmith_score(score), comment=comment,
                                      stop_after_attempt=2, **extra)
    except Exception as exc:  # network, auth, API errors: the vote is stored either way
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        log.warning("warning: feedback not sent to LangSmith (%s: %s); the vote is stored", type(exc).__name__, first)
        return False
    return True


def langsmith_target(settings: Any) -> LangSmithTarget | None:
    """Where votes go when tracing is on with an API key (`LANGSMITH_TRACING`, `LANGSMITH_API_KEY`, the runs'
    project `LANGSMITH_PROJECT`); None otherwise: votes are then stored only."""
    key = getattr(settings, "langsmith_api_key", None)
    if not getattr(settings, "langsmith_tracing", False) or key is None or not key.get_secret_value():
        return None
    return _target(key.get_secret_value(), getattr(settings, "langsmith_project", None))


@functools.lru_cache(maxsize=2)
def _target(api_key: str, project: str | None) -> LangSmithTarget:
    from langsmith import Client

    # Votes only: no background batch thread (the tracer keeps its own client).
    return LangSmithTarget(Client(api_key=api_key, auto_batch_tracing=False), project)


_COLUMNS = ("feedback_id, session_name, run_id, thread_id, question, answer, citations, score, comment, "
            "langsmith_sent, created_at")


def list_feedback(conn: psycopg.Connection, session_name: str, *, since: datetime | None = None) -> list[Feedback]:
    """A session's votes, oldest first (`SessionNotFoundError` when there is no such session)."""
    session = get_session(conn, session_name)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            f"SELECT {_COLUMNS} FROM rag_feedback WHERE rag_session_id = %s "
            "AND (%s::timestamptz IS NULL OR created_at >= %s::timestamptz) ORDER BY created_at, feedback_id",
            (session.rag_session_id, since, since),
        ).fetchall()
    return [Feedback(**row) for row in rows]


# --- votes as eval cases (pure) ------------------------------------------------------------------------------
EXPORT_ROUTE = "DOC_EXPLAIN/SUMMARY"
"""The route a vote's case is given: the vote does not record the route, so this is a placeholder that the
`route-unreviewed` tag flags (a FIND_FILES question needs `DOC_EXPLAIN/FIND_FILES` by hand)."""


def cited_paths(citations: Sequence[Mapping[str, Any]]) -> list[str]:
    """The distinct files an answer cited, in citation order."""
    return list(dict.fromkeys(c["path"] for c in citations if c.get("path")))


def feedback_case(vote: Feedback) -> dict[str, Any]:
    """One vote as an eval case (SPEC §7 JSONL).

    - up-voted with citations: answerable, the cited files are the gold paths;
    - up-voted without citations: the user agreed the index does not answer it, so unanswerable;
    - down-voted: `answerable: null` and `needs_review: true` with the answer, its files and the comment
      under `review`: nobody knows yet which files answer it, or whether any does. `lotsman eval` refuses
      such a line (answerable must be true or false) until a person decides, so it cannot skew a metric.
    """
    files = cited_paths(vote.citations)
    case: dict[str, Any] = {
        "id": f"fb-{vote.feedback_id[:12]}",
        "question": vote.question,
        "history": [],
        "expected_route": EXPORT_ROUTE,
        "gold_paths": files if vote.score > 0 else [],
        "key_facts": [],
        "answerable": bool(files) if vote.score > 0 else None,
        "tags": ["feedback", "up-voted" if vote.score > 0 else "down-voted", "route-unreviewed"],
        "source": {"feedback_id": vote.feedback_id, "run_id": vote.run_id, "thread_id": vote.thread_id,
                   "voted_at": vote.created_at.isoformat()},
    }
    if vote.score < 0:
        case["needs_review"] = True
        case["review"] = {"answer": vote.answer, "cited": files, "comment": vote.comment}
    elif vote.comment:
        case["source"]["comment"] = vote.comment
    return case


def feedback_cases(votes: Sequence[Feedback], *, up_only: bool = False) -> list[dict[str, Any]]:
    """Votes (oldest first) as eval cases: one per distinct question (case and spacing aside), its latest
    vote deciding; with `up_only`, questions whose latest vote is down are left out."""
    from stores.question_log import question_key

    latest: dict[str, Feedback] = {}
    for vote in votes:
        latest.pop(question_key(vote.question), None)  # re-inserted: the order is that of the latest votes
        latest[question_key(vote.question)] = vote
    return [feedback_case(v) for v in latest.values() if not (up_only and v.score < 0)]
