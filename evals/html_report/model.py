"""The numbers the HTML report shows, computed from run JSONs (`lotsman eval --out`), nothing else.

Metric values are the JSON's own (per corpus, and `macro`); what the JSON holds only per case is derived
here by the eval's own functions: recall@k for k = 1…10 (`evals.metrics.recall_at_k` over each case's
`retrieved_files`), the fact budget (each case's `fact_trace`), latency distributions (`timings_ms`,
`wall_ms`), and each case's outcome and the step where each missed fact was lost.

The fact budget is a funnel: a fact counts at a step only when it reached that step and every earlier step
that is known (n/a steps skipped), so no step holds more facts than the one before it. Each step on its own
(`alone`) is counted too, for comparing with the JSON's per-step figures (evidence, reader, coverage).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.metrics import mean_or_none, recall_at_k
from stores.errors import LotsmanError

MACRO = "macro"
KS = tuple(range(1, 11))

STEPS = (
    ("all", "key facts of answerable cases"),
    ("top5", "of cases with a gold file in the top five"),
    ("candidates", "in the top five files (whole text)"),
    ("evidence", "in the evidence pack"),
    ("reader", "in what the LLM reads"),
    ("answer", "in the answer"),
)
"""The fact budget's steps, in order. `candidates`: the fact is stated anywhere in the first five retrieved files
(`evals/ceilings.py`, the fact trace's `files_top5`): the ceiling of reading those files; n/a for a run made
before the runner recorded it."""

FLOW = tuple(step for step, _ in STEPS[1:])
"""The steps a fact passes, in order (`all` is the whole, not a step)."""

LOST_AT = {"top5": "retrieval: no gold file in the top five",
           "candidates": "retrieval: not stated in the top five files", "evidence": "pack: not in the evidence",
           "reader": "reading: not in what the LLM reads", "answer": "answer: read, not stated"}
"""Where a missed fact dropped out: the first known step it did not reach."""

OUTCOMES = ("all facts", "some facts", "no facts", "n/a", "wrongly abstained", "rightly abstained",
            "answered unanswerable")
"""`n/a`: an answerable case with no key facts, so nothing to state (its coverage is None)."""


@dataclass(frozen=True)
class Run:
    label: str
    source: str
    data: dict[str, Any]

    @property
    def corpora(self) -> dict[str, dict[str, Any]]:
        return self.data.get("corpora") or {}

    def rows(self, corpus: str) -> list[dict[str, Any]]:
        """The cases of one corpus, or of every corpus for `macro`."""
        if corpus == MACRO:
            return [r for name in self.corpora for r in self.rows(name)]
        return list((self.corpora.get(corpus) or {}).get("results") or [])

    def summary(self, corpus: str) -> dict[str, Any]:
        return (self.data.get("macro") if corpus == MACRO else self.corpora.get(corpus)) or {}


def load_run(path: Path) -> Run:
    """A run JSON as written by `lotsman eval --out`; a missing or malformed file is one clear error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LotsmanError(f"run JSON not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LotsmanError(f"{path} is not a readable JSON file: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("corpora"), dict) or "macro" not in data:
        raise LotsmanError(f"{path} is not an eval report (written by `lotsman eval --out`): no corpora and macro")
    return Run(path.stem, str(path), data)


def labelled(runs: Sequence[Run]) -> list[Run]:
    """Runs whose labels repeat (two `out.json` from different folders) get their position appended."""
    seen = [r.label for r in runs]
    return [Run(f"{r.label} #{i + 1}", r.source, r.data) if seen.count(r.label) > 1 else r
            for i, r in enumerate(runs)]


def corpus_names(runs: Sequence[Run]) -> list[str]:
    """Every corpus of any run, in first-seen order."""
    return list(dict.fromkeys(name for run in runs for name in run.corpora))


# --- per case --------------------------------------------------------------------------------------
SHARE_KEYS = (("candidates", "files_top5_key_fact_recall"), ("evidence", "evidence_key_fact_recall"),
              ("reader", "reader_key_fact_recall"), ("answer", "key_fact_coverage"))
"""A case's share of its key facts at each step, for runs written before the per-fact trace."""
TRACE_KEY = {"candidates": "files_top5"}
"""The fact trace's key of a step, where it differs from the step's name."""


def _step_of(share: float | None, n: int) -> list[bool | None]:
    # An older run without `fact_trace`: which facts reached a step is known only when all or none did.
    if share is None:
        return [None] * n
    if share in (0.0, 1.0):
        return [share == 1.0] * n
    return [None] * n


def facts_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Per key fact of an answerable case: `fact`, each step reached (True/False, None: not measurable)
    and `lost_at` (None when the answer states it)."""
    facts = list(row.get("key_facts") or [])
    if not row.get("answerable") or not facts:
        return []
    trace = row.get("fact_trace")
    if not trace:
        columns = {step: _step_of(row.get(key), len(facts)) for step, key in SHARE_KEYS}
        trace = [{"fact": f, **{TRACE_KEY.get(s, s): columns[s][i] for s in columns}} for i, f in enumerate(facts)]
    top5 = bool(row.get("recall_at_5"))
    out = []
    for t in trace:
        steps = {"top5": top5, "candidates": t.get("files_top5"), "evidence": t.get("evidence"),
                 "reader": t.get("reader"), "answer": t.get("answer")}
        out.append({"fact": t["fact"], **steps, "lost_at": lost_at(steps)})
    return out


def lost_at(steps: dict[str, bool | None]) -> str | None:
    """The first known step the fact did not reach (unknown steps skipped), as the funnel counts it; None when
    the answer states it, or when no known step was missed."""
    if steps.get("answer"):
        return None
    return next((s for s in FLOW if steps.get(s) is not None and not steps[s]), None)


def outcome(row: dict[str, Any]) -> str:
    """What the answer achieved: key facts stated (all, some, none), or the abstention right or wrong."""
    if not row.get("answerable"):
        return "rightly abstained" if row.get("abstained") else "answered unanswerable"
    if row.get("abstained"):
        return "wrongly abstained"
    cov = row.get("key_fact_coverage")
    if cov is None:
        return "n/a"
    return "all facts" if cov == 1.0 else "some facts" if cov else "no facts"


# --- per corpus ------------------------------------------------------------------------------------
def _units(row: dict[str, Any]) -> list[tuple[float, dict[str, float | None]]]:
    """(weight, each step's share) of an answerable case: a fact each (0 or 1) from its `fact_trace`; a run
    written before the trace has only the case's shares, so the case is one unit weighing its fact count."""
    facts = list(row.get("key_facts") or [])
    if not row.get("answerable") or not facts:
        return []
    top5 = 1.0 if row.get("recall_at_5") else 0.0
    trace = row.get("fact_trace")
    if trace:
        return [(1.0, {"top5": top5, **{s: _share(t.get(TRACE_KEY.get(s, s)))
                                        for s in FLOW[1:]}}) for t in trace]
    return [(float(len(facts)), {"top5": top5, **{s: _share(row.get(key)) for s, key in SHARE_KEYS}})]


def _share(v: Any) -> float | None:
    return None if v is None else float(v)


@dataclass(frozen=True)
class Budget:
    """Key facts of answerable cases per step: `reached` (the funnel: this step and every earlier known
    one), `alone` (this step whatever the earlier ones), `known` (facts whose step was measured: the share's
    denominator). A run without `fact_trace` adds share × facts (the funnel: the smallest share so far)."""

    total: int
    reached: dict[str, float | None]
    alone: dict[str, float | None]
    known: dict[str, float]

    def share(self, step: str, nested: bool = True) -> float | None:
        count = (self.reached if nested else self.alone)[step]
        return None if count is None or not self.known[step] else count / self.known[step]


def fact_budget(rows: Sequence[dict[str, Any]]) -> Budget:
    """The fact budget over the answerable cases of `rows`; a step no case measured is None (n/a)."""
    total = sum(len(r.get("key_facts") or []) for r in rows if r.get("answerable"))
    reached = dict.fromkeys(FLOW, 0.0)
    alone = dict.fromkeys(FLOW, 0.0)
    known = dict.fromkeys(FLOW, 0.0)
    for row in rows:
        for weight, shares in _units(row):
            running = 1.0
            for step in FLOW:
                v = shares[step]
                if v is None:  # not measured for this fact: skipped, neither reached nor missed
                    continue
                running = min(running, v)
                reached[step] += weight * running
                alone[step] += weight * v
                known[step] += weight
    first: dict[str, float | None] = {"all": float(total)}
    return Budget(total, {**first, **{s: reached[s] if known[s] else None for s in FLOW}},
                  {**first, **{s: alone[s] if known[s] else None for s in FLOW}},
                  {"all": float(total), **known})


def funnel(rows: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Facts at each step of the funnel (this step and every earlier known one) over the answerable cases."""
    return fact_budget(rows).reached


def funnel_shares(run: Run, corpus: str, nested: bool = True) -> dict[str, float | None]:
    """Each step's share of the key facts measured at it (the funnel's, or the step's alone); the macro share
    is the unweighted mean over corpora (n/a skipped), like every macro figure of the eval."""
    if corpus == MACRO:
        per = [funnel_shares(run, name, nested) for name in run.corpora]
        return {step: mean_or_none(p[step] for p in per) for step, _ in STEPS}
    budget = fact_budget(run.rows(corpus))
    return {step: budget.share(step, nested) for step, _ in STEPS}


def recall_curve(run: Run, corpus: str) -> list[float | None]:
    """Mean recall@k over answerable cases for k = 1…10; macro: the mean over corpora."""
    if corpus == MACRO:
        per = [recall_curve(run, name) for name in run.corpora]
        return [mean_or_none(p[i] for p in per) for i in range(len(KS))]
    rows = [r for r in run.rows(corpus) if r.get("answerable")]
    return [mean_or_none(recall_at_k(r.get("retrieved_files") or [], r.get("gold_paths") or [], k) for r in rows)
            for k in KS]


def latencies(rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Every case's milliseconds per node, plus `case wall` (the runner's wall time around the graph run)."""
    nodes: dict[str, list[float]] = {}
    for r in rows:
        for node, ms in (r.get("timings_ms") or {}).items():
            nodes.setdefault(node, []).append(float(ms))
    walls = [float(r["wall_ms"]) for r in rows if r.get("wall_ms") is not None]
    if walls:
        nodes["case wall"] = walls
    return nodes


def tags_of(runs: Sequence[Run]) -> list[str]:
    return sorted({t for run in runs for name in run.corpora for r in run.rows(name) for t in r.get("tags") or []})
