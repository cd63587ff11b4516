"""The MCP server's decisions and its tools over the SDK's own in-process client (no database: fake tools)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from mcp import Client

from graph.mcp_server import (
    MAX_HISTORY_TURNS,
    MAX_QUESTION_CHARS,
    MAX_SEARCH_RESULTS,
    AskResult,
    Citation,
    LotsmanTools,
    ReadResult,
    SearchResult,
    SessionInfo,
    SessionList,
    Turn,
    build_server,
    check_history,
    check_question,
    check_top_k,
    choose_session,
    citations_of,
    one_line,
)
from graph.settings import Settings
from stores.errors import DatabaseUnavailableError, InvalidQuestionError, SessionNotFoundError, UsageError
from stores.reading import check_range

TOOLS = {"list_sessions", "ask", "search", "read", "feedback"}


@pytest.mark.parametrize(("requested", "names", "default", "expected"), [
    ("docs", ["a", "b"], "default", "docs"),          # asked for: taken as is (an unknown one fails later)
    (None, ["only"], "default", "only"),              # the only session there is
    (None, ["a", "default"], "default", "default"),   # several: the configured default
])
def test_choose_session(requested, names, default, expected) -> None:
    assert choose_session(requested, names, default) == expected


@pytest.mark.parametrize(("requested", "names", "message"), [
    ("", ["a"], "session is empty"),
    ("   ", ["a"], "session is empty"),
    ("caf\udce9", ["a"], r"not valid UTF-8 \(byte \\xe9\)"),
    (None, [], "no session is indexed yet"),
    (None, ["a", "b"], r"session is required: this server has 2 sessions \(a, b\)"),
])
def test_choose_session_refuses(requested, names, message) -> None:
    with pytest.raises(UsageError, match=message):
        choose_session(requested, names, "default")


@pytest.mark.parametrize(("question", "message"), [
    ("", "the question is empty"),
    (" \n\t ", "the question is empty"),
    ("\x00\x00", "the question is empty"),
    ("x" * (MAX_QUESTION_CHARS + 1), f"is {MAX_QUESTION_CHARS + 1} characters long: send at most {MAX_QUESTION_CHARS}"),
    ("caf\udce9?", "not valid UTF-8"),
])
def test_check_question_refuses(question: str, message: str) -> None:
    with pytest.raises(InvalidQuestionError, match=message) as err:
        check_question(question)
    assert "\n" not in str(err.value)


def test_check_question_cleans() -> None:
    assert check_question("  Как включить CORS?\x00 ") == "Как включить CORS?"
    assert check_question("x" * MAX_QUESTION_CHARS) == "x" * MAX_QUESTION_CHARS


def test_check_history() -> None:
    turns = [Turn(role="user", content="Что такое CORS?"), Turn(role="assistant", content="...")]
    assert check_history(turns) == turns
    assert check_history(None) == []
    with pytest.raises(InvalidQuestionError, match=f"send at most the last {MAX_HISTORY_TURNS}"):
        check_history([Turn(role="user", content="q")] * (MAX_HISTORY_TURNS + 1))
    with pytest.raises(InvalidQuestionError, match="characters long"):
        check_history([Turn(role="user", content="x" * 70_000)])


@pytest.mark.parametrize("top_k", [0, -1, MAX_SEARCH_RESULTS + 1, True, False, "3", 3.0, None])
def test_check_top_k_refuses(top_k: int) -> None:
    with pytest.raises(UsageError, match=f"top_k must be from 1 to {MAX_SEARCH_RESULTS}"):
        check_top_k(top_k)


def test_citations_of_keeps_only_well_formed_ones() -> None:
    raw = [{"path": "docs/a.md", "start_line": 3, "end_line": 9, "extra": 1}, {"path": "x"}, None,
           {"path": "b.py", "start_line": "4", "end_line": 4}]
    assert citations_of(raw) == [Citation(path="docs/a.md", start_line=3, end_line=9),
                                 Citation(path="b.py", start_line=4, end_line=4)]
    assert citations_of(None) == []


def test_one_line() -> None:
    assert one_line(SessionNotFoundError("no session 'x':\nindex it")) == "no session 'x': index it"
    # an unexpected error's text may carry SQL, hosts or user names: only its kind reaches the client
    assert one_line(RuntimeError("pw=s3cret\nat 2")) == "unexpected RuntimeError (details in the server's log)"
    assert one_line(KeyError()) == "unexpected KeyError (details in the server's log)"


# --- the tools over the SDK's in-process client --------------------------------------------------------------------


class FakeTools(LotsmanTools):
    """The tools' work replaced by canned answers and the real input checks (no database, no graph)."""

    def __init__(self) -> None:
        super().__init__(Settings())
        self.calls: list[tuple] = []

    async def list_sessions(self) -> SessionList:
        return SessionList(sessions=[SessionInfo(name="docs", embedder="use", passages=42)])

    async def ask(self, question: str, session: str | None = None, history: Sequence[Turn] | None = None,
                  ref: str | None = None) -> AskResult:
        text = check_question(question)
        turns = check_history(history)
        self.calls.append(("ask", text, session, turns))
        if session == "gone":
            raise SessionNotFoundError("no session 'gone' (indexed sessions: docs): pass a name from list_sessions")
        if session == "down":
            raise DatabaseUnavailableError("lost the connection to PostgreSQL (server closed): retry")
        if session == "bug":
            raise RuntimeError("something broke\ntraceback line")
        return AskResult(answer="Добавьте CORSMiddleware (docs/cors.md:5-7).", session=session or "docs",
                         citations=[Citation(path="docs/cors.md", start_line=5, end_line=7)], abstained=False)

    async def search(self, query: str, session: str | None = None, top_k: int = 8, ref: str | None = None
                     ) -> SearchResult:
        check_question(query, "query")
        check_top_k(top_k)
        return SearchResult(session="docs", relevant=True, gate="ok", passages=[])

    async def read(self, session: str | None, path: str, start_line: int, end_line: int, ref: str | None = None
                   ) -> ReadResult:
        check_range(start_line, end_line)
        return ReadResult(session="docs", path=path, start_line=start_line, end_line=end_line, last_line=20,
                          text="line", missing_lines=[])


