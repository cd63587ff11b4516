"""Issue 37 item 16 on a real `langgraph dev`: `lotsman db stop` is not undone by the web page's next request (nor
by a question): the server answers 503 with what to do, and the database stays stopped until `lotsman db start`."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import VENV_BIN, DevServer, running_dev_server

STOPPED = "the database was stopped with `lotsman db stop`; run `lotsman db start` on the server"


@pytest.fixture(scope="module")
def embedded_env(offline_env: Callable[..., dict[str, str]]) -> Iterator[dict[str, str]]:
    data_dir = Path(tempfile.mkdtemp(prefix="lotsman-e2e-stop-"))
    env = offline_env(LOTSMAN_DATA_DIR=str(data_dir), LOTSMAN_EMBEDDER="fake")
    env.pop("DATABASE_URL")
    env.pop("LOTSMAN_AUTH_TOKEN", None)
    yield env
    subprocess.run([str(VENV_BIN / "lotsman"), "db", "stop"], env=env, capture_output=True, timeout=120)
    shutil.rmtree(data_dir, ignore_errors=True)


def _db(env: dict[str, str], action: str) -> str:
    done = subprocess.run([str(VENV_BIN / "lotsman"), "db", action], env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def server(embedded_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(embedded_env, tmp_path_factory.mktemp("db-stop")) as running:
        yield running


def _wait_running(data_dir: Path) -> None:
    from stores.database import embedded_status

    deadline = time.monotonic() + 120
    while True:
        try:
            if embedded_status(data_dir).running:
                return
        except AssertionError:  # pgserver reads initdb's postmaster.pid (7 lines, not 8) while it is written
            pass
        assert time.monotonic() < deadline, "the server did not start its database"
        time.sleep(0.5)


def test_requests_after_db_stop_do_not_start_the_database(server: DevServer, embedded_env: dict[str, str]) -> None:
    _wait_running(Path(embedded_env["LOTSMAN_DATA_DIR"]))  # the server warms its MCP tools up: that starts it
    with httpx.Client(base_url=server.url, timeout=60) as client:
        first = client.get("/lotsman/api/sessions")
        assert first.status_code == 200, f"the page works while the database runs: {first.text}"
        _db(embedded_env, "stop")
        for _ in range(2):
            res = client.get("/lotsman/api/sessions")
            assert res.status_code == 503 and res.json() == {"error": STOPPED}, res.text
        run = client.post("/runs/wait", json={"assistant_id": "lotsman", "context": {"rag_session_id": "x"},
                                              "input": {"messages": [{"role": "human", "content": "Как?"}]}})
        assert STOPPED in run.text, run.text  # a question does not start it either
        assert embedded_env["LOTSMAN_DATA_DIR"] not in run.text
        assert "running: False" in _db(embedded_env, "status")

        _db(embedded_env, "start")  # started on purpose: the page works again
        assert client.get("/lotsman/api/sessions").status_code == 200
