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


# --- issue 37 item 12: the index graph's assistant is not an anonymous client's to change or delete ---------------


def _index_assistant_id(local: str, client: httpx.Client) -> str:
    found = client.post(f"{local}/assistants/search", json={"graph_id": "lotsman_index", "limit": 10})
    assert found.status_code == 200, found.text
    ids = [a["assistant_id"] for a in found.json()]
    assert ids, "the server made no assistant of lotsman_index"
    return str(ids[0])


@pytest.mark.parametrize(("method", "suffix", "body"), [
    ("PATCH", "", {"metadata": {"changed_by": "anonymous"}}),
    ("PATCH", "", {"config": {"configurable": {"path": "/"}}}),
    ("POST", "/latest", {"version": 1}),
    ("DELETE", "", None),
], ids=["patch-metadata", "patch-config", "set-latest", "delete"])
def test_anonymous_clients_may_not_change_or_delete_the_index_assistant(
        open_server: tuple[DevServer, int], method: str, suffix: str, body: dict | None) -> None:
    """The check read only `graph_id` in the body: a PATCH or DELETE naming the index assistant by its id
    carried none, and went through."""
    _, port = open_server
    local = f"http://127.0.0.1:{port}"
    with httpx.Client(timeout=30) as client:
        assistant = _index_assistant_id(local, client)
        for named in (assistant, assistant.upper(), f"{{{assistant}}}"):  # any spelling of its uuid
            refused = client.request(method, f"{local}/assistants/{named}{suffix}", json=body)
            assert refused.status_code == 403, (named, refused.text)
            assert "indexing is not open to anonymous clients" in refused.text
        by_graph = client.request(method, f"{local}/assistants/lotsman_index{suffix}", json=body)
        assert by_graph.status_code in (403, 422), by_graph.text  # the API takes no graph id here
        still = client.get(f"{local}/assistants/{assistant}")
        assert still.status_code == 200 and still.json()["graph_id"] == "lotsman_index"
        assert "changed_by" not in (still.json().get("metadata") or {})


def test_anonymous_clients_still_manage_assistants_of_the_asking_graph(open_server: tuple[DevServer, int]) -> None:
    _, port = open_server
    local = f"http://127.0.0.1:{port}"
    with httpx.Client(timeout=30) as client:
        made = client.post(f"{local}/assistants", json={"graph_id": "lotsman", "name": "mine"})
        assert made.status_code == 200, made.text
        mine = made.json()["assistant_id"]
        patched = client.patch(f"{local}/assistants/{mine}", json={"metadata": {"note": "renamed"}})
        assert patched.status_code == 200, patched.text
        moved = client.patch(f"{local}/assistants/{mine}", json={"graph_id": "lotsman_index"})
        assert moved.status_code == 403, moved.text
        assert client.delete(f"{local}/assistants/{mine}").status_code in (200, 204)
        assert client.delete(f"{local}/assistants/{mine}").status_code == 404  # gone: a 404, not a 403
