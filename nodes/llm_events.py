"""What an LLM call's reply needed: the run's count of messy model output (issue 39).

A stage's LLM function says what it met (`note("route json repaired")`) and goes on: a reply repaired, a
reply that fell back to the rules, citations rewritten or removed, an answer re-asked. The graph collects
the notes of each call (`collecting`, around the call in `graph.nodes._ask_llm`) and the run's output lists
them, prefixed with the stage, in `llm_events` (`["intent_routing: route json repaired", ...]`). Outside a
collection (a stage function called on its own) a note is dropped.

A context variable, not an argument: the calls run in tasks and threads that copy the caller's context, and
the copy holds the same list, so every note of the call lands in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_NOTES: ContextVar[list[str] | None] = ContextVar("lotsman_llm_events", default=None)

# What the stages note (one per call unless said): the words the eval report and the docs count by.
ROUTE_TOOL_CALL = "route tool call"
ROUTE_JSON = "route json"
ROUTE_JSON_REPAIRED = "route json repaired"
ROUTE_NO_JSON = "route no json"
ROUTE_FIELDS_REPAIRED = "route fields repaired"
ROUTE_OUTSIDE_CATALOG = "route outside catalog"
ROUTE_INVALID = "route invalid"
CHOICE_TOOL_CALL = "choice tool call"
CHOICE_JSON = "choice json"
CHOICE_JSON_REPAIRED = "choice json repaired"
CHOICE_NO_JSON = "choice no json"
CHOICE_UNUSABLE = "choice unusable"
CITATIONS_VERIFIED = "citations verified"
CITATIONS_REFORMATTED = "citations reformatted"
"""Followed by `: N` (citations written in another format, rewritten as `[path:start-end]`)."""
CITATIONS_REMOVED = "citations removed"
"""Followed by `: N` (citations outside the evidence, removed; the answer kept others)."""
NO_VERIFIED_CITATION = "no verified citation"
EMPTY_ANSWER = "empty answer"
TRUNCATED_TRIMMED = "answer truncated, trimmed"
TRUNCATED_UNUSABLE = "answer truncated, nothing complete"
WRONG_LANGUAGE_REASKED = "answer in the wrong language, re-asked"
WRONG_LANGUAGE_AGAIN = "answer in the wrong language again"
WRONG_LANGUAGE_NO_TIME = "answer in the wrong language, no time to re-ask"


def note(event: str) -> None:
    """Record what the current LLM call met (nothing happens outside `collecting`)."""
    notes = _NOTES.get()
    if notes is not None:
        notes.append(event)


@contextmanager
def collecting() -> Iterator[list[str]]:
    """Collect the notes of the calls made inside the block into the list it yields."""
    notes: list[str] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)
