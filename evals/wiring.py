"""How an eval run builds the graph's dependencies and run context, for the runner and LangSmith alike.

`--retriever` is wired here and nowhere else (today through the run context's `retriever` field).
"""

from __future__ import annotations

from typing import Any


def eval_deps(settings: Any, retriever: str) -> Any:
    """Graph dependencies for an eval run: offline (no chat model), so evals measure the deterministic path."""
    from graph.deps import GraphDeps

    return GraphDeps(settings=settings)


def eval_context(session: str, retriever: str, settings: Any) -> Any:
    """The run context of every case: the corpus's session, the retriever under test, top-k and token cap."""
    from graph.context import Context

    return Context(rag_session_id=session, retriever=retriever, token_cap=settings.token_cap,  # type: ignore[arg-type]
                   top_k=settings.top_k)
