"""MCP tool arguments are taken as the schema says, not coerced (issue 37, item 9): a vote's `score` is the
integer 1 or -1 (`true`, `"1"`, `1.0` are no vote), `top_k` and line numbers are integers (`true` is no count).
Through the SDK's in-process client, so the SDK's own argument validation runs."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from graph.mcp_server import MAX_SEARCH_RESULTS, AnsweredRun, LotsmanTools, ReadResult, SearchResult, build_server
from graph.settings import Settings


class RecordingTools(LotsmanTools):
    """The real input checks; the work recorded instead of done."""

    def __init__(self) -> None:
        super().__init__(Settings())
        self.remember("run-1", AnsweredRun(session="docs", question="q", answer="a"))
        self.votes: list[int] = []
        self.searches: list[int] = []
        self.reads: list[tuple[Any, Any]] = []

    def _record_vote(self, run_id: str, run: AnsweredRun, score: int, comment: str | None) -> str:
        self.votes.append(score)
        return "fb-1"

    async def search(self, query: str, session: str | None = None, top_k: int = 8, ref: str | None = None
                     ) -> SearchResult:
        from graph.mcp_server import check_top_k

        self.searches.append(check_top_k(top_k))
        return SearchResult(session="docs", relevant=True, gate="ok", passages=[])

    async def read(self, session: str | None, path: str, start_line: int, end_line: int, ref: str | None = None
                   ) -> ReadResult:
        self.reads.append((start_line, end_line))
        return ReadResult(session="docs", path=path, start_line=1, end_line=1, last_line=1, text="", missing_lines=[])


async def _call(tools: RecordingTools, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    async with Client(build_server(tools)) as client:
        result = await client.call_tool(name, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return result.is_error, text


@pytest.mark.parametrize("score", [1, -1])
async def test_a_vote_is_the_integer_1_or_minus_1(score: int) -> None:
    tools = RecordingTools()
    is_error, text = await _call(tools, "feedback", {"run_id": "run-1", "score": score})
    assert not is_error, text
    assert tools.votes == [score] and type(tools.votes[0]) is int


@pytest.mark.parametrize("score", [True, False, "1", "-1", 1.0, -1.0, 1.5, 0, 2, -2, None, [1], {"v": 1}],
                         ids=repr)
async def test_anything_else_is_no_vote(score: Any) -> None:
    tools = RecordingTools()
    is_error, text = await _call(tools, "feedback", {"run_id": "run-1", "score": score})
    assert is_error and tools.votes == [], text
    assert "score" in text and "\n" not in text, text


@pytest.mark.parametrize("top_k", [1, 8, MAX_SEARCH_RESULTS])
async def test_top_k_within_the_bound(top_k: int) -> None:
    tools = RecordingTools()
    is_error, text = await _call(tools, "search", {"query": "cors", "top_k": top_k})
    assert not is_error, text
    assert tools.searches == [top_k]


@pytest.mark.parametrize("top_k", [True, False, "3", 3.0, 2.5, 0, -1, MAX_SEARCH_RESULTS + 1, None], ids=repr)
async def test_top_k_anything_else_is_refused(top_k: Any) -> None:
    tools = RecordingTools()
    is_error, text = await _call(tools, "search", {"query": "cors", "top_k": top_k})
    assert is_error and tools.searches == [], text
    assert "top_k" in text and "\n" not in text, text


@pytest.mark.parametrize(("start", "end"), [(True, 2), (1, True), ("1", 2), (1.0, 2)], ids=repr)
async def test_line_numbers_are_integers(start: Any, end: Any) -> None:
    tools = RecordingTools()
    is_error, text = await _call(tools, "read", {"path": "a.md", "start_line": start, "end_line": end})
    assert is_error and tools.reads == [], text
    assert "_line" in text, text


async def test_the_schema_says_integer_and_the_bounds() -> None:
    async with Client(build_server(RecordingTools())) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    score = tools["feedback"].input_schema["properties"]["score"]
    assert score["type"] == "integer" and sorted(score["enum"]) == [-1, 1], score
    top_k = tools["search"].input_schema["properties"]["top_k"]
    assert (top_k["type"], top_k["minimum"], top_k["maximum"]) == ("integer", 1, MAX_SEARCH_RESULTS), top_k
