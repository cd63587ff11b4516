"""Helpers for the integration tests: the real `lotsman` CLI as a subprocess, unique session names.

The embedded PostgreSQL itself comes from the session fixtures of `tests/conftest.py`
(`pg_data_dir`, `pg_url`, `db`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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

