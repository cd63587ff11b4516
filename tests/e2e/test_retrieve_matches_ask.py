"""Issue 25 item 8 with GigaChat configured: `retrieve` routes, gates and judges as `ask` does.

`retrieve` used the offline router whatever the settings, so with GigaChat it could show another route and
another gate than `ask` for the same question. Both now run one graph on the same dependencies.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.mark.parametrize("question", ["Как настроить CORS в приложении?", "Как настроить Kafka в кластере?"],
                         ids=["answerable", "unanswerable"])
def test_retrieve_and_ask_share_the_llm_route_and_the_verdict(
        gigachat_cli: Callable[..., subprocess.CompletedProcess[str]], small_corpus: Path, question: str) -> None:
    session = f"agree-{uuid.uuid4().hex[:6]}"
    index = gigachat_cli("index", str(small_corpus), "--session", session, "--embedder", "fake")
    assert index.returncode == 0, index.stderr

    found = gigachat_cli("retrieve", question, "--session", session, "--json")
    asked = gigachat_cli("ask", question, "--session", session, "--json")
    assert found.returncode == 0 and asked.returncode == 0, found.stderr + asked.stderr
    route, answer = json.loads(found.stdout), json.loads(asked.stdout)

    assert route["route"]["routing_mode"] == answer["route"]["routing_mode"] == "llm_default"
    assert {k: route["route"][k] for k in ("intent", "subintent", "target_terms")} == {
        k: answer["route"][k] for k in ("intent", "subintent", "target_terms")}
    assert route["answered"] is (not answer["abstained"])
    if route["answered"]:
        assert route["lead"] == "{path}:{start_line}-{end_line}".format(**answer["citations"][0])
