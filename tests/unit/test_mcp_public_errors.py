"""What a remote client reads when the database is down (issue 37, item 6): no data folder, socket path or
`DATABASE_URL` part; the actionable sentence only. `public_message` is the one function the MCP tools and the
HTTP API share (graph/errors.py)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool
import pytest
from mcp import Client

from graph.errors import DATABASE_DOWN, EMBEDDED_DOWN, NO_PGVECTOR, public_message, redact, shown
from graph.mcp_server import LotsmanTools, build_server
from graph.settings import Settings
from stores.errors import (
    DatabaseUnavailableError,
    EmbeddedServerError,
    PgvectorMissingError,
    SessionNotFoundError,
    database_lost,
)

SECRETS = ("/srv/lotsman/.data", ".s.PGSQL", "/tmp/pgsock", "alice", "10.1.2.3", "5433", "secretdb", "s3cret")

SOCKET_REFUSED = ('connection failed: connection to server on socket "/tmp/pgsock/.s.PGSQL.5432" failed: '
                  "No such file or directory\n\tIs the server running locally and accepting connections?")
TCP_REFUSED = ('connection failed: connection to server at "10.1.2.3", port 5433 failed: FATAL:  password '
               'authentication failed for user "alice"')

DOWN = [
    DatabaseUnavailableError("cannot connect to PostgreSQL at postgresql://alice@10.1.2.3:5433/secretdb: "
                             f"{TCP_REFUSED}. Check DATABASE_URL, or unset it to use the embedded server"),
    DatabaseUnavailableError("invalid DATABASE_URL (postgresql://alice@10.1.2.3:5433/secretdb): check its syntax"),
    psycopg.OperationalError(SOCKET_REFUSED),
    psycopg.OperationalError(TCP_REFUSED),
    psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec (host=10.1.2.3 dbname=secretdb)"),
]
DOWN_IDS = ["cannot-connect-dsn", "invalid-url", "lost-socket", "lost-tcp", "pool-timeout"]


@pytest.mark.parametrize("exc", DOWN, ids=DOWN_IDS)
def test_a_database_down_is_the_fixed_sentence(exc: BaseException) -> None:
    assert public_message(exc) == DATABASE_DOWN
    assert "server's log" in DATABASE_DOWN


def test_the_embedded_server_and_pgvector_failures_name_no_folder() -> None:
    started = EmbeddedServerError("could not start the embedded PostgreSQL in /srv/lotsman/.data/pg: "
                                  "FileNotFoundError: [Errno 2] No such file or directory: '/srv/lotsman'")
    assert public_message(started) == EMBEDDED_DOWN
    assert public_message(PgvectorMissingError("pgvector is available but could not be enabled (permission "
                                               "denied for database secretdb)")) == NO_PGVECTOR
    # database_lost's own message quotes libpq's first line (the socket path): never what a client reads
    lost = database_lost(psycopg.OperationalError(SOCKET_REFUSED))
    assert lost is not None and ".s.PGSQL" in str(lost)
    assert public_message(lost) == DATABASE_DOWN


def test_our_other_errors_keep_their_text_on_one_line() -> None:
    assert public_message(SessionNotFoundError("no session 'x':\nindex it")) == "no session 'x': index it"
    assert public_message(RuntimeError("pw=s3cret host=10.1.2.3")) == \
        "unexpected RuntimeError (details in the server's log)"
    # a connection URL or parameter that slipped into one of our messages is redacted all the same
    leaky = SessionNotFoundError("no session 'x' at postgresql://alice:s3cret@10.1.2.3:5433/secretdb (host=10.1.2.3)")
    assert not any(s in public_message(leaky) for s in SECRETS), public_message(leaky)


def test_redact() -> None:
    out = redact(f"lost: {SOCKET_REFUSED} / {TCP_REFUSED} / user=alice port = 5433 dbname='secretdb'")
    assert not any(s in out for s in ("/tmp/pgsock", "10.1.2.3", "5433", "secretdb", "user=alice")), out


@pytest.mark.parametrize(("value", "expected"), [
    ("docs", "docs"),
    ("a\x00b\nc", "a\\x00b\\nc"),
    ("x" * 80, "x" * 80),
    ("x" * 81, "x" * 80 + "…"),
    ("r" * 1_000_000, "r" * 80 + "…"),
])
def test_shown(value: str, expected: str) -> None:
    assert shown(value) == expected


# --- through the MCP tools: the real LotsmanTools over a database that is down -----------------------------------


class DownDatabase:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @contextmanager
    def connection(self) -> Any:
        raise self.exc
        yield


class DownDeps:
    """`GraphDeps` whose database is down: building the pool failed, or a connection is lost."""

    def __init__(self, exc: BaseException, *, at_build: bool) -> None:
        self.exc, self.at_build = exc, at_build

    def database(self) -> DownDatabase:
        if self.at_build:
            raise self.exc
        return DownDatabase(self.exc)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("at_build", [True, False], ids=["pool-build", "connection"])
@pytest.mark.parametrize("exc", [*DOWN, EmbeddedServerError("could not start the embedded PostgreSQL in "
                                                            "/srv/lotsman/.data/pg: permission denied")],
                         ids=[*DOWN_IDS, "embedded"])
@pytest.mark.parametrize(("tool", "arguments"), [
    ("list_sessions", {}),
    ("read", {"path": "a.md", "start_line": 1, "end_line": 2, "session": "docs"}),
    ("feedback", {"run_id": "r1", "score": 1}),
])
async def test_mcp_tools_name_no_database_detail(exc: BaseException, at_build: bool, tool: str,
                                                 arguments: dict[str, Any]) -> None:
    tools = LotsmanTools(Settings(), deps=DownDeps(exc, at_build=at_build))  # type: ignore[arg-type]
    if tool == "feedback":
        from graph.mcp_server import AnsweredRun

        tools.remember("r1", AnsweredRun(session="docs", question="q", answer="a"))
    async with Client(build_server(tools)) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    [content] = result.content
    assert not any(s in content.text for s in SECRETS), content.text
    assert "see the server's log" in content.text and "\n" not in content.text


# --- issue 37, item 10: what MCP echoes of a user's value is short ---------------------------------------------


def test_public_message_shortens_a_long_echo() -> None:
    from stores.errors import UsageError

    path = "a/" + "b" * 998
    message = public_message(UsageError(f"{path} is not in session 'docs': use a path as `search` gives it"))
    assert message == f"{path[:80]}… is not in session 'docs': use a path as `search` gives it"
    quoted = public_message(SessionNotFoundError(f"no session '{'s' * 500}' (indexed sessions: docs)"))
    assert quoted == f"no session '{'s' * 80}…' (indexed sessions: docs)"
    assert len(public_message(SessionNotFoundError("x " * 5000))) <= 1001  # many short words: cut as a whole


class EchoingTools(LotsmanTools):
    """A stores error that quotes the user's path, as `read_indexed_lines` does."""

    async def read(self, session: str | None, path: str, start_line: int, end_line: int, ref: str | None = None
                   ) -> Any:
        from stores.errors import UsageError

        raise UsageError(f"{path} is not in session 'docs': use a path as `search` or a citation gives it")


