"""One case scored from the graph's final state: the per-case row of the eval report."""

from __future__ import annotations

from typing import Any

from evals.answer_text import passages
from evals.cases import route_label
from evals.metrics import (
    citations_removed_share,
    distinct_files,
    has_code_gold,
    key_fact_coverage,
    key_fact_coverage_legacy,
    lead_citation_in_gold,
    passage_precision,
    recall_at_k,
    reciprocal_rank,
)

OUTPUT_FIELDS = ("answer", "citations", "citations_removed", "route", "abstained", "evidence", "retrieval",
                 "timings_ms")
"""The state fields scoring reads (LangSmith's target returns exactly these)."""


def plain(value: Any) -> Any:
    """A state value as JSON-shaped data: stage models (`EvidenceRow`, `RetrievalReport`) become dicts."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _removed_count(state: dict[str, Any]) -> int | None:
    # `citations_removed` lists what the verifier took out of an LLM answer ([] for extractive answers).
    removed = plain(state.get("citations_removed"))
    if removed is None:
        return None
    return removed if isinstance(removed, int) else len(removed)


def score_case(case: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Per-case metrics and diagnostics; answer metrics of unanswerable cases are None."""
    evidence = plain(state.get("evidence") or [])
    evidence_paths = [e["path"] for e in evidence]
    retrieved = distinct_files(evidence_paths)
    gold = list(case["gold_paths"])
    facts = list(case.get("key_facts") or [])
    answer = state.get("answer") or ""
    citations = plain(state.get("citations") or [])
    abstained = bool(state.get("abstained"))
    answerable = bool(case["answerable"])
    route = route_label(plain(state.get("route") or {}))
    known = list(dict.fromkeys([*evidence_paths, *(c["path"] for c in citations)]))
    retrieval = plain(state.get("retrieval") or {})

    def ans(value: Any) -> Any:
        return value if answerable else None

    return {
        "id": case["id"],
        "question": case["question"],
        "tags": case.get("tags", []),
        "answerable": answerable,
        "expected_route": case["expected_route"],
        "route": route,
        "route_correct": route == case["expected_route"],
        "gold_paths": gold,
        "key_facts": facts,
        "retrieved_files": retrieved[:10],
        "evidence_paths": evidence_paths,
        "evidence_rows": len(evidence),
        "empty_candidates": answerable and not evidence,
        "gate": {"relevant": retrieval.get("relevant"), "reason": retrieval.get("gate")},
        "retrieval": {k: retrieval.get(k) for k in ("relaxation", "lane_sizes", "signals")},
        "recall_at_5": ans(recall_at_k(retrieved, gold, 5)),
        "recall_at_10": ans(recall_at_k(retrieved, gold, 10)),
        "mrr": ans(reciprocal_rank(retrieved, gold)),
        "code_gold": answerable and has_code_gold(gold),
        "key_fact_coverage": ans(key_fact_coverage(facts, answer, abstained=abstained, known_paths=known,
                                                   find_files=route == "DOC_EXPLAIN/FIND_FILES")),
        "key_fact_coverage_legacy": ans(key_fact_coverage_legacy(facts, answer)),
        "lead_citation_in_gold": ans(lead_citation_in_gold(citations, answer, gold)),
        "citations": len(citations),
        "citations_removed_share": citations_removed_share(_removed_count(state), len(citations)),
        "passage_precision": ans(passage_precision(answer, facts, known)),
        "passages": len(passages(answer, known)),
        "answer_chars": len(answer),
        "abstained": abstained,
        "timings_ms": state.get("timings_ms") or {},
        "answer": answer,
    }
