"""Reading an answer as a user would: its own words, its quoted passages, the files it cites or lists.

The answer metrics (issues 12 and 28) give credit only for what the answer itself says, so the labels the
composer adds around quotes are taken out first: citations `[path:a-b]`, bare `path:a-b`, file paths, the
sources and nearest-files lists (by the shape of the text), and the lines the extractive composer builds
from headings and symbol names — the lead line (`Ответ — в `path`, раздел «…»:`), the supporting
passages' labels (`` `path` — «section»: ``) and a FIND_FILES entry's title (by its templates,
`nodes.answer_composition.TEMPLATES`, and the titles and sections of the analysis it composed from).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from nodes.answer_composition import TEMPLATES

_EXT = r"(?:md|markdown|rst|txt|py|pyi|yaml|yml|json|toml|cfg|ini|html)"
_PATH = r"(?:[\w.-]+/)*[\w.-]*\w\." + _EXT + r"|(?:[\w.-]+/)+[\w.-]*\w"
_LINES = r":\d+(?:\s*[-–]\s*\d+)?"
# `[a.md:1-2]`, `[a.md:1-2, b.py:7]`, `[`a.md:1-2`]`: a bracket group whose first item is a citation.
_CITE_GROUP = re.compile(r"\[\s*`?(?:" + _PATH + r")" + _LINES + r"`?(?:\s*[,;]\s*[^\]\n]*)?\]")
# A bare `path:a-b` (also in backticks), never part of a URL or host:port.
_CITE_BARE = re.compile(r"(?<![\w:/.-])`?(?P<path>" + _PATH + r")" + _LINES + r"`?(?![\w-])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE_LINE = re.compile(r"^\s*>")
# A list item that only names a file (`- `docs/a.md` — Title`): a sources or nearest-files entry.
_FILE_ENTRY = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+`?(?:" + _PATH + r")`?(?:\s*(?:[—–:-].*)?)?$")


def _template_line(template: str) -> re.Pattern[str]:
    """A whole line made by one of the composer's templates: `{path}` is a backticked path, any other slot
    (`{where}`, the section or definition label) is the rest of the line."""
    parts = re.split(r"(\{\w+\})", template)
    body = "".join(r"[^`\n]+" if p == "{path}" else r"[^\n]*" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(r"^\s*" + body + r"\s*$")


# Lines of the extractive composer that only label what follows: the lead line naming the file and its
# section or definition, the "see also" and "files" headers, a supporting passage's `path` — «section».
_LABEL_LINES = [_template_line(words[key]) for words in TEMPLATES.values()
                for key in ("lead", "support", "find_lead", "nearest")]
# The note the graph adds when a request ran without the LLM (nodes/llm_budget.py): about the run, not the project.
_OFFLINE_NOTE = re.compile(r"^\s*\((?:ответ собран без LLM|answered without the LLM)[^()\n]*\)\s*$")
_SUPPORT_LABEL = re.compile(r"^\s*`[^`\n]+`(?:\s+—\s+(?:«[^\n]*»|“[^\n]*”))?:\s*$")
# A FIND_FILES entry: `1. `path` — Title: the line that justifies it [path:a-b]`.
_FILE_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+`[^`\n]+`\s+—\s+)(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One unit of the answer: a paragraph, a list item (with its indented lines), a quote or a fence."""

    kind: str
    """`paragraph`, `item`, `quote` (`>` lines) or `fence` (a fenced code block on its own)."""
    text: str


def blocks(answer: str) -> list[Block]:
    """Split markdown into blocks; an indented fence under a list item belongs to that item."""
    out: list[Block] = []
    lines = answer.splitlines()
    kind, buf = "", list[str]()  # the open block

    def close() -> None:
        nonlocal kind, buf
        if buf:
            out.append(Block(kind, "\n".join(buf)))
        kind, buf = "", []

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence.group(1))),
                       len(lines) - 1)
            chunk = lines[i:end + 1]
            if kind == "item" and line[:1].isspace():
                buf.extend(chunk)
            else:
                close()
                out.append(Block("fence", "\n".join(chunk)))
            i = end + 1
            continue
        if not line.strip():
            close()
        elif _QUOTE_LINE.match(line):
            if kind != "quote":
                close()
                kind = "quote"
            buf.append(line)
        elif _LIST_ITEM.match(line):
            close()
            kind, buf = "item", [line]
        elif kind == "item" and line[:1].isspace():
            buf.append(line)
        else:
            if kind != "paragraph":
                close()
                kind = "paragraph"
            buf.append(line)
        i += 1
    close()
    return out


