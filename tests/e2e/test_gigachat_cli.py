"""Issue 14, item 12: the production GigaChat wiring through the real CLI (`GIGACHAT_*` env → settings →
`make_chat_model` / `GraphDeps.from_settings` / the GigaChat embedder), against the fake GigaChat server."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.e2e.conftest import ROOT, VENV_BIN
from tests.fakes.gigachat_server import FakeGigaChatServer


def assert_no_secrets(server: FakeGigaChatServer, *outputs: str) -> None:
    secrets = [server.credentials, base64.b64decode(server.credentials).decode().split(":", 1)[1],
               *server.issued_tokens]
    assert not any(secret in out for secret in secrets for out in outputs), "a GigaChat credential leaked"


def test_index_and_ask_with_gigachat_through_the_cli(gigachat_cli: Callable[..., subprocess.CompletedProcess[str]],
                                                     scripted_gigachat: FakeGigaChatServer, small_corpus: Path) -> None:
    session = f"giga-{uuid.uuid4().hex[:6]}"

    index = gigachat_cli("index", str(small_corpus), "--session", session, "--embedder", "gigachat", "--json")
    assert index.returncode == 0, index.stderr
    report = json.loads(index.stdout)
    assert report["files_indexed"] == 5 and report["embedded"] > 0
    embedded = [r for r in scripted_gigachat.requests if r.path.endswith("/embeddings")]
    assert embedded and all(len(r.json["input"]) <= 16 for r in embedded), "embeddings are sent in batches"

    ask = gigachat_cli("ask", "Как настроить CORS в приложении?", "--session", session, "--json")
    assert ask.returncode == 0, ask.stderr
    out = json.loads(ask.stdout)
    assert out["route"]["routing_mode"] == "llm_default", out["route"]
    assert "CORSMiddleware" in out["answer"] and out["citations"]
    assert "без LLM" not in out["answer"], "answered by the LLM: no offline note"
    assert all(c["path"] == "docs/cors.md" for c in out["citations"]), "only verified citations are kept"
    kinds = {("function" if r.json.get("functions") else "answer") for r in scripted_gigachat.chat_requests}
    assert kinds == {"function", "answer"}, "the router and the answer both went to GigaChat"
    assert_no_secrets(scripted_gigachat, index.stdout, index.stderr, ask.stdout, ask.stderr)


def test_gigachat_without_a_model_is_one_line(offline_env: Callable[..., dict[str, str]],
                                              scripted_gigachat: FakeGigaChatServer) -> None:
    env = {k: v for k, v in offline_env(**scripted_gigachat.env()).items() if k != "GIGACHAT_MODEL"}
    proc = subprocess.run([str(VENV_BIN / "lotsman"), "ask", "x", "--session", "none"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "error: GIGACHAT_CREDENTIALS is set but GIGACHAT_MODEL is not: set the chat model name"]
