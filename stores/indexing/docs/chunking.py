"""D0_DOC_CHUNKS: heading-aware chunks with section paths and exact line spans."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from stores.indexing.docs.markdown import (
    MAX_HEADING_LEVEL,
    Heading,
    MarkdownDoc,
    SectionIndex,
    clean_for_embedding,
    is_directive_line,
)
from stores.indexing.docs.profile import DocProfile
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_CHUNK_CHARS = 1200
"""Sections longer than this are split at paragraph boundaries."""
MIN_SECTION_CHARS = 200
"""Sections whose own text is shorter than this are merged into the next one."""
MAX_EMBED_CHARS = 2000
MAX_CONTENT_CHARS = 4 * MAX_CHUNK_CHARS
"""Only a single over-long line can exceed this; such parts are cut by characters (same line span)."""


@dataclass(frozen=True, slots=True)
class Section:
    """A run of lines under one heading (or several merged tiny ones)."""

    start: int
    end: int
    path: tuple[str, ...]
    """Headings from the top level down to the section's first heading."""
    body_chars: int = 0
    """Characters of own text (headings and markup-only lines excluded)."""


def split_sections(doc: MarkdownDoc) -> list[Section]:
    """Cut the body at headings of level 1..MAX_HEADING_LEVEL (text before the first one is a section too)."""
    headings = [h for h in doc.headings if h.level <= MAX_HEADING_LEVEL]
    sections: list[Section] = []
    first_heading_line = headings[0].line if headings else doc.last_line + 1
    if _has_text(doc, doc.body_start, first_heading_line - 1):
        start, end = doc.body_start, first_heading_line - 1
        sections.append(Section(start, end, (), _body_chars(doc, start, end)))
    stack: list[tuple[int, str]] = []
    for index, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.text))
        end = headings[index + 1].line - 1 if index + 1 < len(headings) else doc.last_line
        path = tuple(text for _, text in stack)
        sections.append(Section(heading.line, end, path, _body_chars(doc, heading.line, end)))
    return sections


def merge_tiny_sections(doc: MarkdownDoc, sections: list[Section]) -> list[Section]:
    """Fold sections with little own text into the following one (the last one into its predecessor).

    Merged sections may exceed the size limit; `split_long_section` cuts them afterwards, so a lone
    heading always travels with the first paragraphs that follow it.
    """
    merged: list[Section] = []
    pending: Section | None = None
    for section in sections:
        if pending is not None:
            section = _merge(pending, section)
            pending = None
        if section.body_chars < MIN_SECTION_CHARS:
            pending = section
            continue
        merged.append(section)
    if pending is not None:
        if merged:
            merged[-1] = _merge(merged[-1], pending)
        elif _has_text(doc, pending.start, pending.end):
            merged.append(pending)
    return merged


