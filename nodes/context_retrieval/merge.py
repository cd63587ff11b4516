"""The merge of context_retrieval (pure): lanes in, capped and gated evidence out.

fuse (weighted RRF, dedupe) → demote tests → file diversity → a reserved slot for code → relevance gate →
token cap → the cap's remaining room filled with the best units of the core's first files (`units.py`, with
the learned ranker) or with further candidates (`pack.py`). Lane I/O lives in
`adapter.py`; everything here is table-tested without a database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodes.context_retrieval.fusion import DEFAULT_LANE_WEIGHTS, SAME_FILE_DECAY, diversify, fuse
from nodes.context_retrieval.gate import GateDecision, GateThresholds, relevance_gate
from nodes.context_retrieval.learned_ranker import LearnedRanker
from nodes.context_retrieval.pack import (
    FILL_MARK,
    SourceReader,
    apply_token_cap,
    card_spans,
    fill_budget,
    source_rows,
    symbol_cards,
)
from nodes.context_retrieval.rank_features import RankQuery
from nodes.context_retrieval.units import UnitReader, UnitScorer, unit_pack
from nodes.evidence import EvidenceRow
from nodes.retrieval_policy import CodePlan
from stores.errors import LaneBudgetExceeded

Lanes = Mapping[str, Sequence[Mapping[str, Any]]]
"""Lane name → raw rows in that lane's rank order."""

CODE_SLOT_EXPLICIT = 0
"""Where the best code row is guaranteed a place when the request asks about implementation explicitly."""
CODE_SLOT_IDENTIFIER = 2
"""…and when it only names catalogued symbols (the docs may explain them better: keep two doc rows first)."""

TEST_PENALTY = 0.3
"""Share of its fused score a test file keeps when the request is not about tests (seed 001's
`prefer_non_tests` applies to the ranked lane only; tests also arrive through the other lanes)."""
_TEST_PATH = re.compile(r"(^|/)(tests?|testing|fixtures?|generated)/|(^|/)test_[^/]*\.py$|_test\.py$"
                        r"|(^|/)conftest\.py$|_pb2\.py$")
"""Tests, test fixtures and generated code: demoted unless the request is about tests."""
_TEST_WORDS = re.compile(r"\btest|тест", re.IGNORECASE)


@dataclass
class GatheredLanes:
    """What the lanes brought back for one request, before any merging."""

    lanes: dict[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    absent_names: list[str] = field(default_factory=list)
    """Names of the request (`named_terms`) that occur nowhere in the session's index."""
    timings_ms: dict[str, float] = field(default_factory=dict)
    relaxation: str = "hard"
    """The plan step whose ranked SQL answered (`relax.STEPS`)."""
    overview: bool = False
    """The request asks about the repository itself (the landing lane ran for it)."""
    embedding: list[float] | None = None
    """The request's embedding, when a lane needed one."""
    similarity: dict[str, float] = field(default_factory=dict)
    """Row id → cosine distance to the request, for every candidate with a vector (only when the learned
    ranker orders the candidates)."""


@dataclass(frozen=True)
class MergeSpec:
    """How to merge: the request's parts the merge needs, and the budget."""

    query: str
    key_terms: Sequence[str] = ()
    file_names: Sequence[str] = ()
    """File names the user wrote (a named file found passes the gate)."""
    code_plan: CodePlan | None = None
    prefer_non_tests: bool = True
    plan_limit: int = 8
    top_k: int = 12
    token_cap: int = 4096
    lane_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_LANE_WEIGHTS))
    gate: GateThresholds = field(default_factory=GateThresholds)
    overview: bool = False
    """The request asks about the repository itself (its landing pages answer it)."""
    plain: bool = False
    """The plain baselines stay plain: no test demotion, no file diversity, no reserved slot."""
    ranker: LearnedRanker | None = None
    """Orders the fused candidates (None: the RRF order stands)."""
    rank_query: RankQuery | None = None
    """What the learned ranker knows of the request (defaults to the query and key terms)."""
    read_sources: SourceReader | None = None
    """Reads the source chunks of the core's symbol cards for the fill (`pack.py`; None: no read)."""
    read_units: UnitReader | None = None
    """Reads the rows of the core's first files for the unit fill (`units.py`; None: the rows' fill)."""
    unit_scorer: UnitScorer | None = None
    """Scores those files' units (None: the rows' fill)."""