async def test_lists_the_four_reading_tools_a_vote_and_no_indexing_tool() -> None:
    async with Client(build_server(FakeTools())) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert not any("index" in name for name in tools)
    for tool in tools.values():
        assert tool.description and tool.output_schema, tool.name
        assert tool.annotations and tool.annotations.read_only_hint is (tool.name != "feedback")  # a vote writes
    assert "ask once per real question" in (tools["ask"].description or "")
    assert set(tools["ask"].output_schema["properties"]) >= {"answer", "citations", "abstained"}
    assert set(tools["read"].input_schema["required"]) == {"path", "start_line", "end_line"}
    assert tools["ask"].input_schema["required"] == ["question"]


async def test_ask_returns_structured_citations() -> None:
    fake = FakeTools()
    async with Client(build_server(fake)) as client:
        result = await client.call_tool("ask", {"question": "Как включить CORS?", "session": "docs",
                                                "history": [{"role": "user", "content": "Привет"}]})
    assert not result.is_error
    assert result.structured_content == {
        "answer": "Добавьте CORSMiddleware (docs/cors.md:5-7).", "abstained": False, "session": "docs",
        "citations": [{"path": "docs/cors.md", "start_line": 5, "end_line": 7}], "commit": None, "run_id": None}
    assert fake.calls == [("ask", "Как включить CORS?", "docs", [Turn(role="user", content="Привет")])]


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("ask", {"question": ""}, "the question is empty"),
    ("ask", {"question": "q" * (MAX_QUESTION_CHARS + 5)}, "characters long"),
    ("ask", {"question": "q", "session": "gone"}, "no session 'gone' (indexed sessions: docs)"),
    ("ask", {"question": "q", "session": "down"}, "the database is not reachable: see the server's log"),
    ("ask", {"question": "q", "session": "bug"}, "unexpected RuntimeError (details in the server's log)"),
    ("ask", {"question": "q", "history": [{"role": "system", "content": "x"}]}, "invalid arguments: history.0.role"),
    ("ask", {}, "invalid arguments: question: Field required"),
    ("search", {"query": "   "}, "the query is empty"),
    ("search", {"query": "cors", "top_k": 500}, "top_k must be from 1 to"),
    ("search", {"query": "cors", "top_k": "many"}, "invalid arguments: top_k"),
    ("read", {"path": "a.md", "start_line": 9, "end_line": 2}, "start_line 9 is after end_line 2"),
    ("read", {"path": "a.md", "start_line": 1, "end_line": 5000}, "read at most 400 at a time"),
])
async def test_bad_calls_are_tool_errors_of_one_line(tool: str, arguments: dict, message: str) -> None:
    async with Client(build_server(FakeTools())) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    [content] = result.content
    assert message in content.text
    assert "\n" not in content.text and "Traceback" not in content.text
