"""Issue 25 item 7: the run context's `retriever` (full / vector / bm25) exists, is validated and is honoured.

The README and the server docs described it while `Context` had no such field: in-process
`Context(retriever=...)` raised, and the LangGraph server dropped it silently (langgraph-api keeps only the
context keys the graph's context schema lists, so `"nope"` and `"bm25"` alike never reached the graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graph.context import Context
from nodes.context_retrieval.merge import RetrievalResult
from nodes.context_retrieval.strategy import PLAIN_LANES, plain_lanes, retrieve_evidence
from nodes.retrieval_policy import CodePlan, RetrievalPlan
from stores.errors import InvalidInputError
from stores.layers import DOCS_LAYERS


@pytest.mark.parametrize("value", ["full", "vector", "bm25"])
def test_context_accepts_the_documented_retrievers(value: str) -> None:
    assert Context(retriever=value).retriever == value


def test_context_defaults_to_the_full_pipeline() -> None:
    assert Context().retriever == "full"


@pytest.mark.parametrize("value", ["nope", "BM25", "", " full", 1, None, ["bm25"]],
                         ids=["word", "case", "empty", "space", "int", "none", "list"])
def test_context_rejects_any_other_retriever_in_one_line(value: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        Context(retriever=value)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("invalid run context: retriever: ")
    assert "'full', 'vector' or 'bm25'" in message and f"(got {value!r})" in message


def test_the_server_sees_the_field_in_the_context_schema() -> None:
    """langgraph-api passes on only the keys listed in the context schema: the field must be one."""
    from graph.builder import build_graph
    from graph.deps import GraphDeps

    schema = build_graph(GraphDeps()).get_context_jsonschema()
    assert schema["properties"]["retriever"]["enum"] == ["full", "vector", "bm25"]


@pytest.mark.parametrize("context", [{"retriever": "nope"}, {"retriever": "bm25", "reranker": "rrf"}],
                         ids=["unknown-value", "unknown-key"])
async def test_graph_refuses_a_bad_retriever_before_any_node(context: dict[str, Any]) -> None:
    """In-process callers pass a dict like the server does; nothing runs (no database is configured)."""
    from graph.builder import build_graph
    from graph.deps import GraphDeps

    deps = GraphDeps()
    graph = build_graph(deps)
    with pytest.raises(InvalidInputError, match=r"^invalid run context: (retriever|reranker): "):
        await graph.ainvoke({"messages": [HumanMessage("Что такое CORS?")]}, context=context)
    assert deps.db is None, "a node ran"


# --- the strategy ------------------------------------------------------------------------------------
@dataclass
class RecordingAdapter:
    """Stands in for `RetrievalAdapter`: records how `fetch_rows` was called."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    def fetch_rows(self, session: Any, plan: RetrievalPlan, code_plan: CodePlan | None, query: str,
                   **kwargs: Any) -> RetrievalResult:
        self.calls.append({"plan": plan, "code_plan": code_plan, "query": query, **kwargs})
        return RetrievalResult(rows=[], relevant=False, gate=None)  # type: ignore[arg-type]


PLAN = RetrievalPlan(profile="docs_find_files", layers=["D1_DOCUMENT_CATALOG"], limit=5)
CODE = CodePlan(layers=["C1_SYMBOL_CATALOG"], terms=["CORSMiddleware"], reason="names a symbol")


@pytest.mark.parametrize(("retriever", "lanes", "route_plan", "code_plan"), [
    ("full", None, True, True),
    ("vector", ("semantic",), False, False),
    ("bm25", ("lexical",), False, False),
])
def test_retrieve_evidence_runs_the_chosen_lanes(retriever: Any, lanes: tuple[str, ...] | None, route_plan: bool,
                                                 code_plan: bool) -> None:
    adapter = RecordingAdapter()
    retrieve_evidence(adapter, None, "Как настроить CORS?", PLAN, CODE, retriever=retriever,  # type: ignore[arg-type]
                      file_names=["cors.md"], gate_terms=["cors"], top_k=7, token_cap=900)
    (call,) = adapter.calls
    assert call.get("lanes_enabled") == lanes
    assert (call["plan"] == PLAN) is route_plan
    assert (call["code_plan"] == CODE) is code_plan
    if not route_plan:  # a baseline searches every docs layer
        assert set(call["plan"].layers) == {layer.value for layer in DOCS_LAYERS}
    assert (call["file_names"], call["gate_terms"], call["top_k"], call["token_cap"]) == (
        ["cors.md"], ["cors"], 7, 900)


def test_every_plain_retriever_is_a_context_value() -> None:
    assert set(PLAIN_LANES) | {"full"} == set(Context.model_fields["retriever"].annotation.__args__)
    assert plain_lanes("full") is None


@pytest.mark.parametrize("value", ["learned", "rrf"])
def test_the_ranker_field_takes_its_two_orders(value: str) -> None:
    from graph.context import Context

    assert Context(ranker=value).ranker == value
    assert Context().ranker == "learned"  # the product's order; rrf is the baseline


@pytest.mark.parametrize("value", ["nope", "LEARNED", 1])
def test_an_unknown_ranker_is_one_line(value: object) -> None:
    from graph.context import Context

    with pytest.raises(InvalidInputError, match=r"^invalid run context: ranker: Input should be 'rrf' or 'learned'"):
        Context(ranker=value)
