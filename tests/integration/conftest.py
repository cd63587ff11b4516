"""Helpers for the integration tests: the real `lotsman` CLI as a subprocess, unique session names.

The embedded PostgreSQL itself comes from the session fixtures of `tests/conftest.py`
(`pg_data_dir`, `pg_url`, `db`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stores.embedders import FakeEmbeddings

ROOT = Path(__file__).resolve().parents[2]
LOTSMAN = Path(sys.executable).parent / "lotsman"


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: offline, no inherited DATABASE_URL, our data dir."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "LOTSMAN_DEBUG")}
    env.update(LOTSMAN_DATA_DIR=str(data_dir), LANGSMITH_TRACING="false", PYTHONWARNINGS="ignore")
    env.update(extra)
    return env


def run_lotsman(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the installed `lotsman` console script (falls back to `python -c` on its entry point)."""
    cmd = [str(LOTSMAN)] if LOTSMAN.exists() else [sys.executable, "-c",
                                                   "import sys; from graph.cli import main; sys.exit(main())"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


@pytest.fixture
def lotsman(db, pg_data_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`lotsman(*args, **env)` on the test run's embedded server (already started by the `db` fixture)."""

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return run_lotsman(*args, env=cli_env(pg_data_dir, **env))

    return run


@pytest.fixture
def session_name(request: pytest.FixtureRequest) -> str:
    """A session name no other test uses."""
    return f"t-{request.node.name[:24]}-{uuid.uuid4().hex[:8]}"


def indexed_session(db, root: Path, prefix: str, embedder):  # type: ignore[no-untyped-def]
    """Index `root` into a fresh session named `{prefix}-<random>`, yield it, delete it afterwards (for
    module-scoped fixtures: `yield from indexed_session(...)`)."""
    from stores.indexing.service import index_repository
    from stores.sessions import delete_session, get_session

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    index_repository(db, root, session_name=name, embedder=embedder)
    with db.connection() as conn:
        found = get_session(conn, name)
    yield found
    with db.connection() as conn:
        delete_session(conn, name)


@pytest.fixture
def cli_on_test_db(monkeypatch: pytest.MonkeyPatch, pg_url: str, tmp_path: Path) -> Iterator[None]:
    """`graph.cli.main` called in-process runs against the test run's server (its settings re-read)."""
    from graph.settings import get_settings

    monkeypatch.setenv("DATABASE_URL", pg_url)
    monkeypatch.setenv("LOTSMAN_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()



class HeldEmbeddings(FakeEmbeddings):
    """The fake embedder, held inside a job's first embedding call until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.entered.set()
        assert self.release.wait(120)
        return super().embed_documents(texts)


@contextlib.contextmanager
def held_index_job(db, root: Path, session_name: str) -> Iterator[threading.Thread]:  # type: ignore[no-untyped-def]
    """`index_repository` of `root` on a thread, held at its first embedding call while the block runs (it
    yields the thread), then released; a failure of the job fails the test after the block."""
    from stores.indexing.service import index_repository

    held, errors = HeldEmbeddings(), []

    def job() -> None:
        try:
            index_repository(db, root, session_name=session_name, embedder=held, parse_workers=0)
        except BaseException as exc:  # reported after the block
            errors.append(exc)

    worker = threading.Thread(target=job)
    worker.start()
    try:
        assert held.entered.wait(60), errors
        yield worker
    finally:
        held.release.set()
        worker.join(120)
    assert not errors, errors
