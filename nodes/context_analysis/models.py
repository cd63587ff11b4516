"""Stage result of context_analysis: evidence by file, answering spans, sufficiency, conflicts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Language = Literal["ru", "en"]


class FileEvidence(BaseModel):
    """One file of the evidence, with the rows that came from it."""

    model_config = ConfigDict(frozen=True)

    path: str
    rows: list[str] = Field(default_factory=list)
    """Ids of the file's evidence rows, in rank order."""
    best_rank: int
    """1-based rank of the file's best row among all rows."""
    title: str = ""
    """Document title or heading (catalog title first, then the first row's title)."""
    reason: str = ""
    """One line saying why the file matters: its best matching line, else its title."""
    start_line: int = 1
    """First line backing `reason` (inside the file's evidence, so it can be cited)."""
    end_line: int = 1
    """Last line backing `reason`."""

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


class Span(BaseModel):
    """Lines of one evidence row that answer the request."""

    model_config = ConfigDict(frozen=True)

    path: str
    start_line: int
    """1-based, inclusive; always inside the row's span."""
    end_line: int
    text: str
    """Verbatim lines for line-aligned layers (D0, C0); trimmed row content otherwise."""
    row_id: str
    score: float = 0.0
    layer: str = ""
    code: bool = False
    """True for source code and fenced code blocks (the answer renders them as code)."""
    terms: list[str] = Field(default_factory=list)
    """Key terms that occur in the span (empty for a lead span of an exact-file hit)."""
    section: str = ""
    """Heading the passage sits under (D0) or the name of its definition (code): what the quote is about."""
    kind: str = ""
    """`prose`, `item`, `table`, `code` (a fenced block in docs), `source` (a definition), `card` (a C1/C3
    card's text, a unit of the scorer), or the layer of
    a synthesized row; empty for the opening of an exactly named file."""

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


class Analysis(BaseModel):
    """Output of `analyze`, read by answer_composition."""

    model_config = ConfigDict(frozen=True)

    files: list[FileEvidence] = Field(default_factory=list)
    """Files in rank order of their best row."""
    spans: list[Span] = Field(default_factory=list)
    """The answer's quotes: the lead (the best scored unit) first, then at most MAX_SUPPORTING quotes of the
    units within the unit model's margin (adjacent units joined)."""
    passages: list[Span] = Field(default_factory=list)
    """The passage pool, best first (≤ 6, non-overlapping; includes `spans`): what an LLM is shown."""
    sufficient: bool = False
    """Relevant evidence with at least one span containing a topic key term (a generic verb like
    `настроить` alone does not count), or an exact-file hit."""
    coverage: float = 0.0
    """Share of key terms that occur in the answer's passages (compared by their first 5 letters)."""
    conflicts: list[str] = Field(default_factory=list)
    """Best-effort notes like `max_age: 600 (a.md) ≠ 3600 (b.md)`."""
    language: Language = "ru"
    """Language of the request."""
    terms: list[str] = Field(default_factory=list)
    """Key terms the analysis matched against."""
    analysed_by: Literal["rules", "llm"] = "rules"
    """Who chose `spans` and judged sufficiency: the deterministic rules or the chat model."""
