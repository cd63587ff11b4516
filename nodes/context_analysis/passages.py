"""Candidate passages of one evidence row: prose blocks, list items, tables, code with its enclosing def.

A docs chunk is cut into blocks (paragraphs, list items, tables, fenced code) under their headings;
headings, include directives, admonition markers and link lists are never candidates. A source chunk is
cut into its definitions; a short one is a candidate as a whole, a long one as its signature, docstring,
the lines that raise or warn, the lines that use the asked-about names, then its string literals.
Synthesized rows (catalog cards, facts, symbols) are one candidate each, cited by their whole span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nodes.context_analysis.spans import LINE_ALIGNED, Line, aligned_lines, quotable_text, section_of
from nodes.evidence import EvidenceRow

MAX_PASSAGE_CHARS = 900
"""A passage is a few lines a person reads at a glance, not a page. 700 / 12 lines cut a paragraph and the
list or code it introduces apart (dev, five corpora: lead citation in gold 0.521 → 0.530 at 900 / 16, key-fact
coverage 0.334 both, answer p50 1,074 → 1,103 characters)."""
MAX_PASSAGE_LINES = 16
MAX_CODE_LINES = 14
"""A definition up to this long is quoted whole; a longer one as signature, docstring and used lines."""
MAX_DOCSTRING_LINES = 6
"""A docstring is shown up to the end of its first paragraph, at most this many lines."""
EMBED_CHARS = 160

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)")
_NOISE = re.compile(r"^\s*(?:/{3}.*|\{\*.*\*\}|(?:<[^>]+>\s*)+|!\[[^\]]*\]\([^)]*\)|-{3,}|\|?[\s:|-]+\|?)\s*$")
"""Admonition markers (`/// tip`), `{* include *}` lines, lines of bare HTML tags (badges: `<a ...><img ...></a>`),
images, rules, table rules."""
_LITERAL_LINE = re.compile(r"[\"'][^\"'\n]{3,}[\"']")
"""A line with a string literal: messages, formats and defaults, the values a question about code asks for."""
DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class)\s+(\w+)")
"""A line that opens a function, method or class definition; group 1 is its name."""
_OUTCOME = re.compile(r"^\s*(?:raise\s+\w|warnings\.warn\(|warn\()")
"""A line that ends a case with an error or a warning: what a question about an edge case asks for. A long
definition shows these before the other lines that use the asked-about names, which used to fill its budget
first (dev, five corpora: key-fact coverage 0.420 → 0.425, structlog 0.351 → 0.368, no other third-party
case changed; held-out: key-fact coverage unchanged, passage precision 0.353 → 0.359)."""
_DOCSTRING_OPEN = re.compile(r"^\s*[rRuUbB]?(\"\"\"|''')")
_ANCHOR = re.compile(r"\s*\{\s*#[^}]*\}\s*$")


@dataclass(frozen=True)
class Block:
    """Consecutive lines of one kind under one heading (indices into the row's lines)."""

    start: int
    end: int
    kind: str
    """`prose`, `item`, `table`, `code`, `heading` or `noise`."""
    heading: str


@dataclass
class Layout:
    """A line-aligned row cut into blocks."""

    row: EvidenceRow
    lines: list[Line]
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class Candidate:
    """One scorable passage: a block (docs), a definition (code) or a whole synthesized row."""

    row: EvidenceRow
    kind: str
    """`prose`, `item`, `table`, `code` (fenced in docs), `source` (C0), or the synthesized row's layer."""
    text: str
    """What is shown and matched: verbatim lines (with `    ...` for skipped code lines)."""
    start_line: int
    end_line: int
    heading: str = ""
    """The heading the passage sits under (docs), or the definition's name (code)."""
    layout: Layout | None = None
    block: int = -1
    """Index of the block in `layout.blocks` (docs), -1 otherwise."""

    @property
    def embed_text(self) -> str:
        head = f"{self.heading}: " if self.heading else ""
        return f"{head}{' '.join(self.text.split())}"[:EMBED_CHARS]


def clean_heading(text: str) -> str:
    return _ANCHOR.sub("", text.strip().lstrip("#").strip()).strip()


_LOCAL_LINK_FIRST = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|\|\s*)?\[[^\]]*\]\((?![a-z][a-z0-9+.-]*:)[^)]*\)", re.I)
"""A list item or table row that opens with a link to another file of the same repository (no URL scheme)."""
NAVIGATION_SHARE = 0.8


