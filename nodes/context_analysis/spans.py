"""Candidate answering spans of one evidence row, with exact source line numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from nodes.context_analysis.models import Span
from nodes.context_analysis.text import first_hit_offset, hits, is_distinctive, stems_of
from nodes.evidence import EvidenceRow

LINE_ALIGNED = frozenset({"D0_DOC_CHUNKS", "C0_SOURCE_CHUNKS"})
"""Layers whose content is verbatim source lines (first content line = `span_start`)."""
MAX_SPAN_CHARS = 400
MAX_RUN_LINES = 4
SPANS_PER_ROW = 3
DISTINCTIVE_BONUS = 0.5
SYNTHESIZED_FACTOR = 0.7
UNMATCHED_DISTINCTIVE = 0.15
TOP_ROW_WEIGHT = 0.8
"""Rows ranked 1–2 (weight = 1 / (1 + 0.2·(rank − 1))) may contribute lines without a key-term hit."""
"""Fact, entity and symbol rows are paraphrases: a verbatim line with the same terms wins."""
CATALOG_FACTOR = 0.3
"""A catalog row (title, type, summary of a whole document) matches many terms but answers little."""
KIND_FACTOR = {"text": 1.0, "heading": 0.6, "include": 0.3}
"""Headings and `{* docs_src/... *}` include lines name a topic but rarely answer it."""

# Label lines the code indexer prepends to C0 chunks of long classes (not source lines).
_C0_LABEL = re.compile(r"^# (?:class .+\(.+\)|\S+ \(continued\))$")


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    code: bool
    kind: str
    """`text`, `heading`, `include`, `blank` or `fence`."""


@dataclass(frozen=True)
class Scoring:
    """What every row of one analysis is scored with."""

    stems: dict[str, str]
    idf: dict[str, float]


def aligned_lines(row: EvidenceRow) -> list[Line]:
    """The content lines of a line-aligned row that lie inside its span, classified."""
    lines = row.content.split("\n")
    span_len = row.span_end - row.span_start + 1
    is_code = row.layer.startswith("C")
    if len(lines) > span_len:
        lines = lines[len(lines) - span_len :]  # C0 content may start with label comment lines
    elif is_code:
        while lines and _C0_LABEL.match(lines[0]):  # content cut by the token cap: labels still lead
            lines = lines[1:]
    out: list[Line] = []
    in_code = is_code
    for offset, text in enumerate(lines[:span_len]):
        stripped = text.strip()
        if not is_code and stripped.startswith(("```", "~~~")):
            out.append(Line(row.span_start + offset, text, True, "fence"))
            in_code = not in_code
            continue
        kind = ("blank" if not stripped else "heading" if not in_code and stripped.startswith("#")
                else "include" if stripped.startswith("{*") else "text")
        out.append(Line(row.span_start + offset, text, in_code, kind))
    return out


def trim(text: str, stems: dict[str, str], limit: int = MAX_SPAN_CHARS) -> str:
    """Cut `text` to `limit` characters around its first key-term hit, marking cuts with `…`."""
    if len(text) <= limit:
        return text
    start = max(0, first_hit_offset(text, stems.values()) - limit // 3)
    if start and " " in text[start : start + 40]:
        start = text.index(" ", start) + 1
    end = min(len(text), start + limit)
    if end < len(text) and " " in text[end - 40 : end]:
        end = text.rindex(" ", end - 40, end)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def _run(lines: list[Line], i: int) -> tuple[int, int]:
    """Grow line `i` into a short run of its block: one line before for code or a lead-in ending with
    ':', then following lines, up to MAX_RUN_LINES lines and MAX_SPAN_CHARS characters."""
    seed = lines[i]
    if seed.kind == "heading":
        return i, i

    def same_block(j: int) -> bool:
        return 0 <= j < len(lines) and lines[j].kind in ("text", "include") and lines[j].code == seed.code

    start = end = i
    chars = len(seed.text)
    before = i - 1
    if same_block(before) and (seed.code or lines[before].text.rstrip().endswith(":")) and \
            chars + len(lines[before].text) < MAX_SPAN_CHARS:
        start, chars = before, chars + len(lines[before].text) + 1
    while end - start + 1 < MAX_RUN_LINES and same_block(end + 1) and \
            chars + len(lines[end + 1].text) < MAX_SPAN_CHARS:
        end, chars = end + 1, chars + len(lines[end + 1].text) + 1
    return start, end


def _line_spans(row: EvidenceRow, weight: float, scoring: Scoring) -> list[Span]:
    lines = aligned_lines(row)
    scored: list[tuple[float, int]] = []
    for i, line in enumerate(lines):
        if line.kind in ("blank", "fence"):
            continue
        found = hits(scoring.stems, stems_of(line.text))
        if found:
            raw = sum(scoring.idf[t] for t in found) + (DISTINCTIVE_BONUS if is_distinctive(line.text) else 0)
            scored.append((raw * KIND_FACTOR[line.kind] * weight, i))
        elif weight >= TOP_ROW_WEIGHT and line.kind != "heading" and is_distinctive(line.text):
            # The best rows' identifiers and values often sit on lines that repeat none of the question's
            # words (a paraphrase, a code line under the matching prose): keep them as low-scored fillers.
            scored.append((UNMATCHED_DISTINCTIVE * KIND_FACTOR[line.kind] * weight, i))
    scored.sort(key=lambda item: (-item[0], item[1]))
    taken: set[int] = set()
    spans: list[Span] = []
    for score, i in scored:
        if i in taken:
            continue
        start, end = _run(lines, i)
        if taken & set(range(start, end + 1)):
            start = end = i
        taken.update(range(start, end + 1))
        text = trim("\n".join(line.text for line in lines[start : end + 1]), scoring.stems)
        spans.append(Span(path=row.path, start_line=lines[start].number, end_line=lines[end].number,
                          text=text, row_id=row.id, score=round(score, 4), layer=row.layer,
                          code=lines[i].code, terms=hits(scoring.stems, stems_of(text)),
                          section=section_of(row)))
        if len(spans) >= SPANS_PER_ROW:
            break
    return spans


_CARD_LABEL = re.compile(r"^\s*[A-Z][A-Za-z ]{1,20}:\s")


def quotable_text(row: EvidenceRow) -> str:
    """What may be quoted from a synthesized row: a catalog card's summary (or title), never its
    `Path:` / `Type:` / `Sections:` index labels; other layers' text as it is."""
    if row.layer == "D1_DOCUMENT_CATALOG":
        summary = str(row.metadata.get("summary") or "").strip()
        unlabelled = " ".join(line for line in row.content.splitlines() if not _CARD_LABEL.match(line))
        text = " ".join((summary or unlabelled or row.title).split())
        return text if len(text) <= MAX_SPAN_CHARS else text[: MAX_SPAN_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return row_text(row)


def section_of(row: EvidenceRow) -> str:
    """The heading a docs chunk belongs to (its last section-path entry), without `{ #anchor }`."""
    if row.layer != "D0_DOC_CHUNKS":
        return ""
    path = row.metadata.get("section_path") or []
    heading = str(path[-1]) if path else str(row.metadata.get("heading") or "")
    return re.sub(r"\s*\{\s*#[^}]*\}\s*$", "", heading).strip()


def row_text(row: EvidenceRow, limit: int = MAX_SPAN_CHARS) -> str:
    """A synthesized row's content on one line, trimmed."""
    text = " ".join(row.content.split()) or row.title
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def candidate_spans(row: EvidenceRow, rank: int, scoring: Scoring) -> list[Span]:
    """Spans of `row` that contain key terms, scored by term hits (rarer terms weigh more), a bonus for
    distinctive tokens, and the row's rank.

    Args:
        row: One evidence row.
        rank: Its 1-based rank among the evidence.
        scoring: Term stems and idf weights of this analysis.

    Returns:
        Up to SPANS_PER_ROW spans; line-aligned rows give exact lines, other rows their whole span.
    """
    weight = 1.0 / (1.0 + 0.2 * (rank - 1))
    if row.layer in LINE_ALIGNED:
        return _line_spans(row, weight, scoring)
    found = hits(scoring.stems, stems_of(f"{row.title} {row.content}"))
    if not found:
        return []
    text = quotable_text(row)
    raw = sum(scoring.idf[t] for t in found) + (DISTINCTIVE_BONUS if is_distinctive(text) else 0)
    factor = CATALOG_FACTOR if row.layer == "D1_DOCUMENT_CATALOG" else SYNTHESIZED_FACTOR
    return [Span(path=row.path, start_line=row.span_start, end_line=row.span_end, text=text, row_id=row.id,
                 score=round(raw * factor * weight, 4), layer=row.layer, terms=found)]


def lead_span(row: EvidenceRow) -> Span:
    """The opening of a row (first non-blank lines), for a file named exactly but matching no term."""
    if row.layer in LINE_ALIGNED:
        lines = [line for line in aligned_lines(row) if line.kind not in ("blank", "fence")]
        if lines:
            first = lines[0]
            run = [first]
            for line in lines[1:MAX_RUN_LINES]:
                if line.number != run[-1].number + 1:
                    break
                run.append(line)
            text = trim("\n".join(line.text for line in run), {})
            return Span(path=row.path, start_line=first.number, end_line=run[-1].number, text=text,
                        row_id=row.id, layer=row.layer, code=first.code)
    return Span(path=row.path, start_line=row.span_start, end_line=row.span_end, text=row_text(row),
                row_id=row.id, layer=row.layer)