@pytest.mark.parametrize(("tool", "arguments", "echo"), [
    ("read", {"path": "p" * 1000, "start_line": 1, "end_line": 2}, "p" * 80 + "…"),
    ("feedback", {"run_id": "r" * 1_000_000, "score": 1}, "r" * 80 + "…"),
    ("search", {"query": "q", "top_k": "k" * 1_000_000}, "'" + "k" * 79 + "…"),
    ("feedback", {"run_id": "r1", "score": "s" * 1_000_000}, "'" + "s" * 79 + "…"),
    ("feedback", {"run_id": "r1\x1b[2J\n", "score": 1}, "r1\\x1b[2J"),
], ids=["read-path", "run-id", "top-k", "score", "run-id-control-chars"])
async def test_mcp_errors_echo_at_most_80_characters_of_a_value(tool: str, arguments: dict[str, Any],
                                                                echo: str) -> None:
    async with Client(build_server(EchoingTools(Settings()))) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    [content] = result.content
    assert echo in content.text, content.text[:400]
    assert len(content.text) < 400 and "\n" not in content.text and "\x1b" not in content.text, content.text[:400]


async def test_an_unknown_tool_name_is_echoed_short() -> None:
    async with Client(build_server(EchoingTools(Settings()))) as client:
        result = await client.call_tool("x" * 1_000_000 + "\x1b[2J", {})
    assert result.is_error
    [content] = result.content
    assert content.text == "Unknown tool: " + "x" * 80 + "…", content.text[:200]
