"""Set-level results: one corpus's metrics from its per-case rows, and the macro average over corpora."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from evals.metrics import abstention_recall_by_kind, abstention_scores, latency_summary, mean_or_none, percentile
from evals.scoring import FALLBACK

METRICS = (
    ("route accuracy", "route_accuracy"),
    ("recall@5", "recall_at_5"),
    ("  … of follow-ups", "recall_at_5_followup"),
    ("  … of standalone questions", "recall_at_5_standalone"),
    ("recall@10", "recall_at_10"),
    ("MRR", "mrr"),
    ("code-gold recall@5", "code_gold_recall_at_5"),
    ("key facts in the top 5 files", "files_top5_key_fact_recall"),
    ("key facts in the top 10 files", "files_top10_key_fact_recall"),
    ("evidence key-fact recall", "evidence_key_fact_recall"),
    ("  … of what GigaChat reads", "reader_key_fact_recall"),
    ("key-fact coverage", "key_fact_coverage"),
    ("lead citation in gold", "lead_citation_in_gold"),
    ("  … of answered cases", "lead_citation_in_gold_answered"),
    ("passage precision", "passage_precision"),
    ("  … of answered cases", "passage_precision_answered"),
    ("citations removed", "citations_removed_share"),
    ("extractive fallbacks", "llm_fallbacks"),
    ("abstention precision", "abstention_precision"),
    ("abstention recall", "abstention_recall"),
    ("  … of absent topics", "abstention_recall_absent_topic"),
    ("  … of near misses", "abstention_recall_near_miss"),
    ("answer chars p50", "answer_chars_p50"),
    ("answer chars p95", "answer_chars_p95"),
    ("empty candidate sets", "empty_candidate_sets"),
)
"""(label, key) of every summary metric, in table order. Lead citation and passage precision are over all
answerable cases (an abstention scores 0), the `… of answered cases` rows over those not abstained. Recall@5 is
also given over the follow-ups (cases tagged `followup`: asked after an assistant turn) and over the standalone
questions, the pair issue 41 compares. Abstention recall is split by the kind of unanswerable case (`… of absent
topics`, `… of near misses`, by their tags); precision stays over every abstention. `answerable_refused` (JSON
only: the table's `answerable` minus `answered`) counts the answerable cases abstained on."""

COUNTS = ("cases", "answerable", "answered", "code_gold_cases", "empty_candidate_sets", "llm_fallbacks",
          "answerable_refused")
"""Keys that add up across corpora instead of being averaged."""


def aggregate(rows: Sequence[dict[str, Any]], *, llm: bool = False) -> dict[str, Any]:
    """One corpus's metrics from `evals.scoring.score_case` rows; n/a metrics are None.

    `llm`: the run answered with the chat model; offline, "citations removed" and the fallback count are
    n/a (no model wrote a citation, nothing could fall back).
    """
    answerable = [r for r in rows if r["answerable"]]
    code_gold = [r for r in answerable if r["code_gold"]]
    answered = [float(r["answer_chars"]) for r in rows if not r["abstained"]]
    precision, recall = abstention_scores(rows)
    by_kind = abstention_recall_by_kind(rows)
    fallbacks = [r for r in rows if r.get("answer_mode") == FALLBACK]

    def avg(key: str, subset: Sequence[dict[str, Any]] = answerable) -> float | None:
        return mean_or_none(r.get(key) for r in subset)

    return {
        "cases": len(rows),
        "answerable": len(answerable),
        # The denominator of the `… of answered cases` rows.
        "answered": sum(1 for r in answerable if not r["abstained"]),
        "route_accuracy": mean_or_none(float(r["route_correct"]) for r in rows),
        "recall_at_5": avg("recall_at_5"),
        "recall_at_5_followup": avg("recall_at_5", [r for r in answerable if "followup" in (r.get("tags") or ())]),
        "recall_at_5_standalone": avg("recall_at_5", [r for r in answerable
                                                      if "followup" not in (r.get("tags") or ())]),
        "recall_at_10": avg("recall_at_10"),
        "mrr": avg("mrr"),
        "code_gold_cases": len(code_gold),
        "code_gold_recall_at_5": avg("code_gold_recall_at_5", code_gold),
        "files_top5_key_fact_recall": avg("files_top5_key_fact_recall"),
        "files_top10_key_fact_recall": avg("files_top10_key_fact_recall"),
        "evidence_key_fact_recall": avg("evidence_key_fact_recall"),
        "reader_key_fact_recall": avg("reader_key_fact_recall"),
        "key_fact_coverage": avg("key_fact_coverage"),
        "lead_citation_in_gold": avg("lead_citation_in_gold"),
        "lead_citation_in_gold_answered": avg("lead_citation_in_gold_answered"),
        "passage_precision": avg("passage_precision"),
        "passage_precision_answered": avg("passage_precision_answered"),
        "citations_removed_share": avg("citations_removed_share", rows) if llm else None,
        "llm_fallbacks": len(fallbacks) if llm else None,
        "fallback_reasons": dict(Counter(r.get("answer_mode_reason") or "" for r in fallbacks)) if llm else {},
        "answer_modes": dict(Counter(r.get("answer_mode") or "" for r in rows)),
        "abstention_precision": precision,
        "abstention_recall": recall,
        "abstention_recall_absent_topic": by_kind["absent_topic"],
        "abstention_recall_near_miss": by_kind["near_miss"],
        "answerable_refused": sum(1 for r in answerable if r["abstained"]),
        # Length of answers that answer: an abstention's "not found" would pull p50 down for free.
        "answer_chars_p50": percentile(answered, 50) if answered else None,
        "answer_chars_p95": percentile(answered, 95) if answered else None,
        "empty_candidate_sets": sum(1 for r in answerable if r["empty_candidates"]),
        "latency_ms": latency_of(rows),
    }


def latency_of(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per-node p50/p95 and the per-case wall time (`case wall`, when the runner measured it)."""
    return latency_summary([r["timings_ms"] for r in rows],
                           [r["wall_ms"] for r in rows if r.get("wall_ms") is not None])


def macro(per_corpus: dict[str, dict[str, Any]], rows: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Unweighted mean over corpora of every metric (n/a skipped); counts are summed (n/a when no corpus
    has them); latency is pooled over the cases of every corpus (`rows`), not a mean of percentiles."""
    summaries = list(per_corpus.values())
    out: dict[str, Any] = {"corpora": len(summaries)}
    for _, key in METRICS:
        if key in COUNTS:
            continue
        out[key] = mean_or_none(s.get(key) for s in summaries)
    for key in COUNTS:
        values = [s.get(key) for s in summaries if s.get(key) is not None]
        out[key] = sum(values) if values else None
    out["latency_ms"] = latency_of(rows)
    return out
