"""The web page `lotsman serve` publishes: routes mounted into the LangGraph server's HTTP app (issue 27)."""

from __future__ import annotations

from starlette.routing import BaseRoute


def routes() -> list[BaseRoute]:
    """The page's routes (static files and its small JSON endpoints)."""
    return []
