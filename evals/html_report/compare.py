"""Two runs of the same datasets compared: each metric's delta, and the cases that improved or regressed.

The first run given is the base, a later one the change (`report BASE.json NEW.json`): a delta is NEW − BASE.
A case's change is the sum of its changes in `CASE_METRICS` (an answerable case) or in abstaining (an
unanswerable one), plus its route becoming right or wrong; regressed cases are listed worst first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evals.html_report.model import MACRO, Run, corpus_names
from evals.summary import METRICS

CASE_METRICS = (("recall@5", "recall_at_5"), ("MRR", "mrr"),
                ("evidence key-fact recall", "evidence_key_fact_recall"),
                ("strict key facts", "key_fact_coverage"), ("lead citation in gold", "lead_citation_in_gold"))

LOWER_IS_BETTER = frozenset({"citations_removed_share", "llm_fallbacks", "empty_candidate_sets"})
NEUTRAL = frozenset({"answer_chars_p50", "answer_chars_p95"})
"""Metrics whose rise is a loss, and those that are neither better nor worse (answer length)."""


@dataclass(frozen=True)
class CaseChange:
    corpus: str
    id: str
    question: str
    total: float
    deltas: dict[str, float]


@dataclass
class Comparison:
    base: Run
    new: Run
    metric_deltas: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """corpus (and `macro`) → metric key → NEW − BASE (None when either is n/a)."""
    regressed: list[CaseChange] = field(default_factory=list)
    improved: list[CaseChange] = field(default_factory=list)
    mixed: list[CaseChange] = field(default_factory=list)
    """Cases with changes that cancel out (one figure up, another down by as much)."""
    matched: int = 0
    unmatched: int = 0
    """Cases compared, and cases present in only one of the runs (not compared)."""


def delta(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(b) - float(a)
    return None


def case_deltas(base: dict[str, Any], new: dict[str, Any]) -> dict[str, float]:
    """The figures of one case that changed, NEW − BASE."""
    out: dict[str, float] = {}
    if new.get("answerable"):
        for label, key in CASE_METRICS:
            d = delta(base.get(key), new.get(key))
            if d:
                out[label] = d
    else:
        d = float(bool(new.get("abstained"))) - float(bool(base.get("abstained")))
        if d:
            out["abstained (unanswerable)"] = d
    d = float(bool(new.get("route_correct"))) - float(bool(base.get("route_correct")))
    if d:
        out["route correct"] = d
    return out


def compare(base: Run, new: Run) -> Comparison:
    result = Comparison(base, new)
    names = corpus_names([base, new])
    for corpus in [*names, MACRO]:
        a, b = base.summary(corpus), new.summary(corpus)
        result.metric_deltas[corpus] = {key: delta(a.get(key), b.get(key)) for _, key in METRICS}
    for corpus in names:
        before = {r["id"]: r for r in base.rows(corpus)}
        after = {r["id"]: r for r in new.rows(corpus)}
        result.unmatched += len(before.keys() ^ after.keys())
        for cid in before.keys() & after.keys():
            result.matched += 1
            deltas = case_deltas(before[cid], after[cid])
            if not deltas:
                continue
            total = round(sum(deltas.values()), 9)
            change = CaseChange(corpus, cid, str(after[cid].get("question") or ""), total, deltas)
            (result.regressed if total < 0 else result.improved if total > 0 else result.mixed).append(change)
    result.regressed.sort(key=lambda c: (c.total, c.corpus, c.id))
    result.improved.sort(key=lambda c: (-c.total, c.corpus, c.id))
    result.mixed.sort(key=lambda c: (c.corpus, c.id))
    return result
