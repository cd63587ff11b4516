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
from evals.summary import aggregate
from nodes.answer_composition import compose_extractive
from nodes.context_analysis import Analysis, Span
from nodes.intent_routing.models import RouteResult
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

SUMMARY = RouteResult(user_query="q", intent="DOC_EXPLAIN", subintent="SUMMARY")
CORS_SPAN = Span(path="docs/cors.md", start_line=2, end_line=3, row_id="r1", kind="prose", section="max_age",
                 text="Use allow_origins to list the origins\nthat may call the API.")


def composed(spans: list[Span], question: str) -> dict[str, Any]:
    """The final state's answer fields as the extractive composer writes them (no span: "not found")."""
    analysis = Analysis(spans=spans, passages=spans, sufficient=bool(spans), language="en")
    answer = compose_extractive(question, analysis, SUMMARY)
    return {"answer": answer.text, "citations": [c.model_dump() for c in answer.citations],
            "abstained": answer.abstained, "analysis": analysis, "citations_removed": []}


# Imperfect on purpose: a summary that is all 1.0 would not show that the numbers are the same ones.
STATES: dict[str, dict[str, Any]] = {
    # answered; one fact quoted, the other only the section label above the quote
    "Как настроить CORS?": {
        **composed([CORS_SPAN], "Как настроить CORS?"), "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"},
        "evidence": [{"path": "docs/cors.md", "span_start": 1, "span_end": 9, "content": "..."}],
        "retrieval": {"relevant": True, "gate": "ok"}, "timings_ms": {"context_retrieval": 5.0}},
    # answerable, nothing found, abstained
    "Где код CORS middleware?": {
        **composed([], "Где код CORS middleware?"), "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"},
        "evidence": [], "retrieval": {"relevant": False, "gate": "empty"}, "timings_ms": {"context_retrieval": 7.0}},
    # unanswerable, abstained
    "Kafka?": {
        **composed([], "Kafka?"), "route": {"intent": "GENERAL_QA"}, "evidence": [],
        "retrieval": {"relevant": False, "gate": "empty"}, "timings_ms": {}},
    # unanswerable, answered anyway
    "Prometheus?": {
        **composed([CORS_SPAN], "Prometheus?"), "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"},
        "evidence": [{"path": "docs/cors.md", "span_start": 1, "span_end": 9}],
        "retrieval": {"relevant": True, "gate": "ok"}, "timings_ms": {}},
}
ANSWER_CHARS = len(STATES["Как настроить CORS?"]["answer"])
EXPECTED_SUMMARY = {
    "route_accuracy": 1.0, "recall_at_5": 0.5, "recall_at_10": 0.5, "mrr": 0.5, "code_gold_recall_at_5": 0.0,
    "recall_at_5_standalone": 0.5,  # neither answerable case is a follow-up: that row is n/a and not sent
    "key_fact_coverage": 0.25,  # t1: allow_origins quoted, max_age only a label (0.5); t2 abstained (0)
    "lead_citation_in_gold": 0.5, "lead_citation_in_gold_answered": 1.0,
    "passage_precision": 0.5, "passage_precision_answered": 1.0,
    "abstention_precision": 0.5, "abstention_recall": 0.5,
    "answer_chars_p50": float(len(STATES["Prometheus?"]["answer"]) + ANSWER_CHARS) / 2,
    "answer_chars_p95": float(ANSWER_CHARS) + 0.95 * (len(STATES["Prometheus?"]["answer"]) - ANSWER_CHARS),
    "empty_candidate_sets": 1.0,
}
"""The summary worked out by hand (t1, t2 answerable; t3, t4 not). Offline, citations removed and the
fallback count are n/a and not sent."""


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
    assert uploaded == pytest.approx(EXPECTED_SUMMARY)
    assert "citations_removed_share" not in uploaded and "llm_fallbacks" not in uploaded  # n/a is not sent
    assert not any("legacy" in key for key in uploaded)


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
            assert score == float(row[key]), (question, key)
    assert by_question["Как настроить CORS?"] == {
        "route_correct": 1.0, "recall_at_5": 1.0, "recall_at_10": 1.0, "mrr": 1.0, "key_fact_coverage": 0.5,
        "lead_citation_in_gold": 1.0, "lead_citation_in_gold_answered": 1.0, "passage_precision": 1.0,
        "passage_precision_answered": 1.0, "answer_chars": float(ANSWER_CHARS), "abstained": 0.0,
        "empty_candidates": 0.0}
    assert by_question["Где код CORS middleware?"]["code_gold_recall_at_5"] == 0.0
    assert by_question["Где код CORS middleware?"]["lead_citation_in_gold"] == 0.0  # abstained: 0, not n/a
    assert "lead_citation_in_gold_answered" not in by_question["Где код CORS middleware?"]
    assert "recall_at_5" not in by_question["Kafka?"]  # unanswerable: recall is n/a, not sent


def test_outputs_keep_only_what_scoring_reads() -> None:
    out = outputs_of(STATES["Как настроить CORS?"])
    assert out["evidence"] == [{"path": "docs/cors.md", "span_start": 1, "span_end": 9, "layer": None}]
    assert out["evidence_reduced"] is True  # so the evidence key-fact recall is n/a, not 0
    assert out["analysis"] == {"files": [], "spans": [{"section": "max_age"}], "passages": [{"section": "max_age"}]}
    offline = score_case(CASES[0], STATES["Как настроить CORS?"])
    assert offline["evidence_key_fact_recall"] == 0.0  # the scripted row's text is "..."
    assert score_case(CASES[0], out) == {**offline, "evidence_key_fact_recall": None,
                                        "reader_key_fact_recall": None,
                                        "fact_trace": [{**t, "evidence": None} for t in offline["fact_trace"]]}