def _is_link_list(text: str) -> bool:
    """Mostly markdown links (a "see also" list or a table of contents): names topics, answers nothing.

    A table of contents with a line about each page is one too: every row (item) opens with a link to another
    page of the repository, whose own text is the answer.
    """
    letters = sum(ch.isalnum() for ch in text)
    linked = sum(sum(ch.isalnum() for ch in m.group(0)) for m in _LINK.finditer(text))
    if letters > 0 and linked / letters >= 0.5:
        return True
    rows = [line for line in text.split("\n") if line.strip() and (_ITEM.match(line) or line.lstrip().startswith("|"))]
    led = sum(1 for line in rows if _LOCAL_LINK_FIRST.match(line))
    return len(rows) >= 2 and led >= NAVIGATION_SHARE * len(rows)


def layout_docs(row: EvidenceRow) -> Layout:
    """Cut a D0 row into blocks; each block knows the heading above it (in the row or the section path)."""
    lines = aligned_lines(row)
    layout = Layout(row=row, lines=lines)
    heading = section_of(row)
    i = 0
    while i < len(lines):
        line = lines[i]
        text = line.text
        if line.kind == "blank":
            i += 1
            continue
        if line.kind == "fence":
            j = i + 1
            while j < len(lines) and lines[j].kind != "fence":
                j += 1
            layout.blocks.append(Block(i, min(j, len(lines) - 1), "code", heading))
            i = j + 1
            continue
        if line.kind == "heading":
            heading = clean_heading(text) or heading
            layout.blocks.append(Block(i, i, "heading", heading))
            i += 1
            continue
        if line.kind == "include" or _NOISE.match(text):
            layout.blocks.append(Block(i, i, "noise", heading))
            i += 1
            continue
        kind = "item" if _ITEM.match(text) else "table" if text.lstrip().startswith("|") else "prose"
        j = i + 1
        while j < len(lines) and lines[j].kind == "text" and not _NOISE.match(lines[j].text):
            nxt = lines[j].text
            if kind == "table" and not nxt.lstrip().startswith("|"):
                break
            if kind != "table" and (_ITEM.match(nxt) and not (kind == "item" and nxt.startswith((" ", "\t")))
                                    or nxt.lstrip().startswith("|")):
                break
            j += 1
        layout.blocks.append(Block(i, j - 1, kind, heading))
        i = j
    return layout


def block_text(layout: Layout, first: int, last: int) -> tuple[str, int, int]:
    """Lines of blocks `first..last` and their first and last line numbers.

    Blank lines between blocks are kept; include directives and admonition markers between them are
    left out of the text (they are not prose) but stay inside the cited range.
    """
    lo, hi = layout.blocks[first].start, layout.blocks[last].end
    if layout.blocks[first].kind == "code" and first == last:
        inner = [k for k in range(lo, hi + 1) if layout.lines[k].kind != "fence"]
        lo, hi = (inner[0], inner[-1]) if inner else (lo, hi)
    noise = {k for b in layout.blocks[first : last + 1] if b.kind == "noise" for k in range(b.start, b.end + 1)}
    kept: list[str] = []
    for k in range(lo, hi + 1):
        text = layout.lines[k].text
        if k in noise or (not text.strip() and (not kept or not kept[-1].strip())):
            continue
        kept.append(text)
    return "\n".join(kept).rstrip("\n"), layout.lines[lo].number, layout.lines[hi].number


