"""The retrieval adapter of seed 000 §11: executes a `RetrievalPlan` (and a code plan) lane by lane.

exact-path seeding for `target_doc_hints` → path-substring fallback for hints (and file names) not
found → semantic + lexical ranking SQL of seed 001 → the code lane → one merge: dedupe, weighted RRF,
file diversity, relevance gate, token cap.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings

from nodes.context_retrieval.fusion import DEFAULT_LANE_WEIGHTS, diversify, fuse
from nodes.context_retrieval.gate import GateDecision, apply_token_cap, key_terms, named_terms, relevance_gate
from nodes.evidence import EvidenceRow
from nodes.retrieval_policy import CodePlan, RetrievalPlan
from stores.repository import RagRepository
from stores.sessions import RagSession
from stores.statements import RetrieveFilters, normalize_path

CANDIDATES = 60

_POOL = ThreadPoolExecutor(max_workers=6, thread_name_prefix="lotsman-lane")
"""Shared by all adapters: each request runs up to five lane queries at once."""
"""Rows each SQL lane contributes before fusion."""


@dataclass
class RetrievalResult:
    """What `fetch_rows` returns: the capped evidence, the gate's verdict and per-lane diagnostics."""

    rows: list[EvidenceRow]
    relevant: bool
    gate: GateDecision
    lane_sizes: dict[str, int] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)


def plan_filters(plan: RetrievalPlan) -> RetrieveFilters:
    """Seed 000 §11 `_map_filters`: the plan's filters as repository arguments."""
    f = plan.filters
    return RetrieveFilters(
        layers=tuple(plan.layers),
        path_prefixes=tuple(f.get("path_prefixes") or ()),
        exclude_path_prefixes=tuple(f.get("exclude_path_prefixes") or ()),
        exclude_like_patterns=tuple(f.get("exclude_like_patterns") or ()),
        prefer_path_prefixes=tuple(f.get("prefer_path_prefixes") or ()),
        prefer_like_patterns=tuple(f.get("prefer_like_patterns") or ()),
        prefer_non_tests=bool(f.get("prefer_non_tests", True)),
        metadata_domain=f.get("metadata.domain"),
        metadata_subdomain=f.get("metadata.subdomain"),
    )


def missing_hints(hints: Sequence[str], found_paths: set[str]) -> list[str]:
    """Hints that the exact lane did not find (compared after normalisation)."""
    return [h for h in hints if normalize_path(h) and normalize_path(h) not in found_paths]


def substring_keys(hints: Sequence[str]) -> list[str]:
    """What the substring lane looks for: the trailing path parts of each hint (`tutorial/cors.md`,
    `cors.md`), longest first, so `docs/tutorial/cors.md` still finds `docs/ru/docs/tutorial/cors.md`."""
    keys: dict[str, None] = {}
    for hint in hints:
        parts = [p for p in normalize_path(hint).split("/") if p]
        for i in range(len(parts)):
            tail = "/".join(parts[i:])
            if len(tail) >= 3:
                keys.setdefault(tail, None)
    return list(keys)


CODE_SLOT_EXPLICIT = 0
"""Where the best code row is guaranteed a place when the request asks about implementation explicitly."""
CODE_SLOT_IDENTIFIER = 2
"""…and when it only names catalogued symbols (the docs may explain them better: keep two doc rows first)."""


TEST_PENALTY = 0.3
"""Share of its fused score a test file keeps when the request is not about tests (seed 001's
`prefer_non_tests` applies to the ranked lane only; tests also arrive through the other lanes)."""
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")
_TEST_WORDS = re.compile(r"\btest|тест", re.IGNORECASE)


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


def reserve_slot(rows: Sequence[EvidenceRow], slot: int | None, layer_prefix: str = "C") -> list[EvidenceRow]:
    """Move the best row of the given layer family up to `slot` when it ranks below it."""
    out = list(rows)
    if slot is None:
        return out
    for i, row in enumerate(out):
        if row.layer.startswith(layer_prefix):
            if i > slot:
                out.insert(slot, out.pop(i))
            break
    return out


