"""The plain baselines the eval compares against, as retrieval strategies for `GraphDeps.retrieve`.

`vector` = plain similarity over every layer, `bm25` = the lexical lane alone: no policy, no code lane,
no file diversity, no reserved slot — the same runner, graph, gate and answer otherwise.
"""

from __future__ import annotations

from graph.context import Context
from graph.deps import RetrieveFn, SessionBundle, full_retrieval
from nodes.context_retrieval.merge import RetrievalResult
from nodes.context_retrieval.retriever import broad_plans
from nodes.conversation_understanding import StandaloneRequest
from nodes.intent_routing import RouteResult
from nodes.retrieval_policy import CodePlan, RetrievalPlan

BASELINE_LANES = {"vector": ("semantic",), "bm25": ("lexical",)}


def plain(lanes: tuple[str, ...]) -> RetrieveFn:
    """A strategy that runs only `lanes` over the broad plan (every docs layer), ignoring the route's plan."""

    def retrieve(bundle: SessionBundle, request: StandaloneRequest, route: RouteResult, plan: RetrievalPlan,
                 code_plan: CodePlan | None, ctx: Context) -> RetrievalResult:
        broad, _, _ = broad_plans(request.text)
        return bundle.adapter.fetch_rows(
            bundle.session, broad, None, request.text, file_names=route.anchors.file_names,
            gate_terms=request.key_terms, top_k=ctx.top_k, token_cap=ctx.token_cap, lanes_enabled=lanes,
        )

    return retrieve


RETRIEVERS: dict[str, RetrieveFn] = {"full": full_retrieval, **{k: plain(v) for k, v in BASELINE_LANES.items()}}
"""`--retriever` name → strategy."""
