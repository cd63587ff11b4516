"""Run context (LangGraph `Runtime` context): immutable per-run settings, overridable per call."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Context:
    """Per-run settings; pass as `graph.invoke(input, context={...})` or the server's `context`."""

    rag_session_id: str = "default"
    """Session name or id to answer from (created by `lotsman index --session NAME`)."""
    top_k: int = 12
    """Evidence rows kept after fusion (before the token cap)."""
    token_cap: int = 4096
    """Token budget of the evidence handed to analysis and composition (seed 004)."""
    use_llm: bool = True
    """Use the chat model when one is configured (False forces the offline path)."""
    llm_timeout_s: float = 30.0
    """Seconds an LLM answer may take before the extractive answer is used."""
