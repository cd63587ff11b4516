"""Issue 25 item 8 with GigaChat configured: `retrieve` routes, gates and judges as `ask` does.

`retrieve` used the offline router whatever the settings, so with GigaChat it could show another route and
another gate than `ask` for the same question. Both now run one graph on the same dependencies.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, VENV_BIN
from tests.e2e.test_gigachat_path import Script
from tests.fakes.gigachat_server import FakeGigaChatServer


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGigaChatServer]:
    with FakeGigaChatServer() as srv:
        srv.chat_handler = Script()
        yield srv


@pytest.fixture(scope="module")
def cli(offline_env: Callable[..., dict[str, str]],
        server: FakeGigaChatServer) -> Callable[..., subprocess.CompletedProcess[str]]:
    env = offline_env(**server.env())

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(VENV_BIN / "lotsman"), *args], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=180)

    return run


@pytest.mark.parametrize("question", ["Как настроить CORS в приложении?", "Как настроить Kafka в кластере?"],
                         ids=["answerable", "unanswerable"])
def test_retrieve_and_ask_share_the_llm_route_and_the_verdict(
        cli: Callable[..., subprocess.CompletedProcess[str]], server: FakeGigaChatServer, small_corpus: Path,
        question: str) -> None:
    session = f"agree-{uuid.uuid4().hex[:6]}"
    index = cli("index", str(small_corpus), "--session", session, "--embedder", "fake")
    assert index.returncode == 0, index.stderr

    found = cli("retrieve", question, "--session", session, "--json")
    asked = cli("ask", question, "--session", session, "--json")
    assert found.returncode == 0 and asked.returncode == 0, found.stderr + asked.stderr
    route, answer = json.loads(found.stdout), json.loads(asked.stdout)

    assert route["route"]["routing_mode"] == answer["route"]["routing_mode"] == "llm_default"
    assert {k: route["route"][k] for k in ("intent", "subintent", "target_terms")} == {
        k: answer["route"][k] for k in ("intent", "subintent", "target_terms")}
    assert route["answered"] is (not answer["abstained"])
    if route["answered"]:
        assert route["lead"] == "{path}:{start_line}-{end_line}".format(**answer["citations"][0])
