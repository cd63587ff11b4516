"""Choose the relevance gate's thresholds on the dev splits of every corpus together (SPEC §10).

Reads eval reports (`lotsman eval --suite dev --out FILE.json`, or one per corpus) whose cases carry the gate's
`signals`, re-decides every case under a grid of thresholds with the same pure `decide` the graph uses,
and ranks the settings by the worst corpus, then the macro average:

    python -m evals.gate_calibration out/eval-dev.json

Per corpus it scores abstention precision and recall (n/a when undefined) and the share of answerable
cases answered. Settings are ranked by the macro F1 of abstention over corpora (every corpus weighs the
same: a gate calibrated on one corpus is what the first wave shipped), then by the macro share answered;
a setting that answers fewer answerable cases than the current one is not offered. Run it on dev
reports only; check the chosen setting on the held-out splits.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodes.context_retrieval.gate import GateSignals, GateThresholds, decide

COVERAGE = (0.1, 0.15, 0.2, 0.3, 0.4, 0.5)
SIMILARITY = (0.5, 0.6, 0.7, 0.8)
CROSS_COVERAGE = (0.0, 0.1, 0.15, 0.2, 0.3, 0.4)
CROSS_SIMILARITY = (0.3, 0.4, 0.5, 0.6, 0.8)


def load_cases(paths: list[Path]) -> dict[str, list[tuple[bool, GateSignals]]]:
    """corpus → [(answerable, signals)] for every case whose report carries signals."""
    out: dict[str, list[tuple[bool, GateSignals]]] = {}
    reports: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        # a suite report (`lotsman eval --suite dev`) holds one report per corpus
        reports += list(data["corpora"].items()) if "corpora" in data else [(path.stem, data)]
    for name, report in reports:
        cases = []
        for case in report["results"]:
            raw = (case.get("retrieval") or {}).get("signals")
            if raw is None:
                continue
            known = {f.name for f in dataclasses.fields(GateSignals)}  # reports may predate a signal's removal
            raw = {k: v for k, v in raw.items() if k in known} | {"absent_names": tuple(raw.get("absent_names") or ())}
            cases.append((bool(case["answerable"]), GateSignals(**raw)))
        out[name] = cases
    return out


def score(cases: list[tuple[bool, GateSignals]], t: GateThresholds) -> dict[str, float | None]:
    return score_with(cases, lambda s: decide(s, t).passed)


def score_with(cases: list[tuple[bool, GateSignals]], passes: Callable[[GateSignals], bool]
               ) -> dict[str, float | None]:
    """Abstention precision and recall and the share of answerable cases answered when `passes` decides."""
    passed = [(answerable, passes(s)) for answerable, s in cases]
    abstained = [a for a, p in passed if not p]
    unanswerable = [p for a, p in passed if not a]
    answerable = [p for a, p in passed if a]
    return {
        "abst_p": sum(not a for a in abstained) / len(abstained) if abstained else None,
        "abst_r": sum(not p for p in unanswerable) / len(unanswerable) if unanswerable else None,
        "answered": sum(answerable) / len(answerable) if answerable else None,
    }


def _f1(s: dict[str, float | None]) -> float:
    p, r = s["abst_p"] or 0.0, s["abst_r"] or 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


def objective(scores: dict[str, dict[str, float | None]]) -> tuple[float, float]:
    """(macro abstention F1, macro share of answerable cases answered)."""
    f1 = statistics.mean(_f1(s) for s in scores.values()) if scores else 0.0
    answered = [s["answered"] for s in scores.values() if s["answered"] is not None]
    return f1, statistics.mean(answered) if answered else 0.0


def rank_settings(corpora: dict[str, list[tuple[bool, GateSignals]]], floor: float = 0.0
                  ) -> list[tuple[tuple[float, float], GateThresholds, dict[str, Any]]]:
    ranked = []
    for cov, sim, xcov, xsim in itertools.product(COVERAGE, SIMILARITY, CROSS_COVERAGE, CROSS_SIMILARITY):
        t = GateThresholds(coverage_pass=cov, similarity_pass=sim, cross_coverage_pass=xcov,
                           cross_similarity_pass=xsim)
        scores = {name: score(cases, t) for name, cases in corpora.items()}
        goal = objective(scores)
        if goal[1] >= floor:
            ranked.append((goal, t, scores))
    ranked.sort(key=lambda r: (-r[0][0], -r[0][1]))
    return ranked


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--loco", action="store_true",
                    help="compare the rules with a learned gate by leave-one-corpus-out instead")
    args = ap.parse_args(argv)
    corpora = load_cases(args.reports)
    if args.loco:
        return print_loco(corpora)
    current = GateThresholds()
    now = {n: score(c, current) for n, c in corpora.items()}
    rows = [(objective(now), current, now)]
    for label, ranked in (("current", rows), ("best", rank_settings(corpora, floor=objective(now)[1])[: args.top])):
        for (f1, answered), t, scores in ranked:
            print(f"{label}: coverage {t.coverage_pass} similarity {t.similarity_pass} cross-lingual coverage "
                  f"{t.cross_coverage_pass} similarity {t.cross_similarity_pass}: macro abstention F1 {f1:.3f}, "
                  f"answered {answered:.3f}")
            for name, s in scores.items():
                print("   ", name, {k: (round(v, 3) if v is not None else "n/a") for k, v in s.items()})
    return 0



def print_loco(corpora: dict[str, list[tuple[bool, GateSignals]]]) -> int:
    """Per held-out corpus: the rules, a learned gate on the gate's signals, and one that also reads the
    learned ranker's top score and margin."""
    tables = {"rules": {n: score(c, GateThresholds()) for n, c in corpora.items()},
              "learned, gate signals": loco_learned(corpora, with_ranker=False),
              "learned, + ranker scores": loco_learned(corpora, with_ranker=True)}
    for label, scores in tables.items():
        f1, answered = objective(scores)
        print(f"{label}: macro abstention F1 {f1:.3f}, answered {answered:.3f}")
        for name, s in scores.items():
            print("   ", name, {k: (round(v, 3) if v is not None else "n/a") for k, v in s.items()})
    return 0


