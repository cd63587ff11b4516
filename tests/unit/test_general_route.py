"""The general route reads the project (issue 41, item 4).

Seed 002's fallback routes a practical question with no docs anchor to GENERAL_QA, and seed 000 gives that
route the general profile: catalog and chunks, soft README/overview preferences, no hard filter. Whether
the repository's front doors (the `landing` lane: root README/index, the package `__init__`) join the
evidence, and whether the gate may pass the question as "about the repository itself", is a property of
the question — an overview of the project — not of the route: "How do I retry a request that timed out?"
routed GENERAL_QA is answered from the whole project in the learned order, like the same question routed
DOC_EXPLAIN, while "What is pkg and who is it for?" gets the landing pages on either route.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.intent_routing.models import RouteAnchors, RouteResult
from nodes.layout import discover_layout
from nodes.retrieval_policy import RetrievalPlan, RetrievalProfile, resolve_plan
from stores.embedders import FakeEmbeddings
from stores.sessions import RagSession

PATHS = ["README.md", "docs/index.md", "docs/retries.md", "docs/errors.md", "pkg/__init__.py", "pkg/retry.py"]
LAYOUT = discover_layout(PATHS)


def row(path: str, layer: str, distance: float) -> dict[str, Any]:
    return {"id": f"{path}#{layer}", "path": path, "layer": layer, "title": path, "content": "retry the request",
            "metadata": {}, "span_start": 1, "span_end": 2, "distance": distance, "lexical_score": 0.0}


class Repository:
    """Prose rows for docs layers, code rows for code layers, every file's row by exact path."""

    def retrieve(self, session: RagSession, **kwargs: Any) -> list[dict[str, Any]]:
        if all(layer.startswith("C") for layer in kwargs["filters"].layers):
            return [row("pkg/retry.py", "C1_SYMBOL_CATALOG", 0.3)]
        return [row("docs/retries.md", "D0_DOC_CHUNKS", 0.35), row("docs/errors.md", "D0_DOC_CHUNKS", 0.4)]

    def retrieve_lexical_code(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def retrieve_exact_files(self, session: RagSession, paths: Sequence[str], **_: Any) -> list[dict[str, Any]]:
        return [row(p, "D0_DOC_CHUNKS", 0.6) for p in PATHS if p in paths]

    def retrieve_chunks_by_path_substrings(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def absent_terms(self, session: RagSession, words: list[str]) -> list[str]:
        return []


SESSION = RagSession(rag_session_id="s", name="s", embedder="fake", embedding_dim=64, active_generation=1)


def route(intent: str, question: str) -> RouteResult:
    """A route with no anchors, as seed 002's fallback builds it for a question without a docs anchor."""
    return RouteResult(routing_domain="GENERAL" if intent == "GENERAL_QA" else "DOCS", intent=intent,
                       subintent="SUMMARY", user_query=question, normalized_query=question, anchors=RouteAnchors())


def general_plan(question: str) -> RetrievalPlan:
    plan = resolve_plan(route("GENERAL_QA", question))
    assert plan.profile == RetrievalProfile.GENERAL_QA_GROUNDED_SUMMARY  # seed 000 §4: the profile stays
    return plan


def gathered(plan: RetrievalPlan, question: str) -> tuple[set[str], bool]:
    adapter = RetrievalAdapter(Repository(), FakeEmbeddings(), layout=LAYOUT)  # type: ignore[arg-type]
    out = adapter.gather_lanes(SESSION, plan, None, question)
    return set(out.lanes), out.overview


PRACTICAL = [
    "How do I retry a request that timed out?",
    "Как повторить запрос, если он упал по таймауту?",
    # naming the package does not make a practical question an overview of the project
    "How does pkg retry a request that timed out, and which error is raised after the last attempt?",
]
OVERVIEW = ["What is pkg and who is it for?", "Что это за библиотека и зачем она нужна?"]


@pytest.mark.parametrize("question", PRACTICAL)
def test_a_practical_general_question_reads_the_project_not_its_front_doors(question: str) -> None:
    lanes, overview = gathered(general_plan(question), question)
    assert "landing" not in lanes
    assert not overview  # the gate judges its evidence; no "about the repository itself" pass
    assert {"ranked", "semantic", "code"} <= lanes  # docs and code compete, the fusion and ranker decide


@pytest.mark.parametrize("question", OVERVIEW)
def test_an_overview_question_gets_the_landing_pages_on_the_general_route(question: str) -> None:
    lanes, overview = gathered(general_plan(question), question)
    assert "landing" in lanes and overview


@pytest.mark.parametrize("question", [*PRACTICAL, *OVERVIEW])
def test_the_front_doors_depend_on_the_question_not_on_the_route(question: str) -> None:
    docs_plan = resolve_plan(route("DOC_EXPLAIN", question))
    assert docs_plan.profile == RetrievalProfile.DOCS_SUMMARY_GENERIC
    assert gathered(general_plan(question), question) == gathered(docs_plan, question)
