"""Choose the relevance gate's thresholds on the dev splits of every corpus (SPEC §10), leave-one-corpus-out.

Reads eval reports (`lotsman eval --suite dev --out FILE.json`, or one per corpus) whose cases carry the gate's
`signals`, re-decides every case under a grid of thresholds with the same pure `decide` the graph uses:

    python -m evals.gate_calibration out/eval-dev.json          # the setting chosen on every corpus together
    python -m evals.gate_calibration --loco out/eval-dev.json   # chosen on all corpora but one, scored on it

A setting is worth, per corpus, the share of unanswerable cases it refuses minus `--cost` (default 2) times
the answerable cases it refuses, counted in the same unit (per unanswerable case): a refused answerable
question costs more than an answered unanswerable one (answered, it still shows its low confidence in
`lotsman gaps`). Settings are ranked by that worth averaged over corpora (every corpus weighs the same),
then by the share of answerable cases answered, then by the fewest refusals; among settings still tied,
the one nearest the middle of the tie. F1 of abstention is not the objective: it scores a gate that refuses
nothing on a corpus at 0 and one that refuses five answerable questions to catch one unanswerable above it.
Run it on dev reports only; check the chosen setting on the held-out splits. A held-out report is refused in
code (`evals.holdout.refuse_report`): a file named held-out, `split: holdout` (the runner records it), a
corpus report of a held-out dataset, or any held-out case id among its results.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.holdout import refuse_report
from nodes.context_retrieval.gate import GateSignals, GateThresholds, decide
from stores.errors import LotsmanError

# evenly spaced, so that "the middle of a tie" is the middle of the gap the data leaves, not of the grid
SIMILARITY = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
CANDIDATE_COVERAGE = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
CROSS_COVERAGE = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
CROSS_SIMILARITY = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)
COST = 2.0
"""How many answered unanswerable questions one refused answerable question is worth."""

Cases = list[tuple[bool, GateSignals]]


def load_cases(paths: list[Path]) -> dict[str, Cases]:
    """corpus → [(answerable, signals)] for every case whose report carries signals.

    Raises:
        LotsmanError: a report whose signals predate `candidate_coverage` (re-run the eval): re-deciding
            it would refuse every request as if no key term had been found; a file that is not JSON or not
            an eval report; a held-out report (`evals.holdout.HoldoutError`).
        OSError: a report that cannot be read.
    """
    out: dict[str, Cases] = {}
    reports: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        refuse_report(None, path, by="gate_calibration")  # by its name, before reading it
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # a truncated or non-UTF-8 file
            raise LotsmanError(f"{path}: not JSON ({exc}); pass the file `lotsman eval --out` wrote") from exc
        refuse_report(data, path, by="gate_calibration")
        # a suite report (`lotsman eval --suite dev`) holds one report per corpus
        suite = isinstance(data, dict) and isinstance(data.get("corpora"), dict)
        found = list(data["corpora"].items()) if suite else [(path.stem, data)]
        for name, report in found:
            if not isinstance(report, dict) or not isinstance(report.get("results"), list):
                raise LotsmanError(f"{path}: not an eval report (no results for {name}); pass the file "
                                   "`lotsman eval --out` wrote")
        reports += found
    known = {f.name for f in dataclasses.fields(GateSignals)}  # reports may predate a signal's removal
    for name, report in reports:
        cases = []
        for case in report["results"]:
            raw = (case.get("retrieval") or {}).get("signals")
            if not raw:
                continue
            if "candidate_coverage" not in raw:
                raise LotsmanError(f"{name}: the report's gate signals have no candidate_coverage; run the eval "
                                   "again with this version")
            raw = {k: v for k, v in raw.items() if k in known} | {"absent_names": tuple(raw.get("absent_names") or ())}
            cases.append((bool(case["answerable"]), GateSignals(**raw)))
        out[name] = cases
    return out


def score(cases: Cases, t: GateThresholds) -> dict[str, float | None]:
    return score_with(cases, lambda s: decide(s, t).passed)


def score_with(cases: Cases, passes: Callable[[GateSignals], bool]) -> dict[str, float | None]:
    """Abstention precision and recall, the share of answerable cases answered and the counts behind them
    when `passes` decides."""
    passed = [(answerable, passes(s)) for answerable, s in cases]
    abstained = [a for a, p in passed if not p]
    unanswerable = [p for a, p in passed if not a]
    answerable = [p for a, p in passed if a]
    return {
        "abst_p": sum(not a for a in abstained) / len(abstained) if abstained else None,
        "abst_r": sum(not p for p in unanswerable) / len(unanswerable) if unanswerable else None,
        "answered": sum(answerable) / len(answerable) if answerable else None,
        "refused_unanswerable": float(sum(not p for p in unanswerable)),
        "refused_answerable": float(sum(not p for p in answerable)),
        "unanswerable": float(len(unanswerable)),
    }


def worth(s: dict[str, float | None], cost: float = COST) -> float:
    """Refused unanswerable cases minus `cost` × refused answerable ones, per unanswerable case."""
    caught, refused = s["refused_unanswerable"] or 0.0, s["refused_answerable"] or 0.0
    return (caught - cost * refused) / max(1.0, s["unanswerable"] or 0.0)


def objective(scores: dict[str, dict[str, float | None]], cost: float = COST) -> tuple[float, float]:
    """(macro worth, macro share of answerable cases answered)."""
    value = statistics.mean(worth(s, cost) for s in scores.values()) if scores else 0.0
    answered = [s["answered"] for s in scores.values() if s["answered"] is not None]
    return value, statistics.mean(answered) if answered else 0.0


def grid() -> list[GateThresholds]:
    return [GateThresholds(similarity_pass=sim, candidate_coverage_pass=found, cross_coverage_pass=xcov,
                           cross_similarity_pass=xsim)
            for sim, found, xcov, xsim in itertools.product(SIMILARITY, CANDIDATE_COVERAGE, CROSS_COVERAGE,
                                                             CROSS_SIMILARITY)]


def choose(corpora: dict[str, Cases], cost: float = COST) -> GateThresholds:
    """The best setting on `corpora` (module docstring); ties go to the fewest refusals, then to the setting
    nearest the per-threshold median of the tie (the middle of the gap the data leaves)."""
    ranked = []
    for t in grid():
        scores = {name: score(cases, t) for name, cases in corpora.items()}
        refusals = sum((s["refused_answerable"] or 0) + (s["refused_unanswerable"] or 0) for s in scores.values())
        value, answered = objective(scores, cost)
        ranked.append(((round(value, 9), round(answered, 9), -refusals), t))
    best = max(key for key, _ in ranked)
    tied = [t for key, t in ranked if key == best]
    fields = [f.name for f in dataclasses.fields(GateThresholds)]
    middle = {f: statistics.median_low([getattr(t, f) for t in tied]) for f in fields}
    return min(tied, key=lambda t: sum(abs(getattr(t, f) - middle[f]) for f in fields))


def show(t: GateThresholds) -> str:
    return (f"similarity {t.similarity_pass}, candidate coverage {t.candidate_coverage_pass}, cross-lingual "
            f"coverage {t.cross_coverage_pass} / similarity {t.cross_similarity_pass}")


def rounded(s: dict[str, float | None], cost: float) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for k in ("abst_p", "abst_r", "answered"):
        v = s[k]
        shown[k] = round(float(v), 3) if v is not None else "n/a"
    return shown | {"worth": round(worth(s, cost), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--cost", type=float, default=COST,
                    help="answered unanswerable questions one refused answerable question is worth (default 2)")
    ap.add_argument("--loco", action="store_true",
                    help="choose on all corpora but one and score the one left out, for each corpus")
    args = ap.parse_args(argv)
    try:
        corpora = load_cases(args.reports)
    except (LotsmanError, OSError, ValueError) as exc:  # a missing file, a report of another shape
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.loco:
        return print_loco(corpora, args.cost)
    for label, t in (("shipped", GateThresholds()), ("chosen", choose(corpora, args.cost))):
        scores = {n: score(c, t) for n, c in corpora.items()}
        value, answered = objective(scores, args.cost)
        print(f"{label}: {show(t)}: macro worth {value:.3f}, answered {answered:.3f}")
        for name, s in scores.items():
            print("   ", name, rounded(s, args.cost))
    return 0


def loco_rules(corpora: dict[str, Cases], cost: float = COST
               ) -> dict[str, tuple[GateThresholds, dict[str, float | None]]]:
    """Per corpus: the setting chosen on the others, and its scores on the corpus left out."""
    out = {}
    for held in corpora:
        t = choose({n: c for n, c in corpora.items() if n != held}, cost)
        out[held] = (t, score(corpora[held], t))
    return out


def print_loco(corpora: dict[str, Cases], cost: float = COST) -> int:
    """Per corpus left out: the thresholds the others chose and their scores on it; beside them the shipped
    thresholds, the hard rules alone, and a learned (logistic) gate without and with the ranker's scores."""
    chosen = loco_rules(corpora, cost)
    for held, (t, _) in chosen.items():
        print(f"chosen without {held}: {show(t)}")
    hard_only = GateThresholds(candidate_coverage_pass=0.0, cross_similarity_pass=0.0, no_terms_similarity_pass=0.0)
    tables = {"rules, chosen leave-one-corpus-out": {n: s for n, (_, s) in chosen.items()},
              "rules, shipped thresholds": {n: score(c, GateThresholds()) for n, c in corpora.items()},
              "hard rules only (no rows, an absent name)": {n: score(c, hard_only) for n, c in corpora.items()},
              "learned, gate signals": loco_learned(corpora, with_ranker=False, cost=cost),
              "learned, + ranker scores": loco_learned(corpora, with_ranker=True, cost=cost)}
    for label, scores in tables.items():
        value, answered = objective(scores, cost)
        print(f"{label}: macro worth {value:.3f}, answered {answered:.3f}")
        for name, s in scores.items():
            print("   ", name, rounded(s, cost))
    return 0


