"""An MCP client votes on an answer: `ask` (the real graph on the real index) returns its run id, `feedback` with
it stores the vote in `rag_feedback` with the question, answer and citations it judges."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client


@pytest.fixture
def client(pg_url: str, tmp_path: Path) -> Iterator[Client]:
    from graph.mcp_server import LotsmanTools, build_server
    from graph.settings import Settings

    tools = LotsmanTools(Settings(database_url=pg_url, data_dir=tmp_path))
    yield Client(build_server(tools))
    tools.close()


async def test_an_mcp_answer_can_be_voted_on(client: Client, small_session: str, db) -> None:
    question = f"Как настроить CORS в приложении? {uuid.uuid4().hex[:6]}"
    async with client:
        asked = await client.call_tool("ask", {"question": question, "session": small_session})
        assert not asked.is_error, asked.content
        answer = asked.structured_content
        assert answer is not None and uuid.UUID(answer["run_id"])

        voted = await client.call_tool("feedback", {"run_id": answer["run_id"], "score": -1,
                                                    "comment": "нет примера кода"})
        assert not voted.is_error, voted.content
        assert voted.structured_content is not None and voted.structured_content["run_id"] == answer["run_id"]

        unknown = await client.call_tool("feedback", {"run_id": str(uuid.uuid4()), "score": 1})
        assert unknown.is_error and "no answer with run_id" in unknown.content[0].text

    with db.connection() as conn:
        rows = conn.execute("SELECT feedback_id, session_name, run_id, thread_id, question, answer, citations, score, "
                            "comment FROM rag_feedback WHERE question = %s", (question,)).fetchall()
    assert len(rows) == 1
    feedback_id, session, run_id, thread_id, stored_question, stored_answer, citations, score, comment = rows[0]
    assert feedback_id == voted.structured_content["feedback_id"]
    assert (session, run_id, thread_id, stored_question) == (small_session, answer["run_id"], None, question)
    assert (stored_answer, citations) == (answer["answer"], answer["citations"])
    assert (score, comment) == (-1, "нет примера кода")
