"""Issue 14, item 1: deleting a session while its index job runs must not leave orphan chunk rows."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from psycopg import sql

from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.errors import LotsmanError, SessionBusyError
from stores.indexing.service import index_repository
from stores.schema import chunk_table
from stores.sessions import delete_session, job_lock_key
from tests.integration.conftest import cli_env, run_lotsman

ROUNDS = 20
FILES = 10


class SlowFakeEmbeddings(FakeEmbeddings):
    """The fake embedder, slowed down so that a delete lands while the job is embedding or writing."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(0.05)
        return super().embed_documents(texts)


def write_corpus(root: Path, edit: str) -> None:
    for i in range(FILES):
        path = root / "docs" / f"page{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Страница {i}\n\nCORS и авторизация, правка {edit}.\n\n## Детали\n\nТекст {edit} {i}.\n")


def orphan_rows(db: Database, table: str) -> int:
    with db.connection() as conn:
        row = conn.execute(sql.SQL(
            "SELECT count(*) FROM {} c WHERE NOT EXISTS "
            "(SELECT 1 FROM rag_sessions s WHERE s.rag_session_id = c.rag_session_id)"
        ).format(sql.Identifier(table))).fetchone()
    return row[0] if row else 0


def test_delete_racing_an_index_job_leaves_no_orphan_rows_20_times(db: Database, tmp_path: Path) -> None:
    embedder = SlowFakeEmbeddings()
    table = chunk_table(embedder.dim)
    outcomes: Counter[str] = Counter()
    for round_no in range(ROUNDS):
        name = f"race-{round_no}-{uuid.uuid4().hex[:6]}"
        write_corpus(tmp_path, f"{round_no}a")
        index_repository(db, tmp_path, session_name=name, embedder=embedder, batch_size=4)
        write_corpus(tmp_path, f"{round_no}b")  # every file changed: the next job re-embeds and rewrites all

        job_error: list[BaseException] = []

        def job() -> None:
            try:
                index_repository(db, tmp_path, session_name=name, embedder=embedder, batch_size=4)  # noqa: B023
            except LotsmanError as exc:
                job_error.append(exc)  # noqa: B023

        worker = threading.Thread(target=job)
        worker.start()
        time.sleep(0.02 * (round_no % 10))  # land the delete at a different point of the job each round
        try:
            with db.connection() as conn:
                delete_session(conn, name)
            deleted = True
        except SessionBusyError:
            deleted = False
        worker.join(timeout=60)
        assert not worker.is_alive()

        if deleted:  # the delete won the lock before the job: the job must say so, not write
            outcomes["deleted first" if job_error else "deleted after the job"] += 1
        else:  # refused while the job ran: the job finished normally, the delete works afterwards
            assert not job_error, job_error
            outcomes["refused, job done"] += 1
            with db.connection() as conn:
                delete_session(conn, name)
        assert orphan_rows(db, table) == 0, f"round {round_no}: orphan rows ({outcomes})"

    print(f"{ROUNDS} races, 0 orphan rows: {dict(outcomes)}")
    assert outcomes["refused, job done"] >= 1, "no delete ever landed during a job: the test lost its race"


def test_chunk_rows_cannot_outlive_their_session(db: Database, tmp_path: Path) -> None:
    """The foreign key: whatever path deletes a session row, its chunk rows go with it."""
    write_corpus(tmp_path, "fk")
    name = f"fk-{uuid.uuid4().hex[:6]}"
    report = index_repository(db, tmp_path, session_name=name, embedder=FakeEmbeddings())
    assert report.rows_written > 0
    with db.connection() as conn:
        conn.execute("DELETE FROM rag_sessions WHERE name = %s", (name,))
    assert orphan_rows(db, chunk_table(FakeEmbeddings().dim)) == 0


def test_cli_delete_while_a_job_runs_is_one_line_exit_6(db: Database, pg_data_dir: Path, tmp_path: Path) -> None:
    write_corpus(tmp_path, "cli")
    name = f"busy-{uuid.uuid4().hex[:6]}"
    report = index_repository(db, tmp_path, session_name=name, embedder=FakeEmbeddings())
    with db.connection() as conn:
        session_id = conn.execute("SELECT rag_session_id FROM rag_sessions WHERE name = %s", (name,)).fetchone()[0]
    lock = db.pool.getconn()  # what a running index job holds
    try:
        lock.execute("SELECT pg_advisory_lock(hashtext(%s))", (job_lock_key(session_id),))
        proc = run_lotsman("sessions", "--delete", name, env=cli_env(pg_data_dir))
    finally:
        lock.execute("SELECT pg_advisory_unlock(hashtext(%s))", (job_lock_key(session_id),))
        lock.commit()
        db.pool.putconn(lock)

    assert proc.returncode == 6
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "index job running" in lines[0], proc.stderr
    assert report.rows_written and run_lotsman("sessions", "--delete", name, env=cli_env(pg_data_dir)).returncode == 0


@pytest.mark.parametrize("orphans", [3])
def test_upgrade_to_v6_drops_old_orphans_and_adds_the_key(db: Database, orphans: int) -> None:
    """Databases from before v6 may hold orphans of earlier races: the upgrade removes them first."""
    from stores.schema import SCHEMA_VERSION, _refresh_view, ensure_space, ensure_tables

    dim = 7  # a space of its own, so that dropping its key does not weaken the other tests
    with db.connection() as conn:
        table = ensure_space(conn, dim)
        conn.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
            sql.Identifier(table), sql.Identifier(f"{table}_rag_session_id_fkey")))
        for _ in range(orphans):
            conn.execute(sql.SQL("INSERT INTO {} (rag_session_id, generation, layer, path, content, span_start, "
                                 "span_end, blob_sha) VALUES ('gone', 1, 'D0_DOC_CHUNKS', 'a.md', 'x', 1, 1, 's')"
                                 ).format(sql.Identifier(table)))
        conn.execute("UPDATE rag_schema_version SET version = 5")
        conn.commit()
        assert ensure_tables(conn) == SCHEMA_VERSION
    assert orphan_rows(db, table) == 0
    with db.connection() as conn:
        keys = conn.execute("SELECT count(*) FROM pg_constraint WHERE conname = %s",
                            (f"{table}_rag_session_id_fkey",)).fetchone()[0]
        conn.execute("DROP VIEW IF EXISTS rag_chunks")
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
        _refresh_view(conn)
    assert keys == 1
