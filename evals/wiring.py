"""How an eval run builds the graph's dependencies and run context, for the runner and LangSmith alike.

`--retriever` becomes the run context's `retriever` (`full`, or the plain baselines `vector` / `bm25`,
`nodes/context_retrieval/strategy.py`), exactly as a server client would ask for it.
"""

from __future__ import annotations

from typing import Any

from graph.context import Context
from graph.deps import GraphDeps, make_chat_model
from stores.errors import LotsmanError


def eval_deps(settings: Any, llm: bool = False) -> GraphDeps:
    """Graph dependencies for an eval run.

    Offline by default (no chat model, even with GigaChat credentials set), so evals measure the
    deterministic path. With `llm=True` the graph gets the chat model of `settings` (GigaChat: its router,
    analysis and composition); a run that asks for it without credentials is an error, not an offline run.
    """
    if not llm:
        return GraphDeps(settings=settings)
    model = make_chat_model(settings)
    if model is None:
        raise LotsmanError("--llm needs a chat model: set GIGACHAT_CREDENTIALS and GIGACHAT_MODEL, or "
                           "LOTSMAN_LLM_PROVIDER=openai with OPENAI_BASE_URL and LOTSMAN_LLM_MODEL "
                           "(without --llm the eval runs offline)")
    return GraphDeps(settings=settings, chat_model=model)


def eval_context(session: str, retriever: str, settings: Any, ranker: str | None = None) -> Context:
    """The run context of every case: the corpus's session, the retriever and ranker (None: the context's
    default), top-k and token cap."""
    extra = {"ranker": ranker} if ranker is not None else {}
    return Context(rag_session_id=session, retriever=retriever, token_cap=settings.token_cap, top_k=settings.top_k,
                   llm_timeout_s=settings.gigachat.timeout, **extra)
