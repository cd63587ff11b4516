"""`lotsman eval --langsmith` against a fake LangSmith client (no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.langsmith_eval import EVALUATORS, upload_and_evaluate, upload_dataset


class FakeLangSmith:
    """Records what a real `langsmith.Client` would be asked to do, and runs evaluate() locally."""

    def __init__(self) -> None:
        self.datasets: dict[str, list[dict]] = {}
        self.evaluations: list[dict[str, Any]] = []

    def has_dataset(self, *, dataset_name: str) -> bool:
        return dataset_name in self.datasets

    def create_dataset(self, name: str, **_: Any) -> None:
        self.datasets[name] = []

    def create_examples(self, *, dataset_name: str, examples: list[dict]) -> None:
        self.datasets[dataset_name].extend(examples)

    def evaluate(self, target, *, data: str, evaluators, **kwargs: Any):
        scores = []
        for ex in self.datasets[data]:
            outputs = target(ex["inputs"])
            scores.append({e(outputs, ex["outputs"])["key"]: e(outputs, ex["outputs"])["score"] for e in evaluators})
        self.evaluations.append({"data": data, "scores": scores, **kwargs})
        return type("Results", (), {"experiment_name": kwargs.get("experiment_prefix", "")})()


def _dataset(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.jsonl"
    cases = [
        {"id": "t1", "question": "Как настроить CORS?", "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
         "gold_paths": ["docs/cors.md"], "key_facts": ["allow_origins"], "answerable": True},
        {"id": "t2", "question": "Kafka?", "history": [], "expected_route": "GENERAL_QA", "gold_paths": [],
         "key_facts": [], "answerable": False},
    ]
    path.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases), encoding="utf-8")
    return path


class PerfectGraph:
    """Answers the CORS case perfectly and abstains on the rest."""

    async def ainvoke(self, inp, config, context):
        self.last = inp["messages"][-1].content

    async def aget_state(self, config):
        cors = "CORS" in self.last
        ev = [{"path": "docs/cors.md", "span_start": 1, "span_end": 9}] if cors else []
        values = {"answer": "use allow_origins [docs/cors.md:2-3]" if cors else "не найдено",
                  "citations": [{"path": "docs/cors.md", "start_line": 2, "end_line": 3}] if cors else [],
                  "route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY"} if cors else {"intent": "GENERAL_QA"},
                  "abstained": not cors, "evidence": ev}
        return type("S", (), {"values": values})()


def test_dataset_is_uploaded_once(tmp_path: Path) -> None:
    client, path = FakeLangSmith(), _dataset(tmp_path)
    assert upload_dataset(client, path) == upload_dataset(client, path) == "lotsman-tiny"
    assert len(client.datasets["lotsman-tiny"]) == 2
    assert client.datasets["lotsman-tiny"][0]["outputs"]["gold_paths"] == ["docs/cors.md"]


def test_evaluate_runs_our_evaluators_and_a_perfect_run_scores_one(tmp_path: Path) -> None:
    client = FakeLangSmith()
    summary = upload_and_evaluate(_dataset(tmp_path), {"retriever": "full", "embedder": "fake", "recall_at_5": 1,
                                                       "mrr": 1, "session": "s"}, settings=None, client=client,
                                  graph=PerfectGraph(), context=None)
    assert "lotsman-tiny" in summary
    scores = client.evaluations[0]["scores"]
    assert scores[0]["recall_at_5"] == 1.0 and scores[0]["key_fact_coverage"] == 1.0
    assert scores[0]["citation_precision"] == 1.0 and scores[0]["route_accuracy"] == 1.0
    assert all(s["abstention_correct"] == 1.0 for s in scores)
    assert scores[1]["recall_at_5"] is None  # unanswerable cases do not count for recall
    assert len(EVALUATORS) == 7
