"""The compiled graph as a node of a parent graph, and its trace without network (SPEC §2.3, §5).

Two sessions hold CORS material in different files, so an answer's citations show which session the run
context selected.
"""

from __future__ import annotations

import base64
import json
import operator
import re
from collections.abc import Iterator
from typing import Annotated, Any

import langsmith
import pytest
import requests
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tracers.langchain import wait_for_all_tracers
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langchain_core.tracers.schemas import Run
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langsmith.run_helpers import tracing_context
from typing_extensions import TypedDict

from graph.builder import STAGES, build_graph
from graph.context import Context
from graph.deps import GraphDeps
from graph.settings import Settings
from nodes.conversation_understanding.messages import unlink_citations
from tests.e2e.conftest import CORS_DISABLE_LINES, covers
from tests.fakes.gigachat_server import FakeGigaChatServer, Text, make_fake_gigachat_chat

SMALL_DOC = "docs/cors.md"
OTHER_DOC = "guides/cross-origin.md"
QUESTION = "Как настроить CORS?"


class ParentState(TypedDict, total=False):
    """A bigger agent's state: shares `messages` and `answer` with Lotsman, adds its own `audit`."""

    messages: Annotated[list[AnyMessage], add_messages]
    answer: str
    audit: Annotated[list[str], operator.add]


def build_parent(lotsman: Any, checkpointer: Any = None) -> Any:
    def before(state: ParentState, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"audit": [f"before:{runtime.context.rag_session_id}"]}

    def after(state: ParentState) -> dict[str, Any]:
        last = state["messages"][-1]
        return {"audit": [f"after:{type(last).__name__}:{bool(state.get('answer'))}"]}

    builder = StateGraph(ParentState, context_schema=Context)
    builder.add_node("before", before)
    builder.add_node("lotsman", lotsman)
    builder.add_node("after", after)
    builder.add_edge(START, "before")
    builder.add_edge("before", "lotsman")
    builder.add_edge("lotsman", "after")
    builder.add_edge("after", END)
    return builder.compile(checkpointer=checkpointer, name="parent")


@pytest.fixture(scope="module")
def lotsman(db) -> Any:
    return build_graph(GraphDeps(settings=Settings(), db=db))


# --- subgraph -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["small", "other"])
async def test_parent_graph_runs_lotsman_with_its_context(lotsman: Any, small_session: str,
                                                          other_session: str, which: str) -> None:
    session, expected, foreign = ((small_session, SMALL_DOC, OTHER_DOC) if which == "small"
                                  else (other_session, OTHER_DOC, SMALL_DOC))
    parent = build_parent(lotsman)

    out = await parent.ainvoke({"messages": [HumanMessage(QUESTION)], "audit": ["start"]},
                               context=Context(rag_session_id=session))

    assert out["audit"] == ["start", f"before:{session}", "after:AIMessage:True"]
    assert set(out) == {"messages", "answer", "audit"}, "the subgraph's internals stay inside it"
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and unlink_citations(last.content) == out["answer"]
    paths = {c["path"] for c in last.response_metadata["citations"]}
    assert expected in paths and foreign not in paths
    assert f"[{expected}:" in out["answer"] and foreign not in out["answer"]


async def test_parent_graph_keeps_the_conversation_for_follow_ups(lotsman: Any, small_session: str) -> None:
    """With a checkpointer on the parent, the embedded graph sees earlier turns of the thread."""
    parent = build_parent(lotsman, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "parent-thread"}}
    context = Context(rag_session_id=small_session)

    first = {"messages": [HumanMessage("Как настроить CORS в приложении?")]}
    await parent.ainvoke(first, config, context=context)
    out = await parent.ainvoke({"messages": [HumanMessage("А как это отключить?")]}, config, context=context)

    citations = out["messages"][-1].response_metadata["citations"]
    assert covers(citations, SMALL_DOC, CORS_DISABLE_LINES[0]), out["answer"]
    assert len(out["messages"]) == 4 and len(out["audit"]) == 4


# --- tracing through callbacks --------------------------------------------------------------------------
def _by_name(run: Run) -> dict[str, Run]:
    return {child.name: child for child in run.child_runs}


def _assert_node_runs(graph_run: Run) -> None:
    children = _by_name(graph_run)
    assert set(STAGES) <= set(children), sorted(children)
    for stage in STAGES:
        assert children[stage].parent_run_id == graph_run.id
        assert children[stage].error is None
    # in-process runs carry the stage models themselves; LangSmith receives their JSON (checked below)
    retrieval = children["context_retrieval"].outputs["retrieval"].model_dump()
    evidence = [row.model_dump() for row in children["context_retrieval"].outputs["evidence"]]
    provenance = retrieval["provenance"]
    assert provenance and len(provenance) == len(evidence)
    for row, ev in zip(provenance, evidence, strict=True):
        assert row["path"] == ev["path"]
        assert row["lanes"] and all(isinstance(rank, int) for rank in row["lanes"].values())
        assert isinstance(row["fused_score"], float) and row["fused_score"] > 0
    assert any(r["path"] == SMALL_DOC for r in provenance)


