"""Issue 25 item 7 through a real `langgraph dev` server: the run context's `retriever` reaches the graph.

langgraph-api keeps only the context keys the graph's context schema lists; before `Context` had the field,
`{"retriever": "nope"}` and `{"retriever": "bm25"}` were both dropped on the server without a word.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from tests.e2e.conftest import running_dev_server

QUESTION = {"messages": [{"role": "human", "content": "Как настроить CORSMiddleware?"}]}


@pytest.fixture(scope="module")
def server_url(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory,
               db) -> Iterator[str]:
    with running_dev_server(offline_env(LOTSMAN_EMBEDDER="fake"),
                            tmp_path_factory.mktemp("context-fields-server")) as server:
        yield server.url


@pytest.fixture(scope="module")
def session(db, small_corpus: Path) -> str:
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    name = f"ctx-{uuid.uuid4().hex[:8]}"
    index_repository(db, small_corpus, session_name=name, embedder=make_embedder("fake"))
    return name


@pytest.mark.parametrize("value", ["nope", "BM25", 7], ids=["word", "case", "int"])
async def test_unknown_retriever_fails_the_run_in_one_line(server_url: str, session: str, value: object) -> None:
    client = get_client(url=server_url)
    with pytest.raises(Exception) as info:
        await client.runs.wait(None, "lotsman", input=QUESTION, context={"rag_session_id": session,
                                                                          "retriever": value})
    assert str(info.value) == ("InvalidInputError: invalid run context: retriever: Input should be 'full', "
                               f"'vector' or 'bm25' (got {value!r})")


async def _evidence_lanes(server_url: str, context: dict[str, object]) -> tuple[set[str], set[str]]:
    """The lanes of the run's evidence rows and the lanes that ran, read from the thread's state."""
    client = get_client(url=server_url)
    thread = await client.threads.create()
    out = await client.runs.wait(thread["thread_id"], "lotsman", input=QUESTION, context=context)
    assert out["abstained"] is False, out["answer"]
    values = (await client.threads.get_state(thread["thread_id"]))["values"]
    return {lane for row in values["evidence"] for lane in row["lanes"]}, set(values["retrieval"]["lane_sizes"])


@pytest.mark.parametrize("value", ["full", None], ids=["full", "default"])
async def test_full_retriever_runs_every_lane(server_url: str, session: str, value: str | None) -> None:
    context = {"rag_session_id": session} | ({"retriever": value} if value else {})
    rows, ran = await _evidence_lanes(server_url, context)
    assert len(ran) > 2 and len(rows) > 1


@pytest.mark.parametrize(("value", "lane"), [("vector", "semantic"), ("bm25", "lexical")])
async def test_plain_retriever_runs_its_one_lane(server_url: str, session: str, value: str, lane: str) -> None:
    rows, ran = await _evidence_lanes(server_url, {"rag_session_id": session, "retriever": value})
    assert rows == ran == {lane}
