"""`LotsmanRetriever`: a LangChain `BaseRetriever` over a session's pgvector store.

Usable on its own (`retriever.invoke("question")`), inside LCEL chains, or through the graph. Each
`Document` carries `path`, `start_line`, `end_line`, `layer`, `citation` and its provenance (`lanes`,
`fused_score`) in metadata, so LangSmith shows why a row was returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.context_retrieval.choices import DEFAULT_RANKER, Ranker
from nodes.intent_routing.models import RouteResult
from nodes.retrieval_policy import CodePlan, RetrievalPlan
from stores.layers import CODE_LAYERS, DOCS_LAYERS
from stores.sessions import RagSession

Planner = Callable[[str], tuple[RetrievalPlan, CodePlan | None, RouteResult | None]]
"""query → (RetrievalPlan, CodePlan | None, RouteResult | None)."""


def broad_plans(query: str) -> tuple[RetrievalPlan, CodePlan | None, RouteResult | None]:
    """Without a router: every docs layer plus the code layers, no path preferences."""
    plan = RetrievalPlan(profile="docs_summary_generic", layers=[layer.value for layer in DOCS_LAYERS], limit=8)
    code = CodePlan(layers=[layer.value for layer in CODE_LAYERS], limit=8, terms=[], reason="broad retriever")
    return plan, code, None


class LotsmanRetriever(BaseRetriever):
    """Retrieves fused, cited evidence rows of one session.

    Attributes:
        adapter: the session's `RetrievalAdapter`.
        session: the `RagSession` to read.
        k: number of documents returned.
        planner: turns a query into plans (defaults to `broad_plans`; the graph passes router + policy).
        token_cap: token budget of the returned documents.
        ranker: `learned` (the default, as in the graph) or `rrf`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    adapter: RetrievalAdapter
    session: RagSession
    k: int = 4
    planner: Planner = broad_plans
    token_cap: int = 4096
    ranker: Ranker = DEFAULT_RANKER

    def _search(self, query: str, k: int) -> list[Document]:
        plan, code_plan, route = self.planner(query)
        anchors = getattr(route, "anchors", None)
        result = self.adapter.fetch_rows(
            self.session, plan, code_plan, query, top_k=k, token_cap=self.token_cap,
            file_names=list(getattr(anchors, "file_names", []) or []),
            terms=list(getattr(route, "target_terms", []) or []), ranker=self.ranker,
        )
        docs = []
        for row in result.rows[:k]:
            docs.append(Document(
                id=row.id,
                page_content=row.content,
                metadata={
                    "path": row.path, "start_line": row.span_start, "end_line": row.span_end,
                    "citation": row.citation, "layer": row.layer, "title": row.title,
                    "lanes": row.lanes, "fused_score": row.fused_score, "scores": row.scores,
                    "relevant": result.relevant,
                },
            ))
        return docs

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return self._search(query, int(kwargs.get("k", self.k)))

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        return await asyncio.to_thread(self._search, query, int(kwargs.get("k", self.k)))
