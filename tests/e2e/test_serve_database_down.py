"""Issue 37 item 6 on a real `langgraph dev` whose DATABASE_URL points nowhere: what HTTP clients read (the web
endpoints, a run of the graph) names neither the database's host, port, name and user nor the data folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.e2e.conftest import DevServer, running_dev_server

URL = "postgresql://alice-admin:pw-9931@127.0.0.1:9/payroll_db?connect_timeout=2"
SECRETS = ("alice-admin", "pw-9931", "127.0.0.1:9", "payroll_db", "port 9", "postgresql://")


@pytest.fixture(scope="module")
def server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[DevServer, str]]:
    env = offline_env(DATABASE_URL=URL, LOTSMAN_EMBEDDER="fake")
    env.pop("LOTSMAN_AUTH_TOKEN", None)
    with running_dev_server(env, tmp_path_factory.mktemp("db-down")) as running:
        yield running, env["LOTSMAN_DATA_DIR"]


def test_http_clients_never_read_where_the_database_is(server: tuple[DevServer, str]) -> None:
    running, data_dir = server
    with httpx.Client(base_url=running.url, timeout=60) as client:
        answers = [
            client.get("/lotsman/api/sessions"),
            client.get("/lotsman/api/read", params={"session": "s", "path": "a.md", "start_line": 1, "end_line": 1}),
            client.post("/lotsman/api/feedback", json={"session": "s", "score": 1, "question": "q"}),
        ]
        for res in answers:
            assert res.status_code == 503, res.text
            assert res.json()["error"].startswith("the database is not reachable"), res.text
        run = client.post("/runs/wait", json={"assistant_id": "lotsman", "context": {"rag_session_id": "s"},
                                              "input": {"messages": [{"role": "human", "content": "Как?"}]}})
        answers.append(run)
        for res in answers:
            for secret in (*SECRETS, data_dir):
                assert secret not in res.text, (secret, res.text)
    assert "payroll_db" in running.log_text(), "the server's log keeps the detail"