# ---- learned gate: logistic regression over the signals, chosen by leave-one-corpus-out (issue 29 item 5) ----

def signal_vector(s: GateSignals) -> list[float]:
    """The soft signals a learned gate weighs (the hard rules — no rows, a named file found, a name absent
    from the index, an overview — decide before it)."""
    cross = 1.0 if s.cross_lingual else 0.0
    top = s.ranker_top if s.ranker_top is not None else 0.0
    margin = s.ranker_margin if s.ranker_margin is not None else 0.0
    return [s.coverage * (1 - cross), s.coverage * cross, s.best_similarity * (1 - cross),
            s.best_similarity * cross, cross, 1.0 if s.has_terms else 0.0, top, margin]


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


def loco_learned(corpora: dict[str, list[tuple[bool, GateSignals]]], *, with_ranker: bool = True
                 ) -> dict[str, dict[str, float | None]]:
    """Leave-one-corpus-out: fit on the other corpora's soft cases (answerable = pass), choose the threshold
    on them (macro F1, answered no lower than the rules'), score the held corpus."""
    import numpy as np

    def soft(cases: list[tuple[bool, GateSignals]]) -> tuple[Any, Any]:
        rows = [(a, s) for a, s in cases if hard_verdict(s) is None]
        x = np.array([signal_vector(s) for _, s in rows]) if rows else np.zeros((0, 8))
        if not with_ranker and len(x):
            x[:, 6:] = 0.0
        return x, np.array([1.0 if a else 0.0 for a, _ in rows])

    out: dict[str, dict[str, float | None]] = {}
    for held in corpora:
        train = {n: c for n, c in corpora.items() if n != held}
        xs, ys = zip(*(soft(c) for c in train.values()), strict=True)
        w = fit_logistic(np.vstack(xs), np.concatenate(ys))
        rules = objective({n: score(c, GateThresholds()) for n, c in train.items()})
        best: tuple[tuple[float, float], float] | None = None
        for threshold in np.arange(0.05, 0.96, 0.05):
            got = objective({n: score_with(c, lambda s, t=threshold, w=w: learned_passes(w, s, t))
                             for n, c in train.items()})
            if got[1] >= rules[1] - 1e-9 and (best is None or got > best[0]):
                best = (got, float(threshold))
        threshold = best[1] if best else 0.5
        out[held] = score_with(corpora[held], lambda s, t=threshold, w=w: learned_passes(w, s, t))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