def docs_candidates(row: EvidenceRow) -> list[Candidate]:
    layout = layout_docs(row)
    out = []
    for b, block in enumerate(layout.blocks):
        if block.kind in ("heading", "noise"):
            continue
        text, start, end = block_text(layout, b, b)
        if not text.strip() or (block.kind != "code" and _is_link_list(text)):
            continue
        if len(text) > MAX_PASSAGE_CHARS or end - start + 1 > MAX_PASSAGE_LINES:
            text, end = _head_lines(text, start)
        out.append(Candidate(row=row, kind=block.kind, text=text, start_line=start, end_line=end,
                             heading=block.heading, layout=layout, block=b))
    return out


def _head_lines(text: str, start: int) -> tuple[str, int]:
    """The first lines of a long block within the passage limits (at least one line)."""
    kept: list[str] = []
    for line in text.split("\n")[:MAX_PASSAGE_LINES]:
        if kept and sum(len(k) + 1 for k in kept) + len(line) > MAX_PASSAGE_CHARS:
            break
        kept.append(line)
    return "\n".join(kept), start + len(kept) - 1


# --- code -----------------------------------------------------------------------------------------------
def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _units(lines: list[Line], lo: int, hi: int) -> list[tuple[int, int]]:
    """Definitions (with their decorators) and runs of other code at the shallowest indent of lo..hi."""
    body = [k for k in range(lo, hi + 1) if lines[k].text.strip()]
    if not body:
        return []
    base = min(_indent(lines[k].text) for k in body)
    starts = [k for k in body if _indent(lines[k].text) == base and (
        DEFINITION.match(lines[k].text) or lines[k].text.lstrip().startswith("@"))]
    # A decorator starts its definition; the def line right under it does not start another one.
    starts = [k for n, k in enumerate(starts) if not (n and lines[starts[n - 1]].text.lstrip().startswith("@")
                                                      and k == _next_code(lines, starts[n - 1], hi))]
    units: list[tuple[int, int]] = []
    cursor = body[0]
    for n, k in enumerate(starts):
        if k > cursor:
            units.append((cursor, _last_code(lines, cursor, k - 1)))
        end = (starts[n + 1] - 1) if n + 1 < len(starts) else hi
        units.append((k, _last_code(lines, k, end)))
        cursor = end + 1
    if cursor <= hi and any(lines[k].text.strip() for k in range(cursor, hi + 1)):
        units.append((cursor, _last_code(lines, cursor, hi)))
    return [(a, b) for a, b in units if any(lines[k].text.strip() for k in range(a, b + 1))]


def _next_code(lines: list[Line], k: int, hi: int) -> int:
    k += 1
    while k <= hi and not lines[k].text.strip():
        k += 1
    return k


def _last_code(lines: list[Line], lo: int, hi: int) -> int:
    while hi > lo and not lines[hi].text.strip():
        hi -= 1
    return hi


MAX_SIGNATURE_LINES = 60
"""Lines read to the end of a signature (`compact_signature` then drops the parameters nobody asked about).
Cut at ten, an eleven-line signature (click's `edit()`, `Option.__init__`) never reached its closing line,
so it could not be compacted and showed every parameter instead of the lines that answer."""


def _header(lines: list[Line], lo: int, hi: int) -> list[int]:
    """Decorators, the (possibly multi-line) `def`/`class` line, and the first docstring lines."""
    out: list[int] = []
    k = lo
    while k <= hi and lines[k].text.lstrip().startswith("@") and len(out) < 2:
        out.append(k)
        k += 1
    while k <= hi and lines[k].text.lstrip().startswith("@"):
        k += 1
    if k > hi or not DEFINITION.match(lines[k].text):
        return out
    signature = 0
    while k <= hi and signature < MAX_SIGNATURE_LINES:
        out.append(k)
        signature += 1
        if lines[k].text.rstrip().endswith(":"):
            break
        k += 1
    k += 1
    while k <= hi and not lines[k].text.strip():
        k += 1
    if k <= hi and _DOCSTRING_OPEN.match(lines[k].text):
        quote = _DOCSTRING_OPEN.match(lines[k].text).group(1)  # type: ignore[union-attr]
        first = lines[k].text.split(quote, 1)[1]
        for n in range(MAX_DOCSTRING_LINES):
            if k + n > hi or (n and not lines[k + n].text.strip()):  # its first paragraph
                break
            out.append(k + n)
            if quote in (first if n == 0 else lines[k + n].text):
                break
    return out


