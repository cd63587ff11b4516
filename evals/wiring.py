"""How an eval run builds the graph's dependencies and run context, for the runner and LangSmith alike.

`--retriever` is wired here and nowhere else: it picks the retrieval strategy of `GraphDeps`
(`evals/baselines.py`); the production graph has no notion of baselines.
"""

from __future__ import annotations

from typing import Any

from evals.baselines import RETRIEVERS
from graph.context import Context
from graph.deps import GraphDeps


def eval_deps(settings: Any, retriever: str) -> GraphDeps:
    """Graph dependencies for an eval run: offline (no chat model), so evals measure the deterministic path."""
    return GraphDeps(settings=settings, retrieve=RETRIEVERS[retriever])


def eval_context(session: str, retriever: str, settings: Any) -> Context:
    """The run context of every case: the corpus's session, top-k and token cap (the retriever is in deps)."""
    return Context(rag_session_id=session, token_cap=settings.token_cap, top_k=settings.top_k)
