"""Docs indexing pipeline: one markdown file in, rows of the docs layers (D0–D6) out (pure, no I/O)."""

from __future__ import annotations

from stores.indexing.docs.catalog import catalog_record
from stores.indexing.docs.chunking import chunk_records
from stores.indexing.docs.entities import entity_records, find_entities
from stores.indexing.docs.facts import fact_records
from stores.indexing.docs.frontmatter import split_frontmatter
from stores.indexing.docs.markdown import parse_markdown
from stores.indexing.docs.policies import policy_records
from stores.indexing.docs.profile import build_profile
from stores.indexing.docs.relations import relation_records
from stores.indexing.docs.workflows import workflow_records
from stores.indexing.files import normalize_newlines
from stores.indexing.records import PipelineResult
from stores.indexing.versions import DOCS_PIPELINE_VERSION  # noqa: E402,F401 - re-exported: the parse cache key

MAX_CATALOG_ENTITIES = 15


DocsResult = PipelineResult
"""Rows produced for one markdown file; warnings such as `broken frontmatter: ...` (still fully indexed)."""


def index_markdown(path: str, text: str) -> DocsResult:
    """Turn one markdown file into D0–D6 rows.

    Args:
        path: Path relative to the indexed root, with forward slashes.
        text: The file's text (any newline style).

    Returns:
        Rows in layer order (D1, D0, D2, D3, D4, D5, D6) and warnings such as broken frontmatter.
    """
    text = normalize_newlines(text.removeprefix("\ufeff"))
    frontmatter = split_frontmatter(text)
    doc = parse_markdown(path, text, frontmatter.body_start)
    profile = build_profile(doc, frontmatter.data)
    entities = find_entities(doc, profile)
    facts = fact_records(doc, profile)
    endpoints = [r.metadata["object"] for r in facts if r.metadata["fact_kind"] == "endpoint"]
    catalog_entities = profile.entities or [e.name for e in entities if e.in_heading][:MAX_CATALOG_ENTITIES]
    records = [
        catalog_record(doc, profile, frontmatter.data, catalog_entities, endpoints),
        *chunk_records(doc, profile),
        *facts,
        *entity_records(doc, profile, entities),
        *workflow_records(doc, profile),
        *relation_records(doc, profile, entities, frontmatter.data),
        *policy_records(doc, profile, frontmatter.data),
    ]
    warnings = [f"{frontmatter.warning}"] if frontmatter.warning else []
    return DocsResult(records=records, warnings=warnings)
