"""Unit features (pure): what the unit scorer reads of a unit, its row, its file and the request."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nodes.context_retrieval.rank_features import RankQuery, cyrillic_share
from nodes.context_retrieval.units.split import (
    CARD_LAYERS,
    DOC_LAYER,
    FACT_KINDS,
    FACT_LAYER,
    KINDS,
    SOURCE_LAYER,
    Unit,
)
from nodes.evidence import EvidenceRow
from nodes.terms import STEM_CHARS

MAX_UNITS = 1200
"""Units scored for one request at most (`nearest_units`); the median dev request has ~800."""
RANKED_SEEN = 80
"""The ranked candidates the features read (those among the files' rows or in the core)."""
UNIT_FEATURES: tuple[str, ...] = (
    "file_rank", "inv_file_rank", "file_gold_like",
    *(f"kind_{k}" for k in KINDS), *(f"fact_{k}" for k in FACT_KINDS),
    "layer_D0", "layer_C0", "layer_C7", "layer_C1", "layer_C3",
    "terms_share", "terms_stems_share", "terms_in_context", "query_stems_share", "idf_overlap", "bm25_rel",
    "idf_overlap_rank", "identifier_hits", "identifiers", "name_in_query", "row_terms_share",
    "near_terms_share", "row_in_pack", "row_inv_pos", "row_fused_rel", "row_learned_rel", "row_cos_rel",
    "row_known", "pos_in_row", "pos_in_file", "log_chars", "lines", "has_literal", "has_number",
    "query_cyrillic", "unit_cyrillic", "cyrillic_gap", "find_files", "code_plan", "explicit_code", "general",
    "n_terms", "file_units_log", "row_dist_rel", "row_dist_rank", "file_dist_rel",
)
"""Columns of `unit_features`, in order; the model file names them and is refused when they differ."""

_WORD = re.compile(r"\w+", re.UNICODE)
_IDENTIFIER = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z]+_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|--?[a-z][a-z0-9-]+"
    r"|[A-Z][A-Z0-9_]{3,}")
_LITERAL = re.compile(r"[\"'`«]")
_NUMBER = re.compile(r"\d")

def nearest_units(units: Sequence[Unit], rows: Sequence[Mapping[str, Any]], distances: Mapping[str, float],
                  candidates: Sequence[str] = (), limit: int = MAX_UNITS) -> list[Unit]:
    """At most `limit` units (line order kept): those of the rows nearest the request first, a candidate row
    of the first stage before any other, a code fact at the distance of the source chunk holding its line,
    a row without a vector last. What a large module costs is bounded (scoring 3,500 units took ~70 ms
    p95 on 2 busy cores) while the rows whose meaning is nearest keep their units."""
    if len(units) <= limit:
        return list(units)
    ids = [str(r.get("id") or "") for r in rows]
    spans: dict[str, list[tuple[int, int, float]]] = {}
    for i, r in enumerate(rows):
        d = distances.get(ids[i])
        if d is not None:
            spans.setdefault(str(r.get("path") or ""), []).append((int(r.get("span_start") or 1),
                                                                  int(r.get("span_end") or 1), d))
    first = {rid: k for k, rid in enumerate(candidates)}
    priority: dict[int, tuple[int, float, int]] = {}
    for u in units:
        if u.row in priority:
            continue
        rid = ids[u.row]
        d = distances.get(rid)
        if d is None:
            d = min((x for a, b, x in spans.get(u.path, ()) if a <= u.start and u.end <= b), default=None)
        priority[u.row] = ((0, float(first[rid]), u.row) if rid in first
                           else (1, d, u.row) if d is not None else (2, 0.0, u.row))
    keep: set[int] = set()
    count: dict[int, int] = {}
    for u in units:
        count[u.row] = count.get(u.row, 0) + 1
    total = 0
    for row in sorted(priority, key=lambda k: priority[k]):
        if total + count[row] > limit and keep:
            continue
        keep.add(row)
        total += count[row]
    return [u for u in units if u.row in keep]


@dataclass(frozen=True)
class UnitContext:
    """What the unit features know besides the units: the request and the first stage's rows."""

    query: RankQuery
    files: Sequence[str]
    """The first stage's files in rank order (the units' files among them)."""
    pack: Sequence[EvidenceRow] = ()
    """The rows already in the pack (the core), in rank order."""
    ranked: Sequence[EvidenceRow] = ()
    """The ranked candidates (ids, fused and learned scores)."""
    similarity: Mapping[str, float] = field(default_factory=dict)
    """Row id → cosine distance to the request (candidates only)."""
    row_distance: Mapping[str, float] = field(default_factory=dict)
    """Row id → cosine distance to the request of every embedded row of the files (`index_unit_reader`)."""