# ---- learned gate: logistic regression over the signals, chosen by leave-one-corpus-out (issue 29 item 5) ----

def signal_vector(s: GateSignals) -> list[float]:
    """The soft signals a learned gate weighs (the hard rules — no rows, a named file found, a name absent
    from the index, an overview — decide before it)."""
    cross = 1.0 if s.cross_lingual else 0.0
    top = s.ranker_top if s.ranker_top is not None else 0.0
    margin = s.ranker_margin if s.ranker_margin is not None else 0.0
    return [s.coverage * (1 - cross), s.coverage * cross, s.best_similarity * (1 - cross),
            s.best_similarity * cross, cross, 1.0 if s.has_terms else 0.0, s.candidate_coverage, top, margin]


RANKER_COLUMNS = 2
"""The last columns of `signal_vector`: the learned ranker's top score and margin."""


def hard_verdict(s: GateSignals) -> bool | None:
    if not s.rows:
        return False
    if s.named_file_found:
        return True
    if s.absent_names:
        return False
    if s.overview:
        return True
    return None


def fit_logistic(x: Any, y: Any, l2: float = 1.0, steps: int = 3000, lr: float = 0.1) -> Any:
    """Weights (bias last) of an L2-regularised logistic regression, by plain gradient descent (numpy)."""
    import numpy as np

    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    pos = max(1.0, float(y.sum()))
    neg = max(1.0, float(len(y) - y.sum()))
    weight = np.where(y == 1, len(y) / (2 * pos), len(y) / (2 * neg))  # classes weigh the same
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(xb @ w)))
        grad = xb.T @ ((p - y) * weight) / len(y) + l2 * np.r_[w[:-1], 0.0] / len(y)
        w -= lr * grad
    return w


