"""Votes on answers (`rag_feedback`): stored per session, sent to LangSmith as run feedback when tracing is on."""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from stores.errors import UsageError
from stores.sessions import RagSession, get_session

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
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (`"\\ud800"` in JSON): PostgreSQL cannot store it
            raise UsageError(f"feedback {field} is not valid Unicode text (a lone surrogate)") from None
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
        path = _text(item["path"], f"citation {n} path")
        start, end = item.get("start_line"), item.get("end_line")
        if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
            raise UsageError(f"feedback citation {n} ({_shown(path)}): line numbers must be whole numbers")
        if start < 1:
            raise UsageError(f"feedback citation {n} ({_shown(path)}): lines are numbered from 1, got {_shown(start)}")
        if end < start:
            raise UsageError(f"feedback citation {n} ({_shown(path)}): ends before it starts ({_shown(start)}-"
                             f"{_shown(end)})")
        out.append({"path": path, "start_line": start, "end_line": end})
    return out


def _shown(value: Any, limit: int = 80) -> str:
    """A client's value in a message: at most `limit` characters (a 10^20 line, a 1 MB path stay short)."""
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _key(citation: Mapping[str, Any]) -> tuple[str, Any, Any]:
    return str(citation.get("path")), citation.get("start_line"), citation.get("end_line")


def file_extents(conn: psycopg.Connection, session: RagSession, paths: Iterable[str]) -> dict[str, int]:
    """The last indexed line of each of `paths` the session's current index holds (a path it does not hold is
    left out): what a citation of the session may point at."""
    wanted = sorted({p for p in paths if isinstance(p, str)})
    if not wanted:
        return {}
    rows = conn.execute(
        f'SELECT path, max(span_end) FROM "{session.table}" WHERE rag_session_id = %s AND generation = %s '
        "AND path = ANY(%s) GROUP BY path",
        (session.rag_session_id, session.active_generation, wanted)).fetchall()
    return {path: int(last) for path, last in rows if last is not None}


def logged_run_files(conn: psycopg.Connection, session: RagSession, run_id: str | None) -> set[str] | None:
    """The files a logged run of the session cited (its `rag_question_log.top_files`), or None when the run is
    not in the log (question logging off, or no run id)."""
    if not run_id:
        return None
    rows = conn.execute("SELECT top_files FROM rag_question_log WHERE rag_session_id = %s AND run_id = %s",
                        (session.rag_session_id, run_id)).fetchall()
    if not rows:
        return None
    return {str(path) for (files,) in rows for path in (files or [])}


def check_citations(citations: Sequence[Mapping[str, Any]], *, session_name: str, extents: Mapping[str, int],
                    run_citations: Sequence[Mapping[str, Any]] | None = None,
                    run_files: set[str] | None = None) -> None:
    """Refuse (one-line `UsageError`) a vote's citation that is not the voted answer's own (issue 37, item 11).

    Every citation must name a file of the session's current index (`extents`: file → last line) inside its
    lines. When the answer's citations are known (`run_citations`: the server read them from the run itself),
    each must be one of them; else, when the run is in the question log, its file must be one the run cited
    (`run_files`). A vote is what `feedback export` turns into gold paths: a client may not choose them.
    """
    allowed = {_key(c) for c in run_citations} if run_citations is not None else None
    for n, cite in enumerate(citations, 1):
        path, start, end = cite["path"], cite["start_line"], cite["end_line"]
        last = extents.get(path)
        if last is None:
            raise UsageError(f"feedback citation {n}: {_shown(path)} is not in session '{_shown(session_name)}': "
                             "a vote carries the citations of the answer it votes on")
        if end > last:
            raise UsageError(f"feedback citation {n}: lines {_shown(start)}-{_shown(end)} are outside {_shown(path)}: "
                             f"it has {last} lines in session '{_shown(session_name)}'")
        if allowed is not None and _key(cite) not in allowed:
            raise UsageError(f"feedback citation {n} ({_shown(path)}:{start}-{end}) is not one of the run's "
                             "citations: a vote carries the citations of the answer it votes on")
        if allowed is None and run_files is not None and path not in run_files:
            raise UsageError(f"feedback citation {n} ({_shown(path)}) is not one of the run's citations: the run "
                             "cited " + (", ".join(sorted(_shown(f) for f in run_files))[:300] or "nothing"))


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
    run_citations: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """Store one vote on an answer and return its id.

    Args:
        session_name: the session (name or id) the answer was read from.
        run_id: the graph run that produced the answer (LangSmith's run id when traced).
        thread_id: the conversation thread, when there is one.
        citations: the answer's `[{path, start_line, end_line}]`: each must lie in a file of the session's
            current index, and be one of the answer's own (`check_citations`).
        run_citations: the citations the run gave, when the caller read them from the run itself (the web
            endpoint from the LangGraph thread, MCP from its own answer); without them a run in the question log
            limits the citations to the files it cited.
        score: 1 (helped) or -1 (did not).
        comment: optional, at most `MAX_COMMENT_CHARS` characters.
        langsmith: a `LangSmithTarget` (`langsmith_target(settings)`) or a `langsmith.Client`: when given and
            the run id is a UUID, the vote is also sent as feedback on that run; a failure there is one
            warning and the vote stays stored with `langsmith_sent` false.

    Raises:
        SessionNotFoundError: no such session.
        UsageError: a score other than ±1, an empty question, an oversized comment, malformed citations, a
            citation outside the session's index or not among the run's.
    """
    score, text, note = validate_vote(score=score, question=question, comment=comment)
    cites = normalize_citations(citations)
    answer_text = _text(answer if answer is not None else "", "answer")[:MAX_ANSWER_CHARS]
    run, thread = _optional_id(run_id, "run_id"), _optional_id(thread_id, "thread_id")
    session = get_session(conn, session_name)
    if cites:
        check_citations(cites, session_name=session.name,
                        extents=file_extents(conn, session, (c["path"] for c in cites)),
                        run_citations=normalize_citations(run_citations) if run_citations is not None else None,
                        run_files=logged_run_files(conn, session, run) if run_citations is None else None)
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


