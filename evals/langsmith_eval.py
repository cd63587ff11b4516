"""`lotsman eval --langsmith`: upload a dataset to LangSmith and run `evaluate()` with our evaluators.

The evaluators are the same metric functions the offline runner uses (`evals.metrics`), so numbers in
LangSmith and in `out/*.json` agree. The target re-runs the graph, so each example gets a full trace.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.metrics import citation_precision, key_fact_coverage, recall_at_k, reciprocal_rank
from evals.runner import load_dataset, route_label
from stores.errors import LotsmanError


def example_of(case: dict[str, Any]) -> dict[str, Any]:
    """A LangSmith example: the question (with history) in, the gold labels out."""
    return {
        "inputs": {"question": case["question"], "history": case.get("history", [])},
        "outputs": {"gold_paths": case["gold_paths"], "key_facts": case.get("key_facts", []),
                    "expected_route": case["expected_route"], "answerable": bool(case["answerable"])},
        "metadata": {"case_id": case["id"], "tags": case.get("tags", [])},
    }


def _files(outputs: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(e["path"] for e in outputs.get("evidence", [])))


def recall_at_5(outputs: dict, reference_outputs: dict) -> dict:
    return {"key": "recall_at_5", "score": recall_at_k(_files(outputs), reference_outputs["gold_paths"], 5)
            if reference_outputs["answerable"] else None}


def recall_at_10(outputs: dict, reference_outputs: dict) -> dict:
    return {"key": "recall_at_10", "score": recall_at_k(_files(outputs), reference_outputs["gold_paths"], 10)
            if reference_outputs["answerable"] else None}


def mrr(outputs: dict, reference_outputs: dict) -> dict:
    return {"key": "mrr", "score": reciprocal_rank(_files(outputs), reference_outputs["gold_paths"])
            if reference_outputs["answerable"] else None}


def route_correct(outputs: dict, reference_outputs: dict) -> dict:
    return {"key": "route_accuracy",
            "score": float(route_label(outputs.get("route") or {}) == reference_outputs["expected_route"])}


def key_facts(outputs: dict, reference_outputs: dict) -> dict:
    return {"key": "key_fact_coverage", "score": key_fact_coverage(reference_outputs["key_facts"],
                                                                    outputs.get("answer", ""))
            if reference_outputs["answerable"] else None}


def citations(outputs: dict, reference_outputs: dict) -> dict:
    return {"key": "citation_precision",
            "score": citation_precision(outputs.get("citations", []), outputs.get("evidence", []))}


def abstention(outputs: dict, reference_outputs: dict) -> dict:
    """1 when the system abstained exactly on the unanswerable cases."""
    return {"key": "abstention_correct",
            "score": float(bool(outputs.get("abstained")) == (not reference_outputs["answerable"]))}


EVALUATORS = [recall_at_5, recall_at_10, mrr, route_correct, key_facts, citations, abstention]


def upload_dataset(client: Any, dataset_path: Path) -> str:
    """Create the LangSmith dataset for a JSONL file once (same name → reused); returns its name."""
    name = f"lotsman-{dataset_path.stem}"
    if not client.has_dataset(dataset_name=name):
        client.create_dataset(name, description=f"Lotsman eval set {dataset_path.name} (SPEC §7 format)")
        client.create_examples(dataset_name=name, examples=[example_of(c) for c in load_dataset(dataset_path)])
    return name


def graph_target(graph: Any, context: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The evaluate() target: runs one example through the graph and returns the fields evaluators read."""
    from langchain_core.messages import AIMessage, HumanMessage

    def target(inputs: dict[str, Any]) -> dict[str, Any]:
        messages = [HumanMessage(t["content"]) if t["role"] == "user" else AIMessage(t["content"])
                    for t in inputs.get("history", [])] + [HumanMessage(inputs["question"])]
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}

        async def go() -> dict[str, Any]:
            await graph.ainvoke({"messages": messages}, config=config, context=context)
            state = (await graph.aget_state(config)).values
            return {k: state.get(k) for k in ("answer", "citations", "route", "abstained", "evidence")}

        return asyncio.run(go())

    return target


def upload_and_evaluate(dataset_path: Path, report: dict[str, Any], settings: Any, *, client: Any = None,
                        graph: Any = None, context: Any = None) -> str:
    """Upload the dataset and run LangSmith `evaluate()`; returns a one-line summary."""
    if client is None:
        if settings.langsmith_api_key is None:
            raise LotsmanError("--langsmith needs LANGSMITH_API_KEY (and LANGSMITH_TRACING=true for traces)")
        from langsmith import Client

        client = Client(api_key=settings.langsmith_api_key.get_secret_value())
    if graph is None:
        from langgraph.checkpoint.memory import InMemorySaver

        from evals.baselines import RETRIEVERS
        from graph.builder import build_graph
        from graph.context import Context
        from graph.deps import GraphDeps

        deps = GraphDeps(settings=settings, retrieve=RETRIEVERS[report["retriever"]])
        graph = build_graph(deps, checkpointer=InMemorySaver())
        context = Context(rag_session_id=report["session"])
    name = upload_dataset(client, dataset_path)
    results = client.evaluate(
        graph_target(graph, context), data=name, evaluators=EVALUATORS,
        experiment_prefix=f"lotsman-{report['retriever']}", max_concurrency=1,
        metadata={"retriever": report["retriever"], "embedder": report["embedder"],
                  "offline_summary": json.dumps({k: report[k] for k in ("recall_at_5", "mrr")})},
    )
    experiment = getattr(results, "experiment_name", "")
    return f"LangSmith: dataset '{name}', experiment '{experiment}'"
