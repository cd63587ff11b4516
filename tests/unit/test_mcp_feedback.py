"""MCP answers can be voted on: `ask` returns its `run_id`, and `feedback(run_id, score, comment?)` stores a vote on
one of the answers this server gave (graph/mcp_server.py). A vote is a write: over HTTP it needs the token when one
is set, like every `/mcp` request."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from mcp import Client
from starlette.testclient import TestClient

from graph.http_app import build_app
from graph.mcp_server import (
    MAX_REMEMBERED_ANSWERS,
    AnsweredRun,
    LotsmanTools,
    build_server,
    check_score,
    remember_answer,
)
from graph.settings import Settings
from stores.errors import UsageError

RUN = AnsweredRun(session="docs", question="Как включить CORS?", answer="Добавьте CORSMiddleware (docs/cors.md:5-7).",
                  citations=[{"path": "docs/cors.md", "start_line": 5, "end_line": 7}])


def test_remember_answer_keeps_the_latest_ones() -> None:
    answers: OrderedDict[str, AnsweredRun] = OrderedDict()
    for n in range(5):
        remember_answer(answers, f"run-{n}", RUN, limit=3)
    assert list(answers) == ["run-2", "run-3", "run-4"]
    assert MAX_REMEMBERED_ANSWERS >= 100


@pytest.mark.parametrize("score", [0, 2, -2, True, False, "1", 1.0, -1.0, None])
def test_check_score_refuses(score: Any) -> None:
    with pytest.raises(UsageError, match=r"score must be 1 \(the answer helped\) or -1 \(it did not\)"):
        check_score(score)


class VotingTools(LotsmanTools):
    """The real `feedback` checks over a recorded store instead of the database."""

    def __init__(self) -> None:
        super().__init__(Settings())
        self.stored: list[tuple[str, AnsweredRun, int, str | None]] = []

    def _record_vote(self, run_id: str, run: AnsweredRun, score: int, comment: str | None) -> str:
        self.stored.append((run_id, run, score, comment))
        return "fb-1"


async def test_the_tools_offer_a_vote_that_is_not_read_only() -> None:
    async with Client(build_server(VotingTools())) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert "run_id" in tools["ask"].output_schema["properties"]
    vote = tools["feedback"]
    assert vote.annotations is not None and vote.annotations.read_only_hint is False
    assert vote.annotations.destructive_hint is False
    assert set(vote.input_schema["required"]) == {"run_id", "score"}
    assert set(vote.output_schema["properties"]) >= {"feedback_id", "run_id", "score"}


async def test_a_vote_on_a_remembered_answer_is_stored() -> None:
    tools = VotingTools()
    tools.remember("0b6c3f7e-1111-4a3e-9c55-0f8d2f0e1a2b", RUN)
    async with Client(build_server(tools)) as client:
        result = await client.call_tool("feedback", {"run_id": "0b6c3f7e-1111-4a3e-9c55-0f8d2f0e1a2b", "score": -1,
                                                     "comment": "нет примера"})
    assert not result.is_error, result.content
    assert result.structured_content == {"feedback_id": "fb-1", "run_id": "0b6c3f7e-1111-4a3e-9c55-0f8d2f0e1a2b",
                                         "score": -1}
    assert tools.stored == [("0b6c3f7e-1111-4a3e-9c55-0f8d2f0e1a2b", RUN, -1, "нет примера")]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"run_id": "never-asked", "score": 1}, "no answer with run_id 'never-asked' on this server"),
    ({"run_id": "r1", "score": 5}, "score must be 1 (the answer helped) or -1 (it did not)"),
    ({"run_id": "  ", "score": 1}, "run_id is empty"),
], ids=["unknown-run", "bad-score", "empty-run"])
async def test_a_bad_vote_is_one_clear_tool_error(arguments: dict[str, Any], message: str) -> None:
    tools = VotingTools()
    tools.remember("r1", RUN)
    async with Client(build_server(tools)) as client:
        result = await client.call_tool("feedback", arguments)
    assert result.is_error
    [content] = result.content
    assert message in content.text and "\n" not in content.text, content.text
    assert tools.stored == []


def test_over_http_a_vote_needs_the_token_when_one_is_set() -> None:
    from pydantic import SecretStr

    app = build_app(Settings(auth_token=SecretStr("s3cret")), VotingTools(), web_routes=[])
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "feedback", "arguments": {"run_id": "r1", "score": 1}}}
    with TestClient(app, base_url="http://127.0.0.1:2024") as client:
        refused = client.post("/mcp", json=call, headers={"accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and "needs a token" in refused.json()["error"]
