"""Checkpoints of the QA graph hold the stage models: they round-trip, without LangGraph's warning about
unregistered types, through the serializer `build_graph` gives its checkpointer."""

from __future__ import annotations

import logging

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import strict_checkpointer
from graph.state import RetrievalReport, SessionRef
from nodes.conversation_understanding import StandaloneRequest
from nodes.evidence import EvidenceRow
from nodes.intent_routing import RouteResult
from nodes.retrieval_policy import PlanFilters, RetrievalPlan


def test_stage_models_round_trip_without_warnings(caplog: pytest.LogCaptureFixture) -> None:
    serde = strict_checkpointer(InMemorySaver()).serde
    state = {
        "request": StandaloneRequest(text="q (CORS)", question="q", carried_terms=["CORS"], key_terms=["cors"]),
        "route_result": RouteResult(user_query="q"),
        "session": SessionRef(rag_session_id="s1", name="docs", generation=3),
        "plan": RetrievalPlan(profile="p", layers=["D0_DOC_CHUNKS"], limit=8,
                              filters=PlanFilters(path_prefixes=["docs/"])),
        "evidence": [EvidenceRow(id="1", path="a.md", layer="D0_DOC_CHUNKS", lanes={"semantic": 1})],
        "retrieval": RetrievalReport(relevant=True, gate="ok", relaxation="preference"),
    }
    with caplog.at_level(logging.WARNING):
        assert serde.loads_typed(serde.dumps_typed(state)) == state
    assert "unregistered" not in caplog.text


def test_graphs_without_a_checkpointer_stay_without_one() -> None:
    assert strict_checkpointer(None) is None
