"""Issue 13: an index job whose process is killed must not stay `running` forever.

The job's process is SIGKILLed for real (a subprocess running `index_repository` with a slow embedder);
its connection drops, PostgreSQL releases the session's advisory lock, and the job row is left `running`.
`lotsman sessions` and the next index job must see that nobody runs it any more.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.indexing.service import index_repository
from stores.sessions import delete_session, list_sessions
from tests.integration.conftest import ROOT, held_index_job

FILES = 6

JOB_SCRIPT = textwrap.dedent("""
    import sys, time
    from stores.database import Database
    from stores.embedders import FakeEmbeddings
    from stores.indexing.service import index_repository

    class Slow(FakeEmbeddings):
        def embed_documents(self, texts):
            time.sleep(3600)  # never finishes: the test kills this process

    url, root, name = sys.argv[1:]
    with Database(url, max_size=2) as db:
        index_repository(db, root, session_name=name, embedder=Slow(), batch_size=1, parse_workers=0)
""")


def write_corpus(root: Path) -> None:
    """Files no other test writes (a blob-cache hit would skip the embedder)."""
    for i in range(FILES):
        path = root / "docs" / f"page{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Страница {i}\n\nТекст про индексацию {i}, {root}.\n")


def last_job(db: Database, name: str) -> dict:
    with db.connection() as conn:
        rows = [r for r in list_sessions(conn) if r["name"] == name]
    assert rows, f"no session {name}"
    return rows[0]["last_job"]


def job_rows(db: Database, name: str) -> list[tuple[str, str | None]]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT j.status, j.error FROM rag_index_jobs j JOIN rag_sessions s USING (rag_session_id) "
            "WHERE s.name = %s ORDER BY j.started_at", (name,)).fetchall()


def start_killable_job(pg_url: str, root: Path, name: str, db: Database) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", JOB_SCRIPT, pg_url, str(root), name], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until its job row exists (it then holds the session's lock)
        if proc.poll() is not None:
            raise AssertionError(f"the job process ended early: {proc.stderr.read().decode()[-500:]}")
        with db.connection() as conn:
            started = conn.execute(
                "SELECT count(*) FROM rag_index_jobs j JOIN rag_sessions s USING (rag_session_id) "
                "WHERE s.name = %s AND j.status = 'running'", (name,)).fetchone()[0]
        if started:
            return proc
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("the job never started")


def drop(db: Database, name: str) -> None:
    with db.connection() as conn:
        delete_session(conn, name)


def test_a_killed_job_is_reported_interrupted_and_the_next_job_runs(db: Database, pg_url: str, tmp_path: Path,
                                                                   session_name: str) -> None:
    write_corpus(tmp_path)
    proc = start_killable_job(pg_url, tmp_path, session_name, db)
    try:
        assert last_job(db, session_name)["status"] == "running"  # alive: it holds the lock
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10  # the server notices the dropped connection and frees the lock
        while last_job(db, session_name)["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.2)

        job = last_job(db, session_name)
        assert job["status"] == "failed"
        assert job["finished_at"] is not None
        assert job["error"].startswith("interrupted")

        report = index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings())
        assert report.rows_written > 0
        assert [s for s, _ in job_rows(db, session_name)] == ["failed", "done"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        drop(db, session_name)


def test_a_killed_job_found_by_the_next_index_job(db: Database, pg_url: str, tmp_path: Path,
                                                  session_name: str) -> None:
    """Without a `lotsman sessions` in between, the next job itself marks the dead one."""
    write_corpus(tmp_path)
    proc = start_killable_job(pg_url, tmp_path, session_name, db)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings())
                break
            except Exception as exc:  # the lock may outlive the process for a moment
                if "another index job" not in str(exc):
                    raise
                time.sleep(0.2)
        rows = job_rows(db, session_name)
        assert [s for s, _ in rows] == ["failed", "done"]
        assert rows[0][1].startswith("interrupted")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        drop(db, session_name)


def test_a_live_job_stays_running(db: Database, tmp_path: Path, session_name: str) -> None:
    write_corpus(tmp_path)
    with held_index_job(db, tmp_path, session_name):
        assert last_job(db, session_name)["status"] == "running"
        assert [s for s, _ in job_rows(db, session_name)] == ["running"]
    assert [s for s, _ in job_rows(db, session_name)] == ["done"]
    drop(db, session_name)



def _ctrl_c_when_blocked(fault: str, gate: Path, corpus: Path, session: str, env: dict[str, str], *,
                         waiting_for: str, release: bool = False) -> tuple[subprocess.Popen[str], str]:
    """`lotsman index` under `fault` (tests/integration/faulty_cli.py): once it blocks at the gate, Ctrl-C
    (SIGINT to its process group; `release` lets the blocked thread go on), and its stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.integration.faulty_cli", fault, "index", str(corpus),
                             "--session", session], text=True, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (gate / "blocked").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"the job never reached {waiting_for}"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        if release:
            (gate / "release").touch()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc, err


def test_ctrl_c_after_the_commit_leaves_the_job_done(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                     session_name: str) -> None:
    """Issue 25, item 3: Ctrl-C after a job's rows went live marked it failed although they were answering.

    The real CLI is stopped (by `tests/integration/faulty_cli.py`) in the step after its commit, the stoplist
    refresh, and gets SIGINT there: the job must be `done`, its rows live, and the one error line must say so.
    """
    from tests.integration.conftest import cli_env

    write_corpus(tmp_path / "corpus")
    gate = tmp_path / "gate"
    gate.mkdir()
    env = cli_env(pg_data_dir, LOTSMAN_PARSE_WORKERS="0", LOTSMAN_EMBEDDER="fake")
    proc, err = _ctrl_c_when_blocked(f"tail-block:{gate}", gate, tmp_path / "corpus", session_name, env,
                                     waiting_for="its stoplist refresh")

    assert proc.returncode == 130, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert "committed" in errors[0] and "new index" in errors[0], errors[0]
    assert [s for s, _ in job_rows(db, session_name)] == ["done"]
    with db.connection() as conn:
        rows = [r for r in list_sessions(conn) if r["name"] == session_name][0]["rows"]
    assert rows > 0
    drop(db, session_name)


def test_ctrl_c_before_the_commit_keeps_the_previous_index(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                           session_name: str) -> None:
    """The other side: SIGINT while the job embeds fails it (saying so) and the earlier index answers."""
    from tests.integration.conftest import cli_env

    write_corpus(tmp_path / "corpus")
    first = index_repository(db, tmp_path / "corpus", session_name=session_name, embedder=FakeEmbeddings())
    (tmp_path / "corpus" / "docs" / "extra.md").write_text("# Extra\n\nОдна новая страница.\n")
    gate = tmp_path / "gate"
    gate.mkdir()
    env = cli_env(pg_data_dir, LOTSMAN_PARSE_WORKERS="0")
    # the embedding thread finishes its batch once released; the main thread is interrupted
    proc, err = _ctrl_c_when_blocked(f"embed-block:{gate}", gate, tmp_path / "corpus", session_name, env,
                                     waiting_for="embedding", release=True)

    assert proc.returncode == 130, err
    rows = job_rows(db, session_name)
    assert [s for s, _ in rows] == ["done", "failed"], rows
    assert rows[1][1].startswith("interrupted (Ctrl-C) before the job committed"), rows
    with db.connection() as conn:
        now = [r for r in list_sessions(conn) if r["name"] == session_name][0]["rows"]
    assert now == first.rows_written
    drop(db, session_name)