async def test_each_node_is_a_child_run_with_retrieval_provenance(lotsman: Any, small_session: str) -> None:
    collector = RunCollectorCallbackHandler()
    await lotsman.ainvoke({"messages": [HumanMessage(QUESTION)]}, {"callbacks": [collector]},
                          context=Context(rag_session_id=small_session))

    [root] = collector.traced_runs
    assert root.name == "lotsman" and root.parent_run_id is None
    _assert_node_runs(root)


async def test_node_runs_nest_under_the_subgraph_run(lotsman: Any, small_session: str) -> None:
    collector = RunCollectorCallbackHandler()
    await build_parent(lotsman).ainvoke({"messages": [HumanMessage(QUESTION)]}, {"callbacks": [collector]},
                                        context=Context(rag_session_id=small_session))

    [root] = collector.traced_runs
    assert root.name == "parent"
    node = _by_name(root)["lotsman"]
    # LangGraph wraps a subgraph node in a run of the node; the graph's own runs sit right under it.
    graph_run = next((r for r in node.child_runs if r.name == "lotsman"), node)
    _assert_node_runs(graph_run)


# --- tracing through the real LangSmith client, offline ----------------------------------------------
class RecordingSession(requests.Session):
    """A requests session that records every call and answers 200 without touching the network."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, bytes]] = []

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        data = kwargs.get("data")
        if data is None and kwargs.get("json") is not None:
            data = json.dumps(kwargs["json"])
        body = data.encode() if isinstance(data, str) else bytes(data or b"")
        self.calls.append((method.upper(), url, body))
        response = requests.Response()
        response.status_code = 200
        response._content = b"{}"
        response.url = url
        response.headers["Content-Type"] = "application/json"
        return response

    def bodies(self, method: str) -> list[bytes]:
        return [body for m, _, body in self.calls if m == method]


DOC_TAG = re.compile(r'<document path="([^"]+)" lines="(\d+)-(\d+)"')
ROUTE = {"routing_domain": "DOCS", "intent": "DOC_EXPLAIN", "subintent": "SUMMARY", "confidence": 0.9,
         "reason_short": "объяснение настройки"}


def _gigachat_reply(request: dict[str, Any]) -> Any:
    if request.get("functions"):
        return json.dumps(ROUTE)
    match = DOC_TAG.search(request["messages"][-1]["content"])
    assert match, "the answer request must carry fenced documents"
    return Text(f"Добавьте CORSMiddleware [{match[1]}:{match[2]}-{match[3]}].")


@pytest.fixture
def gigachat() -> Iterator[FakeGigaChatServer]:
    with FakeGigaChatServer() as server:
        server.chat_handler = _gigachat_reply
        yield server


async def test_langsmith_export_carries_the_six_nodes_and_no_secret(db, small_session: str,
                                                                   gigachat: FakeGigaChatServer) -> None:
    graph = build_graph(GraphDeps(settings=Settings(), db=db, chat_model=make_fake_gigachat_chat(gigachat)))
    session = RecordingSession()
    client = langsmith.Client(api_url="http://127.0.0.1:1", api_key="fake", session=session,
                              auto_batch_tracing=False)

    with tracing_context(enabled=True, client=client, project_name="t"):
        out = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]},
                                  context=Context(rag_session_id=small_session))
    wait_for_all_tracers()

    assert out["route"]["llm_router_used"] is True and out["citations"], "the GigaChat path was taken"
    assert all(url.startswith("http://127.0.0.1:1/") for _, url, _ in session.calls)
    posted = [json.loads(body) for body in session.bodies("POST") if body.startswith(b"{")]
    names = {run.get("name") for run in posted}
    assert set(STAGES) | {"lotsman"} <= names, sorted(n for n in names if n)
    root = next(run for run in posted if run.get("name") == "lotsman")
    by_id = {run["id"]: run for run in posted}
    for stage in STAGES:
        run = next(r for r in posted if r.get("name") == stage)
        assert run["parent_run_id"] == root["id"] and run["trace_id"] == root["id"]
    assert any(run.get("run_type") == "llm" for run in by_id.values()), "GigaChat calls are traced too"

    patched = [json.loads(body) for body in session.bodies("PATCH") if body.startswith(b"{")]
    retrieval = next(r for r in patched if r.get("name") == "context_retrieval")
    assert retrieval["outputs"]["retrieval"]["provenance"][0]["lanes"]

    secrets = [gigachat.credentials, base64.b64decode(gigachat.credentials).decode().split(":", 1)[1],
               *gigachat.issued_tokens]
    assert gigachat.issued_tokens, "the fake server issued an access token"
    everything = b"".join(body for _, _, body in session.calls)
    for secret in secrets:
        assert secret.encode() not in everything, "a GigaChat credential reached the trace"