OUTCOME_CONTINUATION = 3
"""Lines of a `raise ValueError(` statement kept after its first line: the message is usually on the next one
(dev, five corpora: key-fact coverage 0.425 → 0.430, structlog sl-018; held-out key facts unchanged)."""


def _statement(lines: list[Line], k: int, hi: int) -> list[int]:
    """Line `k` and the lines that continue its statement while a bracket it opened is open (at most
    OUTCOME_CONTINUATION more, not past `hi`)."""
    out, depth = [k], 0
    while True:
        text = lines[out[-1]].text
        depth += sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")
        nxt = out[-1] + 1
        if depth <= 0 or nxt > hi or len(out) > OUTCOME_CONTINUATION:
            return out
        out.append(nxt)


def run_lines(lines: list[Line], a: int, b: int, wanted: set[str]) -> list[int]:
    """The lines a long run of code between definitions (constants, tables, imports) is shown by when its head
    hides what was asked: its first line and the lines that use the asked-about names, with the statements
    they open; its first MAX_CODE_LINES lines when one of those already shows such a line, or none does.

    Cut at its head alone, a 50-line run of `xN = N` never showed `x49999 = 49999` to a question about
    `x49999`: the gate passed the row and the analysis found nothing to quote (issue 25, item 8).
    """
    head = list(range(a, min(b, a + MAX_CODE_LINES - 1) + 1))
    used = [k for k in range(a, b + 1) if lines[k].text.strip() and _uses(lines[k].text, wanted)]
    if not used or used[0] <= head[-1]:
        return head
    shown = list(dict.fromkeys(n for k in used for n in _statement(lines, k, b)))
    return sorted({a, *shown[: MAX_CODE_LINES - 1]})


_VALUE = re.compile(r"""(?:^|[^=!<>])=(?!=)\s*(?:[-+]?\d|["'(\[{]|True\b|False\b|None\b)|["'][^"'\n]{3,}["']""")


def _states_value(text: str) -> bool:
    """A line that assigns a literal or passes a string: where a default, a message or a setting is stated."""
    return not text.lstrip().startswith("#") and _VALUE.search(text) is not None


def _code_text(lines: list[Line], picked: list[int]) -> str:
    parts: list[str] = []
    for n, k in enumerate(picked):
        if n and k != picked[n - 1] + 1:
            parts.append(" " * _indent(lines[k].text) + "...")
        parts.append(lines[k].text)
    return "\n".join(parts)


SIGNATURE_LINES = 3
"""A signature longer than this many lines is shown by its first and last lines and the parameters that use an
asked-about name or carry a string (an option's name, its help): an eleven-line parameter list left a long
definition no room for the lines that answer."""


def compact_signature(lines: list[Line], header: list[int], wanted: set[str]) -> list[int]:
    """`header` (`_header`) without the parameter lines of a long signature that use no asked-about name."""
    start = next((n for n, k in enumerate(header) if DEFINITION.match(lines[k].text)), None)
    if start is None:
        return header
    end = next((n for n in range(start, len(header)) if lines[header[n]].text.rstrip().endswith(":")), None)
    if end is None or end - start + 1 <= SIGNATURE_LINES:
        return header
    inner = [k for k in header[start + 1 : end]
             if _uses(lines[k].text, wanted) or _LITERAL_LINE.search(lines[k].text)]
    return [*header[: start + 1], *inner, *header[end:]]


