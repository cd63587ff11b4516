"""Retrieval policy stage: the seed 000 docs plan and, apart from it, our code plan."""

from nodes.retrieval_policy.code_plan import CodePlan, resolve_code_plan
from nodes.retrieval_policy.policy import (
    AnchorSignal,
    LayerProfile,
    PlanFilters,
    RetrievalPlan,
    RetrievalProfile,
    anchor_signal_types,
    resolve_plan,
)

__all__ = [
    "AnchorSignal",
    "CodePlan",
    "LayerProfile",
    "PlanFilters",
    "RetrievalPlan",
    "RetrievalProfile",
    "anchor_signal_types",
    "resolve_code_plan",
    "resolve_plan",
]
