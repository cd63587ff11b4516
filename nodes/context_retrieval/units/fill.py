"""The unit fill of the evidence pack: the best units of the core's first files after the kept core."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nodes.context_retrieval.gate import row_tokens
from nodes.context_retrieval.pack import FILL_MARK
from nodes.context_retrieval.rank_features import RankQuery
from nodes.context_retrieval.units.features import RANKED_SEEN, UnitContext, nearest_units, unit_features
from nodes.context_retrieval.units.scorer import UnitScorer
from nodes.context_retrieval.units.split import DOC_LAYER, FACT_LAYER, SOURCE_LAYER, UNIT_LAYERS, Unit, split_rows
from nodes.evidence import EvidenceRow

if TYPE_CHECKING:
    from stores.repository import RagRepository
    from stores.sessions import RagSession

UNIT_FILES = 4
"""How many of the core's first files are read and cut into units (one statement)."""
MAX_UNIT_ROWS = 3000
"""Rows read for one request's files together (a 3000-line module has ~100 chunks and ~200 facts)."""
JOIN_GAP = 1
"""Selected units of one row at most this many lines apart are joined into one evidence row."""
UNIT_KEEP = 8
"""Rows of the core kept ahead of the units (the core is `max(top_k, plan_limit)` rows, 12 by default).
Leave-one-corpus-out on the dev cases, evidence key-fact recall macro with the core's first 12 / 8 / 6 / 4 /
2 / 1 rows kept: 0.766 / 0.787 / 0.776 / 0.780 / 0.778 / 0.780 (today's pack 0.757)."""
UNIT_MARK = "evidence_unit"
"""Metadata key set on rows the unit fill added (with the fill's own mark)."""
UNIT_SCORES = "unit_scores"
"""Metadata key of a pack row's scored units: `[start, end, score, kind, text]` each, the units of its lines
that the scorer ordered (a filled row's own units; a kept core row's units inside its span). The answer is
composed from them (`nodes/context_analysis`): what is quoted is what the scorer ranks."""

def covered_by(unit: Unit, pack: Sequence[EvidenceRow]) -> bool:
    """A passage of the pack already holds the unit's lines (or its text)."""
    for p in pack:
        if p.path != unit.path:
            continue
        if p.layer in (DOC_LAYER, SOURCE_LAYER) and p.span_start <= unit.start and unit.end <= p.span_end:
            return True
        if unit.text and unit.text in p.content:
            return True
    return False


def unit_files(core: Sequence[EvidenceRow], files: int = UNIT_FILES) -> list[str]:
    """The core's first `files` files, in rank order."""
    return list(dict.fromkeys(r.path for r in core))[:files]


def unit_row(units: Sequence[Unit], rows: Sequence[Mapping[str, Any]], fallback: EvidenceRow | None) -> EvidenceRow:
    """Selected units of one file's adjacent lines (line order) as one evidence row: their texts joined, the
    span from the first to the last; provenance of the row's candidate when it was one, else of its file's best row."""
    first = units[0]
    src = rows[first.row]
    text = "\n".join(u.text for u in units)
    lanes, scores, fused = ({}, {}, 0.0) if fallback is None else (dict(fallback.lanes), dict(fallback.scores),
                                                                    fallback.fused_score)
    layer = next((u.layer for u in units if u.layer != FACT_LAYER), first.layer)
    rid = str(src.get("id") or "")
    suffix = f"#{first.start}-{units[-1].end}"
    return EvidenceRow(id=f"{rid}{suffix}", path=first.path, layer=layer, title=str(src.get("title") or ""),
                       content=text, span_start=min(u.start for u in units), span_end=max(u.end for u in units),
                       metadata={**dict(src.get("metadata") or {}), UNIT_MARK: True, "unit_kinds":
                                 sorted({u.kind for u in units}), "source_row": rid},
                       lanes={**lanes, "unit": 1}, scores=scores, fused_score=fused)


