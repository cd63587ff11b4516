"""`lotsman mcp` as a raw stdio peer (issue 37, items 5 and 6): every line it cannot read gets a JSON-RPC error
and the server goes on serving; with the database down, a tool's error names no data folder, socket path or
`DATABASE_URL` part. No database is needed: the one these tests point at is down on purpose."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import VENV_BIN

DEADLINE_S = 20.0
"""How long a reply may take (the server answers a bad line at once; a hang is the defect)."""


def _closed_port() -> int:
    """A port nothing listens on (bound once, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CLOSED_PORT = _closed_port()
CLOSED_URL = f"postgresql://alice:s3cret@127.0.0.1:{CLOSED_PORT}/secretdb"


class StdioPeer:
    """A `lotsman mcp` subprocess spoken to line by line."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([str(VENV_BIN / "lotsman"), "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.buffer = b""

    def send(self, line: bytes | dict[str, Any]) -> None:
        raw = json.dumps(line).encode() if isinstance(line, dict) else line
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = DEADLINE_S) -> dict[str, Any]:
        """The next line the server writes, parsed; fails when none comes within `timeout`."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                pytest.fail(f"no reply within {timeout:.0f} s (the server hangs)")
            chunk = os.read(fd, 65536)
            if not chunk:
                pytest.fail(f"the server exited (code {self.proc.wait()}): {self.proc.stderr.read()!r}")  # type: ignore[union-attr]
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def initialize(self) -> None:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "probe", "version": "1"}}})
        assert "result" in self.reply()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _env(**extra: str) -> dict[str, str]:
    dropped = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LOTSMAN_DEBUG", "DATABASE_URL")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("GIGACHAT_")}
    env.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", PYTHONWARNINGS="ignore", **extra)
    return env


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[StdioPeer]:
    server = StdioPeer(_env(DATABASE_URL=CLOSED_URL, LOTSMAN_DATA_DIR=str(tmp_path / "data")))
    try:
        server.initialize()
        yield server
    finally:
        server.close()


PING = {"jsonrpc": "2.0", "id": 99, "method": "ping"}


@pytest.mark.parametrize(("line", "code", "reply_id"), [
    (b"not json", -32700, None),
    (b"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"ping\"", -32700, None),   # cut short
    (b"\xff\xfe{}", -32700, None),                                            # not UTF-8
    # a lone surrogate escape: JSON's grammar, but no Unicode text; the id is read back so the call ends
    (rb'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read", "arguments": '
     rb'{"path": "\ud800", "start_line": 1, "end_line": 1}}}', -32700, 7),
    (rb'{"jsonrpc": "2.0", "id": "s-1", "method": "ping", "params": {"x": "\udfff\ud800"}}', -32700, "s-1"),
    # JSON, but not a JSON-RPC request
    (b'{"jsonrpc": "2.0", "id": 8, "method": 3}', -32600, 8),
    (b"[1, 2]", -32600, None),
    (b'{"id": 9}', -32600, 9),
    (b"[" * 100_000 + b"]" * 100_000, -32700, None),
    (b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": ' + b"[" * 500 + b"]" * 500 + b"}}", -32700, 4),
    # a request whose id is no id: the SDK reads it as a notification, which it never answers
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
], ids=["not-json", "cut-short", "not-utf8", "lone-surrogate-in-arguments", "lone-surrogates-in-params",
        "method-not-a-string", "array", "no-method", "nested-100000-deep", "nested-500-deep", "id-null", "id-float"])
def test_a_bad_line_gets_an_error_and_the_server_goes_on(peer: StdioPeer, line: bytes, code: int,
                                                         reply_id: Any) -> None:
    peer.send(line)
    error = peer.reply()
    assert error["jsonrpc"] == "2.0" and error["id"] == reply_id, error
    assert error["error"]["code"] == code, error
    assert "\n" not in error["error"]["message"] and len(error["error"]["message"]) < 300, error
    peer.send(PING)
    assert peer.reply() == {"jsonrpc": "2.0", "id": 99, "result": {}}


def test_bad_lines_before_initialize_are_answered_too(tmp_path: Path) -> None:
    server = StdioPeer(_env(DATABASE_URL=CLOSED_URL, LOTSMAN_DATA_DIR=str(tmp_path / "data")))
    try:
        server.send(b"garbage")
        assert server.reply()["error"]["code"] == -32700
        server.initialize()
        server.send(PING)
        assert server.reply()["id"] == 99
    finally:
        server.close()


def test_a_huge_bad_line_gets_a_short_error(peer: StdioPeer) -> None:
    peer.send(b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"x": "' + b"y" * 1_000_000 + b'\\ud800"}}')
    error = peer.reply()
    assert error["id"] == 5 and len(json.dumps(error)) < 500, str(error)[:500]


# --- item 6: the database down, through MCP ---------------------------------------------------------------------

SECRETS = ("alice", "s3cret", "secretdb", "127.0.0.1", str(CLOSED_PORT), ".s.PGSQL")


def _tool_error(server: StdioPeer, name: str, arguments: dict[str, Any]) -> str:
    server.send({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    reply = server.reply(60)
    assert reply["id"] == 42 and reply["result"]["isError"] is True, reply
    [content] = reply["result"]["content"]
    return str(content["text"])


@pytest.mark.parametrize(("name", "arguments"), [
    ("list_sessions", {}),
    ("read", {"session": "docs", "path": "a.md", "start_line": 1, "end_line": 2}),
    ("search", {"session": "docs", "query": "cors"}),
])
def test_database_url_down_names_no_host_port_database_or_user(peer: StdioPeer, name: str,
                                                               arguments: dict[str, Any]) -> None:
    text = _tool_error(peer, name, arguments)
    assert not any(s in text for s in SECRETS), text
    assert "the database is not reachable: see the server's log" in text
    peer.close()
    assert peer.proc.stderr is not None
    assert "127.0.0.1" in peer.proc.stderr.read().decode()  # the server's log keeps the detail


def test_embedded_server_that_cannot_start_names_no_data_folder(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data folder's parent should be")
    data_dir = blocker / "lotsman-data"
    server = StdioPeer(_env(LOTSMAN_DATA_DIR=str(data_dir)))
    try:
        server.initialize()
        text = _tool_error(server, "list_sessions", {})
    finally:
        server.close()
    assert str(tmp_path) not in text and "not-a-dir" not in text, text
    assert "embedded PostgreSQL could not be started: see the server's log" in text
