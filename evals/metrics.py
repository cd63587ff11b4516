"""Eval metrics of SPEC §7, as pure functions over per-case results."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

_PUNCT = re.compile(r"[^\w]+", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)
_CITATION = re.compile(r"(?P<path>[\w./\-]+\.\w+):(?P<start>\d+)(?:-(?P<end>\d+))?")


def distinct_files(paths: Iterable[str]) -> list[str]:
    """Retrieved files in rank order, each once."""
    return list(dict.fromkeys(paths))


def recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of gold files among the first k distinct retrieved files."""
    if not gold:
        return 0.0
    top = set(distinct_files(retrieved)[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def reciprocal_rank(retrieved: Sequence[str], gold: Sequence[str]) -> float:
    """1/rank of the first gold file among distinct retrieved files (0 when none)."""
    gold_set = set(gold)
    for rank, path in enumerate(distinct_files(retrieved), 1):
        if path in gold_set:
            return 1.0 / rank
    return 0.0


def fold(text: str) -> str:
    """Lower-case, punctuation and whitespace folded to single spaces."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def fact_covered(fact: str, answer: str) -> bool:
    """A key fact is covered when its folded form is a substring of the folded answer, or when ≥ 60% of
    its words (3+ letters, compared by their first 5 letters) occur in the answer."""
    f, a = fold(fact), fold(answer)
    if f and f in a:
        return True
    words = [w for w in _WORD.findall(f) if len(w) >= 3]
    if not words:
        return False
    answer_stems = {w[:5] for w in _WORD.findall(a)}
    return sum(1 for w in words if w[:5] in answer_stems) / len(words) >= 0.6


def key_fact_coverage(facts: Sequence[str], answer: str) -> float:
    if not facts:
        return 1.0
    return sum(1 for f in facts if fact_covered(f, answer)) / len(facts)


def citation_precision(citations: Sequence[dict[str, Any]], evidence: Sequence[dict[str, Any]]) -> float | None:
    """Share of cited `path:lines` inside some retrieved evidence span; None when nothing is cited."""
    if not citations:
        return None
    ok = 0
    for c in citations:
        if any(e["path"] == c["path"] and e["span_start"] <= c["start_line"] and c["end_line"] <= e["span_end"]
               for e in evidence):
            ok += 1
    return ok / len(citations)


def abstention_scores(cases: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """(precision, recall) of abstaining, with unanswerable cases as the positive class.

    Precision is 1.0 when the system never abstains on nothing (no false claims of "not found" are
    possible); recall is 1.0 when there are no unanswerable cases.
    """
    abstained = [c for c in cases if c["abstained"]]
    unanswerable = [c for c in cases if not c["answerable"]]
    tp = sum(1 for c in abstained if not c["answerable"])
    precision = tp / len(abstained) if abstained else 1.0
    recall = tp / len(unanswerable) if unanswerable else 1.0
    return precision, recall


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    idx = (len(ordered) - 1) * pct / 100
    lo, hi = int(idx), min(int(idx) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (idx - lo)


def latency_summary(per_case: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per node p50/p95 in ms (plus `total`)."""
    nodes: dict[str, list[float]] = {}
    for timings in per_case:
        for node, ms in timings.items():
            nodes.setdefault(node, []).append(ms)
        nodes.setdefault("total", []).append(sum(timings.values()))
    return {n: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)} for n, v in nodes.items()}


def aggregate(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Dataset-level metrics from per-case results (see `evals.runner.score_case`)."""
    answerable = [c for c in cases if c["answerable"]]
    precisions = [c["citation_precision"] for c in cases if c["citation_precision"] is not None]
    abst_p, abst_r = abstention_scores(cases)
    mean = statistics.fmean
    return {
        "cases": len(cases),
        "route_accuracy": mean([c["route_correct"] for c in cases]) if cases else 0.0,
        "recall_at_5": mean([c["recall_at_5"] for c in answerable]) if answerable else 0.0,
        "recall_at_10": mean([c["recall_at_10"] for c in answerable]) if answerable else 0.0,
        "mrr": mean([c["mrr"] for c in answerable]) if answerable else 0.0,
        "key_fact_coverage": mean([c["key_fact_coverage"] for c in answerable]) if answerable else 0.0,
        "citation_precision": mean(precisions) if precisions else 1.0,
        "abstention_precision": abst_p,
        "abstention_recall": abst_r,
        "latency_ms": latency_summary([c["timings_ms"] for c in cases]),
    }
