"""`lotsman eval --langsmith`: upload a dataset to LangSmith and run `evaluate()` with our metrics.

Per-case feedback and the experiment's summary feedback come from the same functions as the offline
report (`evals.scoring.score_case`, `evals.summary.aggregate`), so LangSmith shows the numbers
`out/*.json` holds; n/a values are not sent. The target re-runs the graph, so each example gets a trace.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evals.cases import load_dataset
from evals.scoring import OUTPUT_FIELDS, labels_of, plain, score_case
from evals.summary import METRICS, aggregate
from evals.wiring import eval_context, eval_deps
from stores.errors import LotsmanError

CASE_KEYS = ("route_correct", "recall_at_5", "recall_at_10", "mrr", "code_gold_recall_at_5", "key_fact_coverage",
             "lead_citation_in_gold", "lead_citation_in_gold_answered", "passage_precision",
             "passage_precision_answered", "citations_removed_share", "answer_chars", "abstained", "empty_candidates")
"""Per-case feedback keys (columns of `score_case` rows)."""


def example_of(case: dict[str, Any]) -> dict[str, Any]:
    """A LangSmith example: the question (with history) in, the gold labels out."""
    return {
        "inputs": {"question": case["question"], "history": case.get("history", [])},
        "reference_outputs": {"case_id": case["id"], "gold_paths": case["gold_paths"],
                              "key_facts": case.get("key_facts", []), "expected_route": case["expected_route"],
                              "answerable": bool(case["answerable"]), "tags": case.get("tags", [])},
        "metadata": {"case_id": case["id"], "tags": case.get("tags", [])},
    }


def case_of(inputs: dict[str, Any], reference_outputs: dict[str, Any]) -> dict[str, Any]:
    """The dataset case back from an example (inverse of `example_of`)."""
    ref = dict(reference_outputs)
    return {"id": ref.pop("case_id", ""), "question": inputs["question"], "history": inputs.get("history", []),
            **ref}


def _llm(outputs: dict[str, Any]) -> bool:
    # The target records which answerer ran (`graph_target(..., llm=...)`), as the offline report does.
    return outputs.get("answers") == "llm"


def per_case(inputs: dict[str, Any], outputs: dict[str, Any], reference_outputs: dict[str, Any]) -> dict[str, Any]:
    """Per-case feedback: every defined column of the offline row (n/a columns are left out)."""
    row = score_case(case_of(inputs, reference_outputs), outputs, llm=_llm(outputs))
    return {"results": [{"key": k, "score": float(row[k])} for k in CASE_KEYS if row[k] is not None]}


def summary(inputs: Sequence[dict[str, Any]], outputs: Sequence[dict[str, Any]],
            reference_outputs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Experiment-level feedback: `aggregate` over the same rows the offline report is built from."""
    rows = [score_case(case_of(i, r), o or {}, llm=_llm(o or {}))
            for i, o, r in zip(inputs, outputs, reference_outputs, strict=True)]
    metrics = aggregate(rows, llm=any(_llm(o or {}) for o in outputs))
    return {"results": [{"key": key, "score": float(metrics[key])} for _, key in METRICS
                        if metrics.get(key) is not None]}


EVALUATORS = [per_case]
SUMMARY_EVALUATORS = [summary]


def upload_dataset(client: Any, dataset_path: Path) -> str:
    """Create the LangSmith dataset for a JSONL file once (same name → reused); returns its name."""
    name = f"lotsman-{dataset_path.stem}"
    if not client.has_dataset(dataset_name=name):
        client.create_dataset(name, description=f"Lotsman eval set {dataset_path.name} (SPEC §7 format)")
        client.create_examples(dataset_name=name, examples=[example_of(c) for c in load_dataset(dataset_path)])
    return name


def outputs_of(state: dict[str, Any], *, llm: bool = False) -> dict[str, Any]:
    """The fields scoring reads; evidence rows reduced to their location and the analysis to its labels
    (their text stays out of the run)."""
    out = {k: plain(state.get(k)) for k in OUTPUT_FIELDS}
    out["evidence"] = [{k: e.get(k) for k in ("path", "span_start", "span_end", "layer")}
                       for e in out["evidence"] or []]
    out["evidence_reduced"] = True
    out["analysis"] = labels_of(state.get("analysis"))
    out["answers"] = "llm" if llm else "extractive"
    return out


def graph_target(graph: Any, context: Any, *, llm: bool = False) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The evaluate() target: runs one example through the graph and returns the fields scoring reads."""
    from langchain_core.messages import AIMessage, HumanMessage

    def target(inputs: dict[str, Any]) -> dict[str, Any]:
        messages = [HumanMessage(t["content"]) if t["role"] == "user" else AIMessage(t["content"])
                    for t in inputs.get("history", [])] + [HumanMessage(inputs["question"])]
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}

        async def go() -> dict[str, Any]:
            await graph.ainvoke({"messages": messages}, config=config, context=context)
            return outputs_of((await graph.aget_state(config)).values, llm=llm)

        return asyncio.run(go())

    return target


def upload_and_evaluate(dataset_path: Path, report: dict[str, Any], settings: Any, *, client: Any = None,
                        graph: Any = None, context: Any = None) -> str:
    """Upload the dataset and run LangSmith `evaluate()`; returns a one-line summary.

    Args:
        dataset_path: The JSONL file (its stem names the LangSmith dataset).
        report: One corpus's offline report (`evals.runner.run`): its session, retriever and embedder.
        settings: Process settings (the LangSmith key when `client` is not given).
        client: A `langsmith.Client`; built from settings when None.
        graph, context: The graph and run context; built like the offline runner's when None.
    """
    if client is None:
        if settings.langsmith_api_key is None:
            raise LotsmanError("--langsmith needs LANGSMITH_API_KEY (and LANGSMITH_TRACING=true for traces)")
        from langsmith import Client

        client = Client(api_key=settings.langsmith_api_key.get_secret_value())
    llm = report.get("answers") == "llm"  # the same answerer as the offline run it is compared with
    if graph is None:
        from langgraph.checkpoint.memory import InMemorySaver

        from graph.builder import build_graph

        graph = build_graph(eval_deps(settings, llm), checkpointer=InMemorySaver())
        context = eval_context(report["session"], report["retriever"], settings, report.get("ranker"))
    name = upload_dataset(client, dataset_path)
    offline = {key: report.get(key) for _, key in METRICS}
    results = client.evaluate(
        graph_target(graph, context, llm=llm), data=name, evaluators=EVALUATORS, summary_evaluators=SUMMARY_EVALUATORS,
        experiment_prefix=f"lotsman-{report['retriever']}", max_concurrency=0,
        metadata={"retriever": report["retriever"], "embedder": report["embedder"],
                  "answers": report.get("answers", "extractive"), "offline_summary": offline},
    )
    experiment = getattr(results, "experiment_name", "")
    return f"LangSmith: dataset '{name}', experiment '{experiment}'"