def split_long_section(doc: MarkdownDoc, section: Section) -> list[tuple[int, int]]:
    """Return the line spans of a section's parts, each at most ~MAX_CHUNK_CHARS, cut between paragraphs."""
    parts: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for block_start, block_end in _blocks(doc, section.start, section.end):
        for piece in _hard_split(doc, block_start, block_end):
            # A part that is still tiny (a lone heading) takes the next piece even past the limit.
            if current is not None and (
                _size(doc, current[0], piece[1]) <= MAX_CHUNK_CHARS
                or _size(doc, *current) < MIN_SECTION_CHARS
            ):
                current = (current[0], piece[1])
                continue
            if current is not None:
                parts.append(current)
            current = piece
    if current is not None:
        # A short tail reads better with its predecessor than alone.
        if (
            parts
            and _size(doc, *current) < MIN_SECTION_CHARS
            and _size(doc, parts[-1][0], current[1]) <= (MAX_CHUNK_CHARS * 5 // 4)
        ):
            parts[-1] = (parts[-1][0], current[1])
        else:
            parts.append(current)
    return parts


def chunk_records(doc: MarkdownDoc, profile: DocProfile) -> list[ChunkRecord]:
    """Build the D0 rows of a document.

    Args:
        doc: The parsed markdown file.
        profile: Document attributes copied into every row.

    Returns:
        Chunks in file order; `embed_text` is `"{title} / {section path}\\n{cleaned text}"`.
    """
    records: list[ChunkRecord] = []
    headings = [h for h in doc.headings if h.level <= MAX_HEADING_LEVEL]
    sections = SectionIndex(headings)
    lines = [h.line for h in headings]
    for section in merge_tiny_sections(doc, split_sections(doc)):
        spans = split_long_section(doc, section)
        for part, (start, end), content in _contents(doc, spans):
            cleaned = clean_for_embedding(content)
            if not any(char.isalnum() for char in cleaned):
                continue
            path = _part_path(sections, start, end)
            metadata = profile.base_metadata() | {
                "section_path": [h.text for h in path],
                "heading": path[-1].text if path else None,
                "anchor": path[-1].anchor if path else None,
                "headings": [h.text for h in headings[bisect_left(lines, start) : bisect_right(lines, end)]],
                "chunk_index": len(records),
                "part": part,
                "parts": len(spans),
                "title": profile.title,
            }
            records.append(
                ChunkRecord(
                    layer=Layer.D0_DOC_CHUNKS,
                    path=doc.path,
                    title=" > ".join(metadata["section_path"]) or profile.title,
                    content=content,
                    span_start=start,
                    span_end=end,
                    metadata=metadata,
                    embed=True,
                    embed_text=f"{_embed_prefix(profile.title, metadata['section_path'])}\n{cleaned}"[
                        :MAX_EMBED_CHARS
                    ],
                )
            )
    return records


def _contents(doc: MarkdownDoc, spans: list[tuple[int, int]]) -> Iterator[tuple[int, tuple[int, int], str]]:
    """Text of each part; a part that is one giant line (minified HTML...) is cut by characters."""
    for part, (start, end) in enumerate(spans):
        start, end = _trim_blank(doc, start, end)
        content = doc.join(start, end)
        if len(content) <= MAX_CONTENT_CHARS:
            yield part, (start, end), content
            continue
        for offset in range(0, len(content), MAX_CHUNK_CHARS):
            yield part, (start, end), content[offset : offset + MAX_CHUNK_CHARS]


def _part_path(sections: SectionIndex, start: int, end: int) -> list[Heading]:
    """The section path shared by the first and the last line of a part (its common heading prefix)."""
    common = []
    for left, right in zip(sections.path_at(start), sections.path_at(end), strict=False):
        if left is not right:
            break
        common.append(left)
    return common


def _embed_prefix(title: str, path: list[str]) -> str:
    inner = path[1:] if path and path[0] == title else path
    return f"{title} / {' > '.join(inner)}" if inner else title


def _merge(first: Section, second: Section) -> Section:
    return Section(first.start, second.end, first.path, first.body_chars + second.body_chars)


def _blocks(doc: MarkdownDoc, start: int, end: int) -> list[tuple[int, int]]:
    """Paragraph-like blocks: runs of non-blank lines; a fenced block never splits across blocks."""
    blocks: list[tuple[int, int]] = []
    block_start: int | None = None
    for number in range(start, end + 1):
        line = doc.line(number)
        inside_fence = doc.fenced[number - 1] and number < end and doc.fenced[number]
        if line.strip() or (block_start is not None and inside_fence):
            block_start = number if block_start is None else block_start
            continue
        if block_start is not None:
            blocks.append((block_start, number - 1))
            block_start = None
    if block_start is not None:
        blocks.append((block_start, end))
    return blocks


def _hard_split(doc: MarkdownDoc, start: int, end: int) -> list[tuple[int, int]]:
    """Split one over-long block by lines (a single huge line stays whole)."""
    if _size(doc, start, end) <= MAX_CHUNK_CHARS:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    piece_start = start
    for number in range(start, end + 1):
        if number > piece_start and _size(doc, piece_start, number) > MAX_CHUNK_CHARS:
            pieces.append((piece_start, number - 1))
            piece_start = number
    pieces.append((piece_start, end))
    return pieces


def _size(doc: MarkdownDoc, start: int, end: int) -> int:
    return sum(len(line) + 1 for line in doc.lines[start - 1 : end])


def _body_chars(doc: MarkdownDoc, start: int, end: int) -> int:
    return sum(
        len(doc.line(n).strip())
        for n in range(start, end + 1)
        if n not in doc.heading_lines and not is_directive_line(doc.line(n))
    )


def _has_text(doc: MarkdownDoc, start: int, end: int) -> bool:
    return any(doc.line(n).strip() for n in range(start, end + 1))


def _trim_blank(doc: MarkdownDoc, start: int, end: int) -> tuple[int, int]:
    while start < end and not doc.line(start).strip():
        start += 1
    while end > start and not doc.line(end).strip():
        end -= 1
    return start, end
