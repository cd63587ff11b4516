"""Issue 37 items 6 and 16 on the web endpoints: a database that is down is a 503 whose one line names neither the
data folder, the socket path nor `DATABASE_URL`'s host, port, database and user; after `lotsman db stop` a
request does not start the embedded server again, it says so."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

import stores.database as database
from graph.settings import get_settings
from graph.web import StoreBackend, routes
from stores.database import Database, embedded_status, start_embedded, stop_embedded

pytestmark = pytest.mark.integration

GOOD_VOTE = {"session": "docs", "score": 1, "question": "Как настроить CORS?"}
ENDPOINTS = [("GET", "/lotsman/api/sessions", None),
             ("GET", "/lotsman/api/read", {"session": "docs", "path": "a.md", "start_line": 1, "end_line": 2}),
             ("POST", "/lotsman/api/feedback", None)]


def _ask_every_endpoint(client: TestClient) -> list[tuple[int, str]]:
    out = []
    for method, url, params in ENDPOINTS:
        res = client.request(method, url, params=params, json=GOOD_VOTE if method == "POST" else None)
        out.append((res.status_code, res.json()["error"]))
    return out


def test_an_unreachable_database_url_is_a_503_without_its_whereabouts() -> None:
    url = "postgresql://alice-admin:pw-9931@127.0.0.1:9/payroll_db?connect_timeout=1"
    client = TestClient(Starlette(routes=routes(StoreBackend(lambda: Database(url, max_size=2)), lambda: None)))
    for status, error in _ask_every_endpoint(client):
        assert status == 503, error
        assert "\n" not in error and error.startswith("the database is not reachable"), error
        for secret in ("alice-admin", "pw-9931", "127.0.0.1", "payroll_db", ":9", "postgresql://"):
            assert secret not in error, (secret, error)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="lotsman-stop-"))
    yield base
    stop_embedded(base)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def embedded_settings(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Iterator[None]:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LOTSMAN_DATA_DIR", str(data_dir))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_a_stopped_embedded_server_stays_stopped(monkeypatch: pytest.MonkeyPatch, embedded_settings: None,
                                                data_dir: Path) -> None:
    start_embedded(data_dir)
    assert stop_embedded(data_dir)  # `lotsman db stop`
    monkeypatch.setattr(database, "_keep_stopped", False)
    database.keep_stopped_after_stop()  # what the server process does when it loads (graph.http_app)

    client = TestClient(Starlette(routes=routes(StoreBackend(), lambda: None)))
    for status, error in _ask_every_endpoint(client):
        assert status == 503, error
        assert error == ("the database was stopped with `lotsman db stop`; run `lotsman db start` on the server"), error
        assert str(data_dir) not in error
    assert not embedded_status(data_dir).running, "a request started the stopped server again"

    monkeypatch.setattr(database, "_keep_stopped", False)  # `lotsman db start` runs in its own process
    start_embedded(data_dir)
    database.keep_stopped_after_stop()
    assert client.get("/lotsman/api/sessions").status_code == 200  # started on purpose: the page works again


def test_a_server_stopped_under_an_open_pool_says_so_too(monkeypatch: pytest.MonkeyPatch, embedded_settings: None,
                                                        data_dir: Path) -> None:
    monkeypatch.setattr(database, "_keep_stopped", False)
    database.keep_stopped_after_stop()
    start_embedded(data_dir)
    client = TestClient(Starlette(routes=routes(StoreBackend(), lambda: None)))
    assert client.get("/lotsman/api/sessions").status_code == 200  # the page's pool is open
    stop_embedded(data_dir)
    res = client.get("/lotsman/api/sessions")
    assert res.status_code == 503 and "stopped with `lotsman db stop`" in res.json()["error"], res.text
    assert str(data_dir) not in res.text and ".s.PGSQL" not in res.text
    assert not embedded_status(data_dir).running
