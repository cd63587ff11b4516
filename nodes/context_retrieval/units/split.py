"""Units of index rows (pure): a row cut into the statements, sentences, list items, table rows, code blocks
and facts that answer (`split_rows`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DOC_LAYER = "D0_DOC_CHUNKS"
SOURCE_LAYER = "C0_SOURCE_CHUNKS"
FACT_LAYER = "C7_CODE_FACTS"
CARD_LAYERS = ("C1_SYMBOL_CATALOG", "C3_ENTRYPOINTS")
"""Catalog rows (cards): a symbol's signature and docstring's opening (C1), an entrypoint's route, command,
task or schedule with its models, auth and options (C3). Each card is one unit (`card_unit`): what the row
says of the definition is often what the question asks ("which routes need auth?"), and no line of the
source states it as the card does."""
UNIT_LAYERS = (DOC_LAYER, SOURCE_LAYER, FACT_LAYER, *CARD_LAYERS)
"""The layers whose rows are cut into units: the text itself, the code facts and the cards."""

MAX_UNIT_LINES = 8
"""A longer statement, docstring paragraph or code block is cut into windows of this many lines."""
MAX_UNIT_CHARS = 700
"""A unit's text is cut to this many characters (a minified line, a long table row)."""
KINDS = ("statement", "def", "docstring", "comment", "fact", "heading", "sentence", "list_item", "table_row",
         "code_block", "card")
FACT_KINDS = ("parameter", "field", "option", "constant", "raise", "env", "message")

_WORD = re.compile(r"\w+", re.UNICODE)
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


def card_unit(content: str, start: int, end: int) -> tuple[str, int, int, str]:
    """(kind, start, end, text) of a card row: its whole text as one unit, citing the card's first lines (as
    many as the card has, within its span: a C1 card spans its whole definition, and the unit stands for
    the signature and docstring at its top, not for the body under them)."""
    text = content.strip("\n")
    return "card", start, max(start, min(end, start + text.count("\n"))), _cut(text)


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
        elif layer in CARD_LAYERS:
            if metadata.get("kind") == "module" or not content.strip():
                continue  # a module's card summarises the whole file: its docstring's units say it in place
            parts = [card_unit(content, start, end)]
            context = title
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
