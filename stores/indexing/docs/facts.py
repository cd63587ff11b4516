"""D2_FACT_INDEX: short subject–predicate–object facts with the exact line they come from."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from stores.indexing.docs.markdown import MarkdownDoc, SectionIndex, clean_inline
from stores.indexing.docs.profile import DocProfile
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_OBJECT_CHARS = 400
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE")

_KEY_VALUE = re.compile(r"^\s*[-*+]\s+(?P<key>(?:\*\*[^*]+\*\*|[^:*]){1,60}?)\s*:\s+(?P<value>\S.*)$")
_PLAIN_KEY_VALUE = re.compile(r"^(?P<key>[A-ZА-ЯЁ][\w-]*(?: [\w-]+)?)\s*:\s+(?P<value>\S.{2,})$")
_ENDPOINT = re.compile(rf"(?<![\w/])(?P<method>{'|'.join(HTTP_METHODS)})\s+`?(?P<path>/[\w\-./{{}}:%~*]*)")
_DFN = re.compile(r"<(?P<tag>dfn|abbr)\s+title=(?P<q>[\"'])(?P<title>.*?)(?P=q)\s*>(?P<term>.*?)</(?P=tag)>")
_DEFINITION = re.compile(
    r"^\s*(?:[-*+]\s+)?"
    r"(?:\*\*(?P<bold>[^*]{1,60})\*\*|`(?P<code>[^`]{1,60})`|(?P<plain>[\w][\w .()/-]{0,40}?))"
    r"\s+[—–]\s+(?P<definition>\S.{9,})$"
)
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_SKIPPED_KEYS = frozenset(
    {"например", "пример", "примечание", "совет", "example", "e.g", "note", "tip", "http", "https"}
)
_PROSE_STARTS = frozenset(
    {"это", "он", "она", "оно", "они", "вот", "так", "и", "но", "а", "тогда", "здесь", "теперь", "там"}
    | {"если", "когда"}
    | {"this", "it", "here", "now", "then", "so", "and", "but", "if", "there", "that"}
)
"""First words that make a `Word word: ...` line prose rather than a key/value pair."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One extracted fact before it becomes a row."""

    subject: str
    predicate: str
    obj: str
    kind: str
    line: int
    extra: dict[str, str] | None = None


def extract_facts(doc: MarkdownDoc) -> list[Fact]:
    """Find key/value bullets, table rows, endpoint mentions and definitions outside code blocks."""
    facts: list[Fact] = []
    table_lines = _table_facts(doc, facts)
    seen_endpoints: set[str] = set()
    for number, line in doc.text_lines():
        if number in table_lines or line.lstrip().startswith("#"):
            continue
        facts.extend(_endpoint_facts(line, number, seen_endpoints))
        facts.extend(_dfn_facts(line, number))
        kv = _key_value(line)
        if kv is not None:
            facts.append(Fact("", kv[0], kv[1], "key_value", number))
            continue
        definition = _definition(line)
        if definition is not None:
            facts.append(Fact(definition[0], "definition", definition[1], "definition", number))
    return facts


def fact_records(doc: MarkdownDoc, profile: DocProfile) -> list[ChunkRecord]:
    """Build the D2 rows of a document (not embedded: facts are matched lexically).

    Args:
        doc: The parsed markdown file.
        profile: Document attributes copied into every row.

    Returns:
        Fact rows in file order, each spanning exactly its evidence line.
    """
    records = []
    sections = SectionIndex(doc.headings)
    for fact in sorted(extract_facts(doc), key=lambda f: f.line):
        subject = fact.subject or profile.doc_id
        shown_subject = fact.subject or profile.title
        metadata = profile.base_metadata() | {
            "subject": subject,
            "predicate": fact.predicate,
            "object": fact.obj,
            "fact_kind": fact.kind,
            "line_start": fact.line,
            "line_end": fact.line,
            "section": next(reversed(sections.titles_at(fact.line)), None),
            "source": "docs",
        }
        metadata |= fact.extra or {}
        records.append(
            ChunkRecord(
                layer=Layer.D2_FACT_INDEX,
                path=doc.path,
                title=f"{shown_subject} — {fact.predicate}",
                content=f"{shown_subject} — {fact.predicate}: {fact.obj}",
                span_start=fact.line,
                span_end=fact.line,
                metadata=metadata,
                embed=False,
            )
        )
    return records


