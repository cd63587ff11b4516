"""Issue 25 item 7 on a real session: `retriever` = vector / bm25 runs that one lane, full runs them all."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import build_graph
from graph.deps import GraphDeps
from graph.settings import Settings
from nodes.context_retrieval.strategy import retrieve_evidence
from nodes.retrieval_policy import resolve_code_plan, resolve_plan
from stores.database import Database
from stores.embedders import make_embedder
from stores.errors import InvalidInputError

DOCS = {
    "docs/cors.md": "# CORS\n\nCORS настраивается через `CORSMiddleware` и параметр `allow_origins`.\n",
    "docs/auth.md": "# Аутентификация\n\nТокены JWT выдаются по адресу `POST /token`.\n",
    "app/main.py": "from fastapi.middleware.cors import CORSMiddleware\n\n\ndef make_app():\n"
                   "    \"\"\"Build the app with CORSMiddleware.\"\"\"\n    return CORSMiddleware\n",
}
QUESTION = "Как настроить CORSMiddleware?"
ONLY = {"vector": {"semantic"}, "bm25": {"lexical"}}


@pytest.fixture(scope="module")
def session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from stores.indexing.service import index_repository
    from stores.sessions import delete_session

    root = tmp_path_factory.mktemp("retriever-corpus")
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    name = f"retriever-{uuid.uuid4().hex[:8]}"
    index_repository(db, root, session_name=name, embedder=make_embedder("fake"))
    yield name
    with db.connection() as conn:
        delete_session(conn, name)


@pytest.fixture(scope="module")
def deps(db: Database, pg_url: str) -> Iterator[GraphDeps]:
    graph_deps = GraphDeps(settings=Settings(database_url=pg_url), db=db)
    yield graph_deps
    graph_deps.db = None  # the test run's shared database stays open for the other tests
    graph_deps.close()


def _lanes(rows: Any) -> set[str]:
    return {lane for row in rows for lane in row.lanes}


@pytest.mark.parametrize("retriever", ["full", "vector", "bm25"])
def test_retrieve_evidence_runs_the_chosen_lanes(deps: GraphDeps, session: str, retriever: Any) -> None:
    bundle = deps.bundle(session)
    route = bundle.router.route(QUESTION)
    result = retrieve_evidence(bundle.adapter, bundle.session, QUESTION, resolve_plan(route),
                               resolve_code_plan(route, bundle.symbols), retriever=retriever,
                               gate_terms=["corsmiddleware"])
    assert result.rows
    if retriever == "full":
        assert len(_lanes(result.rows)) > 1
    else:
        assert _lanes(result.rows) == ONLY[retriever]
        assert set(result.lane_sizes) == ONLY[retriever]


async def _state(deps: GraphDeps, context: dict[str, Any]) -> dict[str, Any]:
    graph = build_graph(deps, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, config=config, context=context)
    return dict((await graph.aget_state(config)).values)


@pytest.mark.parametrize("retriever", ["vector", "bm25"])
async def test_the_graph_honours_the_context_retriever(deps: GraphDeps, session: str, retriever: str) -> None:
    state = await _state(deps, {"rag_session_id": session, "retriever": retriever, "use_llm": False})
    assert state["evidence"] and _lanes(state["evidence"]) == ONLY[retriever]
    assert set(state["retrieval"].lane_sizes) == ONLY[retriever]


async def test_the_graph_runs_every_lane_by_default(deps: GraphDeps, session: str) -> None:
    state = await _state(deps, {"rag_session_id": session, "use_llm": False})
    assert len(set(state["retrieval"].lane_sizes)) > 2


async def test_the_graph_refuses_an_unknown_retriever(deps: GraphDeps, session: str) -> None:
    with pytest.raises(InvalidInputError, match=r"^invalid run context: retriever: Input should be 'full', "
                                                r"'vector' or 'bm25' \(got 'nope'\)$"):
        await _state(deps, {"rag_session_id": session, "retriever": "nope"})
