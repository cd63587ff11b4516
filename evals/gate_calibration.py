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
    passed = [(answerable, decide(s, t).passed) for answerable, s in cases]
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
    args = ap.parse_args(argv)
    corpora = load_cases(args.reports)
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


if __name__ == "__main__":
    raise SystemExit(main())
