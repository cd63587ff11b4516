"""A vote round-trips to LangSmith (issue 27): the real QA graph traced into a recording LangSmith API, the
vote sent through the real `langsmith.Client` as feedback on that run, and stored either way."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import langsmith
import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tracers.langchain import wait_for_all_tracers
from langsmith.run_helpers import tracing_context

from graph.builder import build_graph
from graph.context import Context
from graph.deps import GraphDeps
from graph.settings import Settings
from stores.database import Database
from stores.embedders import make_embedder
from stores.feedback import LangSmithTarget, list_feedback, record_feedback
from tests.fakes.langsmith_api import FakeLangSmithAPI
from tests.integration.conftest import indexed_session

DOC = """# Berths

Each arrival gets a berth by the `assign_berth` function: the shortest free berth longer than the ship plus
a safety margin of 10 metres.
"""


class TracedProjects(FakeLangSmithAPI):
    """The recording API, knowing the projects runs were traced into (LangSmith creates them on first use)."""

    def __init__(self) -> None:
        super().__init__()
        self.project_ids: dict[str, str] = {}

    def _route(self, method, path, params, body):  # type: ignore[no-untyped-def]
        if path == "/runs" and method == "POST" and body.get("session_name"):
            self.project_ids.setdefault(body["session_name"], str(uuid.uuid4()))
        if path == "/sessions" and method == "GET" and params.get("name"):
            pid = self.project_ids.get(params["name"])
            return 200, ([{"id": pid, "name": params["name"], "start_time": "2026-12-01T00:00:00+00:00",
                           "reference_dataset_id": None,
                           "tenant_id": str(uuid.UUID(int=0))}] if pid else [])
        return super()._route(method, path, params, body)


@pytest.fixture(scope="module")
def berths(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("berths")
    (root / "berths.md").write_text(DOC, encoding="utf-8")
    for session in indexed_session(db, root, "it-vote", make_embedder("use")):
        yield session.name


async def test_a_vote_becomes_feedback_on_the_traced_run(db: Database, berths: str) -> None:
    api = TracedProjects()
    client = langsmith.Client(api_url="http://127.0.0.1:1", api_key="fake", session=api, auto_batch_tracing=False)
    graph = build_graph(GraphDeps(settings=Settings(), db=db))
    run_id = uuid.uuid4()
    question = "How is a berth assigned?"
    with tracing_context(enabled=True, client=client, project_name="t"):
        out = await graph.ainvoke({"messages": [HumanMessage(question)]}, config={"run_id": run_id},
                                  context=Context(rag_session_id=berths))
    wait_for_all_tracers()
    assert str(run_id) in api.runs and api.runs[str(run_id)]["name"] == "lotsman", "the run was traced"

    with db.connection() as conn:
        fid = record_feedback(conn, berths, run_id=str(run_id), thread_id=None, question=question,
                              answer=out["answer"], citations=out["citations"], score=-1, comment="too short",
                              langsmith=LangSmithTarget(client, "t"))
        (vote,) = list_feedback(conn, berths)
    (sent,) = api.run_feedback()
    assert sent["run_id"] == str(run_id) and sent["key"] == "user_score"
    assert sent["score"] == 0 and sent["comment"] == "too short"
    assert sent["session_id"] == api.project_ids["t"], "the run's project goes with the vote"
    assert vote.feedback_id == fid and vote.langsmith_sent is True and vote.score == -1
    assert vote.citations == out["citations"]


def test_langsmith_down_costs_one_warning_and_the_vote_stays(db: Database, berths: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    class Down(FakeLangSmithAPI):
        def _route(self, method, path, params, body):  # type: ignore[no-untyped-def]
            return (503, {"detail": "unavailable"}) if path == "/feedback" else super()._route(method, path, params,
                                                                                                body)

    client = langsmith.Client(api_url="http://127.0.0.1:1", api_key="fake", session=Down(),
                              auto_batch_tracing=False)
    with caplog.at_level(logging.WARNING, logger="stores.feedback"), db.connection() as conn:
        before = len(list_feedback(conn, berths))
        record_feedback(conn, berths, run_id=str(uuid.uuid4()), thread_id="t", question="q", answer="a",
                        citations=[], score=1, comment=None, langsmith=client)
        votes = list_feedback(conn, berths)
    assert len(votes) == before + 1 and votes[-1].langsmith_sent is False
    warnings = [r.getMessage() for r in caplog.records if r.name == "stores.feedback"]
    assert len(warnings) == 1 and warnings[0].startswith("warning: feedback not sent to LangSmith (")
    assert warnings[0].endswith("the vote is stored") and "\n" not in warnings[0]


def test_no_client_when_tracing_is_off(db: Database, berths: str) -> None:
    from stores.feedback import langsmith_target

    assert langsmith_target(Settings(LANGSMITH_TRACING=False)) is None
