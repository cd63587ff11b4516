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
