"""Line alignment of evidence rows, quotable text of synthesized rows, and a named file's opening."""

from __future__ import annotations

import re
from dataclasses import dataclass

from nodes.context_analysis.models import Span
from nodes.context_analysis.text import first_hit_offset
from nodes.evidence import EvidenceRow

LINE_ALIGNED = frozenset({"D0_DOC_CHUNKS", "C0_SOURCE_CHUNKS"})
"""Layers whose content is verbatim source lines (first content line = `span_start`)."""
MAX_SPAN_CHARS = 400
MAX_RUN_LINES = 4
# Label lines the code indexer prepends to C0 chunks of long classes (not source lines).
_C0_LABEL = re.compile(r"^# (?:class .+\(.+\)|\S+ \(continued\))$")


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    code: bool
    kind: str
    """`text`, `heading`, `include`, `blank` or `fence`."""


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


_CARD_LABEL = re.compile(r"^\s*[A-Z][A-Za-z ]{1,20}:\s")


def quotable_text(row: EvidenceRow) -> str:
    """What may be quoted from a synthesized row: a catalog card's summary (or title), never its
    `Path:` / `Type:` / `Sections:` index labels; other layers' text as it is."""
    if row.layer == "D1_DOCUMENT_CATALOG":
        summary = str(row.metadata.get("summary") or "").strip()
        unlabelled = " ".join(line for line in row.content.splitlines() if not _CARD_LABEL.match(line))
        text = " ".join((summary or unlabelled or row.title).split())
        return cut_words(text, MAX_SPAN_CHARS)
    return row_text(row)


def section_of(row: EvidenceRow) -> str:
    """The heading a docs chunk belongs to (its last section-path entry), without `{ #anchor }`."""
    if row.layer != "D0_DOC_CHUNKS":
        return ""
    path = row.metadata.get("section_path") or []
    heading = str(path[-1]) if path else str(row.metadata.get("heading") or "")
    return re.sub(r"\s*\{\s*#[^}]*\}\s*$", "", heading).strip()


def cut_words(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a word boundary, marked with `…` when cut."""
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def row_text(row: EvidenceRow, limit: int = MAX_SPAN_CHARS) -> str:
    """A synthesized row's content on one line, trimmed."""
    return cut_words(" ".join(row.content.split()) or row.title, limit)


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
    return Span(path=row.path, start_line=row.span_start, end_line=row.span_end, text=quotable_text(row),
                row_id=row.id, layer=row.layer)
