"""Set-level results: one corpus's metrics from its per-case rows, and the macro average over corpora."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from evals.metrics import abstention_scores, latency_summary, mean_or_none, percentile

METRICS = (
    ("route accuracy", "route_accuracy"),
    ("recall@5", "recall_at_5"),
    ("recall@10", "recall_at_10"),
    ("MRR", "mrr"),
    ("code-gold recall@5", "code_gold_recall_at_5"),
    ("key-fact coverage", "key_fact_coverage"),
    ("key-fact cov. (legacy)", "key_fact_coverage_legacy"),
    ("lead citation in gold", "lead_citation_in_gold"),
    ("citations removed", "citations_removed_share"),
    ("passage precision", "passage_precision"),
    ("abstention precision", "abstention_precision"),
    ("abstention recall", "abstention_recall"),
    ("answer chars p50", "answer_chars_p50"),
    ("answer chars p95", "answer_chars_p95"),
    ("empty candidate sets", "empty_candidate_sets"),
)
"""(label, key) of every summary metric, in table order."""

COUNTS = ("cases", "answerable", "answered", "code_gold_cases", "empty_candidate_sets")
"""Keys that add up across corpora instead of being averaged."""


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One corpus's metrics from `evals.scoring.score_case` rows; n/a metrics are None."""
    answerable = [r for r in rows if r["answerable"]]
    code_gold = [r for r in answerable if r["code_gold"]]
    answered = [float(r["answer_chars"]) for r in rows if not r["abstained"]]
    precision, recall = abstention_scores(rows)

    def avg(key: str, subset: Sequence[dict[str, Any]] = answerable) -> float | None:
        return mean_or_none(r[key] for r in subset)

    return {
        "cases": len(rows),
        "answerable": len(answerable),
        # Answer metrics (lead citation, passages) are n/a on abstentions: this is their denominator.
        "answered": sum(1 for r in answerable if not r["abstained"]),
        "route_accuracy": mean_or_none(float(r["route_correct"]) for r in rows),
        "recall_at_5": avg("recall_at_5"),
        "recall_at_10": avg("recall_at_10"),
        "mrr": avg("mrr"),
        "code_gold_cases": len(code_gold),
        "code_gold_recall_at_5": avg("recall_at_5", code_gold),
        "key_fact_coverage": avg("key_fact_coverage"),
        "key_fact_coverage_legacy": avg("key_fact_coverage_legacy"),
        "lead_citation_in_gold": avg("lead_citation_in_gold"),
        "citations_removed_share": avg("citations_removed_share", rows),
        "passage_precision": avg("passage_precision"),
        "abstention_precision": precision,
        "abstention_recall": recall,
        # Length of answers that answer: an abstention's "not found" would pull p50 down for free.
        "answer_chars_p50": percentile(answered, 50) if answered else None,
        "answer_chars_p95": percentile(answered, 95) if answered else None,
        "empty_candidate_sets": sum(1 for r in answerable if r["empty_candidates"]),
        "latency_ms": latency_summary([r["timings_ms"] for r in rows]),
    }


def macro(per_corpus: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Unweighted mean over corpora of every metric (n/a skipped); counts are summed; latency is the mean
    of the corpora's p50 / p95 per node."""
    summaries = list(per_corpus.values())
    out: dict[str, Any] = {"corpora": len(summaries)}
    for _, key in METRICS:
        if key in COUNTS:
            continue
        out[key] = mean_or_none(s.get(key) for s in summaries)
    for key in COUNTS:
        out[key] = sum(s.get(key) or 0 for s in summaries)
    nodes = dict.fromkeys(n for s in summaries for n in s.get("latency_ms", {}))
    out["latency_ms"] = {
        n: {q: round(statistics.fmean(s["latency_ms"][n][q] for s in summaries if n in s["latency_ms"]), 2)
            for q in ("p50", "p95")}
        for n in nodes
    }
    return out