def learned_passes(w: Any, s: GateSignals, threshold: float) -> bool:
    import numpy as np

    hard = hard_verdict(s)
    if hard is not None:
        return hard
    z = float(np.dot(np.r_[signal_vector(s), 1.0], w))
    return 1 / (1 + np.exp(-z)) >= threshold


def loco_learned(corpora: dict[str, Cases], *, with_ranker: bool = True, cost: float = COST
                 ) -> dict[str, dict[str, float | None]]:
    """Leave-one-corpus-out: fit on the other corpora's soft cases (answerable = pass), choose the threshold
    on them by the same objective as the rules, score the held corpus."""
    import numpy as np

    width = len(signal_vector(GateSignals()))

    def soft(cases: Cases) -> tuple[Any, Any]:
        rows = [(a, s) for a, s in cases if hard_verdict(s) is None]
        x = np.array([signal_vector(s) for _, s in rows]) if rows else np.zeros((0, width))
        if not with_ranker and len(x):
            x[:, width - RANKER_COLUMNS:] = 0.0
        return x, np.array([1.0 if a else 0.0 for a, _ in rows])

    out: dict[str, dict[str, float | None]] = {}
    for held in corpora:
        train = {n: c for n, c in corpora.items() if n != held}
        xs, ys = zip(*(soft(c) for c in train.values()), strict=True)
        w = fit_logistic(np.vstack(xs), np.concatenate(ys))
        best: tuple[tuple[float, float], float] | None = None
        for threshold in np.arange(0.0, 0.96, 0.05):  # 0.0 passes every soft case
            passes = gate_of(w, float(threshold))
            got = objective({n: score_with(c, passes) for n, c in train.items()}, cost)
            if best is None or got > best[0]:
                best = (got, float(threshold))
        out[held] = score_with(corpora[held], gate_of(w, best[1] if best else 0.5))
    return out


def gate_of(w: Any, threshold: float) -> Callable[[GateSignals], bool]:
    return lambda s: learned_passes(w, s, threshold)


if __name__ == "__main__":
    raise SystemExit(main())
