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


class _TwoArgsError(LotsmanError):
    """An error whose constructor takes more than the message."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path


async def test_a_server_runs_own_error_is_cut_and_redacted_like_every_client_message() -> None:
    """A 4 KB `path` of a lotsman_index run came back whole (review of issue 37, item 5)."""
    from stores.errors import IndexingError

    long_path = "/" + "a" * 4096
    exc = IndexingError(f"path not found: {long_path} (see postgresql://alice:s3cret@10.1.2.3:5433/secretdb)")
    with pytest.raises(IndexingError) as err:
        await _graph(exc).ainvoke({"x": 1}, config=SERVER_RUN)
    text = str(err.value)
    assert len(text) < 200 and text.startswith("path not found: /aaa") and "…" in text
    assert "alice" not in text and "s3cret" not in text and "10.1.2.3" not in text
    assert isinstance(err.value, ValueError)
    with pytest.raises(IndexingError) as err:  # in process (the CLI) the user at this machine reads it all
        await _graph(exc).ainvoke({"x": 1})
    assert str(err.value) == str(exc)


async def test_an_error_with_another_constructor_still_reaches_the_client() -> None:
    exc = _TwoArgsError("/" + "b" * 500, "cannot read it")
    with pytest.raises(_TwoArgsError) as err:
        await _graph(exc).ainvoke({"x": 1}, config=SERVER_RUN)
    assert "cannot read it" in str(err.value) and len(str(err.value)) < 200
    assert isinstance(err.value, ValueError) and err.value.path == exc.path
