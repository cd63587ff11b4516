"""`bad_line_reply`: the JSON-RPC error answering a stdio line the SDK could not read (issue 37, item 5)."""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest

from graph.mcp_server import bad_line_reply


def _unreadable(line: str) -> Exception:
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # noqa: BLE001 - what the SDK's stdio reader passes on
        return exc
    raise AssertionError(f"the SDK reads {line!r}")


@pytest.mark.parametrize(("line", "code", "reply_id", "says"), [
    ("not json", -32700, None, "the line is not JSON"),
    ('{"jsonrpc": "2.0", "id": 1', -32700, None, "the line is not JSON"),
    ("\ufffd\ufffd{}", -32700, None, "the line is not JSON"),
    ('{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "\\ud800"}}', -32700, 7, "lone surrogate"),
    ('{"jsonrpc": "2.0", "id": "a", "method": "ping", "params": {"\\udc00": 1}}', -32700, "a", "lone surrogate"),
    ('{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', -32700, None, "lone surrogate"),
    ('{"jsonrpc": "2.0", "id": true, "method": "p", "x": "\\ud800"}', -32700, None, "lone surrogate"),
    ('{"jsonrpc": "2.0", "id": 8, "method": 3}', -32600, 8, "Invalid Request: not a JSON-RPC 2.0 message (method"),
    ("[1, 2]", -32600, None, "Invalid Request"),
    ('{"id": 9}', -32600, 9, "Invalid Request"),
    ('"just a string"', -32600, None, "Invalid Request"),
    # nested deeper than pydantic reads (~200) but not Python's json (~1000): the id is still read back
    ('{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": ' + "[" * 500 + "]" * 500 + "}}", -32700, 4,
     "recursion limit exceeded"),
    ("[" * 100_000 + "]" * 100_000, -32700, None, "nested too deeply"),
    ('{"id": 6, "x": ' + "[" * 5000 + '"\\ud800"' + "]" * 5000 + "}", -32700, None, "nested too deeply"),
])
def test_bad_line_reply(line: str, code: int, reply_id: Any, says: str) -> None:
    reply = bad_line_reply(_unreadable(line))
    assert reply is not None
    assert (reply.error.code, reply.id) == (code, reply_id)
    assert says in reply.error.message and "\n" not in reply.error.message and len(reply.error.message) < 300


def test_a_malformed_response_is_not_answered() -> None:
    # JSON-RPC answers no response: a broken one of the client's is logged, not replied to
    assert bad_line_reply(_unreadable('{"jsonrpc": "2.0", "id": 3, "result": 5}')) is None


def test_the_reply_stays_short_for_a_huge_line() -> None:
    reply = bad_line_reply(_unreadable('{"id": 1, "x": "' + "y" * 1_000_000 + '\\ud800"'))
    assert reply is not None and len(reply.model_dump_json()) < 400


@pytest.mark.parametrize("line", [
    '{"jsonrpc": "2.0", "id": null, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": [1], "method": "tools/list"}',
], ids=["id-null", "id-float", "id-array"])
def test_a_request_whose_id_is_no_id_is_answered(line: str) -> None:
    """The SDK reads these as notifications (it drops the unknown `id`), which its server never answers: the
    client waited for its timeout."""
    import anyio
    from mcp.shared.message import SessionMessage

    from graph.mcp_server import AnsweringBadLines

    parsed = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    notification = SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}', by_name=False))
    sent: list[Any] = []

    class Inner:
        items = [SessionMessage(parsed), notification]

        async def receive(self) -> Any:
            return self.items.pop(0)

    class Replies:
        async def send(self, message: Any) -> None:
            sent.append(message.message)

    async def main() -> Any:
        return await AnsweringBadLines(Inner(), Replies()).receive()

    passed = anyio.run(main)
    assert passed is notification  # the real notification goes on to the server, the bad request does not
    [reply] = sent
    assert (reply.error.code, reply.id) == (-32600, None)
    assert "id" in reply.error.message and "\n" not in reply.error.message
