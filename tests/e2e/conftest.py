"""E2E fixtures: a small Russian corpus (four docs and a FastAPI-like module), indexed sessions, CLI env.

The embedded PostgreSQL comes from the session fixtures of `tests/conftest.py` (`pg_url`, `db`); every test
run gets a fresh data dir, so session names only need to be unique within a run.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Debian's chromium, driven by Playwright (`browser`): the web page's and the HTML eval report's tests."""

# Line numbers matter: tests assert that a follow-up about disabling CORS cites lines 10-13 of docs/cors.md.
CORS_DOC = """# Настройка CORS

CORS (Cross-Origin Resource Sharing) позволяет фронтенду с другого домена обращаться к API.

## Как включить CORS

Добавьте `CORSMiddleware` в приложение и перечислите разрешённые источники в параметре `allow_origins`.
Параметр `allow_credentials` разрешает передачу cookies, а `max_age` задаёт время кеширования preflight.

## Как отключить CORS

Чтобы отключить CORS, удалите `CORSMiddleware` из приложения или передайте пустой список `allow_origins=[]`.
После этого браузер будет блокировать запросы с чужих доменов.
"""
CORS_DISABLE_LINES = (12, 13)
"""The two lines of docs/cors.md that say how to disable CORS."""

SMALL_CORPUS: dict[str, str] = {
    "docs/cors.md": CORS_DOC,
    "docs/auth.md": """# Аутентификация

Сервис использует OAuth2 с токенами JWT. Токен выдаётся по адресу `POST /token`.

## Срок жизни токена

Параметр `ACCESS_TOKEN_EXPIRE_MINUTES` задаёт срок жизни токена, по умолчанию 30 минут.
""",
    "docs/deploy.md": """# Развёртывание

Приложение запускается в Docker-контейнере командой `uvicorn app.main:app --host 0.0.0.0`.

## Переменные окружения

Переменная `DATABASE_URL` указывает адрес базы данных PostgreSQL.
""",
    "docs/logging.md": """# Журналирование

Логи пишутся в формате JSON через модуль `logging`. Уровень задаёт переменная `LOG_LEVEL`.
""",
    "app/main.py": '''"""Точка входа приложения."""

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

app = FastAPI()
app.add_middleware(CORSMiddleware, allow_origins=["https://example.com"])


@app.get("/items/{item_id}")
async def read_item(item_id: int) -> dict:
    """Вернуть товар по идентификатору."""
    return {"item_id": item_id}
''',
}

OTHER_CORPUS: dict[str, str] = {
    "guides/cross-origin.md": """# Кросс-доменные запросы

CORS настраивается в файле `settings.toml` параметром `cors_origins`.
""",
}
"""A second session's content: the same topic (CORS) in another file, to tell sessions apart."""


def write_corpus(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def cited_paths(citations: list[dict]) -> set[str]:
    return {c["path"] for c in citations}


def covers(citations: list[dict], path: str, line: int) -> bool:
    """Whether some citation of `path` covers `line`."""
    return any(c["path"] == path and c["start_line"] <= line <= c["end_line"] for c in citations)


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small corpus on disk (read-only for tests)."""
    return write_corpus(tmp_path_factory.mktemp("small-corpus"), SMALL_CORPUS)


@pytest.fixture(scope="session")
def other_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("other-corpus"), OTHER_CORPUS)


def _index_use(db, root: Path, prefix: str) -> str:
    # The real offline default embedder (USE-multilingual), not the hashed bag-of-words fake: e2e tests
    # exercise what users run.
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    report = index_repository(db, root, session_name=name, embedder=make_embedder("use"), incremental=False)
    assert report.files_indexed == sum(p.is_file() for p in root.rglob("*")), report.counts()
    return name


@pytest.fixture(scope="session")
def small_session(db, small_corpus: Path) -> str:
    """The small corpus indexed in-process with the `use` embedder; returns the session name."""
    return _index_use(db, small_corpus, "e2e-small")


@pytest.fixture(scope="session")
def other_session(db, other_corpus: Path) -> str:
    return _index_use(db, other_corpus, "e2e-other")


@pytest.fixture(scope="session")
def offline_env(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, str]]:
    """`offline_env(**extra)`: a subprocess environment on the test database, no secrets, no network."""
    data_dir = tmp_path_factory.mktemp("lotsman-data")

    def make(**extra: str) -> dict[str, str]:
        dropped = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LOTSMAN_DEBUG")
        env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("GIGACHAT_")}
        env.update(DATABASE_URL=pg_url, LOTSMAN_DATA_DIR=str(data_dir), LANGSMITH_TRACING="false",
                   LANGCHAIN_TRACING_V2="false", LANGGRAPH_CLI_NO_ANALYTICS="1",
                   LANGGRAPH_NO_VERSION_CHECK="true", PYTHONWARNINGS="ignore")
        env.update(extra)
        return env

    return make


# --- a `langgraph dev` server started by a test --------------------------------------------------------------
READY_TIMEOUT_S = 90.0


class DevServer:
    """A running `langgraph dev` subprocess and its log file."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _wait_ready(server: DevServer) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            break
        try:
            if httpx.get(f"{server.url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    print(f"--- langgraph dev log ({server.log}) ---\n{server.log_text()}")
    pytest.fail(f"langgraph dev not ready within {READY_TIMEOUT_S:.0f}s (exit code {server.proc.poll()})")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # our own process group (start_new_session=True)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


@contextmanager
def running_dev_server(env: dict[str, str], log_dir: Path) -> Iterator[DevServer]:
    """`langgraph dev` on a free local port with `env`, ready to answer; stopped (its whole group) on exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = log_dir / "server.log"
    # --no-reload: other people edit the repo while tests run; a hot reload would restart the server mid-test.
    cmd = [str(VENV_BIN / "langgraph"), "dev", "--no-browser", "--no-reload", "--port", str(port),
           "--host", "127.0.0.1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = DevServer(proc, f"http://127.0.0.1:{port}", log)
    try:
        _wait_ready(server)
        yield server
    finally:
        _stop(proc)


# --- the real CLI against a scripted fake GigaChat ------------------------------------------------------------
@pytest.fixture(scope="module")
def scripted_gigachat() -> Iterator[Any]:
    """A fake GigaChat server (module-wide) whose chat answers follow `test_gigachat_path.Script`."""
    from tests.e2e.test_gigachat_path import Script
    from tests.fakes.gigachat_server import FakeGigaChatServer

    with FakeGigaChatServer() as srv:
        srv.chat_handler = Script()
        yield srv


@pytest.fixture(scope="module")
def gigachat_cli(offline_env: Callable[..., dict[str, str]],
                 scripted_gigachat: Any) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`gigachat_cli(*args)`: the installed `lotsman` with GIGACHAT_* pointing at `scripted_gigachat`."""
    env = offline_env(**scripted_gigachat.env())  # GIGACHAT_BASE_URL/AUTH_URL/CREDENTIALS/SCOPE/MODEL/VERIFY_SSL_CERTS

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(VENV_BIN / "lotsman"), *args], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=180)

    return run


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (Playwright), one per test module."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (`apt-get install chromium`; make test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
