"""A light line-level model of a markdown file: fenced blocks, ATX headings, mkdocs markup cleanup."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_HEADING = re.compile(r"^ {0,3}(?P<hashes>#{1,6})[ \t]+(?P<text>.*?)[ \t]*#*[ \t]*$")
_ANCHOR = re.compile(r"\s*\{\s*#(?P<anchor>[\w:.-]+)\s*\}\s*$")
_INCLUDE = re.compile(r"^[ \t]*\{\*.*?\*\}[ \t]*$", re.MULTILINE)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_ADMONITION_OPEN = re.compile(
    r"^(?P<indent>[ \t]*)/{3,}[ \t]*(?P<kind>[\w-]+)[ \t]*(?:\|[ \t]*(?P<title>.*?))?[ \t]*$", re.MULTILINE
)
_ADMONITION_CLOSE = re.compile(r"^[ \t]*/{3,}[ \t]*$", re.MULTILINE)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_ANCHOR_ANYWHERE = re.compile(r"\s*\{\s*#[\w:.-]+\s*\}")
_ANNOTATION_MARK = re.compile(r"#\s*\(\d+\)!")

MAX_HEADING_LEVEL = 4
"""Headings deeper than this stay inside their parent's chunk."""


@dataclass(frozen=True, slots=True)
class Heading:
    """An ATX heading outside fenced code."""

    line: int
    """1-based line number in the file."""
    level: int
    text: str
    """Heading text without `{ #anchor }`, backticks and emphasis markers."""
    anchor: str | None
    """mkdocs anchor id from a `{ #anchor-id }` suffix, if any."""


@dataclass(frozen=True, slots=True)
class Fence:
    """A fenced code block, fence lines included."""

    start: int
    end: int
    info: str
    """First word of the info string, lower-cased (`python`, `mermaid`, ...)."""


@dataclass(frozen=True, slots=True)
class MarkdownDoc:
    """A markdown file split into lines, with fences and headings located once for every layer."""

    path: str
    lines: tuple[str, ...]
    """All lines of the file; line N is `lines[N - 1]`."""
    body_start: int
    """First line after the frontmatter (1 when there is none)."""
    fenced: tuple[bool, ...]
    """`fenced[N - 1]` is true when line N belongs to a fenced block (fence lines included)."""
    fences: tuple[Fence, ...]
    headings: tuple[Heading, ...]
    heading_lines: frozenset[int] = field(default=frozenset())
    """Line numbers of `headings`, for O(1) "is this a heading" checks."""

    @property
    def last_line(self) -> int:
        """Number of the last line of the file."""
        return len(self.lines)

    def line(self, number: int) -> str:
        """Return line `number` (1-based)."""
        return self.lines[number - 1]

    def text_lines(self, start: int | None = None, end: int | None = None) -> Iterator[tuple[int, str]]:
        """Yield `(number, line)` for body lines outside fenced blocks between `start` and `end`."""
        first = max(start or self.body_start, self.body_start)
        for number in range(first, (end or self.last_line) + 1):
            if not self.fenced[number - 1]:
                yield number, self.lines[number - 1]

    def join(self, start: int, end: int) -> str:
        """Return lines `start..end` (inclusive) joined with newlines."""
        return "\n".join(self.lines[start - 1 : end])


