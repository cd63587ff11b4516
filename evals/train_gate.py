"""A learned relevance gate beside the hand rules, leave-one-corpus-out, on dev eval reports (issue 41 item 3).

    python -m evals.train_gate out/eval-dev.json [out/eval-urllib3.json ...]

Reads the gate's recorded `signals` of every case (`lotsman eval --suite dev --out FILE.json`, or one report
per corpus). The hard verdicts decide first (`gate.hard_verdict`: nothing found, the named file, a name the
index never mentions, an overview); the rest go to a logistic regression (class-balanced, L2, standardised)
over `FEATURES`: key-term coverage among the candidates, of the top rows, of one row, of one file and of the
top file (in the evidence's language and across), the best similarity and its margin over the tenth, the
language pair. For each corpus the model is fitted on the others, its threshold chosen on them by
`gate_calibration`'s objective (refused unanswerable minus `--cost` × refused answerable, per unanswerable
case, averaged over corpora; then the share answered) and scored on the corpus left out; the L2 strength
with the best macro of those scores is reported. The table gives per corpus left out: abstention precision,
recall over absent topics and over near misses, answerable cases refused and the worth, beside the hard
verdicts alone and the shipped rules (`gate.decide`).

Nothing is written: on the dev reports of 2026-12-02 the learned gate does not beat the rules (see
docs/logic/context_retrieval.md, "Relevance gate"), so the graph keeps them. A held-out report is refused in
code (`evals.holdout.refuse_report`).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.gate_calibration import COST, objective, read_reports, score_with, worth
from evals.metrics import UNANSWERABLE_KINDS
from nodes.context_retrieval.gate import GateSignals, GateThresholds, decide, hard_verdict, signals_from_json
from stores.errors import LotsmanError


def _missing_terms(s: GateSignals) -> float:
    """Key terms found nowhere among the candidates (capped at 3)."""
    return min(3.0, round(s.terms * (1.0 - s.candidate_coverage)))


FEATURES: dict[str, Callable[[GateSignals], float]] = {
    # how much of the question the candidates hold, in the evidence's language (stems cannot match across)
    "candidate_coverage_same": lambda s: s.candidate_coverage * (not s.cross_lingual),
    "top_coverage_same": lambda s: s.coverage * (not s.cross_lingual),
    "row_coverage_same": lambda s: s.row_coverage * (not s.cross_lingual),
    "file_coverage_same": lambda s: s.file_coverage * (not s.cross_lingual),
    "top_file_coverage_same": lambda s: s.top_file_coverage * (not s.cross_lingual),
    "missing_terms_same": lambda s: _missing_terms(s) * (not s.cross_lingual),
    # across languages only names, identifiers and numbers can match
    "candidate_coverage_cross": lambda s: s.candidate_coverage * s.cross_lingual,
    "row_coverage_cross": lambda s: s.row_coverage * s.cross_lingual,
    # how near the nearest passage is, and whether it stands out from the tenth
    "best_similarity": lambda s: s.best_similarity,
    "similarity_margin": lambda s: s.best_similarity - s.similarity_10th,
    "best_similarity_cross": lambda s: s.best_similarity * s.cross_lingual,
    # the language pair
    "cross_lingual": lambda s: float(s.cross_lingual),
    "query_ru": lambda s: float(s.query_ru),
    "evidence_ru": lambda s: float(s.evidence_ru),
}
"""Name → the feature read from `GateSignals`."""


def feature_vector(s: GateSignals) -> list[float]:
    return [float(f(s)) for f in FEATURES.values()]


@dataclass(frozen=True)
class GateModel:
    """Standardised features, their weights, a bias and the threshold on the probability of "answerable"."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float = 0.5

    def probability(self, s: GateSignals) -> float:
        z = self.bias + sum(w * (x - m) / sd for w, x, m, sd in
                            zip(self.weights, feature_vector(s), self.mean, self.scale, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def passes(self, s: GateSignals) -> bool:
        return self.probability(s) >= self.threshold


def fit_logistic(x: Any, y: Any, l2: float = 1.0, steps: int = 4000, lr: float = 0.2) -> Any:
    """Weights (bias last) of an L2-regularised, class-balanced logistic regression by plain gradient descent
    from zeros (numpy; deterministic)."""
    import numpy as np

    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    pos = max(1.0, float(y.sum()))
    neg = max(1.0, float(len(y) - y.sum()))
    weight = np.where(y == 1, len(y) / (2 * pos), len(y) / (2 * neg))
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(xb @ w)))
        w -= lr * (xb.T @ ((p - y) * weight) / len(y) + l2 * np.r_[w[:-1], 0.0] / len(y))
    return w


L2 = (0.1, 1.0, 10.0, 100.0)
"""L2 strengths tried (leave-one-corpus-out chooses one)."""
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))


@dataclass(frozen=True)
class Case:
    id: str
    answerable: bool
    kind: str | None
    """`absent_topic`, `near_miss` or None (answerable, or an untagged unanswerable case)."""
    signals: GateSignals


def load_reports(paths: Sequence[Path]) -> dict[str, list[Case]]:
    """corpus → its cases that carry gate signals, corpora sorted.

    Raises:
        LotsmanError: not JSON, not an eval report, or a held-out report (`HoldoutError`).
        OSError: a report that cannot be read.
    """
    out: dict[str, list[Case]] = {}
    for name, report in read_reports(paths, by="train_gate"):
        cases = []
        for r in report["results"]:
            raw = (r.get("retrieval") or {}).get("signals")
            if not raw:
                continue
            if "row_coverage" not in raw:
                raise LotsmanError(f"{name}: the report's gate signals predate row_coverage; run the eval again")
            kind = next((k for k in UNANSWERABLE_KINDS if k in (r.get("tags") or ())), None)
            cases.append(Case(str(r["id"]), bool(r["answerable"]), kind, signals_from_json(raw)))
        out[name] = cases
    return dict(sorted(out.items()))


