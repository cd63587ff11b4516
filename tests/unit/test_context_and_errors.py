"""Issue 14, item 5: the run context is validated, and our errors reach LangGraph server clients readably."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graph.context import Context
from graph.deps import GraphDeps
from graph.errors import (
    SERVER_RUN_LOGGER,
    ClientErrorLogFilter,
    client_visible,
    install_server_log_filter,
    surface_errors,
)
from graph.index_graph import build_index_graph
from graph.settings import Settings
from stores.errors import InvalidInputError, LotsmanError, SessionNotFoundError


@pytest.mark.parametrize(("context", "says"), [
    ({"retriever": "nope"}, "retriever: Input should be 'full', 'vector' or 'bm25' (got 'nope')"),
    ({"top_k": -3}, "top_k: Input should be greater than or equal to 1 (got -3)"),
    ({"top_k": 0}, "top_k: Input should be greater than or equal to 1"),
    ({"top_k": "lots"}, "top_k: Input should be a valid integer (got 'lots')"),
    ({"rag_session_id": 12345}, "rag_session_id: Input should be a valid string (got 12345)"),
    ({"rag_session_id": " "}, "rag_session_id: must name a session"),
    ({"token_cap": -1}, "token_cap"),
    ({"llm_timeout_s": 0}, "llm_timeout_s"),
    ({"token_cap": 10**12}, "token_cap: Input should be less than or equal to 131072"),
    ({"llm_timeout_s": float("inf")}, "llm_timeout_s: Input should be less than or equal to 600"),
    ({"topk": 3}, "topk: Extra inputs are not permitted"),
])
def test_bad_context_is_one_clear_line(context: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        Context(**context)
    message = str(info.value)
    assert message.startswith("invalid run context: ") and says in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_good_context_keeps_its_values_and_is_frozen() -> None:
    ctx = Context(rag_session_id="docs", top_k=5, use_llm=False, llm_timeout_s=1.5)
    assert (ctx.rag_session_id, ctx.top_k, ctx.use_llm, ctx.llm_timeout_s) == ("docs", 5, False, 1.5)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        ctx.top_k = 1  # type: ignore[misc]


def test_the_server_context_schema_documents_the_fields() -> None:
    schema = Context.model_json_schema()
    assert schema["properties"]["top_k"]["minimum"] == 1
    assert "Evidence rows" in schema["properties"]["top_k"]["description"]


# --- what langgraph-api shows a client ----------------------------------------------------------------
def server_view(exc: BaseException) -> dict[str, str]:
    """The `__error__` payload langgraph-api sends for a failed run (its own serializer)."""
    from langgraph_api.serde import default

    return default(exc)


def test_the_server_hides_plain_exceptions_which_is_why_errors_are_made_visible() -> None:
    error = SessionNotFoundError("no session 'x': index a repository first with `lotsman index PATH`")
    assert server_view(error)["message"] == "An internal error occurred"

    visible = client_visible(error)

    assert server_view(visible) == {"error": "SessionNotFoundError", "message": str(error)}
    assert isinstance(visible, SessionNotFoundError) and visible.exit_code == 4
    assert client_visible(SessionNotFoundError("other")).__class__ is visible.__class__


async def test_surface_errors_wraps_a_node() -> None:
    @surface_errors
    async def node(state: dict[str, Any], runtime: Any = None) -> dict[str, Any]:
        raise LotsmanError("something clear")

    with pytest.raises(LotsmanError) as info:
        await node({}, runtime=None)
    assert server_view(info.value) == {"error": "LotsmanError", "message": "something clear"}


async def test_qa_graph_rejects_a_bad_context_before_any_node() -> None:
    from graph.builder import build_graph

    graph = build_graph(GraphDeps(settings=Settings()))  # no database: validation comes first
    with pytest.raises(InvalidInputError, match="top_k") as info:
        await graph.ainvoke({"messages": [HumanMessage("q")]}, context={"top_k": -3})
    assert server_view(info.value)["message"].startswith("invalid run context: top_k")


@pytest.mark.parametrize(("state", "says"), [
    ({"path": "/repo", "session": ""}, "session: must not be empty"),
    ({"path": "/repo", "session": "  "}, "session: must not be empty"),
    ({"session": "s"}, "path: Field required"),
    ({"path": "/repo", "session": 5}, "session: Input should be a valid string"),
    ({"path": "/repo", "incremental": "yes"}, "incremental: Input should be a valid boolean"),
])
async def test_index_graph_rejects_bad_input(state: dict[str, Any], says: str) -> None:
    graph = build_index_graph(GraphDeps(settings=Settings()))  # no database: validation comes first
    with pytest.raises(InvalidInputError) as info:
        await graph.ainvoke(state)
    assert str(info.value).startswith("invalid index request: ") and says in str(info.value)
    assert server_view(info.value)["error"] == "InvalidInputError"


# --- issue 25: the server log says a client error in one line --------------------------------------------
def _record(event: str, exception: BaseException | None = None, *, structlog: bool = True) -> logging.LogRecord:
    """A record as langgraph-api's structlog hands it to logging (the traceback already rendered into the
    event), or a plain logging record."""
    exc_info = (type(exception), exception, None) if exception is not None else None
    msg: Any = {"event": event, "exception": "Traceback (most recent call last):\n  ..."} if structlog else event
    return logging.LogRecord(SERVER_RUN_LOGGER, logging.ERROR, __file__, 1, msg, None, exc_info)


OURS = client_visible(SessionNotFoundError("no session 'x'"))


@pytest.mark.parametrize(("record", "kept", "traceback"), [
    (_record(f"Run encountered an error in graph: {type(OURS)}({OURS})", OURS), False, None),
    (_record(f"Background run failed. Exception: {type(OURS)}({OURS})", OURS), True, False),
    (_record(f"Background run failed. Exception: {type(OURS)}({OURS})"), True, False),  # exc_info not kept
    (_record("Background run failed. Exception: <class 'KeyError'>('x')", KeyError("x")), True, True),
    (_record("Run encountered an error in graph: <class 'KeyError'>('x')"), True, True),
    (_record("Background run failed. Exception: <class 'no_such.Module'>(x)"), True, True),
    (_record("unrelated", OURS, structlog=False), True, False),  # plain logging: judged by its exception
    (_record("unrelated", ValueError("x"), structlog=False), True, True),
], ids=["ours-first-report", "ours-run-closed", "ours-no-exc-info", "keyerror", "keyerror-first-report",
        "unknown-class", "plain-logging-ours", "plain-logging-other"])
def test_server_log_filter(record: logging.LogRecord, kept: bool, traceback: bool | None) -> None:
    assert ClientErrorLogFilter().filter(record) is kept
    if kept:
        shown = (isinstance(record.msg, dict) and "exception" in record.msg) or record.exc_info is not None
        assert shown is traceback


def test_the_filter_is_installed_once() -> None:
    install_server_log_filter()
    install_server_log_filter()
    logger = logging.getLogger(SERVER_RUN_LOGGER)
    assert sum(isinstance(f, ClientErrorLogFilter) for f in logger.filters) == 1