def _stems(words: Sequence[str] | set[str]) -> set[str]:
    out = set()
    for w in words:
        if len(w) > 2:
            out.add(w[:STEM_CHARS])
        if "_" in w:
            out.update(p[:STEM_CHARS] for p in w.split("_") if len(p) > 2)
    return out


def _lexical_columns(units: Sequence[Unit], words: Sequence[set[str]], q_words: Sequence[str]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IDF overlap, BM25 (relative to the best) and the overlap's rank of each unit, over the candidate files'
    units and the request's words only."""
    n = len(units)
    df = {w: 0 for w in q_words}
    for ws in words:
        for w in q_words:
            if w in ws:
                df[w] += 1
    idf = {w: math.log((n + 1) / (df[w] + 0.5)) for w in q_words}
    idf_total = sum(idf.values()) or 1.0
    overlap = np.array([sum(idf[w] for w in q_words if w in ws) / idf_total for ws in words])
    lengths = np.array([len(u.text) for u in units], dtype=np.float64)
    avg = float(lengths.mean()) or 1.0
    bm25 = np.zeros(n)
    for i, u in enumerate(units):
        if not words[i]:
            continue
        low = u.text.lower()
        norm = 1.2 * (0.25 + 0.75 * lengths[i] / avg)
        for w in q_words:
            if w in words[i]:
                tf = low.count(w)
                bm25[i] += idf[w] * tf * 2.2 / (tf + norm)
    bm25_rel = bm25 / (float(bm25.max()) or 1.0)
    order = np.argsort(-overlap, kind="stable")
    overlap_rank = np.empty(n)
    overlap_rank[order] = np.arange(n)
    return overlap, bm25_rel, overlap_rank


def _distance_columns(units: Sequence[Unit], rows: Sequence[Mapping[str, Any]], row_ids: Sequence[str],
                      own: set[str], ctx: UnitContext
                      ) -> tuple[list[float | None], float, dict[float, int], dict[str, float]]:
    """Each unit's distance to the request (its row's; a code fact reads the distance of the source chunk
    holding its lines), the best one, each distance's rank and each file's best."""
    dist = {k: d for k, d in ctx.row_distance.items() if k in own}
    spans: dict[str, list[tuple[int, int, float]]] = {}
    for r in rows:
        d = dist.get(str(r.get("id") or ""))
        if d is not None:
            spans.setdefault(str(r.get("path") or ""), []).append((int(r.get("span_start") or 1),
                                                                  int(r.get("span_end") or 1), d))
    best_dist = min(dist.values()) if dist else 0.0
    dist_rank = {d: k for k, d in enumerate(sorted(set(dist.values())))}
    file_dist = {p: min(d for _, _, d in v) for p, v in spans.items()}
    unit_dist: list[float | None] = []
    for u in units:
        d = dist.get(row_ids[u.row]) if u.row < len(row_ids) else None
        if d is None:
            d = min((x for a, b, x in spans.get(u.path, ()) if a <= u.start and u.end <= b), default=None)
        unit_dist.append(d)
    return unit_dist, best_dist, dist_rank, file_dist


def _grouped_columns(units: Sequence[Unit], stems: Sequence[set[str]]
                     ) -> tuple[dict[int, set[str]], dict[str, int], dict[str, int]]:
    """The stems of each row's units together, each file's unit count and its last line."""
    row_stems: dict[int, set[str]] = {}
    for i, u in enumerate(units):
        row_stems.setdefault(u.row, set()).update(stems[i])
    file_units: dict[str, int] = {}
    file_last: dict[str, int] = {}
    for u in units:
        file_units[u.path] = file_units.get(u.path, 0) + 1
        file_last[u.path] = max(file_last.get(u.path, 1), u.end)
    return row_stems, file_units, file_last


def unit_features(units: Sequence[Unit], rows: Sequence[Mapping[str, Any]], ctx: UnitContext) -> np.ndarray:
    """The feature matrix of `units` (cut from `rows`), one row per unit, columns as `UNIT_FEATURES`."""
    n = len(units)
    if n == 0:
        return np.zeros((0, len(UNIT_FEATURES)))
    text = ctx.query.text[:1000]
    low_query = text.lower()
    q_words = sorted({w for w in _WORD.findall(low_query) if len(w) > 2})
    q_stems = _stems(q_words)
    terms = [t.lower() for t in ctx.query.key_terms if t]
    t_stems = {t[:STEM_CHARS] for t in terms}
    identifiers = set(_IDENTIFIER.findall(text))
    file_rank = {p: k for k, p in enumerate(dict.fromkeys(ctx.files))}
    words = [set(_WORD.findall(u.text.lower())) for u in units]
    stems = [_stems(w) for w in words]
    overlap, bm25_rel, overlap_rank = _lexical_columns(units, words, q_words)
    # the containing row's standing in the first stage
    # the first stage's candidates among the files' rows (and the core), relative to each other: the same
    # figures whatever else the ranking held
    row_ids = [str(r.get("id") or "") for r in rows]
    own = set(row_ids)
    pack_ids = {r.id: k for k, r in enumerate(ctx.pack)}
    ranked = [r for r in ctx.ranked[:RANKED_SEEN] if r.id in own or r.id in pack_ids]
    ranked_pos = {r.id: k for k, r in enumerate(ranked)}
    ranked_by_id = {r.id: r for r in ranked}
    best_fused = max((r.fused_score for r in ranked), default=0.0) or 1.0
    learned = [r.scores["learned"] for r in ranked if "learned" in r.scores]
    best_learned, worst_learned = (max(learned), min(learned)) if learned else (1.0, 0.0)
    similarity = {k: d for k, d in ctx.similarity.items() if k in own}
    best_cos = min(similarity.values()) if similarity else 0.0
    row_stems, file_units, file_last = _grouped_columns(units, stems)
    unit_dist, best_dist, dist_rank, file_dist = _distance_columns(units, rows, row_ids, own, ctx)
    query_cyr = cyrillic_share(text)
    request = [float(ctx.query.find_files), float(ctx.query.code_plan), float(ctx.query.explicit_code),
               float(ctx.query.general)]
    n_terms = len(t_stems)
    out = np.zeros((n, len(UNIT_FEATURES)))
    context_stems: dict[str, set[str]] = {}
    for i, u in enumerate(units):
        rank = file_rank.get(u.path, len(file_rank))
        rid = row_ids[u.row] if u.row < len(row_ids) else ""
        row = rows[u.row] if u.row < len(rows) else {}
        cand = ranked_by_id.get(rid)
        cos = similarity.get(rid)
        lo = int(row.get("span_start") or 1)
        hi = int(row.get("span_end") or lo)
        near = set().union(*(stems[j] for j in range(max(0, i - 2), min(n, i + 3)) if units[j].row == u.row))
        if u.context not in context_stems:
            context_stems[u.context] = _stems(set(_WORD.findall(u.context.lower())))
        unit_cyr = cyrillic_share(u.text[:300])
        ud = unit_dist[i]
        out[i] = [
            float(rank), 1.0 / (rank + 1), float(rank == 0),
            *(float(u.kind == k) for k in KINDS), *(float(u.fact_kind == k) for k in FACT_KINDS),
            *(float(u.layer == layer) for layer in (DOC_LAYER, SOURCE_LAYER, FACT_LAYER, *CARD_LAYERS)),
            (sum(1 for t in terms if t in words[i]) / len(terms)) if terms else 0.0,
            len(stems[i] & t_stems) / (n_terms or 1),
            len(context_stems[u.context] & t_stems) / (n_terms or 1),
            len(stems[i] & q_stems) / (len(q_stems) or 1),
            overlap[i], bm25_rel[i], 1.0 / (overlap_rank[i] + 1),
            (sum(1 for w in identifiers if w in u.text or w in u.context) / len(identifiers)) if identifiers else -1.0,
            float(len(identifiers)),
            float(bool(u.name) and len(u.name) > 2 and u.name.lower() in low_query),
            len(row_stems.get(u.row, set()) & t_stems) / (n_terms or 1),
            len(near & t_stems) / (n_terms or 1),
            float(rid in pack_ids), 1.0 / (ranked_pos[rid] + 1) if rid in ranked_pos else 0.0,
            (cand.fused_score / best_fused) if cand is not None else 0.0,
            ((cand.scores["learned"] - worst_learned) / ((best_learned - worst_learned) or 1.0))
            if cand is not None and "learned" in cand.scores else -1.0,
            (cos - best_cos) if cos is not None else 1.0,
            float(cand is not None),
            (u.start - lo) / max(1, hi - lo + 1), u.start / max(1, file_last[u.path]),
            math.log1p(len(u.text)), float(u.end - u.start + 1),
            float(bool(_LITERAL.search(u.text))), float(bool(_NUMBER.search(u.text))),
            query_cyr, unit_cyr, abs(query_cyr - unit_cyr),
            *request, float(n_terms), math.log1p(file_units[u.path]),
            (ud - best_dist) if ud is not None else 1.0, 1.0 / (dist_rank[ud] + 1) if ud is not None else 0.0,
            (file_dist[u.path] - best_dist) if u.path in file_dist else 1.0,
        ]
    return out


def heuristic_scores(x: np.ndarray) -> np.ndarray:
    """A hand-set score from the same features (no model): key-term stems first, then IDF overlap, the
    file's rank. The floor the learned scorer is compared with."""
    col = {name: k for k, name in enumerate(UNIT_FEATURES)}
    return (2.0 * x[:, col["terms_stems_share"]] + x[:, col["idf_overlap"]] + 0.5 * x[:, col["bm25_rel"]]
            + 0.3 * x[:, col["inv_file_rank"]] + 0.2 * x[:, col["identifier_hits"]].clip(0))
