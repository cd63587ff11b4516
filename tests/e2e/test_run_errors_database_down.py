"""A real `langgraph dev` whose `DATABASE_URL` points at nothing: a run's error, as the SDK client reads it,
names no host, port, database or user; the server's log does (issue 37, item 6)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
from langgraph_sdk import get_client

from tests.e2e.conftest import DevServer, running_dev_server

QUESTION = {"messages": [{"role": "human", "content": "Как настроить CORS?"}]}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PORT = _closed_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    dropped = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LOTSMAN_DEBUG", "LOTSMAN_AUTH_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("GIGACHAT_")}
    env.update(DATABASE_URL=f"postgresql://alice:s3cret@127.0.0.1:{PORT}/secretdb", LANGSMITH_TRACING="false",
               LANGCHAIN_TRACING_V2="false", LANGGRAPH_CLI_NO_ANALYTICS="1", LANGGRAPH_NO_VERSION_CHECK="true",
               PYTHONWARNINGS="ignore", LOTSMAN_EMBEDDER="fake",
               LOTSMAN_DATA_DIR=str(tmp_path_factory.mktemp("down-data")))
    with running_dev_server(env, tmp_path_factory.mktemp("down-server")) as dev:
        yield dev


async def test_a_run_on_a_database_that_is_down_names_none_of_it(server: DevServer) -> None:
    client = get_client(url=server.url)
    with pytest.raises(Exception) as info:
        await client.runs.wait(None, "lotsman", input=QUESTION, context={"rag_session_id": "docs"})
    text = str(info.value)
    assert "the database is not reachable: see the server's log" in text, text
    assert not any(s in text for s in ("alice", "s3cret", "secretdb", "127.0.0.1", str(PORT))), text
    assert f"127.0.0.1:{PORT}/secretdb" in server.log_text()  # the server's log keeps the detail


def test_the_log_has_no_password(server: DevServer) -> None:
    assert "s3cret" not in server.log_text()
