"""Prose and code share one nearest-first `semantic` lane: a code row nearer than every prose row ranks first
there, instead of first in a lane of its own that the prose SQL's three lanes outvote."""

from __future__ import annotations

from typing import Any

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.context_retrieval.merge import MergeSpec, rank_rows
from nodes.retrieval_policy import RetrievalPlan
from stores.embedders import FakeEmbeddings
from stores.sessions import RagSession


def row(rid: str, path: str, layer: str, distance: float, lexical: float = 0.0) -> dict[str, Any]:
    return {"id": rid, "path": path, "layer": layer, "title": "", "content": "retry the request", "metadata": {},
            "span_start": 1, "span_end": 2, "distance": distance, "lexical_score": lexical}


DOCS = [row("d1", "docs/retries.md", "D0_DOC_CHUNKS", 0.40, 0.5), row("d2", "docs/errors.md", "D0_DOC_CHUNKS", 0.45)]
CODE = [row("c1", "pkg/retry.py", "C1_SYMBOL_CATALOG", 0.30)]


class Repository:
    """Prose rows for the plan's docs layers, code rows for the code layers; no lexical code, no paths."""

    def retrieve(self, session: RagSession, **kwargs: Any) -> list[dict[str, Any]]:
        layers = kwargs["filters"].layers
        return [dict(r) for r in (CODE if all(layer.startswith("C") for layer in layers) else DOCS)]

    def retrieve_lexical_code(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def retrieve_exact_files(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def retrieve_chunks_by_path_substrings(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def absent_terms(self, session: RagSession, words: list[str]) -> list[str]:
        return []


SESSION = RagSession(rag_session_id="s", name="s", embedder="fake", embedding_dim=64, active_generation=1)
PLAN = RetrievalPlan(profile="DOCS_EXPLAIN", layers=["D0_DOC_CHUNKS"], limit=8)
QUESTION = "What happens when the request fails, is it retried?"


def test_code_and_prose_share_the_semantic_lane_nearest_first() -> None:
    adapter = RetrievalAdapter(Repository(), FakeEmbeddings())  # type: ignore[arg-type]
    gathered = adapter.gather_lanes(SESSION, PLAN, None, QUESTION)
    assert [r["id"] for r in gathered.lanes["semantic"]] == ["c1", "d1", "d2"]
    assert "code_semantic" not in gathered.lanes


def test_prose_farther_than_a_code_row_gives_up_its_semantic_rank() -> None:
    adapter = RetrievalAdapter(Repository(), FakeEmbeddings())  # type: ignore[arg-type]
    gathered = adapter.gather_lanes(SESSION, PLAN, None, QUESTION)
    ranked = {r.path: r.lanes for r in rank_rows(gathered.lanes, MergeSpec(query=QUESTION))}
    assert ranked["pkg/retry.py"] == {"semantic": 1}
    assert ranked["docs/retries.md"]["semantic"] == 2 and ranked["docs/errors.md"]["semantic"] == 3


def test_without_the_semantic_lane_code_keeps_a_vector_lane_of_its_own() -> None:
    adapter = RetrievalAdapter(Repository(), FakeEmbeddings())  # type: ignore[arg-type]
    gathered = adapter.gather_lanes(SESSION, PLAN, None, QUESTION, lanes_enabled=["code"])
    assert [r["id"] for r in gathered.lanes["code_semantic"]] == ["c1"]
    assert "semantic" not in gathered.lanes


CARDS = [row("k1", "docs/index.md", "D1_DOCUMENT_CATALOG", 0.35)]
CHUNKS = [row("t1", "docs/performance.md", "D0_DOC_CHUNKS", 0.50, 0.9)]


class CatalogRepository(Repository):
    """Catalog cards for D1/D3, chunks for D0, code for C layers."""

    def retrieve(self, session: RagSession, **kwargs: Any) -> list[dict[str, Any]]:
        layers = kwargs["filters"].layers
        if all(layer.startswith("C") for layer in layers):
            return [dict(r) for r in CODE]
        return [dict(r) for r in (CHUNKS if layers == ("D0_DOC_CHUNKS",) else CARDS)]


def test_a_file_plan_lets_the_files_chunks_compete_in_the_semantic_and_lexical_lanes() -> None:
    """Catalog cards hold titles and headings: the page that says "orjson" only says it in its text."""
    adapter = RetrievalAdapter(CatalogRepository(), FakeEmbeddings())  # type: ignore[arg-type]
    plan = RetrievalPlan(profile="file_lookup", layers=["D1_DOCUMENT_CATALOG", "D3_ENTITY_CATALOG"], limit=12)
    gathered = adapter.gather_lanes(SESSION, plan, None, "Where is the fastest orjson configuration shown?")
    assert [r["id"] for r in gathered.lanes["ranked"]] == ["k1"]
    assert [r["id"] for r in gathered.lanes["semantic"]] == ["c1", "k1", "t1"]
    assert [r["id"] for r in gathered.lanes["lexical"]] == ["t1"]


def test_a_plan_with_chunks_asks_no_second_time() -> None:
    adapter = RetrievalAdapter(CatalogRepository(), FakeEmbeddings())  # type: ignore[arg-type]
    gathered = adapter.gather_lanes(SESSION, PLAN, None, QUESTION)
    assert "chunks" not in gathered.timings_ms
