"""Issue 37 item 12: requests that name an assistant only by its id are judged by the assistant's graph."""

from __future__ import annotations

import uuid

import pytest

import graph.server_auth as server_auth
from graph.server_auth import INDEX_ASSISTANT_ID, assistant_to_look_up, touches_index_assistant

MINE = str(uuid.uuid4())


@pytest.mark.parametrize(("resource", "action", "value", "want"), [
    ("assistants", "update", {"assistant_id": uuid.UUID(MINE), "metadata": {}}, MINE),
    ("assistants", "update", {"assistant_id": MINE.upper(), "version": 1}, MINE),  # POST /assistants/{id}/latest
    ("assistants", "delete", {"assistant_id": MINE}, MINE),
    ("assistants", "read", {"assistant_id": MINE}, None),
    ("assistants", "create", {"assistant_id": MINE, "graph_id": "lotsman"}, None),  # graph_id says it
    ("threads", "create_run", {"assistant_id": MINE}, MINE),
    ("threads", "create_run", {"assistant_id": "lotsman"}, None),  # a graph id: compared as such
    ("crons", "create", {"payload": {"assistant_id": MINE}}, MINE),
    ("threads", "update", {"thread_id": MINE}, None),
    ("assistants", "delete", None, None),
])
def test_assistant_to_look_up(resource: str, action: str, value: object, want: str | None) -> None:
    assert assistant_to_look_up(resource, action, value) == want


@pytest.mark.parametrize(("graph", "raises", "touches"), [
    ("lotsman_index", None, True),
    ("lotsman", None, False),
    (None, None, False),  # no such assistant: the request answers 404 itself
    (None, RuntimeError("server busy"), True),  # a lookup that fails refuses
])
async def test_touches_index_assistant(monkeypatch: pytest.MonkeyPatch, graph: str | None,
                                       raises: Exception | None, touches: bool) -> None:
    async def look_up(assistant_id: str) -> str | None:
        if raises is not None:
            raise raises
        return graph

    monkeypatch.setattr(server_auth, "assistant_graph", look_up)
    assert await touches_index_assistant("assistants", "delete", {"assistant_id": MINE}) is touches


async def test_the_default_index_assistant_needs_no_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    async def look_up(assistant_id: str) -> str | None:
        raise AssertionError("looked up")

    monkeypatch.setattr(server_auth, "assistant_graph", look_up)
    assert await touches_index_assistant("assistants", "update", {"assistant_id": INDEX_ASSISTANT_ID})