@dataclass
class RetrievalResult:
    """What a retrieval returns: the capped evidence, the gate's verdict and per-lane diagnostics."""

    rows: list[EvidenceRow]
    relevant: bool
    gate: GateDecision
    lane_sizes: dict[str, int] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    relaxation: str = "hard"
    """How far the plan's filters were loosened to find enough rows (`hard`, `preference`, `none`)."""
    core: int | None = None
    """How many of `rows` are the core: the first `max(top_k, plan_limit)` ranked rows within the cap. The
    rows after it fill the cap's remaining room (`pack.fill_budget`). None: every row is core."""


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def mentions_tests(query: str) -> bool:
    return bool(_TEST_WORDS.search(query))


def demote_tests(rows: Sequence[EvidenceRow]) -> list[EvidenceRow]:
    """Scale test files' fused scores by TEST_PENALTY and re-sort (stable)."""
    out = [r.model_copy(update={"fused_score": r.fused_score * TEST_PENALTY}) if is_test_path(r.path) else r
           for r in rows]
    return sorted(out, key=lambda r: -r.fused_score)


def code_slot(code_plan: CodePlan | None) -> int | None:
    """The rank (0-based) the best code row is lifted to, or None when the request is not about code.

    The docs lanes come from one SQL and together outvote a single code lane; weighting the code lane up
    instead pushed code above the docs for every question that merely names a class. A reserved slot
    lifts one code row for code questions and costs docs questions at most one place.
    """
    if code_plan is None:
        return None
    if code_plan.explicit:
        return CODE_SLOT_EXPLICIT
    return CODE_SLOT_IDENTIFIER


EXPLICIT_CODE_FILES = 2
"""How many code files an explicit code request ("где в коде…", "the implementation of…") lifts to the
top, the best row of each: the best code row is often a near namesake of the answer (`generate_operation_id`
beside `generate_unique_id`). Dev macro recall@5 0.884 → 0.887, code-gold 0.830 → 0.843, no corpus lower."""


def reserve_slot(rows: Sequence[EvidenceRow], slot: int | None, layer_prefix: str = "C",
                 files: int = 1) -> list[EvidenceRow]:
    """Move the best rows of the first `files` files of the given layer family up to `slot`, `slot + 1`, …
    when they rank below it."""
    out = list(rows)
    if slot is None:
        return out
    lifted: list[str] = []
    for row in list(out):
        if len(lifted) >= files:
            break
        if row.layer.startswith(layer_prefix) and row.path not in lifted:
            target = slot + len(lifted)
            j = out.index(row)
            if j > target:
                out.insert(target, out.pop(j))
            lifted.append(row.path)
    return out


