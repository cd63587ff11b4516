"""Choose the relevance gate's thresholds on the dev splits of every corpus (SPEC §10), leave-one-corpus-out.

Reads eval reports (`lotsman eval --suite dev --out FILE.json`, or one per corpus) whose cases carry the gate's
`signals`, re-decides every case under a grid of thresholds with the same pure `decide` the graph uses:

    python -m evals.gate_calibration out/eval-dev.json          # the setting chosen on every corpus together
    python -m evals.gate_calibration --loco out/eval-dev.json   # chosen on all corpora but one, scored on it
    python -m evals.train_gate out/eval-dev.json                # a learned gate, leave-one-corpus-out, beside them

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evals.holdout import refuse_report
from nodes.context_retrieval.gate import GateSignals, GateThresholds, decide, signals_from_json
from stores.errors import LotsmanError

# evenly spaced, so that "the middle of a tie" is the middle of the gap the data leaves, not of the grid
SIMILARITY = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
CANDIDATE_COVERAGE = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
CROSS_COVERAGE = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
CROSS_SIMILARITY = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)
COST = 2.0
"""How many answered unanswerable questions one refused answerable question is worth."""

Cases = list[tuple[bool, GateSignals]]


def read_reports(paths: Sequence[Path], *, by: str) -> list[tuple[str, dict[str, Any]]]:
    """(corpus, its eval report) of every report file: a suite report (`lotsman eval --suite dev`) holds one per
    corpus, a one-dataset report is named by its file. Held-out reports are refused by name before reading and
    by content after (`evals.holdout.refuse_report`, `by` names the caller in the error).

    Raises:
        LotsmanError: a file that is not JSON or not an eval report; a held-out report (`HoldoutError`).
        OSError: a report that cannot be read.
    """
    reports: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        refuse_report(None, path, by=by)  # by its name, before reading it
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # a truncated or non-UTF-8 file
            raise LotsmanError(f"{path}: not JSON ({exc}); pass the file `lotsman eval --out` wrote") from exc
        refuse_report(data, path, by=by)
        suite = isinstance(data, dict) and isinstance(data.get("corpora"), dict)
        found = list(data["corpora"].items()) if suite else [(path.stem, data)]
        for name, report in found:
            if not isinstance(report, dict) or not isinstance(report.get("results"), list):
                raise LotsmanError(f"{path}: not an eval report (no results for {name}); pass the file "
                                   "`lotsman eval --out` wrote")
        reports += found
    return reports


def load_cases(paths: list[Path]) -> dict[str, Cases]:
    """corpus → [(answerable, signals)] for every case whose report carries signals.

    Raises:
        LotsmanError: a report whose signals predate `candidate_coverage` (re-run the eval): re-deciding
            it would refuse every request as if no key term had been found; a file that is not JSON or not
            an eval report; a held-out report (`evals.holdout.HoldoutError`).
        OSError: a report that cannot be read.
    """
    out: dict[str, Cases] = {}
    for name, report in read_reports(paths, by="gate_calibration"):
        cases = []
        for case in report["results"]:
            raw = (case.get("retrieval") or {}).get("signals")
            if not raw:
                continue
            if "candidate_coverage" not in raw:
                raise LotsmanError(f"{name}: the report's gate signals have no candidate_coverage; run the eval "
                                   "again with this version")
            cases.append((bool(case["answerable"]), signals_from_json(raw)))
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
    thresholds and the hard rules alone (the learned gate's table: `python -m evals.train_gate`)."""
    chosen = loco_rules(corpora, cost)
    for held, (t, _) in chosen.items():
        print(f"chosen without {held}: {show(t)}")
    hard_only = GateThresholds(candidate_coverage_pass=0.0, cross_similarity_pass=0.0, no_terms_similarity_pass=0.0)
    tables = {"rules, chosen leave-one-corpus-out": {n: s for n, (_, s) in chosen.items()},
              "rules, shipped thresholds": {n: score(c, GateThresholds()) for n, c in corpora.items()},
              "hard rules only (no rows, an absent name)": {n: score(c, hard_only) for n, c in corpora.items()}}
    for label, scores in tables.items():
        value, answered = objective(scores, cost)
        print(f"{label}: macro worth {value:.3f}, answered {answered:.3f}")
        for name, s in scores.items():
            print("   ", name, rounded(s, cost))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
