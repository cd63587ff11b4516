"""Faults of the embedded server (issue 14, items 2, 6, 10): stopped under a run, failing to start, killed.

These tests stop, break and kill a server, so they run on their own embedded server in their own data dir,
never on the test run's shared one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from stores.database import Database, embedded_status, start_embedded, stop_embedded
from tests.integration.conftest import LOTSMAN, ROOT, cli_env, run_lotsman

SESSION = "faults"
STOP_DEADLINE_S = 8.0
"""'Within a few seconds': the pool's probe (2 s) plus a retry, process exit and a loaded CI machine."""


@pytest.fixture(scope="module")
def own_dir() -> Iterator[Path]:
    """A data dir with its own embedded server and one indexed session (fake embedder).

    Not under pytest's tmp_path: as root, postgres runs as the `pgserver` user, and pytest resets
    /tmp/pytest-of-root to mode 0700 whenever a nested pytest starts (test_corpus_guard), locking it out.
    """
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    base = Path(tempfile.mkdtemp(prefix="lotsman-faults-"))
    corpus = base / "corpus"
    (corpus / "docs").mkdir(parents=True)
    (corpus / "docs" / "cors.md").write_text("# CORS\n\nCORS настраивается через CORSMiddleware.\n")
    data = base / "data"
    with Database(start_embedded(data)) as db:
        index_repository(db, corpus, session_name=SESSION, embedder=make_embedder("fake"))
    yield data
    _writable(data)
    stop_embedded(data)
    shutil.rmtree(base, ignore_errors=True)


def _writable(path: Path) -> None:
    subprocess.run(["chmod", "-R", "u+w", str(path)], check=False)


def one_error_line(proc: subprocess.CompletedProcess[str] | subprocess.Popen[str], stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def _wait_for_lock_wait(url: str, table: str, proc: subprocess.Popen[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as probe:
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            waiting = probe.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
                                    (table,)).fetchone()
            if waiting and waiting[0]:
                return
            time.sleep(0.1)
    pytest.fail("the ask never reached the chunk table")


def test_db_stopped_under_a_running_ask_exits_3_within_seconds(own_dir: Path) -> None:
    """Item 2: was a 30-66 s hang, 20-40 pool warnings and `unexpected PoolTimeout` (exit 1)."""
    url = start_embedded(own_dir)
    blocker = psycopg.connect(url)
    try:
        [table] = [r[0] for r in blocker.execute(
            "SELECT tablename FROM pg_tables WHERE tablename ~ '^rag_chunks_d[0-9]+$'").fetchall()]
        # The ask blocks on its first chunk-table query inside the graph: the server stops exactly mid-run.
        blocker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        proc = subprocess.Popen([str(LOTSMAN), "ask", "Как настроить CORS?", "--session", SESSION],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env=cli_env(own_dir))
        _wait_for_lock_wait(url, table, proc)
        started = time.monotonic()
        assert stop_embedded(own_dir)
        try:
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        elapsed = time.monotonic() - started
    finally:
        with contextlib.suppress(psycopg.Error):
            blocker.close()  # its backend was terminated by the stop

    assert proc.returncode == 3, err
    line = one_error_line(proc, err)
    assert "PostgreSQL" in line and "DATABASE_URL" not in line
    assert out == ""
    assert elapsed < STOP_DEADLINE_S, f"took {elapsed:.1f}s"
    print(f"db stopped under ask: exit {proc.returncode} after {elapsed:.2f}s: {line}")


def test_a_server_stopped_by_another_process_is_started_again(own_dir: Path) -> None:
    """pgserver caches its handle per process: a long-lived process (the LangGraph server) must not be handed
    the cached handle of a server `lotsman db stop` has stopped since."""
    start_embedded(own_dir)
    assert run_lotsman("db", "stop", env=cli_env(own_dir)).returncode == 0
    assert not embedded_status(own_dir).running

    start_embedded(own_dir)

    assert embedded_status(own_dir).running


def test_failed_start_is_one_line_with_the_cause_and_what_to_do(own_dir: Path) -> None:
    """Issue 14 item 6: was the whole server log (~98 lines) and no visible cause. Issue 25: the line then
    sent the user to the log PostgreSQL could not create ("cannot create …/pg/log: Permission denied.
    Details in …/pg/log"); it now says which user must own the folder and the command that does it."""
    stop_embedded(own_dir)
    subprocess.run(["chmod", "-R", "a-w", str(own_dir)], check=True)
    try:
        proc = run_lotsman("sessions", env=cli_env(own_dir))
    finally:
        _writable(own_dir)

    assert proc.returncode == 3
    line = one_error_line(proc, proc.stderr)
    pgdata = own_dir.resolve() / "pg"
    assert "Permission denied" in line, line
    assert "Details in" not in line, line
    user = "pgserver" if os.geteuid() == 0 else None
    if user:
        assert f"`chown -R {user} {pgdata} && chmod -R u+w {pgdata}`" in line, line
    assert "LOTSMAN_DATA_DIR" in line
    assert proc.stdout == ""


def test_the_fix_the_failed_start_names_works(own_dir: Path) -> None:
    """Following the line's advice starts the server again (as root the files belong to `pgserver`)."""
    if os.geteuid() != 0:
        pytest.skip("the advice names chown to the pgserver user only when run as root")
    stop_embedded(own_dir)
    pgdata = own_dir.resolve() / "pg"
    subprocess.run(["chmod", "-R", "a-w", str(pgdata)], check=True)
    subprocess.run(["chown", "-R", "root", str(pgdata)], check=True)
    try:
        failed = run_lotsman("sessions", env=cli_env(own_dir))
        assert failed.returncode == 3
        assert "Permission denied" in failed.stderr
        subprocess.run(f"chown -R pgserver {pgdata} && chmod -R u+w {pgdata}", shell=True, check=True)
        again = run_lotsman("sessions", env=cli_env(own_dir))
    finally:
        subprocess.run(["chown", "-R", "pgserver", str(pgdata)], check=False)
        _writable(own_dir)
    assert again.returncode == 0, again.stderr
    assert SESSION in again.stdout


def test_db_status_after_the_postmaster_was_killed(own_dir: Path) -> None:
    """Item 10: a SIGKILLed postmaster (a zombie nobody reaps) read as running, and the hint named DATABASE_URL."""
    start_embedded(own_dir)
    pid = embedded_status(own_dir).pid
    assert pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while embedded_status(own_dir).running and time.monotonic() < deadline:
        time.sleep(0.1)

    proc = run_lotsman("db", "status", env=cli_env(own_dir))
    assert proc.returncode == 0, proc.stderr
    assert "running: False" in proc.stdout and str(pid) not in proc.stdout
    assert "DATABASE_URL" not in proc.stdout + proc.stderr

    # The next command recovers: it starts the server again.
    proc = run_lotsman("sessions", env=cli_env(own_dir))
    assert proc.returncode == 0, proc.stderr
    assert SESSION in proc.stdout
    assert embedded_status(own_dir).running
