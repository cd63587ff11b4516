"""Passages inside the top files (issue 38, items 2-3; pure): the rows of retrieval's best files split into
the units that answer, scored against the request, and the best of them packed as evidence.

A row of the index is a section, a definition or a card: the line that answers (a default thirty lines into
`__init__`, one row of a table, one sentence of a long page) is a small part of it, and trimming rows by
hand-set rules kept the wrong part as often as the right one. Here every row of the first files is cut into
**units** (`split_rows`):

- code (C0 source chunks): logical statements (a statement continued over bracketed lines is one unit), a
  docstring's paragraphs and `:param:` lines, comment runs; a unit longer than `MAX_UNIT_LINES` is cut into
  windows of that many lines;
- code facts (C7): each fact row is a unit (its line(s), its generated sentence as the unit's title);
- docs (D0 chunks): headings, sentences of paragraphs, list items (with their continuation lines), table
  rows, and fenced code blocks (cut like code).

Each unit gets features (`unit_features`: words and stems shared with the request and its key terms, an
IDF-weighted overlap and BM25 within the candidate files, identifier hits, the containing row's rank,
fused and learned score and distance, the file's rank, kind, layer, position, length, language), and a
LambdaRank tree ensemble (`UnitScorer`, trained by `python -m evals.train_units` on the dev splits, exported
to JSON, evaluated in numpy with the learned ranker's `Forest`) orders them. `pack_units` then adds the best
units after the core, those of the same row and adjacent lines joined into one row, while they fit the cap.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nodes.context_retrieval.gate import row_tokens
from nodes.context_retrieval.learned_ranker import Forest, LearnedRanker, RankerModelError, parse_model
from nodes.context_retrieval.pack import FILL_MARK
from nodes.context_retrieval.rank_features import RankQuery, cyrillic_share
from nodes.evidence import EvidenceRow
from nodes.terms import STEM_CHARS

if TYPE_CHECKING:
    from stores.repository import RagRepository
    from stores.sessions import RagSession

UNIT_MODEL_FORMAT = "lotsman-ranker/1"
"""The unit model shares the learned ranker's file format (flat trees, feature names, a prior weight of 0)."""
UNIT_MODEL_PATH = Path(__file__).with_name("unit_model.json")
"""The shipped unit model, reproduced by `python -m evals.train_units`."""

DOC_LAYER = "D0_DOC_CHUNKS"
SOURCE_LAYER = "C0_SOURCE_CHUNKS"
FACT_LAYER = "C7_CODE_FACTS"
UNIT_LAYERS = (DOC_LAYER, SOURCE_LAYER, FACT_LAYER)
"""The layers whose rows are cut into units: the text itself, and the code facts."""

MAX_UNIT_LINES = 8
"""A longer statement, docstring paragraph or code block is cut into windows of this many lines."""
MAX_UNIT_CHARS = 700
"""A unit's text is cut to this many characters (a minified line, a long table row)."""
UNIT_FILES = 4
"""How many of the core's first files are read and cut into units (one statement)."""
MAX_UNIT_ROWS = 3000
"""Rows read for one request's files together (a 3000-line module has ~100 chunks and ~200 facts)."""
MAX_UNITS = 1200
"""Units scored for one request at most (`nearest_units`); the median dev request has ~800."""
JOIN_GAP = 1
"""Selected units of one row at most this many lines apart are joined into one evidence row."""
UNIT_KEEP = 8
"""Rows of the core kept ahead of the units (the core is `max(top_k, plan_limit)` rows, 12 by default).
Leave-one-corpus-out on the dev cases, evidence key-fact recall macro with the core's first 12 / 8 / 6 / 4 /
2 / 1 rows kept: 0.766 / 0.787 / 0.776 / 0.780 / 0.778 / 0.780 (today's pack 0.757)."""
RANKED_SEEN = 80
"""The ranked candidates the features read (those among the files' rows or in the core)."""
UNIT_MARK = "evidence_unit"
"""Metadata key set on rows the unit fill added (with the fill's own mark)."""

KINDS = ("statement", "def", "docstring", "comment", "fact", "heading", "sentence", "list_item", "table_row",
         "code_block")
FACT_KINDS = ("parameter", "field", "option", "constant", "raise", "env", "message")

