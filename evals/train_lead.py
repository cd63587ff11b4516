"""`python -m evals.train_lead`: reproduce the learned lead (which passage opens the answer).

Every single-turn answerable case of each pinned corpus's **dev** split (never a held-out one, nor this
repository's own set) runs through the whole graph offline, under the learned ranker, and the analysis's
scored candidate passages are collected (`analyze.CANDIDATE_SINK`; the shipped lead model is not loaded, so a
model trained on other features does not stop its own retraining). A passage is labelled 2 when it comes
from a gold file and states a key fact of its case (`evals.facts.fact_in_text`), 1 when it does one of the
two, 0 otherwise: the answer's first passage should state the fact, and its citation should be a gold file
(with the fact alone as the label, leave-one-corpus-out gained key facts and lost gold leads on atlas-pm).
Questions where no passage is either teach nothing and are left out. Features are `lead_model.lead_features`,
the same function the graph calls.

Leave-one-corpus-out decides whether the model ships, and with which trees (`GRID`) and override margin
(`MARGINS`: the model's lead replaces the rule's only when it scores that much above it): trained on all
corpora but one, on every held-out corpus its lead must state a key fact, and come from a gold file, at least
as often as the rule's (`rule_lead_scores`), and more often on their macro average; of the settings that pass,
the one with the largest macro gain. None passes: nothing is written, exit 1. `--dry-run` prints the tables
only. The model is then fitted on every corpus and written, with its feature names, margin and table, to
`nodes/context_analysis/lead_model.json`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evals.cases import load_dataset
from evals.facts import fact_in_text
from evals.suites import assemble_corpus
from evals.train_ranker import export, import_lightgbm, pinned_suites, trainer_parser, write_model
from nodes.context_analysis.lead_model import overriding_lead
from stores.errors import LotsmanError

PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 4, "min_data_in_leaf": 20, "lambda_l2": 5.0,
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "verbose": -1, "seed": 7,
    "num_threads": 2, "deterministic": True, "force_row_wise": True,
}
"""As small as the ranker's trees: a few hundred questions."""
GRID: tuple[tuple[int, int], ...] = ((2, 40), (2, 80), (4, 30), (4, 60), (4, 100))
"""(leaves, rounds) chosen between by leave-one-corpus-out."""
MARGINS: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 1.0)
"""How far the model's best passage must score above the rule's best to replace it as the lead
(`lead_model.overriding_lead`): 0 is the model alone; a larger margin keeps the rule's lead where the model
is unsure. Chosen with the trees by leave-one-corpus-out."""


@dataclass
class Group:
    """One question's candidate passages."""

    corpus: str
    case_id: str
    x: np.ndarray
    y: np.ndarray
    base: np.ndarray
    """The rule's lead score of each candidate (its choice is the argmax)."""
    fact: np.ndarray
    """1 where the candidate states a key fact."""
    gold: np.ndarray
    """1 where the candidate comes from a gold file."""


def collect(corpus_name: str, corpus: Path, dataset: Path, settings: Any) -> list[Group]:
    """Run the dev cases through the graph (the eval's own session, indexed incrementally) and keep each
    usable question's candidates."""
    import importlib

    from evals.runner import run
    from nodes.context_analysis.lead_model import lead_features

    analyze_module = importlib.import_module("nodes.context_analysis.analyze")
    seen: dict[str, tuple[Any, ...]] = {}

    def sink(question: str, scored: list[Any], file_rank: dict[str, int]) -> None:
        seen[question.strip()] = (scored, file_rank)

    cases = [c for c in load_dataset(dataset) if c["answerable"] and not c["history"] and c["key_facts"]]
    shipped = analyze_module.load_lead_model
    analyze_module.CANDIDATE_SINK = sink
    analyze_module.load_lead_model = lambda: None  # candidates are collected before the lead is chosen
    try:
        run(dataset, corpus, settings=settings, label=corpus_name, ranker="learned")
    finally:
        analyze_module.CANDIDATE_SINK = None
        analyze_module.load_lead_model = shipped
    out: list[Group] = []
    for case in cases:
        got = seen.get(case["question"].strip())
        if got is None or not got[0]:
            continue
        scored, file_rank = got
        base = np.array(analyze_module.rule_lead_scores(scored, file_rank))
        fact = np.array([1.0 if any(fact_in_text(f, s.candidate.text) for f in case["key_facts"]) else 0.0
                         for s in scored])
        gold = np.array([1.0 if s.candidate.row.path in case["gold_paths"] else 0.0 for s in scored])
        y = fact + gold
        if y.any():
            out.append(Group(corpus_name, case["id"], lead_features(scored, file_rank, base), y, base, fact, gold))
    return out


def top_holds_fact(groups: list[Group], pick: Any, label: str = "fact") -> float:
    """Share of questions whose lead (`pick(group)`: the index chosen) states a key fact (`label="gold"`:
    comes from a gold file)."""
    return float(np.mean([getattr(g, label)[pick(g)] for g in groups])) if groups else float("nan")


def rule_pick(g: Group) -> int:
    return overriding_lead(list(g.base), list(g.base), 0.0)


def fit(groups: list[Group], lgb: Any, leaves: int, rounds: int) -> Any:
    data = lgb.Dataset(np.vstack([g.x for g in groups]), np.concatenate([g.y for g in groups]),
                       group=[len(g.y) for g in groups])
    return lgb.train({**PARAMS, "num_leaves": leaves}, data, num_boost_round=rounds)