def endpoint_mentions(doc: MarkdownDoc) -> list[str]:
    """Distinct `METHOD /path` strings mentioned in the text, in order of first mention."""
    return [fact.obj for fact in extract_facts(doc) if fact.kind == "endpoint"]


def _key_value(line: str) -> tuple[str, str] | None:
    match = _KEY_VALUE.match(line)
    if not match:
        match = _PLAIN_KEY_VALUE.match(line)
        if not match or match["key"].split()[0].lower() in _PROSE_STARTS:
            return None
    key = clean_inline(match["key"])
    value = _clip(match["value"])
    if not key or len(key.split()) > 6 or key.lower() in _SKIPPED_KEYS or key.endswith((".", "!", "?")):
        return None
    if not value or value.startswith("//"):  # `http://...` split at the scheme colon
        return None
    return key, value


def _definition(line: str) -> tuple[str, str] | None:
    """`**Term** — ...`, `` `Term` — ...`` or `Term — это ...` (a plain term needs the explicit "это")."""
    match = _DEFINITION.match(line)
    if not match:
        return None
    term = clean_inline(match["bold"] or match["code"] or match["plain"] or "")
    definition = match["definition"]
    if match["plain"] and not re.match(r"(это|is|are|means)\b", definition, re.I):
        return None
    if not term or len(term.split()) > 5 or term.split()[0].lower() in _PROSE_STARTS:
        return None
    return term, _clip(definition)


def _endpoint_facts(line: str, number: int, seen: set[str]) -> list[Fact]:
    facts = []
    for match in _ENDPOINT.finditer(line):
        path = match["path"].rstrip(".,;:)`")
        endpoint = f"{match['method']} {path}"
        if endpoint in seen:
            continue
        seen.add(endpoint)
        extra = {"method": match["method"], "endpoint_path": path}
        facts.append(Fact("", "endpoint", endpoint, "endpoint", number, extra))
    return facts


def _dfn_facts(line: str, number: int) -> list[Fact]:
    facts = []
    for match in _DFN.finditer(line):
        term = clean_inline(match["term"]).strip("«»\"' ")
        meaning = _clip(html.unescape(match["title"]))
        if term and meaning:
            predicate = "definition" if match["tag"] == "dfn" else "abbreviation"
            facts.append(Fact(term, predicate, meaning, "definition", number))
    return facts


def _table_facts(doc: MarkdownDoc, facts: list[Fact]) -> set[int]:
    """Append one fact per (row, column ≥ 2) cell: subject = first cell, predicate = column header."""
    used: set[int] = set()
    numbers = [n for n, _ in doc.text_lines()]
    for position, number in enumerate(numbers[:-1]):
        header_line, separator_line = doc.line(number), doc.line(numbers[position + 1])
        if "|" not in header_line or not _TABLE_SEPARATOR.match(separator_line) or number in used:
            continue
        header = [clean_inline(cell) for cell in _cells(header_line)]
        used.update({number, numbers[position + 1]})
        row_number = numbers[position + 1] + 1
        while row_number <= doc.last_line and "|" in doc.line(row_number) and not doc.fenced[row_number - 1]:
            used.add(row_number)
            cells = [_clip(html.unescape(clean_inline(cell))) for cell in _cells(doc.line(row_number))]
            _row_facts(header, cells, row_number, facts)
            row_number += 1
    return used


def _row_facts(header: list[str], cells: list[str], line: int, facts: list[Fact]) -> None:
    if not cells or not any(cells):
        return
    if len(cells) == 1:
        facts.append(Fact(header[0] if header else "table", "value", cells[0], "table_row", line))
        return
    subject = cells[0]
    for column, cell in enumerate(cells[1:], start=1):
        predicate = header[column] if column < len(header) and header[column] else f"column {column + 1}"
        if cell and subject:
            facts.append(Fact(subject, predicate, cell, "table_row", line))


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    stripped = stripped[1:] if stripped.startswith("|") else stripped
    stripped = stripped[:-1] if stripped.endswith("|") and not stripped.endswith("\\|") else stripped
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", stripped)]


def _clip(text: str) -> str:
    text = clean_inline(text) if "<" in text else text.strip()
    return text if len(text) <= MAX_OBJECT_CHARS else text[: MAX_OBJECT_CHARS - 1].rstrip() + "…"
