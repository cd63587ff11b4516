"""`lotsman ask` with LangSmith tracing on: a fresh CLI process (which loads `graph.cli.LEAF_MODULES` without
their packages) still exports the whole run tree, to a recording LangSmith endpoint on 127.0.0.1."""

from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Callable, Iterator

import pytest

from graph.builder import STAGES
from tests.e2e.conftest import ROOT, VENV_BIN

FAKE_KEY = "lsv2-fake-key-never-sent-in-a-body"


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every LangSmith call with `{}` and keeps (method, path, body)."""

    calls: list[tuple[str, str, bytes]]

    def _record(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        self.calls.append((self.command, self.path, self.rfile.read(size) if size else b""))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PATCH = do_PUT = _record

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def langsmith_endpoint() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    calls: list[tuple[str, str, bytes]] = []
    handler = type("Recorder", (_Recorder,), {"calls": calls})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", calls
    finally:
        server.shutdown()
        server.server_close()


def test_a_traced_cli_ask_exports_every_stage_run(offline_env: Callable[..., dict[str, str]], small_session: str,
                                                   langsmith_endpoint: tuple[str, list[tuple[str, str, bytes]]]
                                                   ) -> None:
    url, calls = langsmith_endpoint
    env = offline_env(LANGSMITH_TRACING="true", LANGCHAIN_TRACING_V2="true", LANGSMITH_ENDPOINT=url,
                      LANGSMITH_API_KEY=FAKE_KEY, LANGSMITH_PROJECT="lotsman-cold-ask")
    done = subprocess.run([str(VENV_BIN / "lotsman"), "ask", "Как отключить CORS?", "--session", small_session],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "docs/cors.md" in done.stdout
    bodies = b"".join(body for method, path, body in calls if method == "POST" and path.startswith("/runs"))
    assert bodies, f"no run was exported: {[(m, p) for m, p, _ in calls]}"
    missing = [stage for stage in STAGES if f'"name":"{stage}"'.encode() not in bodies.replace(b": ", b":")]
    assert not missing, f"stage runs missing from the export: {missing}"
    assert b"context_retrieval" in bodies and FAKE_KEY.encode() not in bodies