def held_out_scores(groups: list[Group], lgb: Any, leaves: int, rounds: int) -> dict[int, np.ndarray]:
    """Each question's passage scores (by `id` of its group) from the model trained on the other corpora."""
    out: dict[int, np.ndarray] = {}
    for held in sorted({g.corpus for g in groups}):
        model = fit([g for g in groups if g.corpus != held], lgb, leaves, rounds)
        out.update({id(g): model.predict(g.x) for g in groups if g.corpus == held})
    return out


def leave_one_corpus_out(groups: list[Group], scores: dict[int, np.ndarray], margin: float
                         ) -> dict[str, dict[str, float]]:
    """Per held-out corpus and macro: how often the rule's lead and the learned one (with `margin`) state a
    key fact and come from a gold file."""
    def learned(g: Group) -> int:
        return overriding_lead(list(scores[id(g)]), list(g.base), margin)

    table: dict[str, dict[str, float]] = {}
    for held in sorted({g.corpus for g in groups}):
        test = [g for g in groups if g.corpus == held]
        table[held] = {"questions": len(test), "rule": top_holds_fact(test, rule_pick),
                       "learned": top_holds_fact(test, learned),
                       "rule_gold": top_holds_fact(test, rule_pick, "gold"),
                       "learned_gold": top_holds_fact(test, learned, "gold")}
    keys = ("questions", "rule", "learned", "rule_gold", "learned_gold")
    table["macro"] = {k: float(np.mean([r[k] for r in table.values()])) for k in keys}
    return table


def choose(tables: dict[tuple[int, int, float], dict[str, dict[str, float]]]) -> tuple[int, int, float] | None:
    """The setting (leaves, rounds, margin) with the largest macro gain among those where no held-out corpus
    loses, in key facts or in gold leads, to the rule; None when none gains (pure)."""
    fair = [s for s, t in tables.items() if _worst_gain(t) >= 0 and _macro_gain(t) > 0]
    return max(fair, key=lambda s: (round(_macro_gain(tables[s]), 6), s[2])) if fair else None


def _worst_gain(table: dict[str, dict[str, float]]) -> float:
    """The smallest gain over the rule of any held-out corpus, in key facts or in gold leads."""
    return min(min(r["learned"] - r["rule"], r["learned_gold"] - r["rule_gold"])
               for n, r in table.items() if n != "macro")


def _macro_gain(table: dict[str, dict[str, float]]) -> float:
    m = table["macro"]
    return m["learned"] - m["rule"] + m["learned_gold"] - m["rule_gold"]


def main(argv: list[str] | None = None) -> int:
    from nodes.context_analysis.lead_model import LEAD_FEATURES, LEAD_MODEL_PATH

    args = trainer_parser("python -m evals.train_lead", __doc__, LEAD_MODEL_PATH).parse_args(argv)
    lgb = import_lightgbm()
    if lgb is None:
        return 2
    from graph.settings import get_settings

    settings = get_settings()
    cache_dir = args.corpora_dir or settings.data_dir / "corpora"
    groups: list[Group] = []
    try:
        for suite in pinned_suites():
            got = collect(suite.name, assemble_corpus(suite, cache_dir), Path(suite.dev), settings)
            print(f"{suite.name}: {len(got)} dev questions with a passage from a gold file or stating a key fact",
                  file=sys.stderr)
            groups += got
    except (LotsmanError, OSError) as exc:  # a corpus folder it cannot write, no database, a bad dataset
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    tables: dict[tuple[int, int, float], dict[str, dict[str, float]]] = {}
    for leaves, rounds in GRID:
        scores = held_out_scores(groups, lgb, leaves, rounds)
        for margin in MARGINS:
            t = tables[(leaves, rounds, margin)] = leave_one_corpus_out(groups, scores, margin)
            m = t["macro"]
            print(f"{leaves} leaves, {rounds} rounds, margin {margin}: macro key fact {m['rule']:.3f} → "
                  f"{m['learned']:.3f}, gold {m['rule_gold']:.3f} → {m['learned_gold']:.3f}, "
                  f"worst corpus {_worst_gain(t):+.3f}")
    setting = choose(tables)
    shown = setting or max(tables, key=lambda s: (round(_worst_gain(tables[s]), 3), _macro_gain(tables[s])))
    table = tables[shown]
    print(f"{'chosen' if setting else 'best'}: {shown[0]} leaves, {shown[1]} rounds, margin {shown[2]}; "
          "leave-one-corpus-out, the first passage states a key fact / comes from a gold file (rule → learned):")
    for name, row in table.items():
        print(f"  {name:<12} {int(row['questions']):>4} questions  {row['rule']:.3f} → {row['learned']:.3f}  "
              f"{row['rule_gold']:.3f} → {row['learned_gold']:.3f}")
    print("the model " + ("beats the rule on every corpus" if setting else "does NOT beat the rule everywhere"))
    if args.dry_run:
        return 0
    if setting is None:
        print("error: not writing a model that loses to the rule on a held-out corpus", file=sys.stderr)
        return 1
    model = fit(groups, lgb, setting[0], setting[1])
    meta = {"params": {**PARAMS, "num_leaves": setting[0]}, "rounds": setting[1], "override_margin": setting[2],
            "corpora": sorted({g.corpus for g in groups}),
            "questions": len(groups), "embedder": settings.embedder, "leave_one_corpus_out": table}
    data = export(model, 0.0, meta, LEAD_FEATURES)
    write_model(data, args.out, expected=LEAD_FEATURES, trainer="python -m evals.train_lead")
    print(f"wrote {args.out} ({len(data['trees'])} trees over {len(LEAD_FEATURES)} features)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
