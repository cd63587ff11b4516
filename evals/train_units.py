"""`python -m evals.train_units`: the learned unit scorer (issue 38, item 3), from the dev splits.

Two steps, like `make ranker`:

    python -m evals.train_units --collect out/unit-cases.json.gz     # run retrieval, read the top files
    python -m evals.train_units --cases out/unit-cases.json.gz      # features, leave-one-corpus-out, model

`--collect` runs the graph's retrieval (learned ranker, default top_k and token cap) on every answerable
single-turn case of each corpus's **dev** split (never a held-out one: `evals.holdout` refuses a held-out
dataset, a file named held-out and any held-out case id, as `train_ranker` does), on the eval sessions as
they are (`LOTSMAN_DATA_DIR` of the eval), and writes for each case the request, its key facts and gold
files, the core and the pack retrieval returned, and the first `COLLECT_FILES` files of the core; the rows
of those files (D0, C0, C7) are written once per corpus. It adds **pseudo cases** every repository gives
for free: a question from a template, in English and in Russian, for a code fact (C7: "what is the default
of `timeout`?", «какое значение по умолчанию у timeout?») and for a docs heading, whose target is the
fact's line or the section's opening lines; and for a card (a C3 entrypoint row first, then C1 symbol cards:
"what handles `POST /heroes`?", «что делает app.cli.main?»), whose target is the card's lines.

`--cases` cuts the rows into units (`nodes.context_retrieval.units`), labels a unit 2 when it states a key
fact and lies in a gold file, 1 when it states a key fact elsewhere (a pseudo case: when it overlaps the
target lines), 0 otherwise, and fits LambdaRank (LightGBM, one thread, fixed seed). Leave-one-corpus-out
over the dev corpora decides (`loco`): per held-out corpus, the share of key facts in the pack when the
core is followed by the best units of the first files at the same token cap, against the pack retrieval
gave (`base`), the hand-set unit score (`heuristic`) and the ceiling (facts stated by any unit of those
files). The model is written to `nodes/context_retrieval/unit_model.json` (sorted keys: the same cases file
gives the same bytes).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evals.facts import fact_in_text
from evals.holdout import HoldoutError, holdout_name, refuse_cases, refuse_dataset
from evals.suites import REPO_ROOT, SUITES
from nodes.context_retrieval.rank_features import RankQuery
from nodes.context_retrieval.units import (
    CARD_LAYERS,
    RANKED_SEEN,
    UNIT_FEATURES,
    UNIT_FILES,
    UNIT_KEEP,
    UNIT_LAYERS,
    UNIT_MODEL_PATH,
    Unit,
    UnitContext,
    card_unit,
    heuristic_scores,
    kept_core,
    nearest_units,
    pack_units,
    split_rows,
    unit_features,
)
from nodes.evidence import EvidenceRow
from stores.errors import LotsmanError

CASES_FORMAT = "lotsman-unit-cases/1"
COLLECT_FILES = 6
"""Files of the core whose rows are collected (the model is measured with fewer: `UNIT_FILES`)."""
TOKEN_CAP = 4096
TOP_K = 12
PSEUDO_PER_CORPUS = 60
"""Pseudo cases per corpus (half code facts, half headings; half English, half Russian), and a sixth as many
again about cards where the corpus has them."""
PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 8, "min_data_in_leaf": 40,
    "lambdarank_truncation_level": 30, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
    "label_gain": [0, 1, 3], "verbose": -1, "seed": 7, "num_threads": 1, "deterministic": True,
    "force_row_wise": True,
}
ROUNDS = 150
PSEUDO_WEIGHT = 0.5
"""A pseudo case's weight against a dev case's in the fit."""


def _stable(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# ---- collecting ----------------------------------------------------------------------------------------

def _row_dict(r: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": str(r["id"]), "path": str(r["path"]), "layer": str(r["layer"]), "title": str(r.get("title") or ""),
            "content": str(r.get("content") or ""), "span_start": int(r.get("span_start") or 1),
            "span_end": int(r.get("span_end") or 1),
            "metadata": {k: v for k, v in dict(r.get("metadata") or {}).items()
                         if k in ("fact_kind", "name", "qname", "value", "detail", "sentence_ru", "kind")}}


def _short_owner(qname: str) -> str:
    return qname.rsplit(".", 1)[-1] if qname else ""


def pseudo_questions(rows: Sequence[Mapping[str, Any]], corpus: str, count: int) -> list[dict[str, Any]]:
    """Template questions about the code facts and docs headings of `rows` (a corpus's collected files), each
    with its target lines: `count` of them, chosen by a hash of the row id (the same rows give the same
    questions), alternating English and Russian."""
    facts, heads, cards = [], [], []
    for r in rows:
        meta = r.get("metadata") or {}
        if r["layer"] == "C7_CODE_FACTS" and meta.get("name"):
            facts.append(r)
        elif r["layer"] in CARD_LAYERS and r["title"] and meta.get("kind") != "module":
            cards.append(r)
        elif r["layer"] == "D0_DOC_CHUNKS":
            for k, line in enumerate(r["content"].split("\n")):
                if line.startswith("#") and len(line.strip("# ")) > 3 and k + 2 < len(r["content"].split("\n")):
                    heads.append((r, k, line))

    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    facts.sort(key=lambda r: key(r["id"]))
    cards.sort(key=lambda r: (r["layer"] != "C3_ENTRYPOINTS", key(r["id"])))
    heads.sort(key=lambda h: key(f"{h[0]['id']}:{h[1]}"))
    out = []
    for i, r in enumerate(facts[: count // 2]):
        meta = r["metadata"]
        name, owner, kind = meta["name"], _short_owner(meta.get("qname") or ""), meta.get("fact_kind")
        words = name.strip("-_").replace("_", " ").replace("-", " ").lower()
        en, ru = {
            "parameter": (f"What is the default value of {name} in {owner}?", f"Какое значение по умолчанию у {name}?"),
            "field": (f"What is the default of the {words} field?", f"Какое значение по умолчанию у поля {name}?"),
            "option": (f"What does the {name} option do?", f"Что делает опция {name} и какое у неё значение?"),
            "constant": (f"What is the {words} limit?", f"Чему равно {words}?"),
            "raise": (f"When does {owner} raise {name}?", f"Когда {owner} выбрасывает {name}?"),
            "env": (f"Which environment variable does {owner} read?", f"Какую переменную окружения читает {owner}?"),
            "message": (f"What message does {owner} print?", f"Какое сообщение выводит {owner}?"),
        }.get(kind or "", (f"What is {name}?", f"Что такое {name}?"))
        out.append({"corpus": corpus, "id": f"pseudo-{corpus}-fact-{i:03d}", "question": en if i % 2 == 0 else ru,
                    "key_facts": [], "gold": [r["path"]], "pseudo": True,
                    "target": [r["path"], r["span_start"], r["span_end"]]})
    for i, (r, k, line) in enumerate(heads[: count - count // 2]):
        heading = line.strip("# ").split("{")[0].strip()
        q = (f"What does the documentation say about {heading}?" if i % 2 == 0
             else f"Что говорится в документации про «{heading}»?")
        n = r["span_start"] + k
        out.append({"corpus": corpus, "id": f"pseudo-{corpus}-head-{i:03d}", "question": q, "key_facts": [],
                    "gold": [r["path"]], "pseudo": True, "target": [r["path"], n + 1, n + 6]})
    for i, r in enumerate(cards[: count // 6]):
        title = r["title"]
        if r["layer"] == "C3_ENTRYPOINTS":
            q = f"What handles {title} and what does it take?" if i % 2 == 0 else f"Что обрабатывает {title}?"
        else:
            q = f"What does {title} do?" if i % 2 == 0 else f"Что делает {title}?"
        start, end = card_unit(r["content"], r["span_start"], r["span_end"])[1:3]
        out.append({"corpus": corpus, "id": f"pseudo-{corpus}-card-{i:03d}", "question": q, "key_facts": [],
                    "gold": [r["path"]], "pseudo": True, "target": [r["path"], start, end]})
    return out


def run_case(case: dict[str, Any], bundle: Any, files: dict[str, list[dict[str, Any]]], captured: dict[str, Any]
             ) -> dict[str, Any] | None:
    """One case through the graph's retrieval: what `collect` writes for it (None: no core). The rows of
    its files are read into `files` once per corpus; `captured` holds what the spies saw."""
    from nodes.retrieval_policy import RetrievalProfile, resolve_code_plan, resolve_plan
    from nodes.terms import key_terms

    adapter = bundle.adapter
    captured.clear()
    q = case["question"]
    route = bundle.router.route(q)
    plan, code_plan = resolve_plan(route), resolve_code_plan(route, bundle.symbols)
    terms = key_terms(q, route.target_terms)
    result = adapter.fetch_rows(bundle.session, plan, code_plan, q, file_names=route.anchors.file_names,
                                gate_terms=terms, top_k=TOP_K, token_cap=TOKEN_CAP, ranker="learned")
    core = result.rows[: result.core if result.core is not None else len(result.rows)]
    if not core:
        return None
    paths = list(dict.fromkeys(r.path for r in core))[:COLLECT_FILES]
    need = [p for p in paths if p not in files]
    if need:
        got = adapter.repository.retrieve_overlapping(
            bundle.session, [(p, 1, 10**9) for p in need], layers=list(UNIT_LAYERS), limit=20000)
        for p in need:
            files[p] = []
        for r in got:
            files[str(r["path"])].append(_row_dict(r))
    ranked = captured.get("ranked") or list(result.rows)
    row_ids = {str(r["id"]) for p in paths for r in files[p]}
    embedding = adapter.embedder.embed_query(q)
    row_cos = adapter.repository.distances(
        bundle.session, sorted(str(r["id"]) for p in paths for r in files[p]
                               if r["layer"] != "C7_CODE_FACTS"), embedding)
    return case | {
        "query": {"text": q, "key_terms": list(terms),
                  "find_files": plan.profile == RetrievalProfile.FILE_LOOKUP,
                  "code_plan": code_plan is not None,
                  "explicit_code": code_plan is not None and code_plan.explicit,
                  "general": plan.profile == RetrievalProfile.GENERAL_QA_GROUNDED_SUMMARY},
        "relevant": result.relevant, "core": len(core), "files": paths,
        "pack": [r.model_dump(mode="json") for r in result.rows],
        "ranked": [{"id": r.id, "path": r.path, "fused_score": r.fused_score,
                    "learned": r.scores.get("learned")} for r in ranked[:80] if r.id in row_ids
                   or r.id in {x.id for x in core}],
        "similarity": {k: v for k, v in (captured.get("similarity") or {}).items() if k in row_ids},
        "row_distance": {k: round(v, 6) for k, v in row_cos.items()},
    }


_UNUSED_SCORER: Any = "unused: --collect stubs the unit fill out"


def collect(args: argparse.Namespace) -> dict[str, Any]:
    """Run retrieval on every dev case (and the pseudo cases) of every corpus and gather what the features
    need (see the module docstring)."""
    import nodes.context_retrieval.merge as merge_module
    from evals.cases import load_dataset
    from evals.runner import session_name
    from graph.deps import GraphDeps
    from graph.settings import get_settings

    settings = get_settings()
    deps = GraphDeps(settings=settings)
    captured: dict[str, Any] = {}
    original_fill = merge_module.fill_budget

    def spy_fill(core: Any, candidates: Any, *a: Any, **k: Any) -> Any:
        captured["ranked"] = list(candidates)
        return original_fill(core, candidates, *a, **k)

    merge_module.fill_budget = spy_fill  # type: ignore[assignment]
    # the cases hold the core and the pack of the rows' fill, the baseline the units are measured against
    original_units = merge_module.fill_units
    merge_module.fill_units = lambda *a, **k: None  # type: ignore[assignment]
    out: dict[str, Any] = {"format": CASES_FORMAT, "embedder": settings.embedder, "datasets": {}, "cases": [],
                           "files": {}}
    corpora = args.corpora or [s.name for s in SUITES.values()]
    try:
        for name in corpora:
            suite = SUITES[name]
            dataset = REPO_ROOT / suite.dev
            refuse_dataset(dataset, by="train_units")
            out["datasets"][name] = {"path": suite.dev,
                                     "sha256": hashlib.sha256(dataset.read_bytes()).hexdigest()}
            bundle = deps.bundle(session_name(name, settings.embedder))
            adapter = bundle.adapter
            # the unit fill is stubbed out above, so the shipped unit model is never read: a model of other
            # features (the one these cases will replace) must not stop the collection
            adapter.unit_scorer = _UNUSED_SCORER
            original_sim = adapter.candidate_similarity

            def spy_sim(*a: Any, _orig: Any = original_sim) -> dict[str, float]:
                captured["similarity"] = _orig(*a)
                return captured["similarity"]

            adapter.candidate_similarity = spy_sim  # type: ignore[method-assign,assignment]
            files: dict[str, list[dict[str, Any]]] = {}
            cases = [{"corpus": name, "id": c["id"], "question": c["question"], "key_facts": c["key_facts"],
                      "gold": c["gold_paths"], "pseudo": False}
                     for c in load_dataset(dataset)
                     if c["answerable"] and not c["history"] and c["gold_paths"] and c["key_facts"]]
            if args.limit:
                cases = cases[: args.limit]

            t0 = time.perf_counter()
            got_cases = [c for c in (run_case(case, bundle, files, captured) for case in cases) if c is not None]
            pseudo = pseudo_questions([r for rows in files.values() for r in rows], name, args.pseudo)
            got_pseudo = [c for c in (run_case(case, bundle, files, captured) for case in pseudo) if c is not None]
            print(f"{name}: {len(got_cases)} dev cases, {len(got_pseudo)} pseudo cases, {len(files)} files, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
            out["cases"] += got_cases + got_pseudo
            out["files"][name] = files
    finally:
        merge_module.fill_budget = original_fill  # type: ignore[assignment]
        merge_module.fill_units = original_units  # type: ignore[assignment]
        deps.close()
    return out


def write_cases(data: dict[str, Any], path: Path) -> str:
    """Write the collected cases (gzip without a name or date), beside `path` first; return the sha256."""
    text = _stable(data)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz:
        gz.write(text.encode("utf-8"))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, path)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_cases(path: Path) -> tuple[dict[str, Any], str]:
    """A cases file and its text's sha256; a held-out one is refused."""
    if holdout_name(path):
        raise HoldoutError(f"train_units refuses {path}: a held-out cases file")
    raw = path.read_bytes()
    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != CASES_FORMAT:
        raise LotsmanError(f"{path}: not a unit cases file ({CASES_FORMAT}); write it with --collect")
    for info in (data.get("datasets") or {}).values():
        refuse_dataset(REPO_ROOT / info["path"], by="train_units")
    refuse_cases([c["id"] for c in data["cases"] if not c.get("pseudo")], source=str(path), by="train_units")
    return data, hashlib.sha256(text).hexdigest()


# ---- features and labels -------------------------------------------------------------------------------

@dataclass
class Group:
    """One case's units: features, labels and what the pack metric needs."""

    corpus: str
    case_id: str
    pseudo: bool
    x: np.ndarray
    y: np.ndarray
    units: list[Unit]
    rows: list[dict[str, Any]]
    case: dict[str, Any]


def case_units(case: dict[str, Any], files: Mapping[str, list[dict[str, Any]]], n_files: int = UNIT_FILES
               ) -> tuple[list[Unit], list[dict[str, Any]], UnitContext]:
    """The units of a collected case's first `n_files` files and the context their features read."""
    paths = case["files"][:n_files]
    rows = [r for p in paths for r in files.get(p, [])]
    units = nearest_units(split_rows(rows), rows, case.get("row_distance") or {},
                          [r["id"] for r in case["ranked"][:RANKED_SEEN]])
    pack = [EvidenceRow.model_validate(r) for r in case["pack"][: case["core"]]]
    ranked = [EvidenceRow(id=r["id"], path=r["path"], layer="", fused_score=r["fused_score"],
                          scores={"learned": r["learned"]} if r.get("learned") is not None else {})
              for r in case["ranked"]]
    q = case["query"]
    ctx = UnitContext(query=RankQuery(q["text"], q["key_terms"], find_files=q["find_files"], code_plan=q["code_plan"],
                                      explicit_code=q["explicit_code"], general=q["general"]),
                      files=case["files"], pack=pack, ranked=ranked, similarity=case["similarity"],
                      row_distance=case.get("row_distance") or {})
    return units, rows, ctx


def labels(case: dict[str, Any], units: Sequence[Unit]) -> np.ndarray:
    if case.get("pseudo"):
        path, a, b = case["target"]
        return np.array([1 if u.path == path and u.start <= b and a <= u.end else 0 for u in units])
    gold = set(case["gold"])
    return np.array([(2 if u.path in gold else 1) if any(fact_in_text(f, u.text) for f in case["key_facts"]) else 0
                     for u in units])


def build_groups(data: dict[str, Any], n_files: int = UNIT_FILES) -> list[Group]:
    groups = []
    for case in sorted(data["cases"], key=lambda c: (c["corpus"], c["id"])):
        units, rows, ctx = case_units(case, data["files"][case["corpus"]], n_files)
        if not units:
            continue
        x = unit_features(units, rows, ctx)
        groups.append(Group(case["corpus"], case["id"], bool(case.get("pseudo")), x, labels(case, units), units,
                            rows, case))
    return groups


# ---- the pack metric ------------------------------------------------------------------------------------

def recall(facts: Sequence[str], texts: Sequence[str]) -> float:
    return sum(1 for f in facts if any(fact_in_text(f, t) for t in texts)) / len(facts) if facts else 0.0


def pack_metrics(g: Group, scores: np.ndarray, cap: int = TOKEN_CAP, rest: bool = False,
                 keep: int = UNIT_KEEP) -> dict[str, float]:
    """Key-fact recall of: the pack retrieval gave (`base`), its core, the kept core (`kept_core`) plus the
    best units by `scores` at `cap` as `unit_pack` builds it (then, with `rest`, the rows' fill of other files
    in the room left), and the ceiling of the units (any unit of the files, with the core)."""
    case = g.case
    facts = case["key_facts"]
    pack = [EvidenceRow.model_validate(r) for r in case["pack"]]
    core = pack[: case["core"]]
    ranked = [EvidenceRow(id=r["id"], path=r["path"], layer="", fused_score=r["fused_score"]) for r in case["ranked"]]
    filled = pack_units(kept_core(core, keep), g.units, scores, g.rows, ranked, cap)
    if rest:
        from nodes.context_retrieval.gate import row_tokens
        used = sum(row_tokens(r) for r in filled)
        files = {u.path for u in g.units}
        for r in pack[case["core"]:]:
            if r.path in files:
                continue
            if used + row_tokens(r) <= cap:
                filled.append(r)
                used += row_tokens(r)
    return {"base": recall(facts, [r.content for r in pack]), "core": recall(facts, [r.content for r in core]),
            "units": recall(facts, [r.content for r in filled]),
            "ceiling": recall(facts, [r.content for r in core] + [u.text for u in g.units])}


# ---- fitting --------------------------------------------------------------------------------------------

def fit(groups: Sequence[Group], lgb: Any, params: dict[str, Any], rounds: int) -> Any:
    use = [g for g in groups if g.y.any()]
    x = np.vstack([g.x for g in use])
    y = np.concatenate([g.y for g in use])
    w = np.concatenate([np.full(len(g.y), PSEUDO_WEIGHT if g.pseudo else 1.0) for g in use])
    return lgb.train(params, lgb.Dataset(x, y, group=[len(g.y) for g in use], weight=w), num_boost_round=rounds)


def loco(groups: Sequence[Group], lgb: Any, params: dict[str, Any], rounds: int, *, pseudo: bool = True,
         out_of_fold: dict[str, np.ndarray] | None = None) -> dict[str, dict[str, float]]:
    """Per held-out dev corpus: the pack metrics of the base pack, the heuristic and the model fitted on the
    other corpora (their dev and, with `pseudo`, every corpus's pseudo cases but the held-out one's). Each
    dev case's scores by the model that did not see its corpus go into `out_of_fold` (case id → scores)."""
    table: dict[str, dict[str, float]] = {}
    dev = [g for g in groups if not g.pseudo]
    for corpus in sorted({g.corpus for g in dev}):
        train = [g for g in groups if g.corpus != corpus and (pseudo or not g.pseudo)]
        test = [g for g in dev if g.corpus == corpus]
        model = fit(train, lgb, params, rounds)
        rows = []
        for g in test:
            predicted = model.predict(g.x)
            if out_of_fold is not None:
                out_of_fold[g.case_id] = predicted
            learned = pack_metrics(g, predicted)
            heur = pack_metrics(g, heuristic_scores(g.x))
            rows.append([learned["base"], learned["core"], heur["units"], learned["units"], learned["ceiling"]])
        m = np.mean(rows, axis=0)
        table[corpus] = {"cases": len(test), "base": m[0], "core": m[1], "heuristic": m[2], "learned": m[3],
                         "ceiling": m[4]}
    keys = [k for k in next(iter(table.values())) if k != "cases"]
    table["macro"] = {"cases": sum(r["cases"] for r in table.values()),
                      **{k: float(np.mean([table[c][k] for c in table if c != "macro"])) for k in keys}}
    return {c: {k: round(float(v), 4) for k, v in r.items()} for c, r in table.items()}


MARGINS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 3.0, 4.0)
"""Quote margins tried: a unit is quoted when it scores within this much of the best unit (`choose_units`)."""
QUOTE_SEEN = 60
"""Units of a case handed to the quote choice (its best by score, and the best of its first file)."""
ANSWER_BUDGET = 1300
"""Characters of the median extractive answer the `budget` objective allows (the readability limit of
tests/integration/test_answers_fastapi.py)."""
OBJECTIVES = ("f1", "budget", "f05")
"""How the quote margin is chosen on the other corpora: `f1` the mean F1 of the quotes (key facts they state,
share of quotes stating one); `budget` the mean key-fact recall of the composed answers among the margins whose
median answer is at most ANSWER_BUDGET characters (the shortest answers when none is); `f05` F-beta with
beta 0.5 (precision weighs four times recall)."""
OBJECTIVE = "budget"
"""The objective shipped (leave-one-corpus-out table in the module docstring of `units.py`)."""


