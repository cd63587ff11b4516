"""Choose the relevance gate's thresholds on the dev splits of every corpus together (SPEC §10).

Reads eval reports (`lotsman eval --suite dev --out FILE.json`, or one per corpus) whose cases carry the gate's
`signals`, re-decides every case under a grid of thresholds with the same pure `decide` the graph uses,
and ranks the settings by the worst corpus, then the macro average:

    python -m evals.gate_calibration out/eval-dev.json

Per corpus it scores abstention precision and recall (n/a when undefined) and the share of answerable
cases answered; a setting is as good as its weakest corpus (a gate calibrated on one corpus is what the
first wave shipped). Run it on dev reports only; check the chosen setting on the held-out splits.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

from nodes.context_retrieval.gate import GateSignals, GateThresholds, decide

COVERAGE = (0.10, 0.15, 0.2, 0.25, 0.3, 0.4)
SIMILARITY = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85)
CROSS = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8)


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
            raw = {**raw, "absent_names": tuple(raw.get("absent_names") or ())}
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


def _worst(scores: dict[str, dict[str, float | None]]) -> float:
    values = [v for s in scores.values() for v in s.values() if v is not None]
    return min(values) if values else 0.0


def _macro(scores: dict[str, dict[str, float | None]]) -> float:
    values = [v for s in scores.values() for v in s.values() if v is not None]
    return statistics.mean(values) if values else 0.0


def rank_settings(corpora: dict[str, list[tuple[bool, GateSignals]]]) -> list[tuple[float, float, GateThresholds,
                                                                                 dict[str, Any]]]:
    ranked = []
    for cov, sim, cross in itertools.product(COVERAGE, SIMILARITY, CROSS):
        if cross > sim:
            continue
        t = GateThresholds(coverage_pass=cov, similarity_pass=sim, cross_similarity_pass=cross)
        scores = {name: score(cases, t) for name, cases in corpora.items()}
        ranked.append((_worst(scores), _macro(scores), t, scores))
    ranked.sort(key=lambda r: (-r[0], -r[1]))
    return ranked


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args(argv)
    corpora = load_cases(args.reports)
    current = GateThresholds()
    rows = [(_worst(s), _macro(s), t, s) for t, s in
            [(current, {n: score(c, current) for n, c in corpora.items()})]]
    for label, ranked in (("current", rows), ("best", rank_settings(corpora)[: args.top])):
        for worst, macro, t, scores in ranked:
            print(f"{label}: coverage {t.coverage_pass} similarity {t.similarity_pass} cross {t.cross_similarity_pass}"
                  f"  worst {worst:.3f} macro {macro:.3f}")
            for name, s in scores.items():
                print("   ", name, {k: (round(v, 3) if v is not None else "n/a") for k, v in s.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
