"""File summaries: "what is in <file>?" is answered by the file's outline, not by one of its sentences.

A question that names one file and asks for nothing beyond its content ("Что в файле tutorial/cors.md?",
"Summarize install/INSTALL.md") wants what the file covers: its summary and its sections. The document
card (D1) holds both; quoted as a sentence it gave only the opening paragraph, and supporting passages from
other files said nothing about the named one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodes.context_analysis.card_sources import SOURCE_LAYER, is_module_card
from nodes.context_analysis.models import Span
from nodes.context_analysis.scoring import FUNCTION_WORDS
from nodes.context_analysis.spans import LINE_ALIGNED, Line, aligned_lines, cut_words, lead_span
from nodes.context_analysis.text import stems_of
from nodes.conversation_understanding import is_generic_term
from nodes.evidence import EvidenceRow

NAMED_LANES = ("exact", "substring")
"""Lanes that find the files a question names by path."""
SUMMARY_WORDS = frozenset("""
summarize summarise summary overview contain contains contained cover covers say says explain explains
describe describes file module page document doc docs
кратко перескажи перескажите пересказ обзор содержит содержится находится описано описан описывает
рассказывает чём файл файле файла модуль модуле модуля страница странице документ документе
""".split())
"""Words that ask for a file's content as a whole: a summary request has one, and no topic of its own."""
OUTLINE_LINES = (("Summary", 600), ("Sections", 300), ("Entities", 160))
"""The card lines an outline shows, in this order, each cut to its length (the index's `Path:` / `Type:`
labels are left out). The summary is the card's own, already cut by the indexer to 600 characters."""
OPENING_LINES = 16
"""Lines of a module's opening shown beside its card in a summary of a code file."""
MAX_GAP = 3
"""Lines between two source rows that the opening passes over, shown as `...` (the blank lines between
top-level chunks are in no row)."""
REPEATS = 0.8
"""A passage whose stems are this much inside the outline's repeats it (the opening paragraph is the
card's summary) and is not shown beside it."""

_SPLIT = re.compile(r"[/._\-\s]+")


def named_file(rows: Sequence[EvidenceRow]) -> str | None:
    """The one file the question names by path (rows found by a NAMED_LANES lane), or None (none or several)."""
    paths = {row.path for row in rows if any(lane in row.lanes for lane in NAMED_LANES)}
    return next(iter(paths)) if len(paths) == 1 else None


def asks_for_summary(question: str, terms: Sequence[str], path: str) -> bool:
    """The question asks for content (a SUMMARY_WORDS word) and every key term is part of the named `path`,
    such a word, or a generic or function word ("Как настроить CORS в cors.md?" asks how, not what)."""
    if not any(w in SUMMARY_WORDS for w in re.findall(r"\w+", question.lower())):
        return False
    parts = {p for p in _SPLIT.split(path.lower()) if p}

    def covered(term: str) -> bool:
        t = term.lower()
        pieces = [p for p in _SPLIT.split(t) if p]
        return (t in SUMMARY_WORDS or t in FUNCTION_WORDS or is_generic_term(t)
                or bool(pieces) and all(p in parts for p in pieces))

    return bool(terms) and all(covered(t) for t in terms)


def outline_text(card: EvidenceRow) -> str:
    """A document card as an outline: its summary, then its sections and entities lines."""
    found: dict[str, str] = {}
    wanted = {label for label, _ in OUTLINE_LINES}
    for line in card.content.splitlines():
        label, sep, value = line.partition(":")
        if sep and label.strip() in wanted and value.strip():
            found.setdefault(label.strip(), " ".join(value.split()))
    summary = found.get("Summary") or " ".join(str(card.metadata.get("summary") or card.title).split())
    lines = [cut_words(summary, OUTLINE_LINES[0][1])]
    lines += [f"{label}: {cut_words(found[label], limit)}" for label, limit in OUTLINE_LINES[1:] if label in found]
    return "\n".join(line for line in lines if line)


