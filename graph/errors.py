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

from stores.errors import LotsmanError

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
    return _visible_class(type(exc))(*exc.args)


def surface_errors(node: Node) -> Node:
    """Wrap an async graph node so that our errors reach server clients with their message."""

    @functools.wraps(node)
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return await node(*args, **kwargs)
        except LotsmanError as exc:
            raise client_visible(exc) from exc

    return wrapped  # type: ignore[return-value]


def validation_message(exc: ValidationError) -> str:
    """pydantic's multi-line report as one line: `top_k: Input should be greater than 0 (got -3); ...`."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "input"
        got = f" (got {err['input']!r})" if err["type"] != "missing" else ""
        parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')}{got}")
    return "; ".join(parts)


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
