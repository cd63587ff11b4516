"""Which retrieval answers a run: the full pipeline, or one plain lane (the run context's `retriever`).

`full` runs every lane of the route's plan and the code plan, fused, gated and capped. `vector` and `bm25`
are the plain baselines the eval compares against: the semantic lane or the lexical lane alone over every
docs layer, without the policy's plan, the code lane, test demotion, file diversity or a reserved code slot;
the gate and the token cap stay, so the answer stages see the same kind of evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.context_retrieval.choices import DEFAULT_RANKER, Ranker, Retriever
from nodes.context_retrieval.merge import RetrievalResult
from nodes.context_retrieval.retriever import broad_plans
from nodes.retrieval_policy import CodePlan, RetrievalPlan
from stores.sessions import RagSession

PLAIN_LANES: Mapping[str, tuple[str, ...]] = {"vector": ("semantic",), "bm25": ("lexical",)}
"""The one lane each plain baseline runs; `full` is not plain."""


def plain_lanes(retriever: Retriever) -> tuple[str, ...] | None:
    """The lanes a plain retriever restricts the adapter to, or None for the full pipeline."""
    return PLAIN_LANES.get(retriever)


def retrieve_evidence(adapter: RetrievalAdapter, session: RagSession, query: str, plan: RetrievalPlan,
                      code_plan: CodePlan | None, *, retriever: Retriever = "full", ranker: Ranker = DEFAULT_RANKER,
                      file_names: Sequence[str] = (),
                      gate_terms: Sequence[str] | None = None, top_k: int = 12, token_cap: int = 4096,
                      ) -> RetrievalResult:
    """The evidence of one request by the chosen retriever.

    Args:
        adapter: the session's retrieval adapter.
        session: the session to read.
        query: the standalone request text.
        plan: the route's docs plan (seed 000); a plain retriever uses the broad plan instead.
        code_plan: the route's code plan; a plain retriever runs no code lane.
        retriever: `full`, `vector` or `bm25`.
        ranker: how `full` orders its fused candidates (`rrf` or `learned`); the plain baselines stay plain.
        file_names: the route's file-name anchors.
        gate_terms: the request's key terms for the relevance gate.
        top_k: rows kept after fusion.
        token_cap: token budget of the returned rows.
    """
    lanes = plain_lanes(retriever)
    if lanes is None:
        return adapter.fetch_rows(session, plan, code_plan, query, file_names=file_names, gate_terms=gate_terms,
                                  top_k=top_k, token_cap=token_cap, ranker=ranker)
    broad, _, _ = broad_plans(query)
    return adapter.fetch_rows(session, broad, None, query, file_names=file_names, gate_terms=gate_terms,
                              top_k=top_k, token_cap=token_cap, lanes_enabled=lanes)
