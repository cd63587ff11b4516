"""Our one-line errors as LangGraph server clients see them (not "An internal error occurred").

langgraph-api serializes a failed run's exception with `langgraph_api.serde.default`, which passes
`str(exc)` on only for a fixed list of types (ValueError, TypeError, KeyError, RuntimeError, ...); any other
exception reaches the SDK client as `{"error": "<class>", "message": "An internal error occurred"}`.
A `LotsmanError` is therefore raised again as a subclass of both its own class and ValueError: the client
reads `SessionNotFoundError: no session 'x': index a repository first ...`, in-process callers still catch
it by its own class, and the CLI's exit codes do not change. (Chosen over an `error` field in the output
state: a failed run stays a failed run, for the server's run status, retries and a parent graph alike.)
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from graph.terminal import printable
from stores.errors import (
    DatabaseUnavailableError,
    EmbeddedServerError,
    LotsmanError,
    PgvectorMissingError,
    database_lost,
)

log = logging.getLogger(__name__)

E = TypeVar("E", bound=LotsmanError)
Node = TypeVar("Node", bound=Callable[..., Awaitable[Any]])


_VISIBLE: dict[type, type] = {}
"""One visible subclass per error class (the same class for every run, so `except` and `isinstance` agree)."""


def _visible_class(cls: type[E]) -> type[E]:
    if issubclass(cls, ValueError):
        return cls
    if cls not in _VISIBLE:
        _VISIBLE[cls] = type(cls.__name__, (cls, ValueError), {"__module__": cls.__module__, "__doc__": cls.__doc__})
    return _VISIBLE[cls]


def client_visible(exc: E) -> E:
    """The same error (class name, message, exit code), as a type langgraph-api shows to clients."""
    if isinstance(exc, ValueError):
        return exc
    return _copy_as(_visible_class(type(exc)), exc, exc.args)


def _copy_as(cls: type[E], exc: LotsmanError, args: tuple[Any, ...]) -> E:
    """`exc` as an instance of `cls` (its class or a subclass) with `args`: built through the constructor when
    it takes the message alone, else copied attribute by attribute (an error whose constructor takes more)."""
    try:
        made = cls(*args)
    except TypeError:
        made = cls.__new__(cls)
        made.__dict__.update(exc.__dict__)
    made.args = args
    return made


def with_public_text(exc: E) -> E:
    """`exc` with `public_text` of its message: redacted, one line, echoed values cut (its class kept)."""
    return _copy_as(type(exc), exc, (public_text(str(exc)),))


def surface_errors(node: Node) -> Node:
    """Wrap an async graph node so that our errors reach server clients with their message.

    In a LangGraph server run a database failure reaches the client as `public_message` gives it (its text names
    the data folder or `DATABASE_URL`'s host, port, database and user) and goes whole to the server's log; our
    other errors reach it as `public_text` gives them (one line, redacted, a 4 KB path cut at `MAX_SHOWN_CHARS`).
    Run in process (the CLI), an error keeps its text, which is what the user at this machine has to fix.
    """

    @functools.wraps(node)
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return await node(*args, **kwargs)
        except LotsmanError as exc:
            if not _server_run():
                raise client_visible(exc) from exc
            public = public_message(exc)
            if public in DATABASE_MESSAGES:
                log.warning("a run failed on the database: %s", printable(" ".join(str(exc).split())))
                raise client_visible(_copy_as(type(exc), exc, (public,))) from exc
            raise client_visible(with_public_text(exc)) from exc

    return wrapped  # type: ignore[return-value]


def _server_run() -> bool:
    """Whether the running node serves a LangGraph server client: langgraph-api puts `langgraph_request_id` in
    every run's configurable (`langgraph_api.models.run`); an in-process run (CLI, MCP, evals) has none."""
    try:
        from langgraph.config import get_config

        return "langgraph_request_id" in (get_config().get("configurable") or {})
    except RuntimeError:  # not inside a runnable
        return False


def validation_message(exc: ValidationError) -> str:
    """pydantic's multi-line report as one line: `top_k: Input should be greater than 0 (got -3); ...`."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "input"
        got = f" (got {shown(repr(err['input']))})" if err["type"] != "missing" else ""  # a 1 MB value: 80 characters
        parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')}{got}")
    return "; ".join(parts)


# --- what a remote client (HTTP, MCP) reads -------------------------------------------------------------------

DATABASE_DOWN = "the database is not reachable: see the server's log (`lotsman db status` on the server)"
EMBEDDED_DOWN = "the server's embedded PostgreSQL could not be started: see the server's log"
NO_PGVECTOR = "the server's database has no usable pgvector extension: see the server's log"
DATABASE_MESSAGES = frozenset({DATABASE_DOWN, EMBEDDED_DOWN, NO_PGVECTOR})
"""What `public_message` says for the database's own failures (the server's log has their text)."""
MAX_SHOWN_CHARS = 80
"""A user's value (session name, ref, run id, path) is echoed in a message up to this many characters."""
MAX_PUBLIC_CHARS = 1000
"""A message a remote client reads is cut here: a safety net under `shown`, which keeps echoes short."""

