"""Run context (LangGraph `Runtime` context): immutable per-run settings, overridable per call."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graph.errors import client_visible, validation_message
from graph.names import check_name
from graph.settings import MAX_LLM_SECONDS, MAX_TOKEN_CAP
from nodes.context_retrieval.choices import DEFAULT_RANKER, Ranker, Retriever
from stores.errors import InvalidInputError


class Context(BaseModel):
    """Per-run settings; pass as `graph.invoke(input, context={...})` or the server's `context`.

    Validated on construction (LangGraph builds it from a client's dict): a bad value is one
    `InvalidInputError` line that server clients see too, not a TypeError or an SQL error deep in a node.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    rag_session_id: str = Field(default="default", strict=True)
    """Session name or id to answer from (created by `lotsman index PATH --session NAME`)."""
    ref: str | None = Field(default=None, strict=True, max_length=256)
    """A git revision (tag, branch, commit sha) to answer from: the session indexed from it with `lotsman index
    PATH --ref REF`, among the sessions of `rag_session_id`'s repository when that session records one
    (`stores.sessions.run_session`). None: `rag_session_id` itself."""
    top_k: int = Field(default=12, strict=True, ge=1, le=200)
    """Evidence rows of the pack's core, kept after fusion within the token cap; the pack then fills the cap's
    remaining room with further candidates (`nodes/context_retrieval/pack.py`)."""
    token_cap: int = Field(default=4096, strict=True, ge=1, le=MAX_TOKEN_CAP)
    """Token budget of the evidence pack handed to analysis (seed 004); with GigaChat, the model reads that
    pack and the analysis's passages quoted from it."""
    retriever: Retriever = "full"
    """`full`: every lane of the route's plan, fused (the product); `vector` / `bm25`: the semantic or the
    lexical lane alone over every docs layer (the eval's plain baselines). Any other value is an error."""
    ranker: Ranker = DEFAULT_RANKER
    """How the full retriever orders the fused candidates: `learned` (the LambdaRank model on top of the RRF
    order, `nodes/context_retrieval/learned_ranker.py`) or `rrf` (weighted reciprocal-rank fusion alone, the
    baseline). Any other value is an error."""
    use_llm: bool = Field(default=True, strict=True)
    """Use the chat model when one is configured (False forces the offline path)."""
    llm_timeout_s: float = Field(default=30.0, gt=0, le=MAX_LLM_SECONDS)
    """Seconds an LLM answer may take before the extractive answer is used."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise client_visible(InvalidInputError(f"invalid run context: {validation_message(exc)}")) from None

    @field_validator("rag_session_id")
    @classmethod
    def _names_a_session(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a session (created by `lotsman index PATH --session NAME`)")
        return check_name(value)  # no NUL (PostgreSQL's DataError), control character or endless name

    @field_validator("ref", mode="before")
    @classmethod
    def _names_a_revision(cls, value: Any) -> Any:
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("must name a git revision (a tag, branch or commit), or be left out")
            check_name(value, "ref")  # before max_length: its message names the length, not the value
        return value
