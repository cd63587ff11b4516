"""The retrieval adapter of seed 000 §11: executes a `RetrievalPlan` (and a code plan) lane by lane.

exact-path seeding for `target_doc_hints` → path-substring fallback for hints (and file names) not
found → semantic + lexical ranking SQL of seed 001 → the code lane. `gather_lanes` does that I/O;
`merge.merge_lanes` (pure) fuses, gates and caps.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings

from nodes.context_retrieval.bridge import code_names, doc_identifiers
from nodes.context_retrieval.choices import DEFAULT_RANKER, Ranker
from nodes.context_retrieval.fusion import DEFAULT_LANE_WEIGHTS
from nodes.context_retrieval.gate import GateDecision, GateThresholds, named_terms
from nodes.context_retrieval.learned_ranker import LearnedRanker, load_ranker
from nodes.context_retrieval.merge import (
    GatheredLanes,
    MergeSpec,
    RetrievalResult,
    by_distance,
    by_lexical,
    is_test_path,
    mentions_tests,
    merge_lanes,
    rank_rows,
)
from nodes.context_retrieval.pack import index_source_reader
from nodes.context_retrieval.rank_features import RankQuery
from nodes.context_retrieval.relax import RelaxStep, can_find, next_step, relax_plan
from nodes.context_retrieval.units import UnitScorer, index_unit_reader, load_unit_scorer
from nodes.conversation_understanding import is_generic_term
from nodes.layout import RepoLayout, about_the_project, overview_request, says_this_project, translate_prefixes
from nodes.retrieval_policy import CodePlan, RetrievalPlan, RetrievalProfile
from nodes.terms import key_terms
from stores.errors import LaneBudgetExceeded
from stores.layers import Layer
from stores.repository import RagRepository
from stores.sessions import RagSession
from stores.statements import RetrieveFilters, path_lookups

CANDIDATES = 60
"""Rows each SQL lane contributes before fusion."""

BRIDGE_ROWS = 8
"""Rows each bridge look-up adds."""
BRIDGE_CODE_LAYERS = (Layer.C1_SYMBOL_CATALOG.value, Layer.C0_SOURCE_CHUNKS.value)

LANDING_ROWS = 8
"""Rows of the landing pages offered to an overview (GENERAL_QA) question."""

AMBIENT_CODE_PLAN = CodePlan(layers=[Layer.C1_SYMBOL_CATALOG.value, Layer.C0_SOURCE_CHUNKS.value], terms=[],
                             reason="code competes with prose on every question (SPEC §10)")
"""The code lanes' plan when the request names no code: definitions, docstrings and comments answer
behaviour questions too, so they always compete and the fusion decides (no reserved slot, though).
Symbols and source only: entrypoint and import-edge rows answer "which route/import", not behaviour
(dev macro recall@5 0.823 → 0.834 against all four code layers)."""

CHUNK_LAYERS = (Layer.D0_DOC_CHUNKS.value,)


def catalog_only(plan: RetrievalPlan) -> bool:
    """A plan over catalog cards alone (seed 000's file lookup: D1 + D3), without the text's chunks."""
    return bool(plan.layers) and CHUNK_LAYERS[0] not in plan.layers and all(
        layer.startswith("D") for layer in plan.layers)


T = TypeVar("T")


class InlineExecutor(Executor):
    """Runs each lane on the calling thread: for a retriever used on its own, without a shared pool."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller through .result(), as a pool would
            future.set_exception(exc)
        return future


def plan_filters(plan: RetrievalPlan, layout: RepoLayout | None = None) -> RetrieveFilters:
    """Seed 000 §11 `_map_filters`: the plan's filters as repository arguments, its path prefixes
    translated to the repository's layout (`layout.translate_prefixes`)."""
    f = plan.filters
    return RetrieveFilters(
        layers=tuple(plan.layers),
        path_prefixes=tuple(translate_prefixes(f.path_prefixes or (), layout)),
        prefer_path_prefixes=tuple(translate_prefixes(f.prefer_path_prefixes or (), layout)),
        prefer_like_patterns=tuple(f.prefer_like_patterns or ()),
        metadata_domain=f.metadata_domain,
        metadata_subdomain=f.metadata_subdomain,
        prefer_non_tests=True,  # seed 000 plans never turn it off
    )


def exact_lookups(hints: Sequence[str], *, tests_last: bool = False) -> list[str]:
    """The paths the exact lane asks for: every spelling of each hint (`path_lookups`: as written, then with
    `\\` as a separator, so `docs\\api\\x.md` finds `docs/api/x.md` and `back\\slash.md` itself), deduplicated.

    `tests_last` (seed 000's `prefer_non_tests`, for a request that does not mention tests): test paths go after
    the others. The lane's rows come in lookup order under one LIMIT, so a long test fixture hinted first filled
    it and the page the alias named never entered the lane (the README demo over the whole repository, issue 38).
    """
    lookups = list(dict.fromkeys(p for hint in hints for p in path_lookups(hint)))
    return sorted(lookups, key=is_test_path) if tests_last else lookups


def missing_hints(hints: Sequence[str], found_paths: set[str]) -> list[str]:
    """Hints that the exact lane found under none of their spellings (empty ones name no file)."""
    return [h for h in hints if (spellings := path_lookups(h)) and not found_paths.intersection(spellings)]


def substring_keys(hints: Sequence[str]) -> list[str]:
    """What the substring lane looks for: the trailing path parts of each hint (`tutorial/cors.md`,
    `cors.md`), longest first, so `docs/tutorial/cors.md` still finds `docs/ru/docs/tutorial/cors.md`; a
    hint's spelling as written comes before its `/` spelling (`path_lookups`)."""
    keys: dict[str, None] = {}
    for hint in hints:
        for spelling in path_lookups(hint):
            parts = [p for p in spelling.split("/") if p]
            for i in range(len(parts)):
                tail = "/".join(parts[i:])
                if len(tail) >= 3:
                    keys.setdefault(tail, None)
    return list(keys)


class RetrievalAdapter:
    """Executes plans against one repository with one embedder (the session's).

    Args:
        repository: the session store.
        embedder: the session's embedder.
        executor: runs the independent lane queries side by side (psycopg releases the GIL on I/O), so a
            request costs its slowest lane, not the sum; the graph passes one shared pool. Without it
            the lanes run one after another.
        lane_weights: RRF weights per lane.
        candidates: rows each SQL lane contributes before fusion.
        stop_lexemes: the session's frequent lexemes, left out of lexical queries.
        ambient_code: run the code lanes for every request, not only for those with a code plan.
        layout: the repository's documentation roots and landing pages (`layout.discover_layout`).
        gate: the relevance gate's thresholds.
        symbols: the session's lower-cased symbol names (the docs→code bridge looks them up).
        bridge: run the docs↔code bridge lanes. Off by default: on the dev splits of five corpora it cost
            macro recall@5 (0.823 without, 0.815 with, 0.821 docs→code alone) — the prose it pulls in
            for a definition pushes the gold page out of the top 5 (fastapi-ru 0.930 → 0.892).
        exact_vectors: scan the session's vectors exactly (small sessions: exact, and independent of
            other sessions' rows in the shared HNSW index).
        present_layers: the layers holding rows in the session (None: not known). A relaxation step
            whose layers hold nothing is skipped instead of queried (a code-only repository has no docs
            layers: on the standard library at 100k rows that was up to three round trips per request).
        learned_ranker: the model behind `ranker="learned"` (None: the shipped one, loaded on first use).
        unit_scorer: the unit model of the learned ranker's pack (None: the shipped one, loaded on first use).
    """

    def __init__(self, repository: RagRepository, embedder: Embeddings, *, executor: Executor | None = None,
                 lane_weights: Mapping[str, float] | None = None, candidates: int = CANDIDATES,
                 stop_lexemes: Sequence[str] = (), ambient_code: bool = True,
                 layout: RepoLayout | None = None, gate: GateThresholds | None = None,
                 symbols: frozenset[str] = frozenset(), bridge: bool = False, exact_vectors: bool = False,
                 present_layers: frozenset[str] | None = None, learned_ranker: LearnedRanker | None = None,
                 unit_scorer: UnitScorer | None = None) -> None:
        self.repository = repository
        self.embedder = embedder
        self.executor = executor or InlineExecutor()
        self.lane_weights = dict(lane_weights or DEFAULT_LANE_WEIGHTS)
        self.candidates = candidates
        self.stop_lexemes = list(stop_lexemes)
        self.ambient_code = ambient_code
        self.layout = layout
        self.gate = gate or GateThresholds()
        self.symbols = symbols
        self.bridge = bridge
        self.exact_vectors = exact_vectors
        self.present_layers = present_layers
        self.learned_ranker = learned_ranker
        self.unit_scorer = unit_scorer

    def fetch_rows(
        self, session: RagSession, plan: RetrievalPlan, code_plan: CodePlan | None, query: str, *,
        file_names: Sequence[str] = (), terms: Sequence[str] = (), gate_terms: Sequence[str] | None = None,
        top_k: int = 12, token_cap: int = 4096, lanes_enabled: Sequence[str] | None = None,
        ranker: Ranker = DEFAULT_RANKER,
    ) -> RetrievalResult:
        """Run every lane of the plan and merge them.

        Args:
            session: the session (its embedder must be `self.embedder`).
            plan: the docs plan of seed 000.
            code_plan: our code plan, or None.
            query: the standalone request text.
            file_names: the route's file-name anchors (also looked up by path substring).
            terms: the route's target terms (added to the key terms when `gate_terms` is not given).
            gate_terms: the request's key terms for the relevance gate, when already known.
            top_k: rows kept after fusion (at least the plan's limit).
            token_cap: token budget of the returned rows.
            lanes_enabled: restrict to these lanes (baselines: ["semantic"] or ["lexical"]); the merge of
                a restricted run stays plain.
            ranker: `rrf` keeps the weighted-RRF order; `learned` re-orders the fused candidates by the
                learned ranker (`learned_ranker.py`).
        """
        hints = plan.filters.target_doc_hints or []
        if not query.strip() and not hints and not file_names:
            return RetrievalResult(rows=[], relevant=False, gate=GateDecision(False, "empty request", 0.0, 0.0))
        gathered = self.gather_lanes(session, plan, code_plan, query, file_names=file_names,
                                     lanes_enabled=lanes_enabled)
        learned = self._learned() if ranker == "learned" and lanes_enabled is None else None
        if learned is not None:
            try:
                gathered.similarity = _timed(gathered.timings_ms, "similarity",
                                             lambda: self.candidate_similarity(session, gathered, query))
            except LaneBudgetExceeded:  # like a slow lane: the question is answered in the RRF order
                gathered.timings_ms["similarity:cancelled"] = gathered.timings_ms.get("similarity", 0.0)
                learned = None
        t0 = time.perf_counter()
        key = list(gate_terms) if gate_terms is not None else key_terms(query, terms)
        spec = MergeSpec(
            query=query, key_terms=key, file_names=file_names, code_plan=code_plan, plan_limit=plan.limit,
            top_k=top_k, token_cap=token_cap,
            lane_weights=self.lane_weights, gate=self.gate, plain=lanes_enabled is not None,
            overview=gathered.overview, ranker=learned,
            # the pack's spare room takes the source lines of the core's symbol cards (one statement)
            read_sources=index_source_reader(self.repository, session) if lanes_enabled is None else None,
            # with the learned ranker, the rest of the cap takes the best units (statements, code facts,
            # sentences, list items, table rows) of the core's first files instead (two statements)
            read_units=index_unit_reader(self.repository, session) if learned is not None else None,
            unit_scorer=self._unit_scorer() if learned is not None else None,
            rank_query=RankQuery(
                query, key, find_files=plan.profile == RetrievalProfile.FILE_LOOKUP, code_plan=code_plan is not None,
                explicit_code=code_plan is not None and code_plan.explicit,
                general=plan.profile == RetrievalProfile.GENERAL_QA_GROUNDED_SUMMARY),
        )
        if self.bridge and lanes_enabled is None:
            self._bridge(session, gathered, spec)
        result = merge_lanes(gathered, spec)
        result.timings_ms["merge"] = _ms(t0)
        return result

    def _unit_scorer(self) -> UnitScorer:
        if self.unit_scorer is None:
            self.unit_scorer = load_unit_scorer()
        return self.unit_scorer

    def _learned(self) -> LearnedRanker:
        if self.learned_ranker is None:
            self.learned_ranker = load_ranker()
        return self.learned_ranker

    def candidate_similarity(self, session: RagSession, gathered: GatheredLanes, query: str) -> dict[str, float]:
        """Every candidate's cosine distance to the request: the lanes' own where they carry one, one
        primary-key read for the rest (rows only the lexical, code or path lanes found)."""
        known: dict[str, float] = {}
        missing: dict[str, None] = {}
        for rows in gathered.lanes.values():
            for row in rows:
                rid = str(row["id"])
                if row.get("distance") is not None:
                    known[rid] = float(row["distance"])
                else:
                    missing[rid] = None
        wanted = [rid for rid in missing if rid not in known]
        if wanted:
            embedding = gathered.embedding if gathered.embedding is not None else self.embedder.embed_query(query)
            known.update(self.repository.distances(session, wanted, embedding))
        return known

    def _bridge(self, session: RagSession, gathered: GatheredLanes, spec: MergeSpec) -> None:
        """Add the docs→code and code→docs lanes read off a first ranking (SPEC §10)."""
        first = rank_rows(gathered.lanes, spec)
        known = [*(spec.code_plan.terms if spec.code_plan else []), *(self.layout.packages if self.layout else ())]
        names = doc_identifiers(first, self.symbols, exclude=known)
        defined = code_names(first)
        # Both look-ups side by side on the lane pool (they were the one sequential step after the lanes).
        futures: dict[str, Future[list[dict[str, Any]]]] = {}
        if names:
            futures["bridge_code"] = self.executor.submit(_timed, gathered.timings_ms, "bridge_code", lambda: (
                self.repository.retrieve_lexical_code(session, "", names=names, layers=BRIDGE_CODE_LAYERS,
                                                      limit=BRIDGE_ROWS)))
        if defined:
            futures["bridge_docs"] = self.executor.submit(_timed, gathered.timings_ms, "bridge_docs", lambda: (
                self.repository.retrieve(session, query_embedding=None, query_text=" ".join(defined),
                                         filters=RetrieveFilters(layers=(Layer.D0_DOC_CHUNKS.value,)),
                                         limit=BRIDGE_ROWS, candidates=BRIDGE_ROWS,
                                         stop_lexemes=self.stop_lexemes)))
        for lane, future in futures.items():
            try:
                rows = future.result()
            except LaneBudgetExceeded:
                gathered.timings_ms[f"{lane}:cancelled"] = gathered.timings_ms.get(lane, 0.0)
                continue
            gathered.lanes[lane] = by_lexical(rows) if lane == "bridge_docs" else rows

    def gather_lanes(self, session: RagSession, plan: RetrievalPlan, code_plan: CodePlan | None, query: str, *,
                     file_names: Sequence[str] = (), lanes_enabled: Sequence[str] | None = None) -> GatheredLanes:
        """Query every enabled lane (side by side on the executor) and return their raw rows."""
        out = GatheredLanes()
        enabled = set(lanes_enabled) if lanes_enabled is not None else None

        def on(lane: str) -> bool:
            return enabled is None or lane in enabled

        def submit(name: str, fn: Callable[[], T]) -> Future[T]:
            return self.executor.submit(_timed, out.timings_ms, name, fn)

        def result(future: Future[T], name: str, empty: T) -> T:
            """A lane whose statement ran past the repository's budget was cancelled by PostgreSQL: the
            request goes on with the other lanes (`<lane>:cancelled` in the timings says so)."""
            try:
                return future.result()
            except LaneBudgetExceeded:
                out.timings_ms[f"{name}:cancelled"] = out.timings_ms.get(name, 0.0)
                return empty

        hints = list(plan.filters.target_doc_hints or [])
        names = named_terms(query)
        out.overview = self._overview(plan, query)
        # the front doors compete for an overview, a general question, and any question that says "this
        # project" in so many words (how it is built, where it keeps data: the README says so)
        landing = (out.overview or plan.profile == RetrievalProfile.GENERAL_QA_GROUNDED_SUMMARY
                   or says_this_project(query))
        tests_last = not mentions_tests(query)
        paths_f = submit("paths", lambda: self._path_lanes(session, hints, file_names, on, landing=landing,
                                                           tests_last=tests_last))
        absent_f = submit("names", lambda: self.repository.absent_terms(session, names)) if names else None
        embedding = _timed(out.timings_ms, "embed", lambda: self.embedder.embed_query(query)) \
            if (on("semantic") or on("code")) else None
        out.embedding = embedding
        ranked_f = submit("ranked", lambda: self._ranked(session, plan, query, embedding, on))
        chunks_f = submit("chunks", lambda: self._chunks(session, plan, query, embedding, on)) \
            if catalog_only(plan) and (on("semantic") or on("lexical")) else None
        code_plan = code_plan or (AMBIENT_CODE_PLAN if self.ambient_code else None)
        code_fs = self._submit_code_lanes(session, code_plan, query, embedding, submit) if on("code") else None
        paths = result(paths_f, "paths", {})
        out.lanes.update(paths)
        ranked, out.relaxation = result(ranked_f, "ranked", ([], "hard"))
        # a file plan searches catalog cards, which hold titles and headings, not the words of the text:
        # the file's own chunks compete in the semantic and lexical lanes (the ranked lane stays the plan's)
        pooled = [*ranked, *(result(chunks_f, "chunks", []) if chunks_f is not None else [])]
        for lane, rows in (("ranked", ranked), ("semantic", by_distance(pooled)), ("lexical", by_lexical(pooled))):
            if on(lane):
                out.lanes[lane] = rows
        if code_fs is not None:
            out.lanes["code"] = result(code_fs[0], "code", [])
            code_semantic = result(code_fs[1], "code_semantic", [])
            if "semantic" in out.lanes:
                # one nearest-first lane over prose and code (one embedder, one distance): the docs SQL feeds
                # three lanes (ranked, semantic, lexical), so a code row ranked first in a lane of its own lost
                # to a prose row ranked tenth in all three (dev macro recall@5 0.838 → 0.856)
                out.lanes["semantic"] = by_distance([*out.lanes["semantic"], *code_semantic])
            else:
                out.lanes["code_semantic"] = by_distance(code_semantic)
        out.absent_names = result(absent_f, "names", []) if absent_f is not None else []
        return out

    def _overview(self, plan: RetrievalPlan, query: str) -> bool:
        """Whether the request is an overview of the repository (its landing pages answer it)."""
        if plan.profile == RetrievalProfile.GENERAL_QA_GROUNDED_SUMMARY:
            return about_the_project(query, self.layout)
        topics = [t for t in key_terms(query) if not is_generic_term(t)]
        return overview_request(query, topics, self.layout)

    def _ranked(self, session: RagSession, plan: RetrievalPlan, query: str, embedding: list[float] | None,
                on: Callable[[str], bool]) -> tuple[list[dict[str, Any]], RelaxStep]:
        """Seed 001's ranked SQL under the plan, loosened step by step while it finds too little."""
        step: RelaxStep | None = "hard"
        tried: RetrievalPlan | None = None
        rows: list[dict[str, Any]] = []
        answered: RelaxStep = "hard"
        while step is not None:
            current = relax_plan(plan, step)
            if current != tried:  # a step that changes nothing is not worth a query
                # nor one whose layers hold nothing in this session: as if queried
                rows = self.repository.retrieve(
                    session, query_embedding=embedding if on("semantic") else None,
                    query_text=query if (on("lexical") or on("ranked")) else "",
                    filters=plan_filters(current, self.layout),
                    limit=self.candidates, candidates=self.candidates, stop_lexemes=self.stop_lexemes,
                    exact=self.exact_vectors) if can_find(current.layers, self.present_layers) else []
                tried, answered = current, step
            step = next_step(step, len(rows), plan.limit)
        return rows, answered

    def _chunks(self, session: RagSession, plan: RetrievalPlan, query: str, embedding: list[float] | None,
                on: Callable[[str], bool]) -> list[dict[str, Any]]:
        """The documents' chunks under the plan's filters as preferences (a file plan's second look)."""
        chunks = relax_plan(plan, "preference").model_copy(update={"layers": list(CHUNK_LAYERS)})
        if not can_find(chunks.layers, self.present_layers):
            return []
        return self.repository.retrieve(
            session, query_embedding=embedding if on("semantic") else None,
            query_text=query if on("lexical") else "", filters=plan_filters(chunks, self.layout),
            limit=self.candidates, candidates=self.candidates, stop_lexemes=self.stop_lexemes,
            exact=self.exact_vectors)

    def _path_lanes(self, session: RagSession, hints: Sequence[str], file_names: Sequence[str],
                    on: Callable[[str], bool], *, landing: bool,
                    tests_last: bool = True) -> dict[str, Sequence[Mapping[str, Any]]]:
        out: dict[str, Sequence[Mapping[str, Any]]] = {}
        pages = self.layout.landing if self.layout else ()
        if on("landing") and pages and landing:
            # an overview question is answered by the repository's front doors, which no other lane prefers
            out["landing"] = self.repository.retrieve_exact_files(session, pages, limit=LANDING_ROWS)
        if on("exact") and hints:
            out["exact"] = self.repository.retrieve_exact_files(session, exact_lookups(hints, tests_last=tests_last),
                                                               limit=self.candidates)
        found = {r["path"] for r in out.get("exact", [])}
        wanted = missing_hints(hints, found) + missing_hints(file_names, found)
        if on("substring") and wanted:
            out["substring"] = self._substring_lane(session, wanted)
        return out

    def _submit_code_lanes(self, session: RagSession, code_plan: CodePlan | None, query: str,
                           embedding: list[float] | None, submit: Callable[[str, Callable[[], Any]], Future[Any]],
                           ) -> tuple[Future[Any], Future[Any]] | None:
        if code_plan is None:
            return None
        code_f = submit("code", lambda: self.repository.retrieve_lexical_code(
            session, " ".join([query, *code_plan.terms]), layers=code_plan.layers, names=code_plan.terms,
            limit=code_plan.limit * 3, stop_lexemes=self.stop_lexemes))
        code_sem_f = submit("code_semantic", lambda: self.repository.retrieve(
            session, query_embedding=embedding, query_text="", filters=RetrieveFilters(layers=tuple(code_plan.layers)),
            limit=code_plan.limit * 3, candidates=self.candidates, exact=self.exact_vectors))
        return code_f, code_sem_f

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


def _timed(timings: dict[str, float], name: str, fn: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    try:
        return fn()
    finally:
        timings[name] = _ms(t0)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)