MAX_EXPORT_LINE = 10_000_000
"""No indexed file has more lines (a file is read whole, at most `LOTSMAN_MAX_FILE_BYTES` ≤ 100 MB)."""


def sound_path(path: Any) -> bool:
    """Whether `path` reads as a file inside an indexed root: relative, no `..` part, no control character."""
    if not isinstance(path, str) or not path.strip() or any(ch < " " or ch == "\x7f" for ch in path):
        return False
    norm = path.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        return False
    return ".." not in norm.split("/")


def exportable_citations(citations: Sequence[Mapping[str, Any]],
                         extents: Mapping[str, int] | None = None) -> list[Mapping[str, Any]]:
    """The citations of a stored vote that may become gold paths: a sound relative path with whole line numbers
    1 ≤ start ≤ end (≤ `MAX_EXPORT_LINE`) and, when the session's `extents` (file → last line, `file_extents`)
    are given, inside a file its current index holds. Rows stored before votes were checked (issue 37, item 11)
    may hold anything."""
    kept = []
    for cite in citations:
        if not isinstance(cite, Mapping):
            continue
        path, start, end = cite.get("path"), cite.get("start_line"), cite.get("end_line")
        if not (isinstance(path, str) and sound_path(path) and isinstance(start, int) and isinstance(end, int)):
            continue
        if isinstance(start, bool) or isinstance(end, bool) or not 1 <= start <= end <= MAX_EXPORT_LINE:
            continue
        if extents is not None and (path not in extents or end > extents[path]):
            continue
        kept.append(cite)
    return kept


def feedback_case(vote: Feedback, extents: Mapping[str, int] | None = None) -> dict[str, Any]:
    """One vote as an eval case (SPEC §7 JSONL).

    - up-voted with citations: answerable, the cited files are the gold paths;
    - up-voted without citations: the user agreed the index does not answer it, so unanswerable;
    - down-voted: `answerable: null` and `needs_review: true` with the answer, its files and the comment
      under `review`: nobody knows yet which files answer it, or whether any does. `lotsman eval` refuses
      such a line (answerable must be true or false) until a person decides, so it cannot skew a metric.

    Only `exportable_citations` count; a vote that lost some is tagged `citations-dropped`, and an up-vote
    that lost them all needs review like a down-vote (it did cite something: it is not "unanswerable").
    """
    kept = exportable_citations(vote.citations, extents)
    dropped = len(kept) < len(vote.citations)
    files = cited_paths(kept)
    review = vote.score < 0 or (dropped and not files)
    case: dict[str, Any] = {
        "id": f"fb-{vote.feedback_id[:12]}",
        "question": vote.question,
        "history": [],
        "expected_route": EXPORT_ROUTE,
        "gold_paths": files if vote.score > 0 else [],
        "key_facts": [],
        "answerable": None if review else bool(files),
        "tags": ["feedback", "up-voted" if vote.score > 0 else "down-voted", "route-unreviewed",
                 *(["citations-dropped"] if dropped else [])],
        "source": {"feedback_id": vote.feedback_id, "run_id": vote.run_id, "thread_id": vote.thread_id,
                   "voted_at": vote.created_at.isoformat()},
    }
    if review:
        case["needs_review"] = True
        case["review"] = {"answer": vote.answer, "cited": files, "comment": vote.comment}
    elif vote.comment:
        case["source"]["comment"] = vote.comment
    return case


def feedback_cases(votes: Sequence[Feedback], *, up_only: bool = False,
                   extents: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """Votes (oldest first) as eval cases: one per distinct question (case and spacing aside), its latest
    vote deciding; with `up_only`, questions whose latest vote is down are left out. `extents`: see
    `exportable_citations`."""
    from stores.question_log import question_key

    latest: dict[str, Feedback] = {}
    for vote in votes:
        latest.pop(question_key(vote.question), None)  # re-inserted: the order is that of the latest votes
        latest[question_key(vote.question)] = vote
    return [feedback_case(v, extents) for v in latest.values() if not (up_only and v.score < 0)]
