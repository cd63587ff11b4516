"""A real `langgraph dev --host 0.0.0.0` without LOTSMAN_AUTH_TOKEN (started directly, not by `lotsman serve`,
which refuses that): requests from other machines are refused on every route but the health check, and this
machine keeps the open single-user server (`lotsman assistants create` works)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.e2e.conftest import VENV_BIN, DevServer, _stop, _wait_ready


def reachable_address() -> str:
    """This machine's address on its network (what another machine would connect to)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.254", 9))  # no packet is sent: this only picks the outgoing interface
            address = sock.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if address.startswith("127."):
        pytest.skip("this machine has no address besides loopback")
    return str(address)


@pytest.fixture(scope="module")
def open_server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[DevServer, int]]:
    address = reachable_address()
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        port = sock.getsockname()[1]
    env = offline_env(LOTSMAN_EMBEDDER="fake")
    env.pop("LOTSMAN_AUTH_TOKEN", None)
    env.pop("LOTSMAN_INSECURE_NO_AUTH", None)
    log = tmp_path_factory.mktemp("exposed") / "server.log"
    cmd = [str(VENV_BIN / "langgraph"), "dev", "--no-browser", "--no-reload", "--host", "0.0.0.0", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=VENV_BIN.parents[1], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = DevServer(proc, f"http://{address}:{port}", log)
    try:
        _wait_ready(server)  # /ok answers on every address: health checks carry no token
        yield server, port
    finally:
        _stop(proc)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/threads", {}),
    ("POST", "/assistants", {"graph_id": "lotsman", "name": "from another machine"}),
    ("POST", "/assistants/search", {}),
    ("GET", "/lotsman/api/sessions", None),
    ("GET", "/lotsman/", None),
])
def test_other_machines_are_refused_this_one_is_not(open_server: tuple[DevServer, int], method: str, path: str,
                                                    body: dict | None) -> None:
    server, port = open_server
    with httpx.Client(timeout=30) as client:
        remote = client.request(method, f"{server.url}{path}", json=body)
        assert remote.status_code == 403, remote.text
        assert remote.json()["error"].startswith("this server is reachable from other machines without "
                                                 "LOTSMAN_AUTH_TOKEN")
        local = client.request(method, f"http://127.0.0.1:{port}{path}", json=body)
        assert local.status_code < 400, local.text


def test_lotsman_assistants_create_works_on_this_machine(open_server: tuple[DevServer, int], small_session: str,
                                                         offline_env: Callable[..., dict[str, str]]) -> None:
    server, port = open_server
    made = subprocess.run([str(VENV_BIN / "lotsman"), "assistants", "create", "--session", small_session, "--url",
                           f"http://127.0.0.1:{port}"], capture_output=True, text=True, env=offline_env(),
                          timeout=120)
    assert made.returncode == 0, made.stderr
    refused = subprocess.run([str(VENV_BIN / "lotsman"), "assistants", "create", "--session", small_session, "--url",
                              server.url], capture_output=True, text=True, env=offline_env(), timeout=120)
    assert refused.returncode != 0 and "refused the request (403)" in refused.stderr, refused.stderr
    assert "LOTSMAN_AUTH_TOKEN" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