def _repeats(span: Span, outline: str) -> bool:
    mine = stems_of(span.text)
    return bool(mine) and len(mine & stems_of(outline)) >= REPEATS * len(mine)


def module_opening(rows: Sequence[EvidenceRow]) -> Span | None:
    """The first OPENING_LINES lines of a module, read across its source rows from the top (blank lines
    kept, trailing ones cut): its imports, constants and first definitions, which its card's list of
    definitions leaves out. None when the rows do not start a contiguous run of lines."""
    lines: list[Line] = []
    shown = 0
    ordered = sorted(rows, key=lambda r: (r.span_start, r.id))
    for row in ordered:
        if lines and row.span_start > lines[-1].number + 1 + MAX_GAP:
            break  # what lies between was not read
        if lines and row.span_start > lines[-1].number + 1:  # blank lines between top-level chunks
            lines.append(Line(row.span_start - 1, "...", True, "gap"))
        new = [line for line in aligned_lines(row) if not lines or line.number > lines[-1].number]
        taken = new[: OPENING_LINES - shown]
        lines += taken
        shown += len(taken)
        if shown >= OPENING_LINES:
            break
    while lines and lines[-1].kind in ("blank", "gap"):
        lines.pop()
    if not any(line.kind not in ("blank", "gap") for line in lines):
        return None
    return Span(path=ordered[0].path, start_line=lines[0].number, end_line=lines[-1].number,
                text="\n".join(line.text for line in lines), row_id=ordered[0].id, layer=ordered[0].layer,
                code=True)


def outline_first(path: str, rows: Sequence[EvidenceRow], spans: list[Span], pool: list[Span],
                  sources: Sequence[EvidenceRow] = ()) -> tuple[list[Span], list[Span]]:
    """The answer to a summary request about `path`, passages of other files left out: a document's outline
    (from its card) and its best verbatim passage that does not repeat the outline; a module's card (what it
    defines, not one of its definitions) and how the module opens (`module_opening` of its source rows among
    `rows` and `sources`). A file with neither card keeps its own passages (the others' when it has none)."""
    mine = [s for s in spans if s.path == path]
    card = next((r for r in rows if r.path == path and r.layer == "D1_DOCUMENT_CATALOG"), None)
    if card is None:
        chosen = _module_summary(path, rows, mine, sources) or mine or spans
        return chosen, [*chosen, *(p for p in pool if p not in chosen)]
    text = outline_text(card)
    outline = Span(path=path, start_line=card.span_start, end_line=card.span_end, text=text, row_id=card.id,
                   layer=card.layer, kind=card.layer)
    verbatim = [s for s in [*mine, *pool] if s.path == path and s.layer in LINE_ALIGNED]
    if not verbatim:
        verbatim = [lead_span(r) for r in rows if r.path == path and r.layer in LINE_ALIGNED][:1]
    rest = [s for s in verbatim if not _repeats(s, text)][:1]
    return [outline, *rest], [outline, *rest, *(p for p in pool if p.row_id != card.id and p not in rest)]


def _module_summary(path: str, rows: Sequence[EvidenceRow], mine: list[Span], sources: Sequence[EvidenceRow]
                    ) -> list[Span]:
    """The module's card, then its opening when the rows read start at its top and the opening lies inside
    the card's span (which the evidence holds); empty without a module card. A passage of the module that
    already quotes it (its docstring) leads."""
    module = next((r for r in rows if r.path == path and is_module_card(r)), None)
    if module is None:
        return []
    if mine and mine[0].row_id != module.id and mine[0].layer in LINE_ALIGNED and mine[0].start_line == 1:
        return mine[:1]  # the card was already replaced by the module docstring
    opening = module_opening([r for r in [*rows, *sources] if r.path == path and r.layer == SOURCE_LAYER])
    if opening is None or not (module.span_start <= opening.start_line <= module.span_start + MAX_GAP
                               and opening.end_line <= module.span_end):  # rows read may lie further down
        return [lead_span(module)]
    return [lead_span(module), opening]
