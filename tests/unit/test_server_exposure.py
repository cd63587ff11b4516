"""A server other machines can reach is never open without a token (graph/server_auth.py, graph/http_app.py,
graph/cli_serve.py): `lotsman serve --host 0.0.0.0` refuses to start without LOTSMAN_AUTH_TOKEN (or an explicit
`--insecure-no-auth`), and a server started another way (`langgraph dev --host 0.0.0.0`, a container) refuses
anonymous requests that arrive on a non-loopback address. On loopback without a token everything stays open:
that is one user on their own machine (`lotsman assistants create` must keep working)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

import graph.cli as cli
from graph.http_app import OriginGuard
from graph.server_auth import exposure_problem, serve_problem
from tests.unit.test_settings_env import clean_env  # noqa: F401 - autouse: only the variables a test sets


@pytest.mark.parametrize(("host", "token", "insecure", "refused"), [
    ("127.0.0.1", False, False, False),
    ("127.0.0.2", False, False, False),
    ("localhost", False, False, False),
    ("::1", False, False, False),
    ("[::1]", False, False, False),
    ("0.0.0.0", False, False, True),
    ("::", False, False, True),
    ("192.0.2.2", False, False, True),
    ("fd00::2", False, False, True),
    ("lotsman.example", False, False, True),  # a name may resolve to anything: judged as reachable
    ("0.0.0.0", True, False, False),
    ("0.0.0.0", False, True, False),
    ("192.0.2.2", True, True, False),
])
def test_serve_refuses_a_reachable_host_without_a_token(host: str, token: bool, insecure: bool,
                                                        refused: bool) -> None:
    problem = serve_problem(host, token=token, insecure=insecure)
    assert (problem is not None) == refused, problem
    if problem:
        assert "LOTSMAN_AUTH_TOKEN" in problem and "--insecure-no-auth" in problem and "\n" not in problem


@pytest.mark.parametrize(("local", "token", "insecure", "refused"), [
    ("127.0.0.1", False, False, False),
    ("::1", False, False, False),
    ("::ffff:127.0.0.1", False, False, False),
    (None, False, False, False),           # a Unix socket: its file's permissions guard it
    ("testserver", False, False, False),   # not a socket address (an in-process test client)
    ("192.0.2.2", False, False, True),
    ("0.0.0.0", False, False, True),
    ("fd00::2", False, False, True),
    ("192.0.2.2", True, False, False),     # the token is checked by the server's auth
    ("192.0.2.2", False, True, False),     # LOTSMAN_INSECURE_NO_AUTH: the operator chose an open server
])
def test_a_request_on_a_reachable_address_without_a_token_is_refused(local: str | None, token: bool,
                                                                    insecure: bool, refused: bool) -> None:
    problem = exposure_problem(local, token=token, insecure=insecure)
    assert (problem is not None) == refused, problem


async def call(guard: OriginGuard, path: str, local: str, method: str = "POST") -> tuple[int, dict[str, Any] | None]:
    """One request through the guard over ASGI, arriving on `local`; returns (status, JSON body of a refusal)."""
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guard.app = app
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "server": (local, 2024), "client": ("192.0.2.9", 5000),
             "headers": [(b"host", f"{local}:2024".encode())]}
    await guard(scope, receive, send)
    status = sent[0]["status"]
    body = next((m["body"] for m in sent if m["type"] == "http.response.body"), b"")
    return status, (json.loads(body) if status != 200 else None)


@pytest.mark.parametrize(("path", "method"), [
    ("/threads", "POST"), ("/assistants", "POST"), ("/assistants/x", "DELETE"), ("/mcp", "POST"),
    ("/lotsman/api/sessions", "GET"),
])
async def test_the_guard_refuses_anonymous_requests_from_other_machines(path: str, method: str) -> None:
    status, body = await call(OriginGuard(None, open_beyond_loopback=False), path, "192.0.2.2", method)  # type: ignore[arg-type]
    assert status == 403 and body is not None
    assert body["error"].startswith("this server is reachable from other machines without LOTSMAN_AUTH_TOKEN")


async def test_the_guard_lets_health_checks_and_loopback_through() -> None:
    guard = OriginGuard(None, open_beyond_loopback=False)  # type: ignore[arg-type]
    assert (await call(guard, "/ok", "192.0.2.2", "GET"))[0] == 200, "a container's health check"
    assert (await call(guard, "/threads", "127.0.0.1"))[0] == 200, "one user on their own machine"
    opened = OriginGuard(None, open_beyond_loopback=True)  # type: ignore[arg-type]
    assert (await call(opened, "/threads", "192.0.2.2"))[0] == 200, "a token (or the explicit opt-out) is set"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """`lotsman serve` records the server it would start instead of starting it (before the rule, it started
    one open to the network)."""
    started: list[list[str]] = []

    def run(cmd: list[str], **_: Any) -> int:
        started.append(cmd)
        return 0

    monkeypatch.setattr("graph.cli_serve.run_process_group", run)
    return started


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_lotsman_serve_on_all_addresses_without_a_token_is_one_line(capsys: pytest.CaptureFixture[str],
                                                                    no_server: list[list[str]], host: str) -> None:
    assert cli.main(["serve", "--host", host, "--port", str(free_port())]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --host {host} makes the server reachable from other "
                                               "machines and LOTSMAN_AUTH_TOKEN is not set"), err
    assert no_server == []


@pytest.mark.parametrize(("argv", "env", "open_env"), [
    (["serve", "--host", "0.0.0.0", "--insecure-no-auth"], {}, "true"),
    (["serve", "--host", "0.0.0.0"], {"LOTSMAN_INSECURE_NO_AUTH": "true"}, "true"),
    (["serve", "--host", "0.0.0.0"], {"LOTSMAN_AUTH_TOKEN": "s3cret-s3cret-s3cret"}, None),
    (["serve"], {}, None),  # 127.0.0.1: one user on their own machine
], ids=["flag", "env", "token", "loopback"])
def test_lotsman_serve_starts_with_a_token_an_explicit_opt_out_or_on_loopback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_server: list[list[str]],
        argv: list[str], env: dict[str, str], open_env: str | None) -> None:
    captured: list[dict[str, str]] = []

    def run(cmd: list[str], *, cwd: Any, env: dict[str, str]) -> int:
        captured.append(env)
        return 0

    monkeypatch.setattr("graph.cli_serve.run_process_group", run)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli.main([*argv, "--port", str(free_port())]) == 0, capsys.readouterr().err
    assert captured[0].get("LOTSMAN_INSECURE_NO_AUTH") == open_env
    if open_env:
        assert "anyone who reaches the port may ask" in capsys.readouterr().err