def quoted_spans(g: Group, scores: np.ndarray, margin: float) -> list[Any]:
    """The spans the answer would quote from the case's units at `margin` (`choose_units`, files in the case's
    rank order)."""
    from nodes.context_analysis.models import Span
    from nodes.context_analysis.units import choose_units

    order = list(np.argsort(-scores, kind="stable")[:QUOTE_SEEN])
    first = g.case["files"][0] if g.case["files"] else ""
    lead = next((int(i) for i in np.argsort(-scores, kind="stable") if g.units[int(i)].path == first), None)
    if lead is not None and lead not in order:
        order.append(lead)
    spans = []
    for i in order:
        u = g.units[i]
        card, code = u.kind == "card", u.layer.startswith("C") or u.kind == "code_block"
        spans.append(Span(path=u.path, start_line=u.start, end_line=u.end, text=u.text, row_id=str(i),
                          score=float(scores[i]), layer=u.layer, code=code and not card,
                          section=u.context.split("\n", 1)[0][:120],  # the row's title: about the label's length
                          kind="card" if card else "source" if u.layer.startswith("C") else u.kind))
    spans.sort(key=lambda sp: -sp.score)
    chosen, _ = choose_units(spans, {p: k + 1 for k, p in enumerate(g.case["files"])}, margin)
    return chosen