def fit(corpora: dict[str, list[Case]], l2: float, cost: float = COST) -> GateModel:
    """The model fitted on every soft case of `corpora`, its threshold chosen on them (ties keep the lower
    threshold: fewer refusals)."""
    import numpy as np

    soft = [c for cases in corpora.values() for c in cases if hard_verdict(c.signals) is None]
    x = np.array([feature_vector(c.signals) for c in soft], dtype=float)
    y = np.array([1.0 if c.answerable else 0.0 for c in soft])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    w = fit_logistic((x - mean) / scale, y, l2=l2)
    model = GateModel(tuple(map(float, mean)), tuple(map(float, scale)), tuple(map(float, w[:-1])), float(w[-1]))
    best: tuple[tuple[float, float], float] | None = None
    for t in THRESHOLDS:
        got = objective({n: score_with(_pairs(c), gate_of(_with_threshold(model, t))) for n, c in corpora.items()},
                        cost)
        got = (round(got[0], 9), round(got[1], 9))
        if best is None or got > best[0]:
            best = (got, t)
    return _with_threshold(model, best[1] if best else 0.5)


def _with_threshold(m: GateModel, t: float) -> GateModel:
    return GateModel(m.mean, m.scale, m.weights, m.bias, t)


def _pairs(cases: Sequence[Case]) -> list[tuple[bool, GateSignals]]:
    return [(c.answerable, c.signals) for c in cases]


def gate_of(model: GateModel | None) -> Callable[[GateSignals], bool]:
    """The gate's verdict: the hard rules, then the model (None: the hard rules alone pass the rest)."""
    def passes(s: GateSignals) -> bool:
        hard = hard_verdict(s)
        if hard is not None:
            return hard.passed
        return True if model is None else model.passes(s)
    return passes


def kind_scores(cases: Sequence[Case], passes: Callable[[GateSignals], bool]) -> dict[str, Any]:
    """Abstention precision, recall over each kind, answerable cases refused, and the worth."""
    refused = [c for c in cases if not passes(c.signals)]
    base = score_with(_pairs(cases), passes)
    out: dict[str, Any] = {"abst_p": sum(not c.answerable for c in refused) / len(refused) if refused else None}
    for kind in UNANSWERABLE_KINDS:
        of_kind = [c for c in cases if not c.answerable and c.kind == kind]
        out[f"r_{kind}"] = sum(1 for c in of_kind if c in refused) / len(of_kind) if of_kind else None
    out["abst_r"] = base["abst_r"]
    out["refused_answerable"] = int(base["refused_answerable"] or 0)
    out["worth"] = worth(base)
    return out


def loco(corpora: dict[str, list[Case]], l2: float, cost: float = COST) -> dict[str, tuple[GateModel, dict[str, Any]]]:
    """Per corpus: the model fitted (and thresholded) on the others, and its scores on the one left out."""
    out = {}
    for held in corpora:
        model = fit({n: c for n, c in corpora.items() if n != held}, l2, cost)
        out[held] = (model, kind_scores(corpora[held], gate_of(model)))
    return out


def select(corpora: dict[str, list[Case]], cost: float = COST
           ) -> tuple[float, dict[float, dict[str, tuple[GateModel, dict[str, Any]]]]]:
    """The L2 strength with the best leave-one-corpus-out macro worth (then the most answered), and every
    strength's folds."""
    folds = {l2: loco(corpora, l2, cost) for l2 in L2}

    def key(l2: float) -> tuple[float, float]:
        scores = [s for _, s in folds[l2].values()]
        return (round(statistics.mean(s["worth"] for s in scores), 9),
                -sum(s["refused_answerable"] for s in scores))
    return max(L2, key=key), folds


def _cell(v: Any) -> str:
    return "n/a" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def table(rows: dict[str, dict[str, Any]]) -> str:
    head = "| corpus | abstention P | R absent topics | R near misses | R all | answerable refused | worth |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for name, s in rows.items():
        lines.append(f"| {name} | {_cell(s['abst_p'])} | {_cell(s['r_absent_topic'])} | {_cell(s['r_near_miss'])} | "
                     f"{_cell(s['abst_r'])} | {s['refused_answerable']} | {s['worth']:.2f} |")
    mean = statistics.mean(s["worth"] for s in rows.values()) if rows else 0.0
    lines.append(f"macro worth {mean:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--cost", type=float, default=COST,
                    help="answered unanswerable questions one refused answerable question is worth (default 2)")
    args = ap.parse_args(argv)
    try:
        corpora = load_reports(args.reports)
    except (LotsmanError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(corpora) < 2:
        print("error: leave-one-corpus-out needs reports of two corpora at least", file=sys.stderr)
        return 2
    l2, folds = select(corpora, args.cost)
    print("hard verdicts only (no rows, the named file, an absent name, an overview):")
    print(table({n: kind_scores(c, gate_of(None)) for n, c in corpora.items()}))
    print("\nthe shipped rules (gate.decide):")
    print(table({n: kind_scores(c, lambda s: decide(s, GateThresholds()).passed) for n, c in corpora.items()}))
    print(f"\nlearned, leave-one-corpus-out (L2 {l2} selected of {', '.join(map(str, L2))}), thresholds "
          f"{', '.join(f'{n} {m.threshold:.2f}' for n, (m, _) in folds[l2].items())}:")
    print(table({n: s for n, (_, s) in folds[l2].items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
