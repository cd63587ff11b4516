"""The retrieval choices a run can make (`Context.retriever`, `Context.ranker`, `lotsman eval` flags).

A leaf module without imports: the CLI's argument parser reads these names, and importing the retrieval
stack for them made every `lotsman` command start ~6× slower.
"""

from __future__ import annotations

from typing import Literal

Retriever = Literal["full", "vector", "bm25"]
"""`full`: every lane of the route's plan, fused; `vector` / `bm25`: one plain lane (the eval's baselines)."""

Ranker = Literal["rrf", "learned"]
"""How the full retriever orders the fused candidates: weighted RRF alone, or the learned ranker on top."""

DEFAULT_RANKER: Ranker = "learned"
"""The product's order everywhere a caller does not choose (the run context, the LangChain retriever, the
adapter); `rrf` is the baseline."""