def quoted(g: Group, scores: np.ndarray, margin: float) -> list[str]:
    """The texts the answer would quote from the case's units at `margin`."""
    return [c.text for c in quoted_spans(g, scores, margin)]


def answer_text(g: Group, spans: Sequence[Any]) -> str:
    """The extractive answer composed from `spans` alone, each labelled with its row's title (the graph labels
    a quote with the heading above it: about as long)."""
    from nodes.answer_composition.extractive import compose_extractive
    from nodes.context_analysis.models import Analysis
    from nodes.context_analysis.text import detect_language

    analysis = Analysis(spans=list(spans), passages=list(spans), sufficient=True,
                        language=detect_language(g.case["question"]))
    return compose_extractive(g.case["question"], analysis, None).text


def quote_f1(g: Group, texts: Sequence[str], beta: float = 1.0) -> float:
    """F-beta of the quotes: key facts they state (recall) and the share of quotes stating one (precision)."""
    facts = g.case["key_facts"]
    r = recall(facts, texts)
    p = sum(1 for t in texts if any(fact_in_text(f, t) for f in facts)) / len(texts) if texts else 0.0
    b2 = beta * beta
    return (1 + b2) * p * r / (b2 * p + r) if p + r else 0.0


@dataclass(frozen=True)
class QuoteOutcome:
    """One case at one margin: the quotes' F1 and F0.5, the composed answer's key-fact recall and length."""

    f1: float
    f05: float
    recall: float
    chars: int
    quotes: int


