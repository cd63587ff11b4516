"""The evidence pack (pure): the rows handed to context_analysis, filled up to the token cap.

The core is what analysis always read: the first `max(top_k, plan_limit)` ranked rows that fit the cap
(`apply_token_cap`). Twelve rows left a quarter to a half of the 4096-token cap unused (pack p50
1.7k–3.2k tokens on the five dev corpora) while the passage stating a key fact was often a further row of a
file already in the core: the learned order spreads a file's rows over the ranking, so its third or
fourth passage lands at rank 60. The fill spends the room left:

1. candidates not in the core, rows of the core's first `FILL_FILES` files first (those naming more of the
   request's key terms first), then the rest in ranked order;
2. a card or passage whose lines a passage already in the pack covers is skipped (the same text twice);
3. each row is trimmed to its window of at most `FILL_WINDOW_CHARS` that names the most key terms, so a
   long definition costs a few hundred tokens instead of crowding out three other passages; rows of the
   core's first file are kept whole (`WHOLE_FILES`).

Filled rows come after the core (`rows[:core]` is the core unchanged) and say so in their metadata
(`FILL_MARK`), so a consumer that wants only the core can tell them apart.

A symbol card in the core (`def prompt(...)` and its docstring's first sentence) stands for a definition
whose lines no lane may have returned: the constant, the error message, the default that answers. When the
adapter injects a `SourceReader`, the source chunks overlapping the core's symbol cards join the candidates
of the fill (one statement over the cards' spans).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nodes.context_retrieval.gate import CHARS_PER_TOKEN, ROW_OVERHEAD_TOKENS, estimate_tokens, row_tokens
from nodes.evidence import EvidenceRow
from nodes.terms import STEM_CHARS, WORD, stem

if TYPE_CHECKING:
    from stores.repository import RagRepository
    from stores.sessions import RagSession

FILL_FILES = 3
"""How many of the core's files (in rank order) have their further rows tried first. Dev evidence key-fact
recall, macro of five corpora, filled in ranked order 0.770; the first 1, 2, 3, 5 files first 0.785–0.793
(3: 0.793, no corpus lower than ranked order)."""
FILL_WINDOW_CHARS = 900
"""Longest filled row; a longer one keeps its window naming the most key terms (600: 0.790, 1200: 0.795,
whole rows 0.765 on the same dev sets)."""
WHOLE_FILES = 1
"""The fill's rows of the core's first file (retrieval's best) are not trimmed: the lines that answer in a long
definition of the file that answers (`confirm`'s "y/N" and its error message) are seldom the ones naming the
key terms. Dev, four corpora (fastapi-ru, atlas-pm, structlog, click), macro, the first file's rows trimmed to
900 → 1600 → 2400 → whole: evidence key-fact recall 0.753 → 0.756 → 0.762 → 0.764, strict key facts
0.424 → 0.432 → 0.430 → 0.436 (atlas-pm evidence −0.006, one fact; click +0.039); the first two files whole:
0.749 (structlog −0.022)."""
FILL_MARK = "evidence_fill"
"""Metadata key set on rows added by the fill (not part of the core)."""
PASSAGE_LAYERS = ("D0", "C0")
"""Layers whose rows are the text itself (document chunks, source chunks); the others are cards, facts and
edges derived from it."""
SYMBOL_CARD_LAYERS = ("C1", "C3")
"""Symbol and entrypoint cards: one synthesized line standing for a definition's span of source."""
SOURCE_LAYER = "C0_SOURCE_CHUNKS"
MAX_CARD_LINES = 400
"""A card spanning more lines (a whole module or a large class) is not read for the fill: its source would be
a dozen chunks, and the module's own chunks are what the lanes rank."""
MAX_SOURCE_ROWS = 40
"""Source rows read for one request's cards together."""

SourceReader = Callable[[Sequence[tuple[str, int, int]]], Sequence[Mapping[str, Any]]]
"""(path, first line, last line) spans → the index's source rows overlapping them (dicts with id, path, layer,
title, content, span_start, span_end, metadata), e.g. `RagRepository.retrieve_overlapping` bound to a
session, C0 only, at most MAX_SOURCE_ROWS."""


def term_stems(terms: Sequence[str]) -> set[str]:
    return {stem(t) for t in terms if t}


def stems_in(text: str) -> set[str]:
    """Stems of the words of `text`, and of each part of a snake_case word."""
    out: set[str] = set()
    for w in WORD.findall(text.lower()):  # `stem` without lower-casing each word again
        out.add(w[:STEM_CHARS])
        if "_" in w:
            out.update(p[:STEM_CHARS] for p in w.split("_") if p)
    return out


def term_hits(row: EvidenceRow, stems: set[str]) -> int:
    """How many of the key terms' stems the row's title and content name."""
    return len(stems_in(f"{row.title}\n{row.content}") & stems) if stems else 0


def covered(row: EvidenceRow, pack: Sequence[EvidenceRow]) -> bool:
    """A passage of the same file in the pack already spans the row's lines."""
    return any(p.path == row.path and p.layer[:2] in PASSAGE_LAYERS and p.id != row.id
               and p.span_start <= row.span_start and row.span_end <= p.span_end for p in pack)


def trim_to_window(row: EvidenceRow, stems: set[str], max_chars: int) -> EvidenceRow:
    """The row cut to at most `max_chars`: the run of whole lines naming the most key terms (the earliest on
    a tie), its span narrowed to those lines.

    Lines map to the span only when the content has at least as many lines as the span (a source chunk may
    start with context lines such as `# class X (continued)`, which are kept); other rows (cards) keep
    their head and their span. A single line longer than `max_chars` is cut.
    """
    if len(row.content) <= max_chars:
        return row
    lines = row.content.split("\n")
    span = row.span_end - row.span_start + 1
    extra = len(lines) - span
    if extra < 0:
        return row.model_copy(update={"content": row.content[:max_chars]})
    head = lines[:extra]
    room = max_chars - sum(len(h) + 1 for h in head)
    if room <= 0:
        return row.model_copy(update={"content": row.content[:max_chars]})
    body = lines[extra:]
    hits = [stems_in(line) & stems for line in body]
    best: tuple[int, int, int] | None = None  # (terms named, start, stop)
    stop, size = 0, 0
    for start in range(len(body)):
        if stop < start:  # the previous line alone was longer than the room
            stop, size = start, 0
        while stop < len(body) and size + len(body[stop]) + 1 <= room:
            size += len(body[stop]) + 1
            stop += 1
        if stop > start:
            named = len(set().union(*hits[start:stop]))
            if best is None or named > best[0]:
                best = (named, start, stop)
            size -= len(body[start]) + 1
    if best is None:  # every line alone is longer than the room
        return row.model_copy(update={"content": row.content[:max_chars]})
    _, first, last = best
    return row.model_copy(update={"content": "\n".join([*head, *body[first:last]]),
                                  "span_start": row.span_start + first, "span_end": row.span_start + last - 1})


def apply_token_cap(rows: Sequence[EvidenceRow], cap: int) -> list[EvidenceRow]:
    """Keep rows in fused order while they fit `cap` tokens (`row_tokens`); a row that does not fit is
    skipped and a smaller one after it may fit. The first row is always kept: when it alone is over the cap
    it is cut to its opening lines that fit, its span narrowed to them (`trim_to_window`), and what it costs
    counts against the cap."""
    kept: list[EvidenceRow] = []
    used = 0
    for row in rows:
        cost = row_tokens(row)
        if used + cost > cap and not kept:
            room = max(0, (cap - ROW_OVERHEAD_TOKENS - estimate_tokens(row.path)) * int(CHARS_PER_TOKEN))
            row = trim_to_window(row, set(), room)
            cost = row_tokens(row)
        if used + cost > cap and kept:
            continue
        kept.append(row)
        used += cost
    return kept


def index_source_reader(repository: RagRepository, session: RagSession) -> SourceReader:
    """The `SourceReader` of a session: one statement over the spans, source chunks only."""
    return lambda spans: repository.retrieve_overlapping(session, spans, layers=[SOURCE_LAYER],
                                                         limit=MAX_SOURCE_ROWS)


def symbol_cards(core: Sequence[EvidenceRow]) -> list[EvidenceRow]:
    """The core's symbol and entrypoint cards that stand for more than one line and at most MAX_CARD_LINES,
    in rank order: the cards whose source the fill may read."""
    return [r for r in core
            if r.layer[:2] in SYMBOL_CARD_LAYERS and 0 < r.span_end - r.span_start < MAX_CARD_LINES]


def card_spans(core: Sequence[EvidenceRow]) -> list[tuple[str, int, int]]:
    """The spans of `symbol_cards(core)`, each once, in rank order."""
    return list(dict.fromkeys((r.path, r.span_start, r.span_end) for r in symbol_cards(core)))


def source_rows(fetched: Sequence[Mapping[str, Any]], known: Sequence[EvidenceRow],
                cards: Sequence[EvidenceRow] = ()) -> list[EvidenceRow]:
    """Fetched source rows as evidence, those not already among `known` (by id), in the order read.

    A source row stands in its card's place, so it carries the provenance of the first of `cards` (rank
    order) whose span it overlaps: the card's lanes plus its rank among that card's sources in the
    `card_source` lane, the card's scores and fused score (SPEC §5: every row says which lanes found it).
    """
    have = {r.id for r in known}
    out: list[EvidenceRow] = []
    taken: dict[str, int] = {}
    for f in fetched:
        rid = str(f["id"])
        if rid in have or f.get("layer") != SOURCE_LAYER:
            continue
        have.add(rid)
        path, start, end = str(f["path"]), int(f.get("span_start") or 1), int(f.get("span_end") or 1)
        card = next((c for c in cards if c.path == path and c.span_start <= end and start <= c.span_end), None)
        lanes, scores, fused = ({}, {}, 0.0) if card is None else (dict(card.lanes), dict(card.scores),
                                                                    card.fused_score)
        key = card.id if card is not None else ""
        taken[key] = taken.get(key, 0) + 1
        out.append(EvidenceRow(id=rid, path=path, layer=SOURCE_LAYER, title=str(f.get("title") or ""),
                               content=str(f.get("content") or ""), span_start=start, span_end=end,
                               metadata=dict(f.get("metadata") or {}),
                               lanes={**lanes, "card_source": taken[key]}, scores=scores, fused_score=fused))
    return out


def fill_order(core: Sequence[EvidenceRow], candidates: Sequence[EvidenceRow], stems: set[str],
               files: int = FILL_FILES) -> list[EvidenceRow]:
    """Candidates not in the core, in the order the fill tries them: rows of the core's first `files`
    files first (more key terms named first, then rank), then the others in rank order."""
    in_core = {r.id for r in core}
    first_files = list(dict.fromkeys(r.path for r in core))[:files]
    top = {p: n for n, p in enumerate(first_files)}
    rest = [(i, r) for i, r in enumerate(candidates) if r.id not in in_core]
    rest.sort(key=lambda ir: (0, -term_hits(ir[1], stems), ir[0]) if ir[1].path in top else (1, 0, ir[0]))
    return [r for _, r in rest]


def fill_budget(core: Sequence[EvidenceRow], candidates: Sequence[EvidenceRow], cap: int,
                terms: Sequence[str], *, files: int = FILL_FILES,
                window_chars: int = FILL_WINDOW_CHARS, whole_files: int = WHOLE_FILES) -> list[EvidenceRow]:
    """The core, then further candidates (`fill_order`), each trimmed to its window (rows of the core's first
    `whole_files` files whole, or to the largest window that fits the room left), while they fit `cap`
    tokens; a row whose lines a passage in the pack covers is skipped. `candidates` is the ranked list (it
    may include the core's rows: they are not repeated)."""
    pack = list(core)
    used = sum(row_tokens(r) for r in pack)
    if not pack or used >= cap:
        return pack
    stems = term_stems(terms)
    seen = {(r.path, r.span_start, r.span_end, r.content) for r in pack}
    whole = set(list(dict.fromkeys(r.path for r in core))[:whole_files])
    for row in fill_order(core, candidates, stems, files):
        if cap - used < estimate_tokens(row.path) + ROW_OVERHEAD_TOKENS + 10:  # not even a short row fits
            break
        if covered(row, pack):
            continue
        trimmed = row if row.path in whole else trim_to_window(row, stems, window_chars)
        cost = row_tokens(trimmed)
        if row.path in whole and used + cost > cap:  # the whole row does not fit: the largest window that does
            room = (cap - used - ROW_OVERHEAD_TOKENS - estimate_tokens(row.path)) * int(CHARS_PER_TOKEN)
            trimmed = trim_to_window(row, stems, max(window_chars, room))
            cost = row_tokens(trimmed)
        key = (trimmed.path, trimmed.span_start, trimmed.span_end, trimmed.content)
        if key in seen or used + cost > cap:
            continue
        pack.append(trimmed.model_copy(update={"metadata": {**trimmed.metadata, FILL_MARK: True}}))
        seen.add(key)
        used += cost
    return pack
