"""The answer for chat UIs: each verified citation a Markdown link to the server's citation view.

The link target is `{base}/lotsman/read?session=S&path=P&start=N&end=M` (docs/api/chat_ui.md): the page
`lotsman serve` shows the cited lines of the session's index at. `base` is the server's URL when the
run knows it (an assistant made by `lotsman assistants create` carries it), else "" — a link relative to
the page showing the answer, right for the web page `lotsman serve` serves itself.

Only the answer's own citations become links: citation-shaped text quoted from documents is inert
(⟦ ⟧), fenced code is left alone, and anything not in the verified list stays text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from urllib.parse import quote, urlencode

from nodes.answer_composition.citations import _CITATION, _FENCED, _ITEM, _norm, _outside_inert
from nodes.answer_composition.models import Citation

READ_PATH = "/lotsman/read"
"""Where `lotsman serve` shows a citation's lines (served by graph/web.py)."""


def citation_href(cite: Citation, session: str, base: str = "") -> str:
    """The citation view's URL of `cite` in `session` (`base` "" gives a server-relative link)."""
    query = urlencode({"session": session, "path": cite.path, "start": cite.start_line, "end": cite.end_line},
                      quote_via=quote, safe="/")
    return f"{base.rstrip('/')}{READ_PATH}?{query}"


def link_citations(text: str, citations: Collection[Citation], href: Callable[[Citation], str]) -> str:
    """`text` with every citation in `citations` written as a Markdown link `[path:a-b](href)`.

    `[a.md:1-2]` → `[a.md:1-2](…)`; a group `[a.md:1-2, b.py:7]` → `[a.md:1-2](…), [b.py:7](…)`; a bare
    `a.md:1-2` → `[a.md:1-2](…)`. A group holding anything else keeps its brackets around the links.
    Text inside fenced code, inert text and citations not in `citations` are unchanged.
    """
    verified = set(citations)
    if not verified:
        return text

    def link(path: str, start: str, end: str | None, label: str) -> str | None:
        cite = Citation(path=_norm(path), start_line=int(start), end_line=int(end or start))
        return f"[{label}]({href(cite)})" if cite in verified else None

    def replace(match: re.Match[str]) -> str:
        if match.string[match.end():match.end() + 1] == "(":
            return match.group(0)  # already a link (the model wrote one): left as written
        lead = match.group("lead")
        if match.group("bare"):
            label = match.group(0)[len(lead):].strip("`")
            linked = link(match["bare"], match["bstart"], match["bend"], label)
            return f"{lead}{linked}" if linked else match.group(0)
        items = [item.strip() for item in re.split(r"[,;]", match.group("group"))]
        out = []
        for item in items:
            m = _ITEM.fullmatch(item)
            out.append((m and link(m["path"], m["start"], m["end"], item.strip("`"))) or item)
        if out == items:
            return match.group(0)
        if all(o != i for o, i in zip(out, items, strict=True)):
            return f"{lead}{', '.join(out)}"
        return f"{lead}[{', '.join(out)}]"

    parts, pos = [], 0
    for fence in _FENCED.finditer(text):
        parts += [_outside_inert(text[pos:fence.start()], lambda p: _CITATION.sub(replace, p)), fence.group(0)]
        pos = fence.end()
    parts.append(_outside_inert(text[pos:], lambda p: _CITATION.sub(replace, p)))
    return "".join(parts)