def pack_units(pack: Sequence[EvidenceRow], units: Sequence[Unit], scores: np.ndarray,
               rows: Sequence[Mapping[str, Any]], ranked: Sequence[EvidenceRow], cap: int, *,
               mark: str = UNIT_MARK, min_score: float | None = None) -> list[EvidenceRow]:
    """The pack, then the best units (by `scores`) not already in it, while they fit `cap` tokens.

    Chosen units of one row whose lines are at most `JOIN_GAP` apart become one row (one citation and one
    row's overhead); the rows come after the pack, in the order of their best unit.
    """
    out = list(pack)
    used = sum(row_tokens(r) for r in out)
    if used >= cap or not units:
        return out
    by_id = {r.id: r for r in ranked}
    best_of_file: dict[str, EvidenceRow] = {}
    for r in ranked:
        best_of_file.setdefault(r.path, r)
    chosen: list[list[Unit]] = []
    groups: dict[str, list[int]] = {}  # path → indexes into chosen
    costs: list[int] = []
    seen_text: set[tuple[str, str]] = set()
    for i in np.argsort(-scores, kind="stable"):
        if min_score is not None and scores[i] < min_score:
            break
        u = units[int(i)]
        if (u.path, u.text) in seen_text or covered_by(u, pack):
            continue
        bare = u.text.strip()
        if any(bare in x.text for g in groups.get(u.path, []) for x in chosen[g]):
            continue  # a code fact's line inside a chosen statement (or the same line again)
        fallback = by_id.get(str(rows[u.row].get("id") or "")) or best_of_file.get(u.path)
        joined = None
        for g in groups.get(u.path, []):
            grp = chosen[g]
            lo, hi = min(x.start for x in grp), max(x.end for x in grp)
            if u.start <= hi + JOIN_GAP + 1 and lo <= u.end + JOIN_GAP + 1:
                joined = g
                break
        if joined is not None:
            trial = sorted([*chosen[joined], u], key=lambda x: (x.start, x.end))
            cost = row_tokens(unit_row(trial, rows, fallback))
            if used - costs[joined] + cost > cap:
                continue
            used += cost - costs[joined]
            chosen[joined], costs[joined] = trial, cost
        else:
            cost = row_tokens(unit_row([u], rows, fallback))
            if used + cost > cap:
                if cap - used < 30:
                    break
                continue
            groups.setdefault(u.path, []).append(len(chosen))
            chosen.append([u])
            costs.append(cost)
            used += cost
        seen_text.add((u.path, u.text))
    for grp in chosen:
        fallback = by_id.get(str(rows[grp[0].row].get("id") or "")) or best_of_file.get(grp[0].path)
        row = unit_row(grp, rows, fallback)
        out.append(row.model_copy(update={"metadata": {**row.metadata, mark: True}}))
    return out


def kept_core(core: Sequence[EvidenceRow], keep: int = UNIT_KEEP) -> list[EvidenceRow]:
    """The core's first `keep` rows, and after them the first row of each further file of the core: the units
    take the room of a file's second and third rows, never a file's place among the retrieved files (which
    files answer, recall@k)."""
    kept = list(core[:keep])
    seen = {r.path for r in kept}
    for r in core[keep:]:
        if r.path not in seen:
            kept.append(r)
            seen.add(r.path)
    return kept


def unit_pack(core: Sequence[EvidenceRow], ranked: Sequence[EvidenceRow], query: RankQuery,
              read: UnitReader, scorer: UnitScorer, cap: int, *, embedding: Sequence[float] | None = None,
              similarity: Mapping[str, float] | None = None, keep: int = UNIT_KEEP,
              files: int = UNIT_FILES) -> list[EvidenceRow]:
    """The pack: the core's first `keep` rows, then the best units of the core's first `files` files
    (`pack_units`), marked as the fill (`FILL_MARK`) and as units (`UNIT_MARK`).

    Raises whatever `read` raises (the caller falls back to the rows' fill when the database cancels it).
    """
    paths = unit_files(core, files)
    kept = kept_core(core, keep)
    if not paths:
        return kept
    rows, distances = read(paths, embedding)
    units = nearest_units(split_rows(rows), rows, distances, [r.id for r in ranked[:RANKED_SEEN]])
    if not units:
        return kept
    ctx = UnitContext(query=query, files=paths, pack=core, ranked=ranked, similarity=similarity or {},
                      row_distance=distances)
    scores = scorer.score(unit_features(units, rows, ctx))
    return with_unit_scores(pack_units(kept, units, scores, rows, ranked, cap, mark=FILL_MARK), units, scores)


def with_unit_scores(pack: Sequence[EvidenceRow], units: Sequence[Unit], scores: np.ndarray) -> list[EvidenceRow]:
    """The pack with each row's scored units in its metadata (`UNIT_SCORES`): the units of its file that lie
    inside its span and whose text it holds (a filled row's own units; a core row's units of its lines)."""
    by_path: dict[str, list[list[Any]]] = {}
    for u, s in zip(units, scores, strict=True):
        by_path.setdefault(u.path, []).append([u.start, u.end, round(float(s), 4), u.kind, u.text])
    out = []
    for r in pack:
        mine = [x for x in by_path.get(r.path, ()) if r.span_start <= x[0] and x[1] <= r.span_end
                and x[4].strip() and x[4] in r.content]
        out.append(r.model_copy(update={"metadata": {**r.metadata, UNIT_SCORES: mine}}) if mine else r)
    return out


UnitReader = Callable[[Sequence[str], Sequence[float] | None],
                      tuple[Sequence[Mapping[str, Any]], Mapping[str, float]]]
"""Files, the request's embedding → the files' rows of `UNIT_LAYERS` (dicts with id, path, layer, title,
content, span_start, span_end, metadata) and each embedded row's cosine distance to the request."""

WHOLE_FILE = 10**9


def index_unit_reader(repository: RagRepository, session: RagSession) -> UnitReader:
    """The `UnitReader` of a session: one statement for the files' rows, one primary-key read for the
    distances of those with a vector (none without an embedding)."""

    def read(files: Sequence[str], embedding: Sequence[float] | None
             ) -> tuple[Sequence[Mapping[str, Any]], Mapping[str, float]]:
        rows = repository.retrieve_overlapping(session, [(p, 1, WHOLE_FILE) for p in files],
                                               layers=list(UNIT_LAYERS), limit=MAX_UNIT_ROWS)
        ids = [str(r["id"]) for r in rows if r.get("layer") != FACT_LAYER]
        return rows, (repository.distances(session, ids, embedding) if embedding is not None and ids else {})

    return read
