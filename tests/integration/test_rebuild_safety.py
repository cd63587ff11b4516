"""Issue 25, item 1: a failed `lotsman index --rebuild` leaves the old index answering.

`--rebuild` used to delete the session before indexing: any failure after that left the session with 0 rows.
Each test indexes a session, starts a rebuild that fails in one way (a parser exception on a bad file, the
process SIGKILLed mid-job, the database stopped mid-job), and checks that the old generation still
answers: the same rows, the same embedder, and `retrieve` still finds the old text. The faults are injected
into the real CLI by `tests/integration/faulty_cli.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT, cli_env

OLD_TEXT = "# Frobnicator\n\nThe frobnicator calibrates the widgets every morning.\n"
NEW_TEXT = "# Quuxification\n\nQuuxification replaces the frobnicator entirely.\n"


def faulty(fault: str, *args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.integration.faulty_cli", fault, *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=timeout)


def start_faulty(fault: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.integration.faulty_cli", fault, *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, start_new_session=True)


def wait_blocked(proc: subprocess.Popen[str], folder: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not (folder / "blocked").exists():
        if proc.poll() is not None:
            pytest.fail(f"the job ended before reaching its fault: {proc.communicate()}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("the job never reached its fault")
        time.sleep(0.05)


def one_error_line(stderr: str) -> str:
    """The one `error:` line (progress lines may precede it on stderr), and no traceback."""
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def write_corpus(root: Path) -> None:
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "docs" / "old.md").write_text(OLD_TEXT)


def session_row(env: dict[str, str], name: str) -> dict:
    proc = faulty("none", "sessions", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["name"] == name]
    assert rows, f"session {name} is gone: {proc.stdout}"
    return rows[0]


def retrieved_paths(env: dict[str, str], name: str, question: str) -> list[str]:
    proc = faulty("none", "retrieve", question, "--session", name, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return [r["path"] for r in json.loads(proc.stdout)["rows"]]


def assert_old_generation_answers(env: dict[str, str], name: str, before: dict) -> None:
    after = session_row(env, name)
    assert (after["rows"], after["embedder"], after["embedding_dim"], after["active_generation"]) == (
        before["rows"], before["embedder"], before["embedding_dim"], before["active_generation"]), after
    assert after["last_job"]["status"] == "failed", after["last_job"]
    assert retrieved_paths(env, name, "frobnicator calibrates widgets")[:1] == ["docs/old.md"]


def index_old(env: dict[str, str], corpus: Path, name: str) -> dict:
    write_corpus(corpus)
    proc = faulty("none", "index", str(corpus), "--session", name, "--embedder", "fake", env=env)
    assert proc.returncode == 0, proc.stderr
    before = session_row(env, name)
    assert before["rows"] > 0
    return before


@pytest.fixture
def env(db, pg_data_dir: Path) -> dict[str, str]:
    return cli_env(pg_data_dir, LOTSMAN_PARSE_WORKERS="0")


def test_rebuild_failing_on_a_bad_file_keeps_the_old_index(env: dict[str, str], tmp_path: Path,
                                                           session_name: str) -> None:
    """(a) A parser exception on one file; the rebuild also asked for another embedder (dim 512)."""
    before = index_old(env, tmp_path, session_name)
    (tmp_path / "docs" / "poison.md").write_text(NEW_TEXT)

    proc = faulty("parse-raise:poison", "index", str(tmp_path), "--session", session_name, "--rebuild",
                  "--embedder", "use", env=env)

    assert proc.returncode == 1, proc.stderr
    assert "injected parser failure" in one_error_line(proc.stderr)
    assert_old_generation_answers(env, session_name, before)


def test_rebuild_killed_mid_job_keeps_the_old_index(env: dict[str, str], tmp_path: Path, session_name: str) -> None:
    """(b) `kill -9` of the rebuilding process while it embeds."""
    before = index_old(env, tmp_path / "corpus", session_name)
    (tmp_path / "corpus" / "docs" / "new.md").write_text(NEW_TEXT)
    gate = tmp_path / "gate"
    gate.mkdir()

    proc = start_faulty(f"embed-block:{gate}", "index", str(tmp_path / "corpus"), "--session", session_name,
                        "--rebuild", env=env)
    try:
        wait_blocked(proc, gate)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    deadline = time.monotonic() + 10  # PostgreSQL notices the dropped connection and frees the job's lock
    while session_row(env, session_name)["last_job"]["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert_old_generation_answers(env, session_name, before)
    assert session_row(env, session_name)["last_job"]["error"].startswith("interrupted")


def test_rebuild_succeeds_with_another_embedder_and_leaves_no_old_rows(db, env: dict[str, str], tmp_path: Path,
                                                                       session_name: str) -> None:
    before = index_old(env, tmp_path, session_name)
    (tmp_path / "docs" / "new.md").write_text(NEW_TEXT)

    proc = faulty("none", "index", str(tmp_path), "--session", session_name, "--rebuild", "--embedder", "use",
                  env=env)

    assert proc.returncode == 0, proc.stderr
    after = session_row(env, session_name)
    assert (after["embedder"], after["embedding_dim"]) == ("use", 512)
    assert after["rag_session_id"] == before["rag_session_id"]
    assert after["last_job"]["status"] == "done"
    assert "docs/new.md" in retrieved_paths(env, session_name, "Quuxification replaces")[:2]
    with db.connection() as conn:  # the old generation (64-dim table) is gone
        left = conn.execute("SELECT count(*) FROM rag_chunks_d64 WHERE rag_session_id = %s",
                            (before["rag_session_id"],)).fetchone()[0]
    assert left == 0
    # And the session keeps working incrementally with its new embedder.
    (tmp_path / "docs" / "new.md").write_text(NEW_TEXT + "\nMore quux.\n")
    proc = faulty("none", "index", str(tmp_path), "--session", session_name, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "changes" in proc.stdout


@pytest.fixture(scope="module")
def own_server() -> Iterator[Path]:
    """A data dir with its own embedded server: test (c) stops it (never the shared one).

    Not under pytest's tmp_path: as root, postgres runs as the `pgserver` user (see test_embedded_faults).
    """
    from stores.database import start_embedded, stop_embedded

    base = Path(tempfile.mkdtemp(prefix="lotsman-rebuild-"))
    start_embedded(base / "data")
    yield base
    stop_embedded(base / "data")
    shutil.rmtree(base, ignore_errors=True)


def test_rebuild_with_the_database_stopped_mid_job_keeps_the_old_index(own_server: Path) -> None:
    """(c) The embedded server is stopped while the rebuild embeds; started again, the old index answers."""
    from stores.database import start_embedded, stop_embedded

    env = cli_env(own_server / "data", LOTSMAN_PARSE_WORKERS="0")
    corpus, gate = own_server / "corpus", own_server / "gate"
    before = index_old(env, corpus, "stopped")
    (corpus / "docs" / "new.md").write_text(NEW_TEXT)
    gate.mkdir()

    proc = start_faulty(f"embed-block:{gate}", "index", str(corpus), "--session", "stopped", "--rebuild", env=env)
    try:
        wait_blocked(proc, gate)
        assert stop_embedded(own_server / "data")
        (gate / "release").touch()
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    assert proc.returncode == 3, err
    assert "PostgreSQL" in one_error_line(err)
    start_embedded(own_server / "data")
    assert_old_generation_answers(env, "stopped", before)


async def test_the_index_graph_rebuilds_beside_the_old_generation(db, tmp_path: Path, session_name: str) -> None:
    """The server's index graph takes `rebuild` too: a new generation of the same session, swapped in."""
    from graph.deps import GraphDeps
    from graph.index_graph import build_index_graph
    from graph.settings import Settings
    from stores.embedders import FakeEmbeddings
    from stores.sessions import delete_session, get_session

    write_corpus(tmp_path)
    graph = build_index_graph(GraphDeps(settings=Settings(), db=db, embedder=FakeEmbeddings()))
    first = await graph.ainvoke({"path": str(tmp_path), "session": session_name})
    (tmp_path / "docs" / "new.md").write_text(NEW_TEXT)

    again = await graph.ainvoke({"path": str(tmp_path), "session": session_name, "rebuild": True})

    assert (first["report"]["kind"], again["report"]["kind"]) == ("snapshot", "snapshot")
    with db.connection() as conn:
        session = get_session(conn, session_name)
        assert session.active_generation == 2
        paths = {p for (p,) in conn.execute(
            "SELECT DISTINCT path FROM rag_chunks_d64 WHERE rag_session_id = %s", (session.rag_session_id,))}
        delete_session(conn, session_name)
    assert paths == {"docs/old.md", "docs/new.md"}


