"""The unit a pipeline produces: one row of one layer, before it is embedded and written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stores.layers import Layer


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One layer document derived from one source file.

    Pipelines are pure: they turn (path, text) into records; the indexing job embeds and writes them.
    """

    layer: Layer
    """Which layer this row belongs to."""
    path: str
    """Source file path, relative to the indexed root, with forward slashes."""
    title: str
    """Short human title (heading, qname, entity name, route...)."""
    content: str
    """The text that is stored, searched lexically and shown as evidence."""
    span_start: int
    """First line (1-based, inclusive) of the evidence in the source file."""
    span_end: int
    """Last line (1-based, inclusive) of the evidence in the source file."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Layer-specific attributes (section_path, doc_type, domain, qname, signature, ...)."""
    embed: bool = True
    """Whether this row gets a vector; rows without one are still found by the lexical lane."""
    embed_text: str | None = None
    """Text to embed when it should differ from `content` (e.g. title + section path + body)."""


@dataclass(frozen=True, slots=True)
class PipelineResult:
    """Rows produced for one file plus non-fatal problems to report (e.g. `broken frontmatter: ...`)."""

    records: list[ChunkRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