def code_candidates(row: EvidenceRow, wanted: set[str], *, runs_at_use: bool = False) -> list[Candidate]:
    """One candidate per definition of a C0 row (methods of a long class count as definitions).

    Args:
        row: A C0 row.
        wanted: Folded names and stems asked about (`fold_identifier`); a long definition shows the lines
            that use them.
        runs_at_use: Show a long run of code between definitions at the lines that use `wanted`
            (`run_lines`) instead of at its head.
    """
    lines = aligned_lines(row)
    if not lines:
        return []
    out: list[Candidate] = []

    def visit(lo: int, hi: int, depth: int) -> None:
        for a, b in _units(lines, lo, hi):
            header = _header(lines, a, b)
            name = next((m.group(1) for k in header if (m := DEFINITION.match(lines[k].text))), "")
            size = b - a + 1
            if size > MAX_CODE_LINES and not header and runs_at_use:
                picked = run_lines(lines, a, b, wanted)
            elif size <= MAX_CODE_LINES or not header:
                picked = list(range(a, min(b, a + MAX_CODE_LINES - 1) + 1))
            else:
                shown = set(header)  # a signature's elided parameters are not shown as body lines either
                header = compact_signature(lines, header, wanted)
                # First the lines that set or pass a value under an asked-about name (`x = 80`,
                # `kwargs.setdefault("help", "Show this message")`): what a question about a default asks for.
                used = [k for k in range(a, b + 1) if k not in shown and _states_value(lines[k].text)
                        and _uses(lines[k].text, wanted)]
                used += list(dict.fromkeys(n for k in range(a, b + 1) if k not in shown and k not in used
                                           and _OUTCOME.match(lines[k].text) for n in _statement(lines, k, b)))
                used += [k for k in range(a, b + 1) if k not in shown and k not in used and lines[k].text.strip()
                         and _uses(lines[k].text, wanted)]
                # Then the lines with string literals, while the budget lasts (dev, five corpora: key-fact
                # coverage 0.334 → 0.340, click 0.199 → 0.231; passage precision 0.273 → 0.281).
                used += [k for k in range(a, b + 1) if k not in shown and k not in used
                         and _LITERAL_LINE.search(lines[k].text)]
                # Then any other line that states a value (`max_width = 80`): a default asked about in other
                # words than the code's names.
                used += [k for k in range(a, b + 1) if k not in shown and k not in used
                         and _states_value(lines[k].text)]
                picked = sorted(set(header) | set(used[: MAX_CODE_LINES - len(header)]))
            out.append(Candidate(row=row, kind="source", text=_code_text(lines, picked),
                                 start_line=lines[picked[0]].number, end_line=lines[picked[-1]].number,
                                 heading=name))
            is_class = any(lines[k].text.lstrip().startswith("class ") for k in header)
            if is_class and size > MAX_CODE_LINES and depth == 0 and header:
                visit(header[-1] + 1, b, depth + 1)  # a long class: its methods are definitions too

    visit(0, len(lines) - 1, 0)
    return out


_SPLIT_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def fold_identifier(word: str) -> str:
    """`operationId`, `operation_id` and `OperationID` all fold to `operationid`."""
    return word.replace("_", "").lower()


def _uses(text: str, wanted: set[str]) -> bool:
    for word in _IDENT.findall(text):
        folded = fold_identifier(word)
        if folded in wanted or any(part[:5].lower() in wanted for part in
                                   _SPLIT_CAMEL.sub("_", word).split("_") if len(part) >= 3):
            return True
    return False


def row_candidates(row: EvidenceRow, wanted: set[str], *, runs_at_use: bool = False) -> list[Candidate]:
    """All candidate passages of one evidence row (`runs_at_use`: see `code_candidates`)."""
    if row.layer == "D0_DOC_CHUNKS":
        return docs_candidates(row)
    if row.layer in LINE_ALIGNED:
        return code_candidates(row, wanted, runs_at_use=runs_at_use)
    text = quotable_text(row)
    if not text.strip():
        return []
    heading = str(row.metadata.get("qname") or row.title or "")
    return [Candidate(row=row, kind=row.layer, text=text, start_line=row.span_start, end_line=row.span_end,
                      heading=heading if heading not in text else "")]