def has_citation(text: str) -> bool:
    return bool(_CITE_GROUP.search(text) or _CITE_BARE.search(text))


def cited_paths(text: str) -> list[str]:
    """Paths cited as `path:a-b` (bracketed, grouped or bare), in order of appearance, each once."""
    return list(dict.fromkeys(m.group("path") for m in _CITE_BARE.finditer(text)))


def strip_labels(text: str, known_paths: Iterable[str] = ()) -> str:
    """The text without citations and without the paths of known (retrieved or cited) files."""
    text = _CITE_GROUP.sub(" ", text)
    text = _CITE_BARE.sub(" ", text)
    for path in sorted(set(known_paths), key=len, reverse=True):
        text = re.sub(r"`?(?<![\w/.-])" + re.escape(path) + r"(?![\w/-])`?", " ", text)
    return text


def _file_listing(block: Block) -> bool:
    """A list of files with no citation: the sources or nearest-files list (or its header)."""
    if block.kind != "item" or has_citation(block.text):
        return False
    return all(_FILE_ENTRY.match(line) for line in block.text.splitlines() if line.strip())


def label_block(block: Block) -> bool:
    """A line the composer builds from a file's path and a heading or symbol name, not a statement."""
    text = block.text.strip()
    return (block.kind == "paragraph" and "\n" not in text
            and (any(p.match(text) for p in _LABEL_LINES) or bool(_SUPPORT_LABEL.match(text))
                 or bool(_OFFLINE_NOTE.match(text))))


def _drop_title(block: Block, labels: list[str]) -> Block:
    """A FIND_FILES entry without its title and section prefixes (`Title: section: line` → `line`)."""
    m = _FILE_ITEM.match(block.text) if labels else None
    if m is None:
        return block
    about = m.group(2)
    changed = True
    while changed:
        changed = False
        flat = " ".join(about.split())
        for label in labels:
            if flat == label or flat.startswith(label + " [") or flat.startswith(label + ": "):
                about = flat[len(label):].removeprefix(":").lstrip()
                changed = True
                break
    return replace(block, text=m.group(1) + about)


def own_blocks(answer: str, *, file_answer: bool = False, labels: Iterable[str] = ()) -> list[Block]:
    """Blocks that are the answer's own text: file listings and the header line above them dropped, and
    the composer's labels (`label_block`; titles and sections in `labels` heading a FIND_FILES entry).

    In a FIND_FILES answer (`file_answer`) the list of files *is* the answer: its entries stay (their file
    paths and titles are still stripped as labels), so the one line that justifies each file counts.
    """
    names = sorted({" ".join(n.split()) for n in labels if n.strip()}, key=len, reverse=True)
    parts = [_drop_title(b, names) for b in blocks(answer) if not label_block(b)]
    if file_answer:
        return parts
    keep: list[Block] = []
    for i, block in enumerate(parts):
        if _file_listing(block):
            continue
        after = parts[i + 1] if i + 1 < len(parts) else None
        if (block.kind == "paragraph" and block.text.rstrip().endswith(":") and "\n" not in block.text.strip()
                and after is not None and _file_listing(after)):
            continue  # "Источники:" / "Sources:" / "Ближайшие файлы:" heading a file list
        keep.append(block)
    return keep


def own_text(answer: str, known_paths: Iterable[str] = (), *, file_answer: bool = False,
             labels: Iterable[str] = ()) -> str:
    """What the answer says in its own words: no citations, file paths, sources/nearest lists or labels."""
    paths = list(known_paths)
    return "\n\n".join(strip_labels(b.text, paths)
                       for b in own_blocks(answer, file_answer=file_answer, labels=labels))


def passages(answer: str, known_paths: Iterable[str] = (), *, labels: Iterable[str] = ()) -> list[str]:
    """The quoted passages: quote blocks, fenced code and every cited block, labels stripped.

    A passage is a block the answer presents as taken from a file: a `>` quote, a fenced code block, or a
    paragraph / list item that carries a citation. Blocks left empty after stripping (a citation on its own
    line) are not passages.
    """
    paths = list(known_paths)
    found = []
    for block in own_blocks(answer, labels=labels):
        if block.kind in ("quote", "fence") or has_citation(block.text):
            text = strip_labels(block.text, paths)
            if re.search(r"\w", text):
                found.append(text)
    return found


def listed_files(answer: str, known_paths: Iterable[str] = ()) -> list[str]:
    """Files the answer names: cited paths plus known paths it mentions (a FIND_FILES list)."""
    found = cited_paths(answer)
    found += [p for p in known_paths if p in answer]
    return list(dict.fromkeys(found))