def test_rows_no_reader_can_see_are_removed_by_the_next_job(db, tmp_path: Path, session_name: str) -> None:
    """A job killed between committing its new generation and swapping it in (or a rebuild into another
    embedding space) leaves rows that no reader sees; the session's next job removes them under its lock."""
    from stores.embedders import FakeEmbeddings
    from stores.indexing import writer
    from stores.indexing.records import ChunkRecord
    from stores.indexing.service import index_repository
    from stores.layers import Layer
    from stores.schema import ensure_space
    from stores.sessions import delete_session, get_session

    write_corpus(tmp_path)
    index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings())
    with db.connection() as conn:
        session = get_session(conn, session_name)
        ensure_space(conn, 32)
        record = ChunkRecord(layer=Layer.D0_DOC_CHUNKS, path="docs/ghost.md", title="Ghost", content="ghost",
                             span_start=1, span_end=1)
        for table, generation, dim in ((session.table, session.active_generation + 1, 64), ("rag_chunks_d32", 7, 32)):
            writer.copy_rows(conn, table, session.rag_session_id, generation, [(record, "sha", [0.1] * dim)])

    index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings())  # an unchanged corpus

    with db.connection() as conn:
        ghosts = sum(conn.execute(f"SELECT count(*) FROM {t} WHERE rag_session_id = %s AND path = 'docs/ghost.md'",
                                  (session.rag_session_id,)).fetchone()[0]
                     for t in ("rag_chunks_d64", "rag_chunks_d32"))
        delete_session(conn, session_name)
    assert ghosts == 0


