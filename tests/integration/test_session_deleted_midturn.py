"""Issue 25 item 9 on the graph path (the server's): a session deleted during a turn is said to be deleted,
not answered with "the indexed material does not answer this question"."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import build_graph
from graph.deps import GraphDeps, full_retrieval
from graph.settings import Settings
from stores.database import Database
from stores.embedders import make_embedder
from stores.errors import SessionNotFoundError


@pytest.fixture
def session(db: Database, tmp_path: Path) -> str:
    from stores.indexing.service import index_repository

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "cors.md").write_text("# CORS\n\nCORS настраивается через `CORSMiddleware`.\n")
    name = f"midturn-{uuid.uuid4().hex[:8]}"
    index_repository(db, tmp_path, session_name=name, embedder=make_embedder("fake"))
    return name


@pytest.fixture
def deps(db: Database, pg_url: str) -> Iterator[GraphDeps]:
    """Deps whose retrieval first lets another client delete the session (`lotsman sessions --delete`)."""
    from stores.sessions import delete_session

    def delete_then_retrieve(bundle, request, route, plan, code_plan, ctx):  # type: ignore[no-untyped-def]
        with db.connection() as conn:
            delete_session(conn, bundle.session.rag_session_id)
        return full_retrieval(bundle, request, route, plan, code_plan, ctx)

    graph_deps = GraphDeps(settings=Settings(database_url=pg_url), db=db, retrieve=delete_then_retrieve)
    yield graph_deps
    graph_deps.db = None  # the test run's shared database stays open for the other tests
    graph_deps.close()


async def test_a_session_deleted_during_a_turn_fails_the_run_naming_the_deletion(deps: GraphDeps, session: str) -> None:
    graph = build_graph(deps, checkpointer=InMemorySaver())
    with pytest.raises(SessionNotFoundError, match=f"session '{session}' was deleted while answering"):
        await graph.ainvoke({"messages": [HumanMessage("Как настроить CORS?")]},
                            config={"configurable": {"thread_id": uuid.uuid4().hex}},
                            context={"rag_session_id": session, "use_llm": False})
