"""Shared fixtures: integration tests start the embedded PostgreSQL themselves and stop it afterwards."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS_SCRIPT = ROOT.parent / "shared" / "corpora" / "fastapi-ru" / "assemble"

# Offline and quiet for every test, whatever the developer's shell has.
for var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "GIGACHAT_CREDENTIALS", "DATABASE_URL"):
    os.environ.pop(var, None)
os.environ.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", LANGGRAPH_CLI_NO_ANALYTICS="1",
                  LANGGRAPH_NO_VERSION_CHECK="true")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).parts
        if "integration" in parts:
            item.add_marker(pytest.mark.integration)
        if "e2e" in parts:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def pg_data_dir() -> Iterator[Path]:
    """A dedicated data folder for this test run's embedded server (removed afterwards)."""
    base = Path(tempfile.mkdtemp(prefix="lotsman-test-"))
    yield base
    from stores.database import stop_embedded

    stop_embedded(base)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url(pg_data_dir: Path) -> str:
    from stores.database import start_embedded

    return start_embedded(pg_data_dir)


@pytest.fixture(scope="session")
def db(pg_url: str):
    from stores.database import Database
    from stores.schema import ensure_tables

    database = Database(pg_url, max_size=6)
    with database.connection() as conn:
        ensure_tables(conn)
    yield database
    database.close()


@pytest.fixture(scope="session")
def fastapi_corpus() -> Path:
    """The fastapi-ru corpus (SPEC §7), assembled once into a cache folder outside the repo."""
    dest = Path(os.environ.get("LOTSMAN_FASTAPI_CORPUS", Path(tempfile.gettempdir()) / "lotsman-fastapi-ru"))
    if not (dest / "fastapi" / "__init__.py").exists():
        if not CORPUS_SCRIPT.exists():
            pytest.skip(f"corpus script not found: {CORPUS_SCRIPT}")
        subprocess.run(["bash", str(CORPUS_SCRIPT), str(dest)], check=True,
                       env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    return dest
