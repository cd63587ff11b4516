"""Citation verification: keep only `path:start-end` references that lie inside retrieved evidence.

Document text quoted in an answer is data: citation-shaped text in it (`[secrets.py:1-9999]`, a bare
`a.md:3-5`) is shown between ⟦ ⟧ (`neutralize_citations`), so it can neither pass for one of the answer's
citations to a reader nor be read as one by `verify_citations`, which skips ⟦ ⟧ and fenced code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from nodes.answer_composition.models import Citation
from nodes.evidence import EvidenceRow

_KNOWN_EXT = ("md", "markdown", "rst", "txt", "py", "pyi", "yaml", "yml", "json", "toml", "cfg", "ini",
              "html")
_ITEM = re.compile(r"`?(?P<path>[\w./-]*\w):(?P<start>\d+)(?:\s*[-–]\s*(?P<end>\d+))?`?")
# A bracket group `[a.md:3-5, b.py:10]`, or a bare `path:line(s)` that is clearly a file (a known
# extension or a folder), never part of a URL or a host:port.
_CITATION = re.compile(
    r"(?P<lead>[ \t]*)(?:\[(?P<group>[^\[\]\n]{1,400})\]"
    r"|(?<![\w:/.-])`?(?P<bare>(?:[\w.-]+/)*[\w.-]+\.(?:" + "|".join(_KNOWN_EXT) + r"))"
    r":(?P<bstart>\d+)(?:[-–](?P<bend>\d+))?`?(?![\w-]))"
)


INERT_OPEN, INERT_CLOSE = "⟦", "⟧"
"""What citation-shaped document text is shown between instead of `[ ]` (visible in plain and rendered text)."""
_INERT = re.compile(f"{INERT_OPEN}[^{INERT_OPEN}{INERT_CLOSE}\\[\\]\n]*{INERT_CLOSE}")
"""Inert text: no square brackets inside (`⟦ [a.py:1-2] ⟧` holds a citation's shape, so it is not inert)."""
_FENCED = re.compile(r"(?ms)^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$")
"""A fenced code block, from its opening to its closing fence line."""
_FILE_PATH = re.compile(r"(?:[\w.-]+/)+[\w.-]*\w|(?:[\w.-]+/)*[\w.-]+\.(?:" + "|".join(_KNOWN_EXT) + r")")
"""What a cited path looks like: a known extension or a folder (`[10:12]`, `[localhost:8000]` are not files)."""


def _file_items(group: str) -> bool:
    """Whether a bracket group holds an item shaped like a citation of a file."""
    return any((m := _ITEM.fullmatch(item.strip())) is not None and _FILE_PATH.fullmatch(m["path"]) is not None
               for item in re.split(r"[,;]", group))


def neutralize_citations(text: str) -> str:
    """Document text with each citation-shaped part between ⟦ ⟧ instead of `[ ]`, for quoting in an answer.

    `[secrets.py:1-9999]` → `⟦secrets.py:1-9999⟧`, `see a.md:3-5` → `see ⟦a.md:3-5⟧`; other brackets (links,
    `hl[10:12]`, `[localhost:8000]`) and text already inert stay as they are.
    """
    def replace(match: re.Match[str]) -> str:
        lead = match.group("lead")
        if match.group("bare"):
            return f"{lead}{INERT_OPEN}{match.group(0)[len(lead):]}{INERT_CLOSE}"
        if _file_items(match.group("group")):
            return f"{lead}{INERT_OPEN}{match.group('group')}{INERT_CLOSE}"
        return match.group(0)

    return _outside_inert(text, lambda part: _CITATION.sub(replace, part))


def _outside_inert(text: str, fn: Callable[[str], str]) -> str:
    """`fn` applied to the parts of `text` outside ⟦ ⟧ (those stay as they are)."""
    out, pos = [], 0
    for m in _INERT.finditer(text):
        out += [fn(text[pos : m.start()]), m.group(0)]
        pos = m.end()
    out.append(fn(text[pos:]))
    return "".join(out)


def _norm(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _inside(path: str, start: int, end: int, rows: Sequence[EvidenceRow]) -> bool:
    # One row must hold the whole range: a citation partly outside the evidence is not clipped, it is wrong.
    return start <= end and any(r.path == path and r.span_start <= start and end <= r.span_end for r in rows)


def verify_citations(text: str, rows: Sequence[EvidenceRow]) -> tuple[str, list[Citation], list[str]]:
    """Check every citation of `text` against the retrieved rows.

    Citations are `[path:start-end]`, `[path:line]`, groups `[a.md:1-2, b.py:7]`, or bare `path:start-end`
    with a known file extension. A citation is valid when one retrieved row of the same path contains the
    whole range. Bracket text that is not citation-shaped (`[see above]`, `[a.md:x]`) is left alone, and so
    is quoted text: citation-shaped text inside fenced code is made inert (`neutralize_citations`), and
    inert text (between ⟦ ⟧) is neither a citation nor removed.

    Args:
        text: The model's answer.
        rows: The evidence the model was given.

    Returns:
        The text with invalid citations removed, the valid citations (deduped, in order of appearance),
        and the removed citation strings.
    """
    valid: dict[Citation, None] = {}
    removed: list[str] = []

    def check(path: str, start: str, end: str | None, raw: str) -> bool:
        cite = Citation(path=_norm(path), start_line=int(start), end_line=int(end or start))
        if _inside(cite.path, cite.start_line, cite.end_line, rows):
            valid.setdefault(cite, None)
            return True
        removed.append(raw.strip("`"))
        return False

    def replace(match: re.Match[str]) -> str:
        lead = match.group("lead")
        if match.group("bare"):
            raw = match.group(0).strip()
            return match.group(0) if check(match["bare"], match["bstart"], match["bend"], raw) else ""
        items = [item.strip() for item in re.split(r"[,;]", match.group("group"))]
        parsed = [(_ITEM.fullmatch(item), item) for item in items]
        if not any(m for m, _ in parsed):
            return match.group(0)  # not a citation group: a link text, a note, a malformed reference
        kept = [item for m, item in parsed if m is None or check(m["path"], m["start"], m["end"], item)]
        if not any(_ITEM.fullmatch(item) for item in kept):
            return ""
        return f"{lead}[{', '.join(kept)}]"

    quoted = _FENCED.sub(lambda m: neutralize_citations(m.group(0)), text)
    clean = _outside_inert(quoted, lambda part: _CITATION.sub(replace, part))
    if removed:
        clean = re.sub(r"[ \t]*\(\s*[,;]?\s*\)", "", clean)  # "(docs/x.md:1-2)" emptied to "()"
        clean = re.sub(r"[ \t]+([.,;:!?])", r"\1", clean)
        clean = re.sub(r"(?m)^([ \t]*[-*]|[ \t]*\d+\.)[ \t]*$\n?", "", clean)  # bullets left empty
    return clean.strip(), list(valid), removed