def by_distance(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted((r for r in rows if r.get("distance") is not None), key=lambda r: r["distance"])


def by_lexical(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted((r for r in rows if (r.get("lexical_score") or 0) > 0), key=lambda r: -r["lexical_score"])


class RetrievalAdapter:
    """Executes plans against one repository with one embedder (the session's)."""

    def __init__(self, repository: RagRepository, embedder: Embeddings, *,
                 lane_weights: Mapping[str, float] | None = None, candidates: int = CANDIDATES,
                 stop_lexemes: Sequence[str] = ()) -> None:
        self.repository = repository
        self.stop_lexemes = list(stop_lexemes)
        self.embedder = embedder
        self.lane_weights = dict(lane_weights or DEFAULT_LANE_WEIGHTS)
        self.candidates = candidates

    def fetch_rows(
        self, session: RagSession, plan: RetrievalPlan, code_plan: CodePlan | None, query: str, *,
        file_names: Sequence[str] = (), terms: Sequence[str] = (), top_k: int = 12, token_cap: int = 4096,
        lanes_enabled: Sequence[str] | None = None,
    ) -> RetrievalResult:
        """Run every lane of the plan and merge them.

        Args:
            session: the session (its embedder must be `self.embedder`).
            plan: the docs plan of seed 000.
            code_plan: our code plan, or None.
            query: the standalone request text.
            file_names: the route's file-name anchors (also looked up by path substring).
            terms: the route's target terms (key terms for the relevance gate).
            top_k: rows kept after fusion (at least the plan's limit).
            token_cap: token budget of the returned rows.
            lanes_enabled: restrict to these lanes (baselines: ["semantic"] or ["lexical"]).
        """
        timings: dict[str, float] = {}
        lanes: dict[str, Sequence[Mapping[str, Any]]] = {}
        hints = list(plan.filters.get("target_doc_hints") or [])
        if not query.strip() and not hints and not file_names:
            empty = GateDecision(False, "empty request", 0.0, 0.0)
            return RetrievalResult(rows=[], relevant=False, gate=empty)
        enabled = set(lanes_enabled) if lanes_enabled is not None else None

        def on(lane: str) -> bool:
            return enabled is None or lane in enabled

        def timed(name: str, fn: Callable[[], Any]) -> Any:
            t0 = time.perf_counter()
            try:
                return fn()
            finally:
                timings[name] = _ms(t0)

        def path_lanes() -> dict[str, Sequence[Mapping[str, Any]]]:
            out: dict[str, Sequence[Mapping[str, Any]]] = {}
            if on("exact") and hints:
                out["exact"] = self.repository.retrieve_exact_files(session, hints, limit=self.candidates)
            found = {r["path"] for r in out.get("exact", [])}
            wanted = missing_hints(hints, found) + [f for f in file_names if normalize_path(f) not in found]
            if on("substring") and wanted:
                out["substring"] = self._substring_lane(session, wanted)
            return out

        # The lanes are independent queries: run them side by side (psycopg releases the GIL on I/O),
        # so a request costs its slowest lane, not the sum.
        names = named_terms(query)
        paths_f = _POOL.submit(timed, "paths", path_lanes)
        absent_f = _POOL.submit(timed, "names", lambda: self.repository.absent_terms(session, names)) \
            if names else None
        embedding = timed("embed", lambda: self.embedder.embed_query(query)) \
            if (on("semantic") or on("code")) else None
        ranked_f = _POOL.submit(timed, "ranked", lambda: self.repository.retrieve(
            session, query_embedding=embedding if on("semantic") else None,
            query_text=query if (on("lexical") or on("ranked")) else "", filters=plan_filters(plan),
            limit=self.candidates, candidates=self.candidates, stop_lexemes=self.stop_lexemes))
        code_f = code_sem_f = None
        if code_plan is not None and on("code"):
            code_f = _POOL.submit(timed, "code", lambda: self.repository.retrieve_lexical_code(
                session, " ".join([query, *code_plan.terms]), layers=code_plan.layers, names=code_plan.terms,
                limit=code_plan.limit * 3, stop_lexemes=self.stop_lexemes))
            code_sem_f = _POOL.submit(timed, "code_semantic", lambda: self.repository.retrieve(
                session, query_embedding=embedding, query_text="",
                filters=RetrieveFilters(layers=tuple(code_plan.layers)), limit=code_plan.limit * 3,
                candidates=self.candidates))
        lanes.update(paths_f.result())
        ranked = ranked_f.result()
        if on("ranked"):
            lanes["ranked"] = ranked
        if on("semantic"):
            lanes["semantic"] = by_distance(ranked)
        if on("lexical"):
            lanes["lexical"] = by_lexical(ranked)
        if code_f is not None and code_sem_f is not None:
            lanes["code"] = code_f.result()
            lanes["code_semantic"] = by_distance(code_sem_f.result())
        absent_all = absent_f.result() if absent_f is not None else []

        t = time.perf_counter()
        fused = fuse(lanes, self.lane_weights)
        if enabled is None:  # the plain baselines stay plain: no file diversity, no reserved slots
            if plan_filters(plan).prefer_non_tests and not mentions_tests(query):
                fused = demote_tests(fused)
            fused = reserve_slot(diversify(fused), code_slot(code_plan))
        gate_terms = key_terms(query, terms)
        absent = absent_all if fused else []
        decision = relevance_gate(fused, gate_terms, absent_names=absent, named_files=file_names)
        rows = apply_token_cap(fused[: max(top_k, plan.limit)], token_cap)
        timings["merge"] = _ms(t)
        return RetrievalResult(rows=rows, relevant=decision.passed, gate=decision,
                               lane_sizes={k: len(v) for k, v in lanes.items()}, timings_ms=timings)

    def _substring_lane(self, session: RagSession, wanted: Sequence[str]) -> list[Mapping[str, Any]]:
        rows: list[Mapping[str, Any]] = []
        seen: set[str] = set()
        for key in substring_keys(wanted):
            if posixpath.basename(key) == key and "." not in key:
                continue  # a bare directory-ish word would match half the tree
            for row in self.repository.retrieve_chunks_by_path_substrings(session, [key], limit=20):
                if row["id"] not in seen:
                    seen.add(row["id"])
                    rows.append(row)
            if rows:
                break  # the longest matching tail is the most specific
        return rows


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)
