"""Lane budget: a lane whose statement PostgreSQL cancelled (`LaneBudgetExceeded`) is dropped, the rest answer."""

from __future__ import annotations

from typing import Any

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.retrieval_policy import RetrievalPlan
from stores.embedders import FakeEmbeddings
from stores.errors import LaneBudgetExceeded
from stores.sessions import RagSession

ROW = {"id": "1", "path": "pkg/config.py", "layer": "C0_SOURCE_CHUNKS", "title": "load_config",
       "content": "def load_config(path): read the settings file", "metadata": {}, "span_start": 1, "span_end": 3}


class SlowRankedRepository:
    """The ranked SQL always runs out of budget; the code lane answers."""

    def retrieve(self, session: RagSession, **kwargs: Any) -> list[dict[str, Any]]:
        if kwargs.get("query_text"):
            raise LaneBudgetExceeded("cancelled")
        return []

    def retrieve_lexical_code(self, session: RagSession, query_text: str, **kwargs: Any) -> list[dict[str, Any]]:
        return [dict(ROW)]

    def retrieve_exact_files(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def retrieve_chunks_by_path_substrings(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def absent_terms(self, session: RagSession, words: list[str]) -> list[str]:
        raise LaneBudgetExceeded("cancelled")


def test_a_cancelled_lane_is_dropped_and_named_in_the_timings() -> None:
    session = RagSession(rag_session_id="s", name="s", embedder="fake", embedding_dim=64, active_generation=1)
    adapter = RetrievalAdapter(SlowRankedRepository(), FakeEmbeddings(), bridge=False)  # type: ignore[arg-type]
    plan = RetrievalPlan(profile="DOCS_EXPLAIN", layers=["D0_DOC_CHUNKS"], limit=8)
    gathered = adapter.gather_lanes(session, plan, None, "How does load_config read the settings file?")
    assert "ranked:cancelled" in gathered.timings_ms
    assert gathered.lanes["ranked"] == []
    assert [r["id"] for r in gathered.lanes["code"]] == ["1"]
