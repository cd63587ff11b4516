"""D1_DOCUMENT_CATALOG: one card per document, built to answer "which file describes X"."""

from __future__ import annotations

import re
from typing import Any

from stores.indexing.docs.frontmatter import string_list
from stores.indexing.docs.markdown import MarkdownDoc, clean_inline, is_directive_line
from stores.indexing.docs.module_fields import CARD_FIELDS, RELATION_NAMES, card_lines, card_values, relation_values
from stores.indexing.docs.profile import DocProfile
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_SUMMARY_CHARS = 600
MIN_SUMMARY_CHARS = 250
MAX_CARD_HEADINGS = 60
MAX_EMBED_CHARS = 2000

SUMMARY_HEADINGS = frozenset(
    {"summary", "tl;dr", "tldr", "overview", "abstract"}
    | {"резюме", "кратко", "обзор", "аннотация", "назначение"}
)
"""A first section with one of these titles is the document's own summary."""

_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def summarize(doc: MarkdownDoc, frontmatter: dict[str, Any]) -> str:
    """Frontmatter `summary`/`description`, else a leading Summary section, else the first paragraphs."""
    for key in ("summary", "description"):
        if isinstance(frontmatter.get(key), str) and frontmatter[key].strip():
            return _clip(clean_inline(frontmatter[key]))
    sections = [h for h in doc.headings if h.level >= 2]
    if sections and sections[0].text.strip().lower().rstrip(":") in SUMMARY_HEADINGS:
        end = next((h.line - 1 for h in doc.headings if h.line > sections[0].line), doc.last_line)
        summary = _collect(doc, sections[0].line + 1, end, MAX_SUMMARY_CHARS, separator=";")
        if summary:
            return summary
    return _collect(doc, doc.body_start, doc.last_line, MIN_SUMMARY_CHARS, separator="")


def catalog_record(
    doc: MarkdownDoc,
    profile: DocProfile,
    frontmatter: dict[str, Any],
    entities: list[str],
    endpoints: list[str],
) -> ChunkRecord:
    """Build the D1 row of a document.

    Args:
        doc: The parsed markdown file.
        profile: Document attributes.
        frontmatter: Parsed frontmatter (extra keys are kept in metadata).
        entities: Entity names for the card (frontmatter ones, else the document's defining terms).
        endpoints: `METHOD /path` strings the document mentions.

    Returns:
        A card whose content lists title, path, summary and section headings; span = whole file.
    """
    summary = summarize(doc, frontmatter)
    headings = _unique(h.text for h in doc.headings if h.level >= 2)
    card_headings = "; ".join(headings[:MAX_CARD_HEADINGS])
    lines = [
        profile.title,
        f"Path: {doc.path}",
        " · ".join(
            part
            for part in (
                f"Type: {profile.doc_type}",
                f"Domain: {profile.domain}" if profile.domain else "",
                f"Subdomain: {profile.subdomain}" if profile.subdomain else "",
                f"Status: {profile.status}" if profile.status else "",
            )
            if part
        ),
        f"Tags: {', '.join(profile.tags)}" if profile.tags else "",
        f"Entities: {', '.join(entities)}" if entities else "",
        f"Endpoints: {', '.join(endpoints)}" if endpoints else "",
        *card_lines(relation_values(frontmatter), card_values(frontmatter)),
        f"Summary: {summary}" if summary else "",
        f"Sections: {card_headings}" if card_headings else "",
    ]
    content = "\n".join(line for line in lines if line)
    metadata = _card_metadata(doc, profile, frontmatter, summary, entities, endpoints, headings)
    embed_text = f"{profile.title}\n{doc.path}\n{summary}\nSections: {card_headings}"
    return ChunkRecord(
        layer=Layer.D1_DOCUMENT_CATALOG,
        path=doc.path,
        title=profile.title,
        content=content,
        span_start=1,
        span_end=doc.last_line,
        metadata=metadata,
        embed=True,
        embed_text=embed_text[:MAX_EMBED_CHARS],
    )


_KNOWN_KEYS = frozenset({"id", "title", "doc_type", "type", "domain", "subdomain", "status", "tags", "summary",
                         "description", "related_docs", "related_code", "entities", "applies_to",
                         *RELATION_NAMES, *CARD_FIELDS})
"""Frontmatter keys the card has fields for; the rest is kept under `frontmatter_extra`."""


def _card_metadata(doc: MarkdownDoc, profile: DocProfile, frontmatter: dict[str, Any], summary: str,
                   entities: list[str], endpoints: list[str], headings: list[str]) -> dict[str, Any]:
    return profile.base_metadata() | {
        "id": profile.doc_id,
        "title": profile.title,
        "status": profile.status,
        "tags": profile.tags,
        "summary": summary,
        "related_docs": profile.related_docs,
        "related_code": profile.related_code,
        "entities": entities,
        "endpoints": endpoints,
        "headings": headings,
        "has_frontmatter": bool(frontmatter),
        "frontmatter_extra": {k: v for k, v in frontmatter.items() if k not in _KNOWN_KEYS},
        # seed 003 §5.1: every relation field typed as a list (empty when absent), version/owners/links when set
        **{name: relation_values(frontmatter).get(name, []) for name in RELATION_NAMES},
        **card_values(frontmatter),
        "applies_to": string_list(frontmatter.get("applies_to")),
        "line_count": doc.last_line,
    }


def _collect(doc: MarkdownDoc, start: int, end: int, enough: int, separator: str) -> str:
    """Join prose lines (no headings, code, directives, tables, images) until `enough` characters."""
    pieces: list[str] = []
    length = 0
    for number, line in doc.text_lines(start, end):
        stripped = line.strip()
        if (
            not stripped
            or number in doc.heading_lines
            or is_directive_line(line)
            or stripped.startswith(("|", "!["))
        ):
            if length >= enough and not stripped:
                break  # stop at a paragraph boundary once there is enough
            continue
        text = clean_inline(_LIST_MARKER.sub("", stripped))
        if text:
            pieces.append(text)
            length += len(text) + len(separator)
        if length >= MAX_SUMMARY_CHARS:
            break
    # Bullets are joined with `separator` unless they already end with punctuation.
    joined = "".join(f"{piece}{'' if piece[-1] in '.;:!?' else separator} " for piece in pieces)
    return _clip(joined)


def _clip(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= MAX_SUMMARY_CHARS:
        return text
    cut = text[:MAX_SUMMARY_CHARS]
    sentence_end = max(cut.rfind(". "), cut.rfind("; "))
    return cut[: sentence_end + 1] if sentence_end > MAX_SUMMARY_CHARS // 2 else cut.rstrip() + "…"


def _unique(items: Any) -> list[str]:
    return [item for item in dict.fromkeys(items) if item]
