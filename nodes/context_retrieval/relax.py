"""Relaxing a plan that retrieves too little (SPEC §10): a plan narrows retrieval, it never empties it.

Seed 000's plans assume a `docs/` tree and frontmatter domains; on a repository with its markdown at the
root, or with no markdown at all, their hard filters leave nothing. When the ranked lane brings back
fewer rows than the plan's limit, the adapter retries one step looser:

- `hard`       — the plan as resolved;
- `preference` — hard path prefixes become preferred ones (they still earn `prefer_bonus`), domain and
                 subdomain filters are dropped, and the section chunks (D0) join the plan's layers;
- `none`       — no path or metadata filter at all, every docs layer and the code layers.

The step that answered is recorded in the retrieval report (LangSmith shows it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from nodes.retrieval_policy import PlanFilters, RetrievalPlan
from nodes.retrieval_policy.code_plan import CODE_PLAN_LAYERS
from stores.layers import DOCS_LAYERS, Layer

RelaxStep = Literal["hard", "preference", "none"]
STEPS: tuple[RelaxStep, ...] = ("hard", "preference", "none")


def relax_plan(plan: RetrievalPlan, step: RelaxStep) -> RetrievalPlan:
    """The plan loosened to `step` (pure)."""
    if step == "hard":
        return plan
    f = plan.filters
    if step == "preference":
        preferred = list(dict.fromkeys([*(f.path_prefixes or []), *(f.prefer_path_prefixes or [])]))
        layers = list(dict.fromkeys([*plan.layers, Layer.D0_DOC_CHUNKS.value]))
        filters = PlanFilters(prefer_path_prefixes=preferred or None, prefer_like_patterns=f.prefer_like_patterns,
                              target_doc_hints=f.target_doc_hints)
        return plan.model_copy(update={"layers": layers, "filters": filters})
    layers = list(dict.fromkeys([*plan.layers, *(layer.value for layer in DOCS_LAYERS),
                                 *(layer.value for layer in CODE_PLAN_LAYERS)]))
    filters = PlanFilters(prefer_like_patterns=f.prefer_like_patterns, target_doc_hints=f.target_doc_hints)
    return plan.model_copy(update={"layers": layers, "filters": filters})


def can_find(layers: Sequence[str], present: Collection[str] | None) -> bool:
    """Whether a query over `layers` can find anything in a session holding rows of `present` layers
    (None: not known; no layers: no layer filter). A step that cannot is not worth a query (pure)."""
    return present is None or not layers or any(layer in present for layer in layers)


def next_step(step: RelaxStep, found: int, limit: int) -> RelaxStep | None:
    """The looser step to try when `found` rows fall short of the plan's `limit`, else None."""
    if found >= limit:
        return None
    i = STEPS.index(step)
    return STEPS[i + 1] if i + 1 < len(STEPS) else None
