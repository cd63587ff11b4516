"""A real `langgraph dev` on a loopback address refuses pages of other sites on every route (the LangGraph API
answers every origin by CORS: before the guard, any page the user visited could list the threads and
assistants and ask the graph through their browser)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.e2e.conftest import DevServer, running_dev_server


@pytest.fixture(scope="module")
def server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[DevServer]:
    with running_dev_server(offline_env(LOTSMAN_EMBEDDER="fake"), tmp_path_factory.mktemp("origin-guard")) as s:
        yield s


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/assistants/search", {}),
    ("POST", "/threads/search", {}),
    ("POST", "/threads", {}),
    ("GET", "/lotsman/api/sessions", None),
])
def test_a_foreign_page_is_refused_and_this_machines_pages_are_not(server: DevServer, method: str, path: str,
                                                                   body: dict | None) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        own = client.request(method, path, json=body, headers={"Origin": "http://localhost:3000"})
        assert own.status_code < 400, own.text
        foreign = client.request(method, path, json=body, headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403, foreign.text
        rebound = client.request(method, path, json=body, headers={"Host": "evil.example"})
        assert rebound.status_code == 403, rebound.text
        studio = client.request(method, path, json=body, headers={"Origin": "https://smith.langchain.com"})
        assert studio.status_code < 400, studio.text  # LangGraph Studio is allowed by default
