"""Edges of mermaid `graph`/`flowchart`/`classDiagram` blocks (sequence diagrams are workflows instead)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stores.indexing.docs.markdown import MarkdownDoc

EDGE_DIAGRAMS = ("graph", "flowchart", "classdiagram", "statediagram", "erdiagram")

# Longest alternatives first: regex alternation takes the first that matches, not the longest.
_ARROW = re.compile(
    r"\s*(?P<arrow><\|--|<\|\.\.|--\|>|\.\.\|>|\*--|--\*|o--|--o|<-->|<--|-\.+->|-\.+-|==+>|==+|--+>|--+|\.\.>|<\.\.|\.\.)"
    r"\s*(?:\|(?P<label>[^|]*)\|)?\s*"
)
_TEXT_ON_ARROW = re.compile(r"(--|==)\s+([^->=|][^->=|]*?)\s+(-->|==>|---)")
_NODE = re.compile(
    r"^(?P<id>[\w.$-]+?)\s*(?:(?:\(\[|\[\[|\(\(|\[\(|\[/|\[\\|\{\{|\[|\(|\{|>)\s*"
    r"(?:\"(?P<quoted>[^\"]*)\"|(?P<label>[^\"\]\)\}]*))\s*"
    r"(?:\]\)|\]\]|\)\)|\)\]|/\]|\\\]|\}\}|\]|\)|\}))?$"
)
_SKIP = re.compile(
    r"^\s*(%%|subgraph\b|end\b|style\b|classDef\b|class\s|click\b|direction\b|linkStyle\b|note\b)", re.I
)


@dataclass(frozen=True, slots=True)
class DiagramEdge:
    """One arrow of a diagram, with node labels resolved."""

    src: str
    dst: str
    label: str | None
    arrow: str
    diagram: str
    line: int


def diagram_edges(doc: MarkdownDoc) -> list[DiagramEdge]:
    """Read every edge of the document's mermaid graph-like diagrams, in file order."""
    edges: list[DiagramEdge] = []
    for fence in doc.fences:
        if fence.info != "mermaid":
            continue
        numbers = range(fence.start + 1, fence.end)
        first = next((doc.line(n).strip() for n in numbers if doc.line(n).strip()), "")
        diagram = first.split()[0].lower() if first else ""
        if diagram not in EDGE_DIAGRAMS:
            continue
        labels: dict[str, str] = {}
        for number in numbers:
            line = doc.line(number).strip()
            if not line or line == first or _SKIP.match(line):
                continue
            edges.extend(_line_edges(line, number, diagram, labels))
    return edges


def _line_edges(line: str, number: int, diagram: str, labels: dict[str, str]) -> list[DiagramEdge]:
    label_after_colon = None
    if diagram == "classdiagram" and " : " in line:
        line, label_after_colon = (part.strip() for part in line.split(" : ", 1))
    line = _TEXT_ON_ARROW.sub(lambda m: f"{m[3]}|{m[2]}|", line)
    parts: list[str] = []
    arrows: list[tuple[str, str | None]] = []
    position = 0
    for match in _ARROW.finditer(line):
        parts.append(line[position : match.start()])
        arrows.append((match["arrow"], match["label"]))
        position = match.end()
    parts.append(line[position:])
    if not arrows:
        for part in parts:
            _node_names(part, labels)  # a bare declaration such as `read_items["/items/"]`
        return []
    groups = [_node_names(part, labels) for part in parts]
    edges = []
    for index, (arrow, label) in enumerate(arrows):
        for src in groups[index]:
            for dst in groups[index + 1]:
                if arrow.startswith("<"):
                    src, dst = dst, src
                edges.append(DiagramEdge(src, dst, label or label_after_colon, arrow, diagram, number))
    return edges


def _node_names(part: str, labels: dict[str, str]) -> list[str]:
    names = []
    for raw in part.split("&"):
        raw = re.sub(r'^"[^"]*"\s*|\s*"[^"]*"$', "", raw.strip())  # classDiagram cardinalities
        match = _NODE.match(raw.strip())
        if not match:
            continue
        node_id, label = match["id"], match["quoted"] or match["label"]
        if label:
            labels[node_id] = label.strip()
        names.append(labels.get(node_id, node_id))
    return names
