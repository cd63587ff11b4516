"""Layer names of the index (SPEC §4; seed 000 names win over seed 003's older ones)."""

from __future__ import annotations

from enum import StrEnum


class Layer(StrEnum):
    """One logical layer of the index; every `rag_chunks` row belongs to exactly one."""

    D0_DOC_CHUNKS = "D0_DOC_CHUNKS"
    D1_DOCUMENT_CATALOG = "D1_DOCUMENT_CATALOG"
    D2_FACT_INDEX = "D2_FACT_INDEX"
    D3_ENTITY_CATALOG = "D3_ENTITY_CATALOG"
    D4_WORKFLOW_INDEX = "D4_WORKFLOW_INDEX"
    D5_RELATION_GRAPH = "D5_RELATION_GRAPH"
    D6_POLICY_INDEX = "D6_POLICY_INDEX"
    """Seed 003's `D4_POLICY_INDEX` (rules and conventions); seed 000 gave the D4 slot to workflows."""
    C0_SOURCE_CHUNKS = "C0_SOURCE_CHUNKS"
    C1_SYMBOL_CATALOG = "C1_SYMBOL_CATALOG"
    C2_DEPENDENCY_GRAPH = "C2_DEPENDENCY_GRAPH"
    C3_ENTRYPOINTS = "C3_ENTRYPOINTS"
    C7_CODE_FACTS = "C7_CODE_FACTS"
    """Facts read from the AST (defaults, fields, options, constants, raises, environment variables, messages),
    one row per fact with its exact lines (issue 38). Seed 003 keeps C4–C6 for the public API, behaviour
    summaries and runtime traces, which Lotsman does not build."""


DOCS_LAYERS: tuple[Layer, ...] = tuple(layer for layer in Layer if layer.value.startswith("D"))
CODE_LAYERS: tuple[Layer, ...] = tuple(layer for layer in Layer if layer.value.startswith("C"))