def by_distance(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows with a vector distance, nearest first (the semantic lane of a ranked result)."""
    return sorted((r for r in rows if r.get("distance") is not None), key=lambda r: r["distance"])


def by_lexical(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows with a lexical match, best first (the lexical lane of a ranked result)."""
    return sorted((r for r in rows if (r.get("lexical_score") or 0) > 0), key=lambda r: -r["lexical_score"])


def rank_rows(lanes: Lanes, spec: MergeSpec) -> list[EvidenceRow]:
    """Fused rows in final order, before the gate and the cap."""
    fused = fuse(lanes, spec.lane_weights)
    if spec.plain:
        return fused
    if spec.prefer_non_tests and not mentions_tests(spec.query):
        fused = demote_tests(fused)
    explicit = spec.code_plan is not None and spec.code_plan.explicit
    return reserve_slot(diversify(fused), code_slot(spec.code_plan), files=EXPLICIT_CODE_FILES if explicit else 1)


def spread_files(rows: Sequence[EvidenceRow], decay: float = SAME_FILE_DECAY) -> list[EvidenceRow]:
    """`diversify` on positions instead of scores: the row at position i scores 1/(i+1), the n-th row of a
    file keeps `decay**(n-1)` of that. Each file's first row keeps its place relative to the other files'
    first rows (the order of files does not change); further rows of a file make room for other files."""
    seen: dict[str, int] = {}
    keyed = []
    for i, row in enumerate(rows):
        n = seen.get(row.path, 0)
        seen[row.path] = n + 1
        keyed.append((-(decay ** n) / (i + 1), i, row))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [row for _, _, row in keyed]


def card_sources(core: Sequence[EvidenceRow], ranked: Sequence[EvidenceRow], spec: MergeSpec) -> list[EvidenceRow]:
    """The source chunks of the core's symbol cards that are not candidates already (none without a reader
    or a card, and none when the database cancels the read: like a slow lane, it only costs the fill)."""
    if spec.read_sources is None or not (cards := symbol_cards(core)):
        return []
    try:
        fetched = spec.read_sources(card_spans(cards))
    except LaneBudgetExceeded:
        return []
    return source_rows(fetched, ranked, cards)


def merge_lanes(gathered: GatheredLanes, spec: MergeSpec) -> RetrievalResult:
    """One merge of every lane: ranking, the relevance gate on the ranked rows, then the token cap: the core
    (the first `max(top_k, plan_limit)` rows that fit) and, except for the plain baselines, the cap's
    remaining room filled with further candidates (`pack.fill_budget`).

    With the learned ranker the gate still reads the RRF order it was calibrated on (re-ordered rows passed
    nearly every unanswerable dev question: abstention recall 0.43 → 0.34), and the learned order is spread
    over files as RRF's is (`spread_files`), so the capped evidence keeps its breadth; a code request's
    reserved code slot is kept.
    """
    ranked = rank_rows(gathered.lanes, spec)
    absent = gathered.absent_names if ranked else []
    reordered, model_scores = None, []
    if spec.ranker is not None and not spec.plain:
        by_model = spec.ranker.order(ranked, spec.rank_query or RankQuery(spec.query, spec.key_terms),
                                     gathered.similarity)
        model_scores = [r.scores["learned"] for r in by_model if "learned" in r.scores]
        # a code request keeps its reserved code slot whatever the model thinks (SPEC §10)
        explicit = spec.code_plan is not None and spec.code_plan.explicit
        reordered = reserve_slot(spread_files(by_model), code_slot(spec.code_plan),
                                 files=EXPLICIT_CODE_FILES if explicit else 1)
    decision = relevance_gate(ranked, list(spec.key_terms), thresholds=spec.gate, query=spec.query,
                              absent_names=absent, named_files=spec.file_names, overview=spec.overview,
                              ranker_scores=model_scores)
    if reordered is not None:
        ranked = reordered
    core = apply_token_cap(ranked[: max(spec.top_k, spec.plan_limit)], spec.token_cap)
    units = None if spec.plain else fill_units(core, ranked, gathered, spec)
    if units is not None:
        rows, kept = units
    else:
        rows = core if spec.plain else fill_budget(core, [*ranked, *card_sources(core, ranked, spec)],
                                                   spec.token_cap, spec.key_terms)
        kept = len(core)
    return RetrievalResult(rows=rows, relevant=decision.passed, gate=decision,
                           lane_sizes={k: len(v) for k, v in gathered.lanes.items()},
                           timings_ms=dict(gathered.timings_ms), relaxation=gathered.relaxation, core=kept)


def fill_units(core: Sequence[EvidenceRow], ranked: Sequence[EvidenceRow], gathered: GatheredLanes,
               spec: MergeSpec) -> tuple[list[EvidenceRow], int] | None:
    """The pack of the unit fill (`units.unit_pack`: the core's first rows, then the best units of its first
    files) and how many of its rows are the core; None without a reader and a scorer, or when the database
    cancels the read (the rows' fill then stands in: like a slow lane, it costs only the units)."""
    if spec.read_units is None or spec.unit_scorer is None or not core:
        return None
    try:
        rows = unit_pack(core, ranked, spec.rank_query or RankQuery(spec.query, spec.key_terms), spec.read_units,
                         spec.unit_scorer, spec.token_cap, embedding=gathered.embedding,
                         similarity=gathered.similarity)
    except LaneBudgetExceeded:
        return None
    return rows, sum(1 for r in rows if not r.metadata.get(FILL_MARK))