def quote_outcomes(dev: Sequence[Group], out_of_fold: Mapping[str, np.ndarray]
                   ) -> dict[float, dict[str, QuoteOutcome]]:
    """Margin → case id → what the answer at that margin quotes and states (out-of-fold scores)."""
    out: dict[float, dict[str, QuoteOutcome]] = {}
    for m in (-1e9, *MARGINS):
        out[m] = {}
        for g in dev:
            spans = quoted_spans(g, out_of_fold[g.case_id], m)
            texts = [s.text for s in spans]
            answer = answer_text(g, spans)
            out[m][g.case_id] = QuoteOutcome(quote_f1(g, texts), quote_f1(g, texts, 0.5),
                                             recall(g.case["key_facts"], [answer]), len(answer), len(spans))
    return out


def choose_margin(cases: Sequence[str], outcomes: Mapping[float, Mapping[str, QuoteOutcome]], objective: str
                  ) -> float:
    """The margin `objective` (one of OBJECTIVES) prefers on `cases`; a tie goes to the smaller margin."""
    def mean(m: float, key: str) -> float:
        return float(np.mean([getattr(outcomes[m][k], key) for k in cases]))

    if objective == "budget":
        fit = [m for m in MARGINS if float(np.median([outcomes[m][k].chars for k in cases])) <= ANSWER_BUDGET]
        if not fit:
            return min(MARGINS, key=lambda m: (float(np.median([outcomes[m][k].chars for k in cases])), m))
        return max(fit, key=lambda m: (mean(m, "recall"), -m))
    return max(MARGINS, key=lambda m: (mean(m, objective), -m))