UNIT_FEATURES: tuple[str, ...] = (
    "file_rank", "inv_file_rank", "file_gold_like",
    *(f"kind_{k}" for k in KINDS), *(f"fact_{k}" for k in FACT_KINDS),
    "layer_D0", "layer_C0", "layer_C7",
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
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")
_SENTENCE = re.compile(r"(?<=[.!?…])\s+(?=[A-ZА-ЯЁ`*\"«(\[])")
_DOCSTRING_QUOTES = ('"""', "'''")
_OPEN, _CLOSE = "([{", ")]}"
_DEF = re.compile(r"^\s*(?:async\s+def|def|class)\s|^\s*@")


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of a row: its lines of the file and its text."""

    row: int
    """Index of its row among the rows it was cut from."""
    path: str
    layer: str
    kind: str
    start: int
    end: int
    text: str
    context: str = ""
    """What the unit belongs to: the row's title (heading trail, qualified name) or a fact's sentence."""
    fact_kind: str = ""
    name: str = ""
    """A code fact's name (parameter, constant, exception)."""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_UNIT_CHARS else text[:MAX_UNIT_CHARS]


def _windows(lines: Sequence[tuple[int, str]], kind: str) -> list[tuple[str, int, int, str]]:
    """Lines (number, text) as units of at most MAX_UNIT_LINES lines, blank lines at the ends dropped."""
    body = [(n, t) for n, t in lines]
    while body and not body[0][1].strip():
        body.pop(0)
    while body and not body[-1][1].strip():
        body.pop()
    out = []
    for i in range(0, len(body), MAX_UNIT_LINES):
        part = body[i:i + MAX_UNIT_LINES]
        text = "\n".join(t for _, t in part)
        if _WORD.search(text):
            out.append((kind, part[0][0], part[-1][0], _cut(text)))
    return out


_TOKEN = re.compile(r"\"\"\"|'''|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|#.*|[()\[\]{}]")
"""What moves a statement's bracket depth: triple quotes, one-line strings and comments (skipped), brackets."""


def _depth_change(line: str, depth: int, quote: str | None) -> tuple[int, str | None]:
    """Bracket depth and open triple quote after `line` (strings and comments skipped)."""
    i = 0
    while True:
        if quote is not None:
            j = line.find(quote, i)
            if j < 0:
                return depth, quote
            i, quote = j + 3, None
        m = _TOKEN.search(line, i)
        while m is not None:
            tok = m.group()
            if tok in _DOCSTRING_QUOTES:
                quote = tok
                i = m.end()
                break
            if tok[0] == "#":
                return depth, None
            if tok in _OPEN:
                depth += 1
            elif tok in _CLOSE:
                depth = max(0, depth - 1)
            m = _TOKEN.search(line, m.end())
        if quote is None:
            return depth, None


def split_code(content: str, first_line: int) -> list[tuple[str, int, int, str]]:
    """(kind, start, end, text) of a source chunk: logical statements, docstring paragraphs, comment runs.

    The chunk's lines are numbered from `first_line`. A statement whose brackets or triple quotes stay open
    continues on the next lines; a docstring is cut at blank lines and before each `:param`-like line.
    """
    lines = content.split("\n")
    out: list[tuple[str, int, int, str]] = []
    group: list[tuple[int, str]] = []
    kind = "statement"
    depth, quote = 0, None

    def close() -> None:
        nonlocal group
        if group:
            out.extend(_windows(group, kind))
        group = []

    for k, line in enumerate(lines):
        n = first_line + k
        stripped = line.strip()
        if quote is not None and kind == "docstring":  # inside a docstring: paragraphs and field lines
            if not stripped or stripped.startswith((":param", ":raises", ":return", ":type", "Args:", "Raises:",
                                                    "Returns:", "- ", "* ")):
                close()
                kind = "docstring"
            group.append((n, line))
            depth, quote = _depth_change(line, depth, quote)
            if quote is None:
                close()
                kind = "statement"
            continue
        if depth == 0 and quote is None:
            if kind == "comment" and group and stripped.startswith("#"):  # a run of comment lines is one unit
                group.append((n, line))
                continue
            close()
            if not stripped:
                continue
            if stripped.startswith(_DOCSTRING_QUOTES) or (stripped[:1] in "rbuRBU"
                                                          and stripped[1:4] in _DOCSTRING_QUOTES):
                kind = "docstring"
            elif stripped.startswith("#"):
                kind = "comment"
            elif _DEF.match(line):
                kind = "def"
            else:
                kind = "statement"
        group.append((n, line))
        if kind == "comment":
            continue
        depth, quote = _depth_change(line, depth, quote)
        if depth == 0 and quote is None:
            close()
    close()
    return out


def split_doc(content: str, first_line: int) -> list[tuple[str, int, int, str]]:
    """(kind, start, end, text) of a document chunk: headings, sentences of paragraphs, list items (with
    their continuation lines), table rows and fenced code blocks."""
    lines = content.split("\n")
    out: list[tuple[str, int, int, str]] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        n = first_line + k
        if not line.strip():
            k += 1
            continue
        if _FENCE.match(line):
            j = k + 1
            while j < len(lines) and not _FENCE.match(lines[j]):
                j += 1
            block = [(first_line + i, lines[i]) for i in range(k, min(j + 1, len(lines)))]
            out.extend(_windows(block, "code_block"))
            k = j + 1
            continue
        if _HEADING.match(line):
            out.append(("heading", n, n, _cut(line.strip())))
            k += 1
            continue
        if _TABLE_ROW.match(line):
            if not _TABLE_RULE.match(line) and _WORD.search(line):
                out.append(("table_row", n, n, _cut(line.strip())))
            k += 1
            continue
        item = _LIST_ITEM.match(line)
        if item:
            indent = len(item.group(1))
            j = k + 1
            while (j < len(lines) and lines[j].strip() and not _LIST_ITEM.match(lines[j])
                   and not _FENCE.match(lines[j]) and len(lines[j]) - len(lines[j].lstrip()) > indent):
                j += 1
            out.extend(_windows([(first_line + i, lines[i]) for i in range(k, j)], "list_item"))
            k = j
            continue
        j = k + 1  # a paragraph: up to a blank line or another block
        while (j < len(lines) and lines[j].strip() and not _FENCE.match(lines[j]) and not _HEADING.match(lines[j])
               and not _LIST_ITEM.match(lines[j]) and not _TABLE_ROW.match(lines[j])):
            j += 1
        out.extend(_sentences([(first_line + i, lines[i]) for i in range(k, j)]))
        k = j
    return out


def _sentences(lines: Sequence[tuple[int, str]]) -> list[tuple[str, int, int, str]]:
    """A paragraph's sentences, each with the lines it touches."""
    out = []
    text, starts = "", []
    for n, line in lines:
        starts.append((len(text), n))
        text += line.strip() + " "
    pos = 0
    for part in [*_SENTENCE.split(text.strip()), ""][:-1] if text.strip() else []:
        begin = text.find(part, pos)
        stop = begin + len(part)
        pos = stop
        first = max((n for at, n in starts if at <= begin), default=lines[0][0])
        last = max((n for at, n in starts if at < stop), default=first)
        if _WORD.search(part):
            out.append(("sentence", first, last, _cut(part)))
    return out


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


def split_rows(rows: Sequence[Mapping[str, Any]]) -> list[Unit]:
    """The units of index rows (dicts with path, layer, title, content, span_start, span_end, metadata), each
    unit once (overlapping chunks give the same lines twice: the first row's unit stays)."""
    out: list[Unit] = []
    seen: set[tuple[str, str, int, int, str]] = set()
    for i, r in enumerate(rows):
        layer, path = str(r.get("layer") or ""), str(r.get("path") or "")
        content = str(r.get("content") or "")
        start, end = int(r.get("span_start") or 1), int(r.get("span_end") or 1)
        title = str(r.get("title") or "")
        metadata = r.get("metadata") or {}
        if layer == FACT_LAYER:
            parts = [("fact", start, end, _cut(content.strip("\n")))]
            context = f"{title}\n{metadata.get('sentence_ru') or ''}"
        elif layer in (DOC_LAYER, SOURCE_LAYER):
            lines = content.split("\n")
            extra = max(0, len(lines) - (end - start + 1))  # context lines above a continued chunk
            body = "\n".join(lines[extra:])
            parts = split_code(body, start) if layer == SOURCE_LAYER else split_doc(body, start)
            context = title
        else:
            continue
        for kind, a, b, text in parts:
            key = (path, layer, a, b, text)
            if key in seen:
                continue
            seen.add(key)
            out.append(Unit(row=i, path=path, layer=layer, kind=kind, start=a, end=b, text=text, context=context,
                            fact_kind=str(metadata.get("fact_kind") or "") if layer == FACT_LAYER else "",
                            name=str(metadata.get("name") or "") if layer == FACT_LAYER else ""))
    return out


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
            float(u.layer == DOC_LAYER), float(u.layer == SOURCE_LAYER), float(u.layer == FACT_LAYER),
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


@dataclass(frozen=True)
class UnitScorer:
    """The learned unit scorer: a tree ensemble over `UNIT_FEATURES` (no prior)."""

    model: LearnedRanker

    def score(self, x: np.ndarray) -> np.ndarray:
        if len(x) == 0 or not self.model.trees:
            return np.zeros(len(x))
        return (self.model.forest or Forest.of(self.model.trees)).predict(x)


def parse_unit_model(data: Mapping[str, Any]) -> UnitScorer:
    return UnitScorer(parse_model(data, expected=UNIT_FEATURES, trainer="python -m evals.train_units"))


@lru_cache(maxsize=4)
def load_unit_scorer(path: Path = UNIT_MODEL_PATH) -> UnitScorer:
    """The unit model at `path` (the shipped one by default), read once per process."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RankerModelError(f"no unit model at {path}: run `python -m evals.train_units`") from None
    except (OSError, ValueError) as exc:
        raise RankerModelError(f"cannot read the unit model {path}: {exc}") from None
    return parse_unit_model(data)


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
    return pack_units(kept, units, scores, rows, ranked, cap, mark=FILL_MARK)


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