def test_a_changes_job_queued_behind_a_rebuild_refuses_the_old_embedder(db, tmp_path: Path, session_name: str) -> None:
    """A diff computed against the session before another process rebuilt it with another embedder used to
    write its rows into the old embedder's table, where no reader looks, and end `done`: the edit was lost.
    Under the lock the job now reads the session as it is and refuses a mismatched embedder."""
    from stores.embedders import FakeEmbeddings
    from stores.errors import EmbedderMismatchError
    from stores.indexing.service import index_changes, index_repository
    from stores.sessions import get_session

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nalpha text here.\n")
    index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings(64), parse_workers=0)
    with db.connection() as conn:
        stale = get_session(conn, session_name)
    index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings(32), parse_workers=0,
                     rebuild=True)
    (tmp_path / "docs" / "a.md").write_text("# A\n\nbeta zeta changed text.\n")
    with pytest.raises(EmbedderMismatchError):
        index_changes(db, stale, tmp_path, ["docs/a.md"], [], FakeEmbeddings(64), parse_workers=0)
    with db.connection() as conn:
        current = get_session(conn, session_name)
        stray = conn.execute("SELECT count(*) FROM rag_chunks_d64 WHERE rag_session_id = %s",
                             (current.rag_session_id,)).fetchone()[0]
        statuses = [r[0] for r in conn.execute("SELECT status FROM rag_index_jobs WHERE rag_session_id = %s "
                                               "ORDER BY started_at", (current.rag_session_id,)).fetchall()]
    assert current.embedding_dim == 32
    assert stray == 0  # nothing written where no reader looks
    assert statuses[-1] == "failed"
