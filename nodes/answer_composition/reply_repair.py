"""Messy model answers made checkable (issue 39): citations in other formats, cut-off answers, the wrong language.

Small and local models follow the answer prompt loosely. What can be repaired without guessing is: a
citation written another way (`(docs/a.md, lines 3-5)`, `docs/a.md#L3-L5`, `[docs/a.md:L3-L5]`, `[n=2]`)
is rewritten as `[path:start-end]`, then verified like any other (`verify_citations`), so one of a file the
model was not shown is still removed; an answer cut at the token limit keeps its complete lines. An answer
in the other language than the question's is re-asked once by the composer, not repaired here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodes.evidence import EvidenceRow

_EXT = r"(?:md|markdown|rst|txt|py|pyi|yaml|yml|json|toml|cfg|ini|html)"
_PATH = r"(?P<path>(?:[\w.-]+/)*[\w.-]+\." + _EXT + r")"
_LINES_WORD = r"(?:lines?|line\s+numbers?|строк[аи]?|стр\.|ll?\.)"
_RANGE = r"L?(?P<start>\d{1,6})(?:\s*(?:-|–|—|to|по|\.\.)\s*L?(?P<end>\d{1,6}))?"

_FORMATS = [
    # docs/a.md#L3-L5, docs/a.md#L3 (GitHub's anchors)
    re.compile(r"`?" + _PATH + r"`?#L?(?P<start>\d{1,6})(?:-L?(?P<end>\d{1,6}))?"),
    # (docs/a.md, lines 3-5), [docs/a.md lines 3-5], [docs/a.md:L3-L5], (docs/a.md:3-5), [docs/a.md, 3-5]
    re.compile(r"[(\[]\s*`?" + _PATH + r"`?\s*[,:;]?\s*(?:" + _LINES_WORD + r"\s*)?" + _RANGE + r"\s*[)\]]", re.I),
    # `docs/a.md` (lines 3-5), docs/a.md, строки 3–5
    re.compile(r"`?" + _PATH + r"`?\s*(?:,\s*|\(\s*)" + _LINES_WORD + r"\s*" + _RANGE + r"\)?", re.I),
]
_NUMBERED = re.compile(r"(?<![\w\])])\[(?:n\s*=\s*|doc(?:ument)?\s*|документ\s*|source\s*|источник\s*)?"
                       r"(?P<n>\d{1,2})\]", re.I)
"""`[n=2]`, `[2]`, `[document 2]`: the `n` of a document the model was shown."""
_BARE_PATH = re.compile(r"\[`?" + _PATH + r"`?\]")
"""`[docs/a.md]`: a file without lines, rewritten when the model was shown one passage of it."""
_CANONICAL = re.compile(r"\[(?:[\w./-]*\w):\d+(?:-\d+)?\]")
_CODE = re.compile(r"(?ms)^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$|`(?!" + _PATH.replace("?P<path>", "?:")
                   + r"`\s*(?:,\s*|\(\s*)" + _LINES_WORD + r")[^`\n]*`", re.I)
"""Fenced code and inline code: quoted text, never rewritten (a file name in backticks that lines follow,
`` `docs/a.md` (lines 3-5) ``, is a citation)."""


def normalize_citations(text: str, shown: Sequence[EvidenceRow]) -> tuple[str, int]:
    """`text` with citations in other formats rewritten as `[path:start-end]`, and how many were.

    Only the format changes: the path and lines are the model's own (a document number becomes the lines
    the model was shown as that document), and `verify_citations` still decides what stays. Code (fenced
    or inline) is left alone, except a whole inline-code citation (`` `docs/a.md#L3` ``).
    """
    count = 0

    def canonical(path: str, start: str, end: str | None) -> str:
        return f"[{path[2:] if path.startswith('./') else path}:{int(start)}-{int(end or start)}]"

    def formatted(match: re.Match[str]) -> str:
        nonlocal count
        out = canonical(match["path"], match["start"], match["end"])
        if out != match.group(0):
            count += 1
        return out

    def numbered(match: re.Match[str]) -> str:
        nonlocal count
        n = int(match["n"])
        if not 1 <= n <= len(shown):
            return match.group(0)
        row = shown[n - 1]
        count += 1
        return canonical(row.path, str(row.span_start), str(row.span_end))

    def bare(match: re.Match[str]) -> str:
        nonlocal count
        rows = [r for r in shown if r.path == match["path"].removeprefix("./")]
        spans = {(r.span_start, r.span_end) for r in rows}
        if len(spans) != 1:
            return match.group(0)
        count += 1
        (start, end), = spans
        return canonical(rows[0].path, str(start), str(end))

    def prose(part: str) -> str:
        pieces = []
        for piece in _split_canonical(part):
            if _CANONICAL.fullmatch(piece):
                pieces.append(piece)
                continue
            for pattern in _FORMATS:
                piece = pattern.sub(formatted, piece)
            piece = _BARE_PATH.sub(bare, piece)
            pieces.append(_NUMBERED.sub(numbered, piece))
        return "".join(pieces)

    out, pos = [], 0
    for m in _CODE.finditer(text):
        out.append(prose(text[pos : m.start()]))
        inline = m.group(0)
        whole = None if inline.startswith(("```", "~~~")) or "\n" in inline else _whole_citation(inline[1:-1])
        if whole is not None:
            count += 1
        out.append(whole or inline)
        pos = m.end()
    out.append(prose(text[pos:]))
    return "".join(out), count


def _split_canonical(part: str) -> list[str]:
    """`part` split around its canonical citations (kept as they are)."""
    pieces, pos = [], 0
    for m in _CANONICAL.finditer(part):
        pieces += [part[pos : m.start()], m.group(0)]
        pos = m.end()
    pieces.append(part[pos:])
    return [p for p in pieces if p]


def _whole_citation(code: str) -> str | None:
    """An inline-code span that is nothing but a citation in another format, rewritten; else None."""
    for pattern in _FORMATS[:1]:
        m = pattern.fullmatch(code.strip())
        if m is not None:
            return f"[{m['path']}:{int(m['start'])}-{int(m['end'] or m['start'])}]"
    return None


_OPEN_TAIL = re.compile(r"\[[^\]\n]{0,200}$|\([^)\n]{0,200}$")
"""An answer ending inside a citation or a parenthesis: cut mid-way."""
_SENTENCE_END = re.compile(r"[.!?…](?:[)\]»\"'`*]*)(?=\s|$)|\]\)?(?=[ \t]*$)", re.M)


def is_truncated(text: str, finish_reason: str | None) -> bool:
    """Whether the answer was cut off: the server says it stopped at its token limit (`length`), or the text
    ends inside a code fence or a citation."""
    return finish_reason == "length" or _open_fence(text) or _OPEN_TAIL.search(text.rstrip()) is not None


def trim_truncated(text: str) -> str:
    """A cut-off answer without its unfinished end: an unclosed code fence is dropped, then the text after
    its last complete sentence (or complete line of a list). "" when nothing complete is left."""
    if _open_fence(text):
        text = text[: text.rfind("```")]
    text = text.rstrip()
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    return text[: ends[-1]].rstrip() if ends else ""


def _open_fence(text: str) -> bool:
    return text.count("```") % 2 == 1


_QUOTED = re.compile(r"(?ms)^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$|`[^`\n]*`|\[[^\]\n]*\]|«[^»\n]*»|\"[^\"\n]*\"|https?://\S+")
_LETTER = re.compile(r"[A-Za-zА-Яа-яЁё]")
_CYRILLIC = re.compile(r"[А-Яа-яЁё]")
MIN_LETTERS = 40
"""An answer with fewer prose letters than this is not judged (a one-line answer of identifiers)."""


def wrong_language(text: str, language: str) -> bool:
    """Whether the answer's own prose (code, citations, quotes and links left out) is plainly in the other
    language than `language` (`ru`, `en`): under 15% Cyrillic letters for Russian, over 60% for English. The
    margins are wide on purpose: an English answer quotes Russian docs' words, a Russian one English names."""
    letters = _LETTER.findall(_QUOTED.sub(" ", text))
    if len(letters) < MIN_LETTERS:
        return False
    share = sum(1 for ch in letters if _CYRILLIC.match(ch)) / len(letters)
    return share < 0.15 if language == "ru" else share > 0.6
