"""D5_RELATION_GRAPH: doc→doc, doc→code, entity→doc and diagram edges of one document."""

from __future__ import annotations

import bisect
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from stores.indexing.docs.entities import Entity
from stores.indexing.docs.markdown import MarkdownDoc, clean_inline
from stores.indexing.docs.mermaid import diagram_edges
from stores.indexing.docs.module_fields import (
    INVERSE_RELATIONS,
    RELATION_NAMES,
    edge_content,
    edge_embed_text,
    edge_title,
    relation_field,
    relation_values,
    value_line,
)
from stores.indexing.docs.profile import DocProfile
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

DOC_EXTS = (".md", ".markdown")
CODE_EXTS = (".py",)

_LINK = re.compile(r"(?<!!)\[(?P<text>[^\[\]]{0,300})\]\(\s*(?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s*\[(?P<text>[^\]]+)\]:\s*(?P<target>\S+)", re.MULTILINE)
_CODE_PATH = re.compile(r"`(?P<path>[\w./-]+\.py)`")


@dataclass(frozen=True, slots=True)
class Edge:
    """One relation before it becomes a row."""

    src: str
    dst: str
    edge_type: str
    dst_kind: str
    line: int
    label: str | None = None
    resolved: bool = True


def module_relation_edges(doc: MarkdownDoc, profile: DocProfile, frontmatter: dict[str, Any]) -> list[Edge]:
    """Seed 003 §5.1 relation fields: one edge per value, from the document's id, on the value's own line."""
    head = list(doc.lines[: max(doc.body_start - 1, 0)])
    return [
        Edge(profile.doc_id, value, name, relation_field(name).target_kind, value_line(head, name, value))
        for name, values in relation_values(frontmatter).items()
        for value in values
    ]


def find_edges(doc: MarkdownDoc, profile: DocProfile, entities: list[Entity],
               frontmatter: dict[str, Any] | None = None) -> list[Edge]:
    """Collect a document's outgoing relations (deduplicated per edge type and target)."""
    edges: list[Edge] = module_relation_edges(doc, profile, frontmatter or {})
    for doc_id in profile.related_docs:
        edges.append(Edge(doc.path, doc_id, "related_doc", "doc_id", _frontmatter_line(doc, doc_id)))
    for code_path in profile.related_code:
        edges.append(Edge(doc.path, code_path, "related_code", "code", _frontmatter_line(doc, code_path)))
    edges += _link_edges(doc)
    for number, line in doc.text_lines():
        for match in _CODE_PATH.finditer(line):
            code_path = _normalize(match["path"].lstrip("/"))
            edges.append(Edge(doc.path, code_path, "mentions_code", "code", number))
    for entity in entities:
        if "frontmatter" in entity.origins or entity.in_heading:
            where = entity.line or doc.body_start
            edges.append(Edge(entity.name, doc.path, "entity_in_doc", "doc", where, entity.kind))
    for edge in diagram_edges(doc):
        edges.append(Edge(edge.src, edge.dst, "diagram_edge", "diagram_node", edge.line, edge.label))
    return _dedupe(edges)


def relation_records(doc: MarkdownDoc, profile: DocProfile, entities: list[Entity],
                     frontmatter: dict[str, Any] | None = None) -> list[ChunkRecord]:
    """Build the D5 rows of a document (only relation-field edges are embedded).

    Args:
        doc: The parsed markdown file.
        profile: Document attributes copied into every row.
        entities: Entities found in the document (those it defines get an entity→doc edge).
        frontmatter: Parsed frontmatter; its seed 003 relation fields (`writes_db`...) become edges.

    Returns:
        One row per edge, spanning the line that evidences it.
    """
    records = []
    for edge in find_edges(doc, profile, entities, frontmatter):
        label = f" ({edge.label})" if edge.label else ""
        title, content = f"{edge.src} → {edge.dst}", f"{edge.src} —{edge.edge_type}→ {edge.dst}{label}"
        if edge.edge_type in RELATION_NAMES:
            title = edge_title(edge.src, edge.edge_type, edge.dst)
            content = edge_content(edge.src, profile.title, edge.edge_type, edge.dst)
        metadata = profile.base_metadata() | {
            "src": edge.src,
            "dst": edge.dst,
            "edge_type": edge.edge_type,
            "dst_kind": edge.dst_kind,
            "label": edge.label,
            "resolved": edge.resolved,
        }
        if edge.edge_type in RELATION_NAMES:
            metadata |= {"relation": edge.edge_type, "inverse": INVERSE_RELATIONS.get(edge.edge_type)}
        records.append(
            ChunkRecord(
                layer=Layer.D5_RELATION_GRAPH,
                path=doc.path,
                title=title,
                content=content,
                span_start=edge.line,
                span_end=edge.line,
                metadata=metadata,
                # relation-field edges are embedded (a question names the relation in its own words, and
                # the edge is the answer); the others are walked, not searched semantically
                embed=edge.edge_type in RELATION_NAMES,
                embed_text=edge_embed_text(edge.src, profile.title, edge.edge_type, edge.dst)
                if edge.edge_type in RELATION_NAMES else None,
            )
        )
    return records


def resolve_link(doc_path: str, target: str) -> str | None:
    """Resolve a link target against the linking document; None for URLs and in-page anchors.

    `../advanced/index.md#x` from `docs/ru/docs/tutorial/a.md` gives `docs/ru/docs/advanced/index.md`;
    a leading `/` means the indexed root.
    """
    target = target.strip("<>")
    if not target or target.startswith("#") or re.match(r"^[a-zA-Z][\w+.-]*:", target):
        return None
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target:
        return None
    if target.startswith("/"):
        return _normalize(target.lstrip("/"))
    return _normalize(posixpath.join(posixpath.dirname(doc_path), target))


def _link_edges(doc: MarkdownDoc) -> list[Edge]:
    """Markdown links to .md/.py files; matched over the whole text because link text may wrap lines."""
    text = "\n".join(doc.lines)
    starts = [0]
    for line in doc.lines:
        starts.append(starts[-1] + len(line) + 1)
    edges = []
    for match in [*_LINK.finditer(text), *_REFERENCE.finditer(text)]:
        number = bisect.bisect_right(starts, match.start("target"))
        if number < doc.body_start or doc.fenced[number - 1]:
            continue
        resolved = resolve_link(doc.path, match["target"])
        if resolved is None:
            continue
        link_text = clean_inline(match["text"]) or None
        escaped = resolved.startswith("../")
        if resolved.lower().endswith(DOC_EXTS):
            edges.append(Edge(doc.path, resolved, "links_to", "doc", number, link_text, not escaped))
        elif resolved.lower().endswith(CODE_EXTS):
            edges.append(Edge(doc.path, resolved, "links_code", "code", number, link_text, not escaped))
    return sorted(edges, key=lambda e: e.line)


def _frontmatter_line(doc: MarkdownDoc, value: str) -> int:
    for number in range(1, doc.body_start):
        if value in doc.line(number):
            return number
    return 1


def _normalize(path: str) -> str:
    normalized = posixpath.normpath(path)
    return "" if normalized == "." else normalized.removeprefix("./")


def _dedupe(edges: list[Edge]) -> list[Edge]:
    seen: set[tuple[str, str, str]] = set()
    result = []
    for edge in edges:
        key = (edge.src, edge.dst, edge.edge_type)
        if edge.dst and key not in seen:
            seen.add(key)
            result.append(edge)
    return result
