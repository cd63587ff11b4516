"""`EvidenceRow`: one retrieved row with its provenance (which lanes found it, ranks, fused score)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class EvidenceRow(BaseModel):
    """A row of retrieved evidence as the analysis and answer stages (and LangSmith) see it."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Row id in the session's chunk table."""
    path: str
    """Source file, relative to the indexed root."""
    layer: str
    """Index layer (`D0_DOC_CHUNKS`, `C1_SYMBOL_CATALOG`, ...)."""
    title: str = ""
    content: str = ""
    span_start: int = 1
    """First line of the evidence (1-based, inclusive)."""
    span_end: int = 1
    """Last line of the evidence (inclusive)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    lanes: dict[str, int] = Field(default_factory=dict)
    """Lane name → 1-based rank of this row in that lane (`exact`, `substring`, `semantic`, `lexical`,
    `ranked`, `code`)."""
    scores: dict[str, float] = Field(default_factory=dict)
    """Raw signals: `distance`, `lexical_score`, and seed 001's ranking fields."""
    fused_score: float = 0.0
    """Weighted reciprocal-rank-fusion score (higher is better)."""

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.span_start}-{self.span_end}"

    def provenance(self) -> dict[str, Any]:
        """Compact provenance for traces and `lotsman retrieve`."""
        return {"path": self.path, "lines": [self.span_start, self.span_end], "layer": self.layer,
                "lanes": self.lanes, "fused_score": round(self.fused_score, 5)}
