"""The MCP tools through the SDK's own client: `lotsman mcp` over stdio, and `/mcp` of a real `langgraph dev`
(what `lotsman serve` runs) over streamable HTTP, with and without a token; indexing is never open to anonymous
clients (issue 27, items 1 and 2)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from langgraph_sdk import get_client
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import SMALL_CORPUS, VENV_BIN, DevServer, running_dev_server

TOOLS = {"list_sessions", "ask", "search", "read", "feedback"}
TOKEN = "e2e-token-7f3a-mcp"  # LOTSMAN_AUTH_TOKEN needs 16 characters (issue 37 item 15)
QUESTION = "Как настроить CORS в приложении?"


def _stdio(env: dict[str, str], *args: str) -> Client:
    return Client(StdioServerParameters(command=str(VENV_BIN / "lotsman"), args=["mcp", *args], env=env),
                  read_timeout_seconds=120)


@asynccontextmanager
async def _http(url: str, token: str | None = None):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http), read_timeout_seconds=120) as client:
        yield client


def _lines(path: str) -> list[str]:
    return SMALL_CORPUS[path].rstrip("\n").split("\n")


async def _check_ask_cites_the_session_files(client: Client, session: str) -> list[dict[str, Any]]:
    result = await client.call_tool("ask", {"question": QUESTION, "session": session})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out is not None and out["abstained"] is False and out["session"] == session
    assert out["citations"], out
    for citation in out["citations"]:
        assert citation["path"] in SMALL_CORPUS, citation
        assert 1 <= citation["start_line"] <= citation["end_line"] <= len(_lines(citation["path"])), citation
    assert "docs/cors.md" in {c["path"] for c in out["citations"]}
    return out["citations"]


# --- stdio ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stdio_env(offline_env: Callable[..., dict[str, str]], small_session: str) -> dict[str, str]:
    return offline_env()


async def test_stdio_lists_four_tools_and_answers_with_citations_in_the_session(stdio_env: dict[str, str],
                                                                                small_session: str) -> None:
    async with _stdio(stdio_env) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == TOOLS

        sessions = (await client.call_tool("list_sessions", {})).structured_content
        assert sessions is not None
        assert small_session in {s["name"] for s in sessions["sessions"]}

        citations = await _check_ask_cites_the_session_files(client, small_session)

        # the lines a citation names, read back from the index
        first = citations[0]
        read = await client.call_tool("read", {"session": small_session, **first})
        assert not read.is_error, read.content
        got = read.structured_content
        assert got is not None
        expected = _lines(first["path"])[first["start_line"] - 1:first["end_line"]]
        assert got["text"].split("\n") == expected

        found = (await client.call_tool("search", {"query": "CORSMiddleware", "session": small_session,
                                                   "top_k": 3})).structured_content
        assert found is not None and 1 <= len(found["passages"]) <= 3
        assert all(p["path"] in SMALL_CORPUS and p["citation"].startswith(p["path"] + ":") for p in found["passages"])


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("ask", {"question": QUESTION, "session": "never-indexed-x"}, "no session 'never-indexed-x'"),
    ("ask", {"question": "   "}, "the question is empty"),
    ("ask", {"question": "Что " * 3000}, "characters long: send at most 8000"),
    ("read", {"path": "docs/cors.md", "start_line": 500, "end_line": 510}, "are outside docs/cors.md"),
    ("read", {"path": "/etc/passwd", "start_line": 1, "end_line": 5}, "etc/passwd is not in session"),
    ("read", {"path": "../../../etc/passwd", "start_line": 1, "end_line": 5}, "is not in session"),
    ("search", {"query": ""}, "the query is empty"),
], ids=["unknown-session", "empty-question", "oversized-question", "read-outside-file", "read-absolute-path",
        "read-dot-dot", "empty-query"])
async def test_stdio_bad_input_is_one_clear_tool_error(stdio_env: dict[str, str], small_session: str, tool: str,
                                                       arguments: dict[str, Any], message: str) -> None:
    if tool != "ask" or "session" not in arguments:
        arguments = {"session": small_session, **arguments}
    async with _stdio(stdio_env) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    [content] = result.content
    assert message in content.text, content.text
    assert "\n" not in content.text and "Traceback" not in content.text


async def test_stdio_session_flag_is_the_default_session(stdio_env: dict[str, str], small_session: str) -> None:
    async with _stdio(stdio_env, "--session", small_session) as client:
        read = await client.call_tool("read", {"path": "docs/cors.md", "start_line": 1, "end_line": 1})
    assert not read.is_error, read.content
    assert read.structured_content is not None
    assert read.structured_content["text"] == _lines("docs/cors.md")[0]


# --- streamable HTTP in `lotsman serve` (langgraph dev), no token configured -------------------------------------


@pytest.fixture(scope="module")
def open_server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory,
                small_session: str) -> Iterator[DevServer]:
    with running_dev_server(offline_env(LOTSMAN_EMBEDDER="use"), tmp_path_factory.mktemp("mcp-open")) as server:
        yield server


async def test_http_lists_four_tools_and_no_indexing_tool(open_server: DevServer, small_session: str) -> None:
    async with _http(open_server.url) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == TOOLS, "the server's own /mcp published lotsman_index (any folder of the server)"
        await _check_ask_cites_the_session_files(client, small_session)


@pytest.mark.parametrize("headers", [{}, {"x-auth-scheme": "langsmith"}, {"Authorization": "Bearer guess"}],
                         ids=["anonymous", "studio-header", "made-up-token"])
async def test_http_index_graph_is_refused_without_a_token(open_server: DevServer, small_corpus: Path, db,
                                                           small_session: str, headers: dict[str, str]) -> None:
    from stores.sessions import find_session

    session = f"mcp-steal-{uuid.uuid4().hex[:6]}"
    client = get_client(url=open_server.url, headers=headers)
    with pytest.raises(Exception, match="indexing is not open to anonymous clients"):
        await client.runs.wait(None, "lotsman_index", input={"path": str(small_corpus), "session": session})
    with pytest.raises(Exception, match="indexing is not open"):  # nor through an assistant of its own
        await client.assistants.create("lotsman_index", name="mine")
    with db.connection() as conn:
        assert find_session(conn, session) is None, "nothing was read or indexed"
    # asking stays open
    out = await client.runs.wait(None, "lotsman", input={"messages": [{"role": "human", "content": QUESTION}]},
                                 context={"rag_session_id": small_session})
    assert out["abstained"] is False


def test_http_mcp_refuses_a_rebound_host(open_server: DevServer) -> None:
    port = open_server.url.rsplit(":", 1)[1]
    response = httpx.post(f"{open_server.url}/mcp", json={}, headers={"Host": f"attacker.example:{port}"}, timeout=10)
    assert response.status_code == 403
    assert "is not this machine" in response.json()["error"]


# --- with LOTSMAN_AUTH_TOKEN set -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def token_server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory,
                 small_session: str) -> Iterator[DevServer]:
    env = offline_env(LOTSMAN_EMBEDDER="use", LOTSMAN_AUTH_TOKEN=TOKEN)
    with running_dev_server(env, tmp_path_factory.mktemp("mcp-token")) as server:
        yield server


async def test_token_server_refuses_anonymous_calls(token_server: DevServer, small_session: str) -> None:
    response = httpx.post(f"{token_server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"accept": "application/json, text/event-stream"}, timeout=10)
    assert response.status_code == 401 and "needs a token" in response.json()["error"]
    with pytest.raises(Exception):  # noqa: B017 - the SDK client cannot even initialize
        async with _http(token_server.url) as client:
            await client.list_tools()
    with pytest.raises(Exception, match="401"):
        await get_client(url=token_server.url).runs.wait(
            None, "lotsman", input={"messages": [{"role": "human", "content": QUESTION}]},
            context={"rag_session_id": small_session})
    assert httpx.get(f"{token_server.url}/ok", timeout=5).status_code == 200  # health checks stay open


async def test_token_server_serves_the_token_holder(token_server: DevServer, small_session: str,
                                                    small_corpus: Path, db) -> None:
    from stores.sessions import delete_session, find_session

    async with _http(token_server.url, TOKEN) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        await _check_ask_cites_the_session_files(client, small_session)
    session = f"mcp-token-{uuid.uuid4().hex[:6]}"
    sdk = get_client(url=token_server.url, headers={"Authorization": f"Bearer {TOKEN}"})
    out = await sdk.runs.wait(None, "lotsman_index", input={"path": str(small_corpus), "session": session})
    assert out["report"]["files_indexed"] == len(SMALL_CORPUS)
    with db.connection() as conn:
        assert find_session(conn, session) is not None
        delete_session(conn, session)
    # the SDK's (and agent-chat-ui's) api key header carries the token too
    keyed = get_client(url=token_server.url, api_key=TOKEN)
    answer = await keyed.runs.wait(None, "lotsman", input={"messages": [{"role": "human", "content": QUESTION}]},
                                   context={"rag_session_id": small_session})
    assert answer["abstained"] is False


# --- the same server in-process, on the real graph and database -----------------------------------------------------


@pytest.fixture
def in_process(pg_url: str, tmp_path: Path) -> Iterator[Callable[..., Client]]:
    from graph.mcp_server import LotsmanTools, build_server
    from graph.settings import Settings

    made: list[LotsmanTools] = []

    def make(**settings: Any) -> Client:
        tools = LotsmanTools(Settings(database_url=pg_url, data_dir=tmp_path, **settings))
        made.append(tools)
        return Client(build_server(tools))

    yield make
    for tools in made:
        tools.close()


async def test_a_follow_up_reads_its_history(in_process: Callable[..., Client], small_session: str) -> None:
    from tests.e2e.conftest import CORS_DISABLE_LINES, covers

    history = [{"role": "user", "content": QUESTION},
               {"role": "assistant", "content": "Добавьте CORSMiddleware (docs/cors.md:5-8)."}]
    async with in_process() as client:
        alone = (await client.call_tool("ask", {"question": "А как это отключить?", "session": small_session}))
        follow = (await client.call_tool("ask", {"question": "А как это отключить?", "session": small_session,
                                                 "history": history}))
    assert alone.structured_content is not None and follow.structured_content is not None
    assert alone.structured_content["abstained"] is True
    assert follow.structured_content["abstained"] is False
    assert covers(follow.structured_content["citations"], "docs/cors.md", CORS_DISABLE_LINES[0])


async def test_asked_questions_are_logged_as_mcp_when_logging_is_on(in_process: Callable[..., Client],
                                                                    small_session: str, db) -> None:
    question = f"Как настроить CORS? {uuid.uuid4().hex[:6]}"
    async with in_process(log_questions=True) as client:
        result = await client.call_tool("ask", {"question": question, "session": small_session})
    assert not result.is_error, result.content
    with db.connection() as conn:
        rows = conn.execute("SELECT source, run_id FROM rag_question_log WHERE question = %s", (question,)).fetchall()
    assert len(rows) == 1 and rows[0][0] == "mcp" and rows[0][1]


async def test_a_call_naming_no_session_reads_the_default_or_says_which_exist(
        in_process: Callable[..., Client], small_session: str, other_session: str) -> None:
    async with in_process(default_session="no-such-default") as client:  # several sessions, the default not one
        result = await client.call_tool("read", {"path": "docs/cors.md", "start_line": 1, "end_line": 2})
    assert result.is_error
    assert "session is required" in result.content[0].text and small_session in result.content[0].text
    async with in_process(default_session=small_session) as client:
        result = await client.call_tool("read", {"path": "docs/cors.md", "start_line": 1, "end_line": 2})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["session"] == small_session


@pytest.fixture(scope="module")
def tagged_sessions(db, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A git repository whose docs/guide.md changed between tags v1 and v2, each tag indexed into its session."""
    import subprocess

    from stores.embedders import FakeEmbeddings
    from stores.indexing.service import index_repository
    from stores.sessions import delete_session

    root = tmp_path_factory.mktemp("tagged-repo")
    (root / "docs").mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                       capture_output=True)

    git("init", "-q")
    for tag, text in (("v1", "# Guide\n\nThe first version of the guide says to restart the service.\n"),
                      ("v2", "# Guide\n\nThe second version of the guide says to reload the service.\n")):
        (root / "docs" / "guide.md").write_text(text, encoding="utf-8")
        git("add", "-A")
        git("commit", "-q", "-m", tag)
        git("tag", tag)
    names = (f"mcp-v1-{uuid.uuid4().hex[:6]}", f"mcp-v2-{uuid.uuid4().hex[:6]}")
    for name, tag in zip(names, ("v1", "v2"), strict=True):
        index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), ref=tag, parse_workers=0)
    yield names
    with db.connection() as conn:
        for name in names:
            delete_session(conn, name)


async def test_read_at_a_revision(in_process: Callable[..., Client], tagged_sessions: tuple[str, str]) -> None:
    v1, v2 = tagged_sessions
    async with in_process() as client:
        own = await client.call_tool("read", {"session": v1, "path": "docs/guide.md", "start_line": 3, "end_line": 3})
        other = await client.call_tool("read", {"session": v1, "ref": "v2", "path": "docs/guide.md",
                                                "start_line": 3, "end_line": 3})
        missing = await client.call_tool("read", {"session": v1, "ref": "v9", "path": "docs/guide.md",
                                                  "start_line": 3, "end_line": 3})
    assert own.structured_content is not None and "first version" in own.structured_content["text"]
    assert other.structured_content is not None and "second version" in other.structured_content["text"]
    assert other.structured_content["session"] == v2 and other.structured_content["commit"]
    assert missing.is_error and "no session is indexed from revision 'v9'" in missing.content[0].text