def margin_loco(groups: Sequence[Group], out_of_fold: Mapping[str, np.ndarray], objective: str = OBJECTIVE
                ) -> tuple[float, dict[str, dict[str, dict[str, float]]]]:
    """The quote margin, chosen leave-one-corpus-out on out-of-fold scores, by each objective of OBJECTIVES:
    per held-out corpus, the margin best on the other corpora and, at it, the held-out corpus's quote F1, the
    composed answers' key-fact recall and median characters, and quotes per answer (and the lead alone); the
    margin `objective` prefers over every dev corpus is the one shipped."""
    dev = [g for g in groups if not g.pseudo and g.case_id in out_of_fold]
    outcomes = quote_outcomes(dev, out_of_fold)
    corpora = sorted({g.corpus for g in dev})
    tables: dict[str, dict[str, dict[str, float]]] = {}
    for obj in OBJECTIVES:
        table: dict[str, dict[str, float]] = {}
        for c in corpora:
            others = [g.case_id for g in dev if g.corpus != c]
            mine = [g.case_id for g in dev if g.corpus == c]
            best = choose_margin(others, outcomes, obj)
            at = [outcomes[best][k] for k in mine]
            table[c] = {"cases": len(mine), "margin": best,
                        "lead_only_recall": float(np.mean([outcomes[-1e9][k].recall for k in mine])),
                        "f1": float(np.mean([o.f1 for o in at])), "recall": float(np.mean([o.recall for o in at])),
                        "chars_p50": float(np.median([o.chars for o in at])),
                        "quotes": float(np.mean([o.quotes for o in at]))}
        everything = [g.case_id for g in dev]
        table["macro"] = {k: float(np.mean([table[c][k] for c in corpora]))
                          for k in ("lead_only_recall", "f1", "recall", "chars_p50", "quotes")}
        table["macro"] |= {"cases": float(len(dev)), "margin": choose_margin(everything, outcomes, obj)}
        tables[obj] = {c: {k: round(float(v), 4) for k, v in r.items()} for c, r in table.items()}
    return tables[objective]["macro"]["margin"], tables


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"{'held-out corpus':<14} {'cases':>5} {'core':>6} {'base':>6} {'heur':>6} {'learned':>7} {'ceiling':>7}")
    for c, r in table.items():
        print(f"{c:<14} {int(r['cases']):>5} {r['core']:>6.3f} {r['base']:>6.3f} {r['heuristic']:>6.3f} "
              f"{r['learned']:>7.3f} {r['ceiling']:>7.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.train_units", description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--collect", type=Path, metavar="FILE", help="run retrieval on the dev cases, write FILE")
    source.add_argument("--cases", type=Path, metavar="FILE", help="train from a cases file written by --collect")
    parser.add_argument("--corpora", nargs="*", help="corpora to collect (default: every registered one)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many dev cases per corpus (a try)")
    parser.add_argument("--pseudo", type=int, default=PSEUDO_PER_CORPUS, help="pseudo cases per corpus")
    parser.add_argument("--no-pseudo", action="store_true", help="fit on the dev cases only")
    parser.add_argument("--out", type=Path, default=UNIT_MODEL_PATH, help="model file")
    parser.add_argument("--objective", choices=OBJECTIVES, default=OBJECTIVE,
                        help="how the quote margin is chosen (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="print the leave-one-corpus-out table only")
    args = parser.parse_args(argv)
    try:
        if args.collect is not None:
            if holdout_name(args.collect):
                raise HoldoutError(f"train_units refuses {args.collect}: a held-out cases file")
            data = collect(args)
            sha = write_cases(data, args.collect)
            print(f"wrote {args.collect} ({len(data['cases'])} cases, sha256 {sha[:12]})")
            return 0
        data, sha = read_cases(args.cases)
    except (LotsmanError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    try:
        import lightgbm as lgb
    except ImportError:
        print("error: training needs LightGBM (the dev extra)", file=sys.stderr)
        return 2
    groups = build_groups(data)
    out_of_fold: dict[str, np.ndarray] = {}
    table = loco(groups, lgb, PARAMS, ROUNDS, pseudo=not args.no_pseudo, out_of_fold=out_of_fold)
    print_table(table)
    margin, quotes = margin_loco(groups, out_of_fold, args.objective)
    print(f"{'objective':<9} {'held-out corpus':<14} {'cases':>5} {'margin':>6} {'lead rec':>8} {'F1':>6} "
          f"{'recall':>6} {'chars50':>7} {'quotes':>6}")
    for obj, table in quotes.items():
        for c, r in table.items():
            print(f"{obj:<9} {c:<14} {int(r['cases']):>5} {r['margin']:>6.2f} {r['lead_only_recall']:>8.3f} "
                  f"{r['f1']:>6.3f} {r['recall']:>6.3f} {r['chars_p50']:>7.0f} {r['quotes']:>6.2f}")
    if args.dry_run:
        return 0
    from evals.train_ranker import export, model_text
    from nodes.context_retrieval.units import parse_unit_model

    model = fit([g for g in groups if not args.no_pseudo or not g.pseudo], lgb, PARAMS, ROUNDS)
    meta = {"params": PARAMS, "rounds": ROUNDS, "cases_sha256": sha, "leave_one_corpus_out": table,
            "pseudo": not args.no_pseudo, "pseudo_weight": PSEUDO_WEIGHT, "files": UNIT_FILES,
            "questions": sum(1 for g in groups if not g.pseudo), "pseudo_questions": sum(1 for g in groups if g.pseudo),
            "quote_margin": margin, "quote_objective": args.objective, "quote_leave_one_corpus_out": quotes}
    out = export(model, 0.0, meta, UNIT_FEATURES)
    parse_unit_model(out)
    args.out.write_text(model_text(out), encoding="utf-8")
    print(f"wrote {args.out} ({len(out['trees'])} trees, cases sha256 {sha[:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
