"""Issue 39, item 1: the graph on an OpenAI-compatible endpoint (`LOTSMAN_LLM_PROVIDER=openai`), end to end.

The chat model is what `make_chat_model` builds for `openai` (LangChain's `ChatOpenAI`, streaming), pointed at
the fake OpenAI-compatible server; retrieval runs on the small corpus in the test database. What GigaChat
gets, this provider gets: the answer's tokens stream and nothing else does (`nostream`), every call is a
child run of the graph's trace, and a call that gets no answer takes the rest of the request offline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

from graph.builder import build_graph
from graph.context import Context
from graph.deps import GraphDeps, make_chat_model
from graph.settings import GigaChatSettings, Settings
from tests.e2e.conftest import covers
from tests.fakes.openai_server import FakeOpenAIServer, Replay, load_fixture

QUESTION = "Как настроить CORS в приложении?"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def openai_graph(db: Any, server: FakeOpenAIServer, deadline: float = 20.0) -> Any:
    settings = Settings(llm_provider="openai", openai_base_url=server.base_url, llm_model=server.models[0],
                        gigachat=GigaChatSettings(request_deadline=deadline))
    return build_graph(GraphDeps(settings=settings, db=db, chat_model=make_chat_model(settings)))


async def stream(graph: Any, question: str, session: str, config: dict[str, Any] | None = None
                 ) -> tuple[list[tuple[Any, dict]], dict[str, Any]]:
    events: list[tuple[Any, dict]] = []
    final: dict[str, Any] = {}
    async for mode, data in graph.astream({"messages": [HumanMessage(question)]}, config,
                                          context=Context(rag_session_id=session),
                                          stream_mode=["messages", "values"]):
        if mode == "messages":
            events.append(data)
        else:
            final = data
    return events, final


def _walk(run: Any) -> Iterator[Any]:
    yield run
    for child in run.child_runs:
        yield from _walk(child)


async def test_the_openai_provider_routes_analyses_and_streams_a_cited_answer(
        db: Any, small_session: str, server: FakeOpenAIServer) -> None:
    replay = Replay(load_fixture("clean"))
    server.chat_handler = replay
    graph = openai_graph(db, server)
    collector = RunCollectorCallbackHandler()

    events, final = await stream(graph, QUESTION, small_session, {"callbacks": [collector]})

    assert replay.kinds == ["route", "analysis", "answer"]
    assert (final["answer_mode"], final["offline_reason"]) == ("llm", "")
    assert final["route"]["routing_mode"] == "llm_default"
    assert final["citations"] and all(c["path"] == "docs/cors.md" for c in final["citations"])
    assert covers(final["citations"], "docs/cors.md", 7)
    # streaming: the answer's tokens, and only the answer's (router and analysis carry `nostream`)
    nodes = {meta.get("langgraph_node") for msg, meta in events if isinstance(msg, AIMessageChunk) and msg.content}
    tokens = [msg.content for msg, meta in events if isinstance(msg, AIMessageChunk) and msg.content]
    assert nodes == {"answer_composition"} and len(tokens) >= 5
    # tracing: every model call is a ChatOpenAI child run of the graph's run (what LangSmith receives)
    [root] = collector.traced_runs
    chats = [r for r in _walk(root) if r.run_type == "llm"]
    assert [r.name for r in chats] == ["ChatOpenAI"] * 3
    assert sum("nostream" in (r.tags or []) for r in chats) == 2, [r.tags for r in chats]
    assert final["llm_events"] == ["intent_routing: route tool call", "context_analysis: choice tool call",
                                   "answer_composition: citations verified"]


@pytest.mark.parametrize("name", ["route_outside_catalog", "citation_not_in_evidence", "answer_wrong_language",
                                  "answer_truncated_in_citation"])
async def test_the_run_output_counts_what_messy_replies_needed(db: Any, small_session: str,
                                                               server: FakeOpenAIServer, name: str) -> None:
    """The fixture's notes, prefixed with their stage, are the run's `llm_events`; the request stays `llm`
    (the model answered), and a stage that could not use its reply fell back on its own."""
    fixture = load_fixture(name)
    server.chat_handler = Replay(fixture)
    clean = load_fixture("clean")["expect"]["events"]
    expected = [f"{stage}: {event}" for stage, events in {**clean, **fixture["expect"]["events"]}.items()
                for event in events]

    _, final = await stream(openai_graph(db, server), QUESTION, small_session)

    assert final["llm_events"] == expected
    assert (final["answer_mode"], final["offline_reason"]) == ("llm", "")
    assert final["route"]["routing_mode"] == fixture["expect"]["routing_mode"]
    assert final["citations"] and covers(final["citations"], "docs/cors.md", 7)
    if fixture["expect"]["answer"] == "fallback":
        assert "`docs/cors.md`" in final["answer"], "the extractive answer names its lead file"
    assert "cors_advanced" not in final["answer"] and "To configure" not in final["answer"]