def parse_markdown(path: str, text: str, body_start: int = 1) -> MarkdownDoc:
    """Locate fenced blocks and headings of `text` (lines before `body_start` are frontmatter).

    Args:
        path: File path, relative to the indexed root.
        text: File text with `\\n` newlines.
        body_start: First line after the frontmatter.

    Returns:
        The line model shared by every docs layer.
    """
    lines = tuple(split_lines(text))
    fenced = [False] * len(lines)
    fences: list[Fence] = []
    headings: list[Heading] = []
    open_fence: tuple[int, str, int, str] | None = None  # (start, char, length, info)
    for index in range(body_start - 1, len(lines)):
        line = lines[index]
        if open_fence is not None:
            fenced[index] = True
            start, char, length, info = open_fence
            stripped = line.strip()
            if stripped and set(stripped) == {char} and len(stripped) >= length:
                fences.append(Fence(start=start, end=index + 1, info=info))
                open_fence = None
            continue
        match = _FENCE_OPEN.match(line)
        if match:
            fence = match["fence"]
            info = match["info"].strip().split(" ")[0].lower() if match["info"].strip() else ""
            open_fence = (index + 1, fence[0], len(fence), info.strip("{}."))
            fenced[index] = True
            continue
        heading = _HEADING.match(line)
        if heading and heading["text"]:
            raw, anchor = split_anchor(heading["text"])
            if raw:
                headings.append(Heading(index + 1, len(heading["hashes"]), clean_inline(raw), anchor))
    if open_fence is not None:  # an unclosed fence runs to the end of the file, like CommonMark says
        fences.append(Fence(start=open_fence[0], end=len(lines), info=open_fence[3]))
    heading_lines = frozenset(h.line for h in headings)
    return MarkdownDoc(path, lines, body_start, tuple(fenced), tuple(fences), tuple(headings), heading_lines)


class SectionIndex:
    """Answers "which headings enclose line N" in O(log n) (documents can have thousands of headings)."""

    def __init__(self, headings: tuple[Heading, ...] | list[Heading], max_level: int = 6) -> None:
        self._lines: list[int] = []
        self._paths: list[tuple[Heading, ...]] = []
        stack: list[Heading] = []
        for heading in headings:
            if heading.level > max_level:
                continue
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            self._lines.append(heading.line)
            self._paths.append(tuple(stack))

    def path_at(self, line: int) -> tuple[Heading, ...]:
        """Headings from the top level down to the one in effect at `line`."""
        index = bisect.bisect_right(self._lines, line) - 1
        return self._paths[index] if index >= 0 else ()

    def titles_at(self, line: int) -> list[str]:
        """`path_at` as heading texts."""
        return [heading.text for heading in self.path_at(line)]


def split_lines(text: str) -> list[str]:
    """Lines of `text`; a final newline ends the last line rather than starting an empty one."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def split_anchor(heading_text: str) -> tuple[str, str | None]:
    """Split an mkdocs `Title { #anchor-id }` into `("Title", "anchor-id")`."""
    match = _ANCHOR.search(heading_text)
    if not match:
        return heading_text.strip(), None
    return heading_text[: match.start()].strip(), match["anchor"]


def clean_inline(text: str) -> str:
    """Drop inline markup (backticks, emphasis, HTML tags, link targets) but keep the words."""
    text = _HTML_TAG.sub("", text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    return re.sub(r"\s+", " ", text).strip()


def clean_for_embedding(text: str) -> str:
    """Turn raw markdown into prose for an embedder.

    Drops mkdocs include directives (`{* ../../docs_src/... *}`), HTML comments and tags, heading anchors
    and code annotation markers; admonitions keep their text with the title as a label
    (`/// tip | Подсказка` becomes `Подсказка:`).
    """
    text = _HTML_COMMENT.sub("", text)
    text = _INCLUDE.sub("", text)
    text = _ADMONITION_CLOSE.sub("", text)
    text = _ADMONITION_OPEN.sub(lambda m: f"{m['indent']}{m['title'] or m['kind'].capitalize()}:", text)
    text = _ANCHOR_ANYWHERE.sub("", text)
    text = _ANNOTATION_MARK.sub("", text)
    text = _HTML_TAG.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def is_directive_line(line: str) -> bool:
    """True for lines that carry markup only: includes, admonition fences, comments, bare HTML tags."""
    stripped = line.strip()
    return bool(
        _INCLUDE.match(stripped)
        or stripped.startswith("///")
        or stripped.startswith("<!--")
        or (stripped.startswith("<") and stripped.endswith(">") and not _HTML_TAG.sub("", stripped).strip())
    )
