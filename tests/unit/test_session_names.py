"""A session name (or revision) with a NUL byte, a control character or no end is one clear error wherever a
client gives it: the CLI, the MCP tools, the run context (issue 37, item 8). Before, a NUL reached PostgreSQL and
came back as "unexpected DataError"."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import pytest
from mcp import Client

from graph import cli
from graph.context import Context
from graph.mcp_server import LotsmanTools, build_server
from graph.names import MAX_NAME_CHARS, check_name
from graph.settings import Settings
from stores.errors import InvalidInputError, UsageError

GOOD = ["docs", "Документы v1.0", "a b", "fastapi-ru_2", "x" * MAX_NAME_CHARS]
BAD = [
    ("", "is empty"),
    ("   ", "is empty"),
    ("caf\udce9", r"not valid UTF-8 \(byte \\xe9\)"),
    ("a\x00b", r"holds the control character \\x00"),
    ("\x00", r"holds the control character \\x00"),
    ("a\nb", r"holds the control character \\n"),
    ("a\tb", r"holds the control character \\t"),
    ("red\x1b[31m", r"holds the control character \\x1b"),
    ("a\x9bb", r"holds the control character \\x9b"),
    ("invoice\u202egpj", r"holds the control character \\u202e"),
    ("x" * (MAX_NAME_CHARS + 1), f"is {MAX_NAME_CHARS + 1} characters long: at most {MAX_NAME_CHARS}"),
    ("x" * 1_000_000, f"is 1000000 characters long: at most {MAX_NAME_CHARS}"),
]
BAD_IDS = ["empty", "blank", "not-utf8", "nul", "only-nul", "newline", "tab", "esc", "c1-csi", "bidi", "too-long",
           "1mb"]


@pytest.mark.parametrize("name", GOOD)
def test_check_name_keeps_a_name(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(("name", "message"), BAD, ids=BAD_IDS)
def test_check_name_refuses(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        check_name(name)
    assert "\n" not in str(err.value) and len(str(err.value)) < 200
    assert str(err.value).startswith("the session name ")


# --- the CLI ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["ask", "q", "--session", "a\x1bb"],
    ["ask", "q", "--ref", "v1\nv2"],
    ["chat", "--session", "x" * 300],
    ["index", ".", "--session", "a\tb"],
    ["sessions", "--delete", "a\u202eb"],
], ids=["ask", "ask-ref", "chat-too-long", "index", "sessions-delete"])
def test_the_cli_refuses_them_in_the_parser(argv: list[str]) -> None:
    with pytest.raises(UsageError, match="holds the control character|characters long"):
        cli.build_parser().parse_args(argv)


def test_the_cli_names_a_ref_a_ref() -> None:
    with pytest.raises(UsageError, match="the ref holds the control character"):
        cli.build_parser().parse_args(["ask", "q", "--ref", "v1\x00"])


# --- the run context (what a LangGraph server client sends) -----------------------------------------------------


@pytest.mark.parametrize(("name", "message"), BAD[2:], ids=BAD_IDS[2:])
def test_the_run_context_refuses_them(name: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match="invalid run context: rag_session_id: ") as err:
        Context(rag_session_id=name)
    assert "\n" not in str(err.value) and len(str(err.value)) < 400, str(err.value)[:500]


@pytest.mark.parametrize("ref", ["v1\x00", "a\nb", "r" * 1_000_000])
def test_the_run_context_refuses_such_a_ref(ref: str) -> None:
    with pytest.raises(InvalidInputError, match="invalid run context: ref: ") as err:
        Context(ref=ref)
    assert len(str(err.value)) < 400, str(err.value)[:500]


def test_the_run_context_keeps_good_names() -> None:
    assert Context(rag_session_id="Документы v1.0", ref="v1.0").rag_session_id == "Документы v1.0"


# --- the MCP tools: refused before any database work ---------------------------------------------------------


class NoDatabase:
    """Deps whose database fails the test when used: the name must be refused before."""

    def database(self) -> Any:
        raise AssertionError("the database was reached")

    def close(self) -> None:
        pass


@contextmanager
def _never() -> Any:
    raise AssertionError("the database was reached")
    yield


@pytest.mark.parametrize(("tool", "arguments"), [
    ("ask", {"question": "q"}),
    ("search", {"query": "q"}),
    ("read", {"path": "a.md", "start_line": 1, "end_line": 2}),
])
@pytest.mark.parametrize(("field", "value", "message"), [
    ("session", "a\x00b", r"the session name holds the control character \x00"),
    ("session", "a\x1b[2Jb", r"the session name holds the control character \x1b"),
    ("session", "s" * 1_000_000, f"the session name is 1000000 characters long: at most {MAX_NAME_CHARS}"),
    ("ref", "v1\x00", r"the ref holds the control character \x00"),
    ("ref", "r" * 1_000_000, f"the ref is 1000000 characters long: at most {MAX_NAME_CHARS}"),
], ids=["session-nul", "session-esc", "session-1mb", "ref-nul", "ref-1mb"])
async def test_the_mcp_tools_refuse_them_before_the_database(tool: str, arguments: dict[str, Any], field: str,
                                                             value: str, message: str) -> None:
    tools = LotsmanTools(Settings(), deps=NoDatabase())  # type: ignore[arg-type]
    async with Client(build_server(tools)) as client:
        result = await client.call_tool(tool, {**arguments, field: value})
    assert result.is_error
    [content] = result.content
    assert message in content.text, content.text[:300]
    assert "DataError" not in content.text and len(content.text) < 300, content.text[:300]