_LONG_WORD = re.compile(rf"[^\s'\"]{{{MAX_SHOWN_CHARS + 1},}}")
"""A run of more than `MAX_SHOWN_CHARS` characters with no space or quote: in a message, an echoed value (a path,
ref or name a client sent); `public_message` shortens it as `shown` would."""
_DSN = re.compile(r"\bpostgres(?:ql)?://\S*", re.IGNORECASE)
_CONNINFO = re.compile(r"\b(?:host|hostaddr|port|dbname|user|password)\s*=\s*(?:'[^']*'|\S+)", re.IGNORECASE)
_SERVER_AT = re.compile(r'\b(?:server|socket)\s+(?:at|on socket)?\s*"[^"]*"(?:,\s*port\s+\d+)?', re.IGNORECASE)


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """A user's value as a message echoes it: control characters escaped, at most `limit` characters of it
    (then `…`), so a 1 MB ref gives a short error and a NUL or newline cannot forge a line."""
    text = str(value)
    cut = len(text) > limit
    return printable(text[:limit]) + ("…" if cut else "")


def redact(text: str) -> str:
    """`text` without the database's whereabouts: connection URLs, `key=value` connection parameters and the
    `server at "host", port N` / `socket "/path"` parts of libpq's messages (a safety net: the database's own
    errors are replaced whole by `public_message`)."""
    text = _DSN.sub("<database>", text)
    text = _SERVER_AT.sub("server <redacted>", text)
    return _CONNINFO.sub(lambda m: m.group().split("=", 1)[0].rstrip() + "=<redacted>", text)


def public_text(text: str) -> str:
    """A message's text as a remote client reads it: one line, control characters escaped, connection details
    redacted, each echoed value (a run of more than `MAX_SHOWN_CHARS` characters without a space or quote: a
    path, a ref, a name) cut there with `…`, at most `MAX_PUBLIC_CHARS` in all. Idempotent."""
    text = _LONG_WORD.sub(lambda m: m.group()[:MAX_SHOWN_CHARS] + "…", redact(" ".join(text.split())))
    return shown(text, MAX_PUBLIC_CHARS)


def _database_down(exc: BaseException) -> bool:
    if isinstance(exc, DatabaseUnavailableError):
        return True
    try:
        return database_lost(exc) is not None
    except AttributeError:  # psycopg half-imported by another thread: not one of its errors yet
        return False


def public_message(exc: BaseException) -> str:
    """The one line a remote client (HTTP API, MCP) reads for `exc`; the server's log keeps the detail.

    Our errors keep their text (what the client did wrong and what to do) as `public_text` gives it: one line,
    control characters escaped, connection details redacted, an echoed value cut at `MAX_SHOWN_CHARS`.
    The database's failures (unreachable, lost, the embedded server not starting, no pgvector) are a fixed
    sentence: their text names the data folder, the socket path, or the host, port, database and user of
    `DATABASE_URL`, which are the server's business, and nothing in them is the client's to fix. Any other
    error is its class name only.
    """
    if isinstance(exc, EmbeddedServerError):
        return EMBEDDED_DOWN
    if isinstance(exc, PgvectorMissingError):
        return NO_PGVECTOR
    if _database_down(exc):
        return DATABASE_DOWN
    if isinstance(exc, LotsmanError):
        return public_text(str(exc))
    return f"unexpected {type(exc).__name__} (details in the server's log)"


SERVER_RUN_LOGGER = "langgraph_api.worker"
"""The langgraph-api logger that reports a failed run, twice and each with a traceback: `Run encountered an
error in graph: <class '...'>(message)` when it happens, `Background run failed. Exception: ...` when the
run is closed."""
_RUN_ERROR = re.compile(r"^(?P<what>Run encountered an error in graph|Background run failed\. Exception): "
                        r"<class '(?P<cls>[\w.]+)'>\(")


def _lotsman_class(qualified: str) -> bool:
    module, _, name = qualified.rpartition(".")
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and issubclass(cls, LotsmanError)


class ClientErrorLogFilter(logging.Filter):
    """Our errors (a client's unknown session or bad context) as one line in the server log, not two
    tracebacks: what the client did wrong is in the message, and the stack says nothing about it.

    langgraph-api logs through structlog, which renders the traceback into the event (`exception`) before
    the standard-library record exists, so the class is read from the event text, which names it; a record
    that still carries `exc_info` (plain logging) is judged by its exception. Other errors keep their
    traceback: they are ours to debug.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        event = record.msg if isinstance(record.msg, dict) else {"event": record.msg}
        found = _RUN_ERROR.match(str(event.get("event", "")))
        ours = (isinstance(record.exc_info[1], LotsmanError) if record.exc_info
                else found is not None and _lotsman_class(found["cls"]))
        if not ours:
            return True
        if found is not None and found["what"].startswith("Run encountered"):
            return False  # the same failure is logged once more when the run is closed: keep that line
        record.exc_info, record.exc_text = None, None
        event.pop("exception", None)
        return True


def install_server_log_filter() -> None:
    """Shorten our errors in the LangGraph server's log (idempotent; called when the server loads the graphs)."""
    logger = logging.getLogger(SERVER_RUN_LOGGER)
    if not any(isinstance(f, ClientErrorLogFilter) for f in logger.filters):
        logger.addFilter(ClientErrorLogFilter())
