"""The answer's passages are the evidence pack's units, in the order the learned unit scorer gave them (issue 38,
item 4).

Retrieval's unit fill (`nodes/context_retrieval/units`) scores every unit (statement, sentence, list item,
table row, code block, code fact, card) of the first files and writes each pack row's scored units into its metadata
(`UNIT_SCORES`). Here they become passages (`unit_passages`), and `choose_units` picks what the answer quotes:
the best unit leads (the scorer weighs each unit's file rank), then every unit scoring within the model's
`quote_margin` of it, adjacent units of one file joined into one quote. The margin is chosen
leave-one-corpus-out by `python -m evals.train_units` and shipped in the unit model: what is quoted changes by
retraining, not by editing a rule here. Evidence without scored units (the RRF pack, rows built by hand) has its
units cut and scored here by the same model, without the distances retrieval knows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from nodes.context_analysis.models import Span
from nodes.context_analysis.spans import section_of
from nodes.context_retrieval.learned_ranker import RankerModelError
from nodes.context_retrieval.rank_features import RankQuery
from nodes.context_retrieval.units import (
    UNIT_SCORES,
    UnitContext,
    UnitScorer,
    load_unit_scorer,
    split_rows,
    unit_features,
    with_unit_scores,
)
from nodes.evidence import EvidenceRow

MAX_SUPPORTING = 3
"""Quotes after the lead (each may hold several adjacent units)."""
MAX_QUOTE_CHARS = 900
"""Adjacent units join one quote while it stays this short (one screen of a passage)."""
DOC_LAYER = "D0_DOC_CHUNKS"
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_ANCHOR = re.compile(r"\s*\{\s*#[^}]*\}\s*$")
_DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class)\s+(\w+)")
JOIN_LINES = 1
"""Units of one file at most this many lines apart are one quote."""


def quote_margin(scorer: UnitScorer | None) -> float | None:
    """The shipped model's margin below the best unit's score within which a unit is quoted (None: the lead
    alone; the model was trained without choosing one)."""
    value = scorer.model.meta.get("quote_margin") if scorer is not None else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def shipped_scorer() -> UnitScorer | None:
    try:
        return load_unit_scorer()
    except RankerModelError:
        return None


def score_here(rows: Sequence[EvidenceRow], request: str, terms: Sequence[str],
               scorer: UnitScorer | None) -> list[EvidenceRow]:
    """`rows` with their units scored by `scorer` from the evidence alone (no row distances), when no row
    carries scored units already."""
    if scorer is None or any(r.metadata.get(UNIT_SCORES) for r in rows):
        return list(rows)
    dicts: list[dict[str, Any]] = [r.model_dump(include={"id", "path", "layer", "title", "content", "span_start",
                                                           "span_end", "metadata"}) for r in rows]
    units = split_rows(dicts)
    if not units:
        return list(rows)
    files = list(dict.fromkeys(r.path for r in rows))
    ctx = UnitContext(query=RankQuery(request, list(terms)), files=files, pack=rows, ranked=rows)
    return with_unit_scores(rows, units, scorer.score(unit_features(units, dicts, ctx)))


def heading_above(row: EvidenceRow, line: int) -> str:
    """What a unit at `line` is about: the last markdown heading of a document row above it (its section
    path's last entry when none); for code, the row's title, else the last definition opened above it."""
    heading = ""
    lines = row.content.split("\n")
    lines = lines[max(0, len(lines) - (row.span_end - row.span_start + 1)):]  # C0 label lines above the span
    for k, text in enumerate(lines[: max(0, line - row.span_start + 1)]):
        if row.layer == DOC_LAYER and _HEADING.match(text) and row.span_start + k < line:
            heading = _ANCHOR.sub("", text.strip().lstrip("#")).strip()
        elif row.layer[:1] == "C" and (m := _DEFINITION.match(text)):
            heading = m.group(1)
    if row.layer[:1] == "C":
        return row.title or heading
    return heading or section_of(row)


_MARKUP_LINE = re.compile(
    r"^\s*(?:\{\*.*\*\}|--8<--.*|/{3}.*|[!?]{3}\+?\s*\w.*|(?:\[?!\[[^\]]*\]\([^)]*\)\]?(?:\([^)]*\))?\s*)+)\s*$")
"""A line that is markup, not text: an include directive (`{* … *}`, `--8<--`), an admonition marker (`/// tip`,
`!!! note`), images and linked images (badges). A line of HTML stays: it may be the snippet the answer is about."""
_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)")


def boilerplate(text: str) -> bool:
    """Whether a unit is navigation or markup, never an answer: every line is markup, or links make up half of
    its characters (a table of contents row, a "see also" sentence)."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines or all(_MARKUP_LINE.match(line) for line in lines):
        return True
    linked = sum(len(m.group(0)) for m in _LINK.finditer(text))
    return linked >= 0.5 * len(text.strip())


def _trim_markup(start: int, end: int, text: str) -> tuple[int, int, str]:
    """A unit without the markup lines at its edges (an include line glued to the sentence after it), its line
    span following; units whose text is not one line per source line are kept as they are."""
    lines = text.split("\n")
    if len(lines) != end - start + 1:
        return start, end, text
    while len(lines) > 1 and _MARKUP_LINE.match(lines[0]):
        lines, start = lines[1:], start + 1
    while len(lines) > 1 and _MARKUP_LINE.match(lines[-1]):
        lines, end = lines[:-1], end - 1
    return start, end, "\n".join(lines)


def unit_passages(rows: Sequence[EvidenceRow]) -> list[Span]:
    """Every scored unit of the rows as a passage, best first (a unit two rows share, once). A heading is not
    quoted: it is the label of the units under it (`heading_above`), shown as the quote's section, and a fact
    named only by a label is not stated (the eval's matcher gives a label no credit). Nor is navigation or markup
    (`boilerplate`: a table of contents, an include directive, an admonition marker), which the scorer may rank
    high for the words of its link titles."""
    best: dict[tuple[str, int, int], Span] = {}
    for row in rows:
        for start, end, score, kind, text in row.metadata.get(UNIT_SCORES) or ():
            if kind == "heading" or (row.layer[:1] == "D" and boilerplate(str(text))):
                continue
            start, end, text = _trim_markup(int(start), int(end), str(text)) if row.layer[:1] == "D" \
                else (int(start), int(end), str(text))
            key = (row.path, start, end)
            if key in best and best[key].score >= score:
                continue
            card = kind == "card"  # a card's text is the index's summary of a definition, not its code
            code = (row.layer.startswith("C") and not card) or kind == "code_block"
            best[key] = Span(path=row.path, start_line=int(start), end_line=int(end), text=str(text), row_id=row.id,
                             score=float(score), layer=row.layer, code=code, section=heading_above(row, int(start)),
                             kind="card" if card else "source" if row.layer[:1] == "C" else kind)
    return sorted(best.values(), key=lambda s: (-s.score, s.path, s.start_line))


def _near(a: Span, b: Span) -> bool:
    gap = JOIN_LINES + 1
    return a.path == b.path and a.start_line <= b.end_line + gap and b.start_line <= a.end_line + gap


def _join(a: Span, b: Span) -> Span:
    first, second = sorted((a, b), key=lambda s: s.start_line)
    text = first.text if second.text in first.text else f"{first.text}\n{second.text}"
    return first.model_copy(update={"end_line": max(a.end_line, b.end_line), "text": text,
                                    "score": max(a.score, b.score), "code": a.code or b.code})


def choose_units(units: Sequence[Span], file_rank: dict[str, int], margin: float | None
                 ) -> tuple[list[Span], list[Span]]:
    """The answer's quotes and the pool (every unit, the quotes first); `units` best first.

    The lead is the best unit (the scorer weighs the file's rank among its features; a tie goes to the
    better-ranked file); then each unit scoring at least the best score minus `margin`, best first: joined to a
    quote of its file it is next to (while the quote stays under MAX_QUOTE_CHARS), else a new quote while there
    are at most MAX_SUPPORTING after the lead.
    """
    if not units:
        return [], []
    top = units[0].score
    lead = min((u for u in units if u.score >= top), key=lambda u: file_rank.get(u.path, len(file_rank) + 1))
    chosen = [lead]
    if margin is not None:
        cut = top - margin
        for u in units:
            if u.score < cut:
                break
            if u is lead or any(c.path == u.path and c.start_line <= u.start_line and u.end_line <= c.end_line
                                for c in chosen):
                continue
            k = next((i for i, c in enumerate(chosen) if _near(c, u)), None)
            if k is not None:
                if len(chosen[k].text) + len(u.text) < MAX_QUOTE_CHARS:
                    chosen[k] = _join(chosen[k], u)
            elif len(chosen) <= MAX_SUPPORTING:
                chosen.append(u)
    pool = [*chosen, *(u for u in units if not any(c.path == u.path and c.start_line <= u.end_line
                                                     and u.start_line <= c.end_line for c in chosen))]
    return chosen, pool
