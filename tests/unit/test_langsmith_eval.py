"""`lotsman eval --langsmith` through the real `langsmith.Client` against a recording fake API (no network).

LangSmith must show the offline report's numbers: per-case feedback equals the offline rows, and the
experiment's summary feedback equals `aggregate` over the same results (SPEC §2.3, issue 14 item 14).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import langsmith
import pytest

from evals.cases import load_dataset
from evals.langsmith_eval import outputs_of, upload_and_evaluate, upload_dataset
from evals.scoring import score_case
from evals.summary import METRICS, aggregate
from tests.fakes.langsmith_api import FakeLangSmithAPI

CASES = [
    {"id": "t1", "question": "Как настроить CORS?", "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
     "gold_paths": ["docs/cors.md"], "key_facts": ["allow_origins", "max_age"], "answerable": True},
    {"id": "t2", "question": "Где код CORS middleware?", "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
     "gold_paths": ["fastapi/cors.py"], "key_facts": ["CORSMiddleware"], "answerable": True},
    {"id": "t3", "question": "Kafka?", "history": [], "expected_route": "GENERAL_QA", "gold_paths": [],
     "key_facts": [], "answerable": False},
    {"id": "t4", "question": "Prometheus?", "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
     "gold_paths": [], "key_facts": [], "answerable": False},
]

# Imperfect on purpose: a summary that is all 1.0 would not show that the numbers are the same ones.
STATES: dict[str, dict[str, Any]] = {
    "Как настроить CORS?": {
        "answer": "- use allow_origins [docs/cors.md:2-3]\n\nSources:\n- `docs/cors.md` — max_age",
        "citations": [{"path": "docs/cors.md", "start_line": 2, "end_line": 3}],
        "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"}, "abstained": False,
        "evidence": [{"path": "docs/cors.md", "span_start": 1, "span_end": 9, "content": "..."}],
        "retrieval": {"relevant": True, "gate": "ok"}, "timings_ms": {"context_retrieval": 5.0}},
    "Где код CORS middleware?": {
        "answer": "Not found.", "citations": [], "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"},
        "abstained": True, "evidence": [], "retrieval": {"relevant": False, "gate": "empty"},
        "timings_ms": {"context_retrieval": 7.0}},
    "Kafka?": {
        "answer": "Not found.", "citations": [], "route": {"intent": "GENERAL_QA"}, "abstained": True,
        "evidence": [], "retrieval": {"relevant": False, "gate": "empty"}, "timings_ms": {}},
    "Prometheus?": {
        "answer": "- metrics [docs/cors.md:4-5]",
        "citations": [{"path": "docs/cors.md", "start_line": 4, "end_line": 5}],
        "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"}, "abstained": False,
        "evidence": [{"path": "docs/cors.md", "span_start": 1, "span_end": 9}],
        "retrieval": {"relevant": True, "gate": "ok"}, "timings_ms": {}},
}


class ScriptedGraph:
    """Returns the scripted final state for each question (the graph's `ainvoke` / `aget_state` surface)."""

    async def ainvoke(self, inp: dict[str, Any], config: dict[str, Any], context: Any) -> None:
        self.last = inp["messages"][-1].content

    async def aget_state(self, config: dict[str, Any]) -> Any:
        return type("Snapshot", (), {"values": STATES[self.last]})()


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CASES), encoding="utf-8")
    return path


@pytest.fixture
def api() -> FakeLangSmithAPI:
    return FakeLangSmithAPI()


@pytest.fixture
def client(api: FakeLangSmithAPI) -> langsmith.Client:
    return langsmith.Client(api_url="http://127.0.0.1:1", api_key="fake", session=api, auto_batch_tracing=False)


def offline_rows(path: Path) -> list[dict[str, Any]]:
    # The offline runner scores the full state; LangSmith gets `outputs_of(state)`: both must agree.
    return [score_case(c, STATES[c["question"]]) for c in load_dataset(path)]


def test_dataset_is_uploaded_once(client: langsmith.Client, api: FakeLangSmithAPI, dataset: Path) -> None:
    assert upload_dataset(client, dataset) == upload_dataset(client, dataset) == "lotsman-tiny"
    assert [d["name"] for d in api.datasets.values()] == ["lotsman-tiny"]
    (examples,) = api.examples.values()
    assert len(examples) == 4 and examples[0]["outputs"]["gold_paths"] == ["docs/cors.md"]


def test_summary_feedback_equals_the_offline_metrics(client: langsmith.Client, api: FakeLangSmithAPI,
                                                     dataset: Path) -> None:
    offline = aggregate(offline_rows(dataset))
    upload_and_evaluate(dataset, {"retriever": "full", "embedder": "fake", "session": "s", **offline}, None,
                        client=client, graph=ScriptedGraph(), context=None)
    uploaded = api.project_feedback()
    expected = {key: offline[key] for _, key in METRICS if offline[key] is not None}
    assert uploaded == pytest.approx(expected)
    assert 0 < uploaded["key_fact_coverage"] < 1 and uploaded["abstention_precision"] == 0.5
    assert "citations_removed_share" not in uploaded  # n/a is not sent as a number


def test_per_case_feedback_equals_the_offline_rows(client: langsmith.Client, api: FakeLangSmithAPI,
                                                   dataset: Path) -> None:
    upload_and_evaluate(dataset, {"retriever": "full", "embedder": "fake", "session": "s"}, None, client=client,
                        graph=ScriptedGraph(), context=None)
    inputs = {run["id"]: run["inputs"]["question"] for run in api.runs.values() if run.get("run_type") == "chain"
              and "question" in (run.get("inputs") or {})}
    by_question: dict[str, dict[str, float]] = {}
    for f in api.run_feedback():
        by_question.setdefault(inputs[f["run_id"]], {})[f["key"]] = f["score"]
    rows = {r["question"]: r for r in offline_rows(dataset)}
    assert set(by_question) == set(rows)
    for question, scores in by_question.items():
        row = rows[question]
        for key, score in scores.items():
            value = row["recall_at_5"] if key == "code_gold_recall_at_5" else row[key]
            assert score == float(value), (question, key)
    assert "recall_at_5" not in by_question["Kafka?"]  # unanswerable: recall is n/a, not sent
    assert by_question["Где код CORS middleware?"]["code_gold_recall_at_5"] == 0.0


def test_outputs_keep_only_what_scoring_reads() -> None:
    out = outputs_of(STATES["Как настроить CORS?"])
    assert out["evidence"] == [{"path": "docs/cors.md", "span_start": 1, "span_end": 9, "layer": None}]
    assert score_case(CASES[0], out) == score_case(CASES[0], STATES["Как настроить CORS?"])
