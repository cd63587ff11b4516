"""A LangGraph server run whose database is down tells its HTTP client `public_message`'s sentence, not the
`DATABASE_URL` host, port, database and user or the data folder; the server's log and an in-process caller (the
CLI) keep the whole message (issue 37, item 6)."""

from __future__ import annotations

import logging
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from graph.errors import DATABASE_DOWN, EMBEDDED_DOWN, surface_errors
from stores.errors import DatabaseUnavailableError, EmbeddedServerError, LotsmanError, SessionNotFoundError

DSN_DOWN = DatabaseUnavailableError("cannot connect to PostgreSQL at postgresql://alice@10.1.2.3:5433/secretdb: "
                                    "Connection refused. Check DATABASE_URL")
EMBEDDED = EmbeddedServerError("could not start the embedded PostgreSQL in /srv/lotsman/.data/pg: permission denied")
SERVER_RUN = {"configurable": {"langgraph_request_id": "req-1", "thread_id": "t"}}
"""What langgraph-api puts in every run's config (`langgraph_api.models.run`)."""


class State(TypedDict, total=False):
    x: int


def _graph(exc: LotsmanError) -> Any:
    @surface_errors
    async def fails(state: State) -> State:
        raise exc

    builder = StateGraph(State)
    builder.add_node("fails", fails)
    builder.add_edge(START, "fails")
    builder.add_edge("fails", END)
    return builder.compile()


@pytest.mark.parametrize(("exc", "public"), [(DSN_DOWN, DATABASE_DOWN), (EMBEDDED, EMBEDDED_DOWN)],
                         ids=["database-url", "embedded"])
async def test_a_server_run_tells_the_client_only_the_sentence(exc: LotsmanError, public: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="graph.errors"), pytest.raises(type(exc)) as err:
        await _graph(exc).ainvoke({"x": 1}, config=SERVER_RUN)
    assert str(err.value) == public
    assert isinstance(err.value, ValueError)  # still shown to the client by langgraph-api (graph/errors.py)
    assert str(exc) in caplog.text  # the server's log keeps the detail


@pytest.mark.parametrize("exc", [DSN_DOWN, EMBEDDED], ids=["database-url", "embedded"])
async def test_an_in_process_run_keeps_the_whole_message(exc: LotsmanError) -> None:
    with pytest.raises(type(exc)) as err:
        await _graph(exc).ainvoke({"x": 1})
    assert str(err.value) == str(exc)  # `lotsman ask` says which database it could not reach


async def test_a_clients_own_error_keeps_its_text_on_the_server() -> None:
    exc = SessionNotFoundError("no session 'x': index a repository first")
    with pytest.raises(SessionNotFoundError, match="no session 'x'"):
        await _graph(exc).ainvoke({"x": 1}, config=SERVER_RUN)
