"""The web page `lotsman serve` publishes: routes mounted into the LangGraph server's HTTP app (issue 27).

The page (`web_static/`, no build step, nothing from a CDN) asks the LangGraph server's own API
(threads, `runs/stream` on the `lotsman` graph); these routes add what that API does not have: the
sessions to pick from, the indexed lines a citation points at, and votes on answers. Every endpoint
answers bad input with `{"error": "<one line>"}` and a 4xx status.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph.errors import DATABASE_MESSAGES, public_message, shown
from stores.database import STOPPED_MESSAGE, EmbeddedStoppedError
from stores.errors import (
    DatabaseUnavailableError,
    EmbeddedServerError,
    LotsmanError,
    PgvectorMissingError,
    SessionNotFoundError,
    database_lost,
)
from stores.feedback import MAX_ANSWER_CHARS, MAX_CITATIONS, MAX_COMMENT_CHARS, MAX_QUESTION_CHARS
from stores.reading import MAX_READ_LINES

if TYPE_CHECKING:
    from stores.database import Database
    from stores.reading import IndexedLines

log = logging.getLogger(__name__)

PREFIX = "/lotsman"
"""Where the page lives on the server (`/lotsman/`); its endpoints are under `/lotsman/api/`, and
`/lotsman/read?session=S&path=P&start=N&end=M` shows one citation's lines (the target of the links in chat
answers, `nodes/answer_composition/links.py`)."""
STATIC_DIR = Path(__file__).resolve().with_name("web_static")

MAX_BODY_BYTES = 256 * 1024
MAX_NAME_CHARS = 1000

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
    "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
])
"""What the browser lets the page do: its own script and styles from this server, no inline script, style or
event handler (a line of an indexed document that slipped into the page as HTML could not run), requests to this
server only, no framing (clickjacking). The favicon is a file too (`static/favicon.svg`): a `data:` icon would
need `img-src data:`."""
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
"""On every response under `/lotsman/`: `nosniff` (a JSON answer is never run as script), no referrer (a
citation's URL names the session and path), `X-Frame-Options` for browsers that ignore `frame-ancestors`."""


class WebInputError(ValueError):
    """A request the page's endpoints refuse; the message is the one line the client reads."""

    status = 400


class Unauthorized(WebInputError):
    status = 401


@dataclass(frozen=True)
class LineRange:
    """A citation to expand: lines `start_line..end_line` (1-based, inclusive) of `path` in `session`."""

    session: str
    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Vote:
    """A thumbs up (+1) or down (-1) on one answer, with what was asked and answered."""

    session: str
    score: int
    question: str
    answer: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    comment: str | None = None
    run_id: str | None = None
    thread_id: str | None = None
    run_citations: list[dict[str, Any]] | None = None
    """The voted answer's own citations as this server read them from its run (never from the request): the
    store refuses a vote citation that is not one of them (issue 37, item 11)."""


# --- decisions: pure functions over the request's data ------------------------------------------------------
def _text(data: Mapping[str, Any], key: str, *, limit: int, required: bool = True) -> str:
    value = data.get(key)
    if value is None or value == "":
        if required:
            raise WebInputError(f"{key}: required")
        return ""
    if not isinstance(value, str):
        raise WebInputError(f"{key}: expected a string")
    if required and not value.strip():
        raise WebInputError(f"{key}: must not be blank")
    if len(value) > limit:
        raise WebInputError(f"{key}: longer than {limit} characters")
    if "\x00" in value:
        raise WebInputError(f"{key}: contains a NUL character")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (`"\\ud800"` in the JSON): no text can hold it
            raise WebInputError(f"{key}: not valid Unicode text (a lone surrogate)") from None
    return value


def _line_number(params: Mapping[str, Any], key: str) -> int:
    raw = params.get(key)
    if raw is None or raw == "":
        raise WebInputError(f"{key}: required")
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise WebInputError(f"{key}: expected a line number")
    try:
        number = int(raw)
    except ValueError:
        raise WebInputError(f"{key}: expected a line number, got {str(raw)[:40]!r}") from None
    if number < 1:
        raise WebInputError(f"{key}: lines are numbered from 1, got {number}")
    return number


def parse_line_range(params: Mapping[str, Any]) -> LineRange:
    """The `read` endpoint's query (`session`, `path`, `start_line`, `end_line`), checked."""
    session = _text(params, "session", limit=MAX_NAME_CHARS)
    path = _text(params, "path", limit=MAX_NAME_CHARS)
    start, end = _line_number(params, "start_line"), _line_number(params, "end_line")
    if end < start:
        raise WebInputError(f"end_line {end} is before start_line {start}")
    if end - start + 1 > MAX_READ_LINES:
        raise WebInputError(f"at most {MAX_READ_LINES} lines at a time, asked for {end - start + 1}")
    return LineRange(session=session, path=path, start_line=start, end_line=end)


def _citations(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WebInputError("citations: expected a list")
    if len(value) > MAX_CITATIONS:
        raise WebInputError(f"citations: more than {MAX_CITATIONS}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise WebInputError(f"citations[{i}]: expected {{path, start_line, end_line}}")
        try:
            line_range = parse_line_range({"session": "-", **item})
        except WebInputError as exc:
            raise WebInputError(f"citations[{i}].{exc}") from None
        out.append({"path": line_range.path, "start_line": line_range.start_line, "end_line": line_range.end_line})
    return out


def _optional_id(data: Mapping[str, Any], key: str) -> str | None:
    return _text(data, key, limit=200, required=False) or None


def parse_vote(body: Any) -> Vote:
    """The `feedback` endpoint's JSON body, checked: `session`, `score` (1 or -1), `question`, and optional
    `answer`, `citations`, `comment`, `run_id`, `thread_id`."""
    if not isinstance(body, dict):
        raise WebInputError("expected a JSON object")
    score = body.get("score")
    if isinstance(score, bool) or score not in (1, -1):
        raise WebInputError("score: expected 1 (helpful) or -1 (not helpful)")
    comment = _text(body, "comment", limit=MAX_COMMENT_CHARS, required=False).strip()
    return Vote(
        session=_text(body, "session", limit=MAX_NAME_CHARS),
        score=int(score),
        question=_text(body, "question", limit=MAX_QUESTION_CHARS),
        answer=_text(body, "answer", limit=MAX_ANSWER_CHARS, required=False),
        citations=_citations(body.get("citations")),
        comment=comment or None,
        run_id=_optional_id(body, "run_id"),
        thread_id=_optional_id(body, "thread_id"),
    )


def json_body(body: bytes) -> Any:
    """A request body as JSON; anything that is not (broken JSON, not UTF-8, nested past Python's recursion
    limit) is the one-line `WebInputError` "expected a JSON object"."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise WebInputError("expected a JSON object") from None


def auth_problem(header: str | None, token: str | None, api_key: str | None = None) -> str | None:
    """Why a request may not use the endpoints (None when it may): with a token configured, the request must
    carry `Authorization: Bearer <token>` or, as the server's own API also accepts, `X-Api-Key: <token>`."""
    if not token:
        return None
    if api_key and hmac.compare_digest(api_key.strip().encode(), token.encode()):
        return None
    scheme, _, given = (header or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return "this server needs a token: send Authorization: Bearer <LOTSMAN_AUTH_TOKEN>"
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        return "the token is not this server's LOTSMAN_AUTH_TOKEN"
    return None


def error_status(exc: LotsmanError) -> int:
    """The HTTP status of one of our errors: a missing session 404, a database that is down, stopped, cannot
    start or lacks pgvector 503, else 400."""
    if isinstance(exc, SessionNotFoundError):
        return 404
    if isinstance(exc, DatabaseUnavailableError | EmbeddedServerError | EmbeddedStoppedError | PgvectorMissingError):
        return 503
    return 400


def _stopped_on_purpose() -> bool:
    """Whether the embedded server this process uses was stopped with `lotsman db stop` (never with DATABASE_URL)."""
    from graph.settings import get_settings
    from stores.database import stopped_on_purpose

    try:
        settings = get_settings()
        return not settings.database_url and stopped_on_purpose(settings.data_dir)
    except Exception:  # the settings were read when the server started: this is a courtesy, not a check
        return False


def client_error(exc: BaseException) -> tuple[str, int] | None:
    """The one line and status a client reads for an error of the stores or the database, or None when `exc`
    is neither (a defect: the caller logs it and answers 500).

    The text is `graph.errors.public_message`'s: a database that is down is a fixed sentence, since its own text
    names the data folder, the socket path, or `DATABASE_URL`'s host, port, database and user (issue 37, item 6);
    when `lotsman db stop` stopped it, the sentence says so and how to start it again (item 16).
    """
    if isinstance(exc, LotsmanError):
        message, status = public_message(exc), error_status(exc)
    elif database_lost(exc) is not None:
        message, status = public_message(exc), 503
    else:
        return None
    if message in DATABASE_MESSAGES or isinstance(exc, EmbeddedStoppedError):
        log.warning("lotsman web endpoint: the database failed: %s", " ".join(str(exc).split())[:500])
        if isinstance(exc, EmbeddedStoppedError) or _stopped_on_purpose():
            message = STOPPED_MESSAGE
    return message, status


def session_summary(row: Mapping[str, Any]) -> dict[str, Any]:
    """What the picker shows of a session (`stores.sessions.list_sessions` row): never server paths.

    `revision` is `REF @ SHORT_SHA` for a session indexed from a git revision (`lotsman index PATH --ref REF`),
    None for one indexed from a folder.
    """
    updated = row.get("updated_at")
    ref, commit = row.get("git_ref"), row.get("commit_sha")
    revision = (f"{ref} @ {commit[:12]}" if ref else commit[:12]) if commit else None
    return {
        "name": row["name"],
        "rows": int(row.get("rows") or 0),
        "embedder": row.get("embedder"),
        "updated_at": updated.isoformat() if isinstance(updated, datetime) else updated,
        "git_ref": ref,
        "commit": commit,
        "revision": revision,
    }


# --- the stores behind the endpoints -----------------------------------------------------------------------
class WebBackend(Protocol):
    """What the endpoints read and write (the database in production; a fake in unit tests)."""

    def sessions(self) -> list[dict[str, Any]]: ...

    def read_lines(self, line_range: LineRange) -> dict[str, Any]: ...

    def record_vote(self, vote: Vote) -> str: ...

    async def answer_citations(self, thread_id: str, run_id: str) -> list[dict[str, Any]] | None: ...


RunCitations = Callable[[str, str], Awaitable[list[dict[str, Any]] | None]]


async def langgraph_run_citations(thread_id: str, run_id: str) -> list[dict[str, Any]] | None:
    """The citations the answer of run `run_id` in thread `thread_id` carried, read from the thread's last
    checkpoint of that run on this LangGraph server (langgraph-sdk's in-process client); None when the server
    has no such thread or the thread no such run."""
    import httpx
    from langgraph_sdk import get_client

    client = get_client(url=None, api_key=None)
    try:
        states = await client.threads.get_history(thread_id, limit=1, metadata={"run_id": run_id})
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code in (404, 422):  # no such thread, or not a thread id at all
            return None
        raise
    if not states:
        return None
    values = states[0].get("values") or {}
    cites = values.get("citations") if isinstance(values, dict) else None
    return [c for c in cites if isinstance(c, dict)] if isinstance(cites, list) else []


class StoreBackend:
    """The endpoints over Lotsman's stores; the database pool is opened on first use."""

    def __init__(self, database: Callable[[], Database] | None = None, runs: RunCitations | None = None) -> None:
        """`runs` reads a run's citations (by default from this LangGraph server's threads)."""
        self._database = database or _database_from_settings
        self._runs = runs or langgraph_run_citations
        self._db: Database | None = None
        self._lock = threading.Lock()

    def db(self) -> Database:
        with self._lock:  # endpoints run in a thread pool: one pool for all of them
            if self._db is None:
                self._db = self._database()
            return self._db

    def sessions(self) -> list[dict[str, Any]]:
        from stores.sessions import list_sessions

        with self.db().connection() as conn:
            return [session_summary(row) for row in list_sessions(conn)]

    def read_lines(self, line_range: LineRange) -> dict[str, Any]:
        from stores.reading import read_indexed_lines

        with self.db().connection() as conn:
            read = read_indexed_lines(conn, line_range.session, line_range.path, line_range.start_line,
                                      line_range.end_line)
        return lines_json(read)

    def record_vote(self, vote: Vote) -> str:
        from graph.settings import get_settings
        from stores.feedback import langsmith_target, record_feedback

        with self.db().connection() as conn:
            return record_feedback(conn, vote.session, run_id=vote.run_id, thread_id=vote.thread_id,
                                   question=vote.question, answer=vote.answer, citations=vote.citations,
                                   score=vote.score, comment=vote.comment,
                                   langsmith=langsmith_target(get_settings()), run_citations=vote.run_citations)

    async def answer_citations(self, thread_id: str, run_id: str) -> list[dict[str, Any]] | None:
        return await self._runs(thread_id, run_id)


def _database_from_settings() -> Database:
    from graph.settings import get_settings
    from stores.database import EMBEDDED_HINT, Database, start_embedded
    from stores.schema import ensure_tables

    settings = get_settings()
    # A small pool of its own: the page's reads are short, and the graph's pool stays the graph's.
    if settings.database_url:
        db = Database(settings.database_url, max_size=2)
    else:
        db = Database(start_embedded(settings.data_dir), max_size=2, hint=EMBEDDED_HINT)
    with db.connection() as conn:
        ensure_tables(conn)
    return db


def lines_json(read: IndexedLines) -> dict[str, Any]:
    """The read endpoint's answer: the cited lines, numbered, as the session's index holds them."""
    return {
        "session": read.session, "path": read.path, "start_line": read.start_line, "end_line": read.end_line,
        "last_line": read.last_line, "missing_lines": list(read.missing_lines), "commit": read.commit,
        "lines": [{"number": read.start_line + i, "text": text} for i, text in enumerate(read.lines)],
    }


# --- HTTP ---------------------------------------------------------------------------------------------------
def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _configured_token() -> str | None:
    from graph.settings import get_settings

    secret = get_settings().auth_token
    return secret.get_secret_value() if secret is not None else None


class WebApi:
    """The JSON endpoints, bound to one backend and one way of reading the configured token."""

    def __init__(self, backend: WebBackend, token: Callable[[], str | None]) -> None:
        self.backend, self.token = backend, token

    def _refused(self, request: Request) -> Response | None:
        """A 401 when a token is configured and the request does not carry it."""
        problem = auth_problem(request.headers.get("authorization"), self.token(), request.headers.get("x-api-key"))
        return _error(problem, Unauthorized.status) if problem else None

    async def _call(self, request: Request, work: Callable[[], Any]) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            return JSONResponse(await run_in_threadpool(work))
        except WebInputError as exc:
            return _error(str(exc), exc.status)
        except Exception as exc:
            known = client_error(exc)
            if known is not None:
                return _error(*known)
            log.exception("lotsman web endpoint %s failed", request.url.path)
            return _error(f"internal error ({type(exc).__name__}): see the server log", 500)

    async def sessions(self, request: Request) -> Response:
        return await self._call(request, lambda: {"sessions": self.backend.sessions()})

    async def read(self, request: Request) -> Response:
        def work() -> dict[str, Any]:
            return self.backend.read_lines(parse_line_range(request.query_params))

        return await self._call(request, work)

    async def feedback(self, request: Request) -> Response:
        # the token and the size first: an anonymous client must not make the server buffer a large body
        refused = self._refused(request)
        if refused is not None:
            return refused
        too_large = _error(f"request body larger than {MAX_BODY_BYTES // 1024} KiB", 413)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return too_large
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return too_large
            chunks.append(chunk)
        body = b"".join(chunks)
        try:
            vote = await self._checked_vote(body)
        except WebInputError as exc:
            return _error(str(exc), exc.status)
        except Exception:
            log.exception("lotsman web endpoint %s: the voted run could not be read", request.url.path)
            return _error("could not read the voted answer's run on this server: see the server log", 503)
        return await self._call(request, lambda: {"feedback_id": self.backend.record_vote(vote)})

    async def _checked_vote(self, body: bytes) -> Vote:
        """The vote in `body`, with the voted answer's own citations when it carries any (read from its run:
        a client may not choose what `feedback export` turns into gold paths)."""
        vote = parse_vote(json_body(body))
        if not vote.citations:
            return vote
        if not (vote.run_id and vote.thread_id):
            raise WebInputError("citations: send the run_id and thread_id of the answer they came from")
        found = await self.backend.answer_citations(vote.thread_id, vote.run_id)
        if found is None:
            raise WebInputError(f"run_id: no answer of run '{shown(vote.run_id)}' in thread '{shown(vote.thread_id)}' "
                                "on this server: vote on an answer this server gave")
        return replace(vote, run_citations=found)


class SecurityHeaders:
    """Adds `SECURITY_HEADERS` to every HTTP response of the app it wraps (the page's mount)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": [*kept, *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _page(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


async def _citation_view(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "read.html", headers={"Cache-Control": "no-cache"})


async def _to_page(request: Request) -> Response:
    return RedirectResponse(f"{request.scope.get('root_path', '')}{PREFIX}/", status_code=307)


def routes(backend: WebBackend | None = None, token: Callable[[], str | None] | None = None) -> list[BaseRoute]:
    """The page's routes (static files and its small JSON endpoints).

    Args:
        backend: what the endpoints read and write; by default the stores over the configured database.
        token: returns the bearer token the endpoints require (None: open); by default `LOTSMAN_AUTH_TOKEN`.
    """
    api = WebApi(backend or StoreBackend(), token or _configured_token)
    return [
        Route(PREFIX, _to_page, methods=["GET"]),
        Mount(PREFIX, routes=[
            Route("/", _page, methods=["GET"]),
            Route("/read", _citation_view, methods=["GET"]),
            Route("/api/sessions", api.sessions, methods=["GET"]),
            Route("/api/read", api.read, methods=["GET"]),
            Route("/api/feedback", api.feedback, methods=["POST"]),
            Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="lotsman-static"),
        ], middleware=[Middleware(SecurityHeaders)]),
    ]
