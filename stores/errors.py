"""Lotsman's error hierarchy: every user-facing failure is one of these, with a message that says what to do."""

from __future__ import annotations

import sys


class LotsmanError(Exception):
    """Base of all expected failures; the CLI prints `error: <message>` and exits non-zero."""

    exit_code = 1


class DatabaseUnavailableError(LotsmanError):
    """The database can't be reached or started."""

    exit_code = 3


class PgvectorMissingError(LotsmanError):
    """The database has no pgvector extension and we may not create it."""

    exit_code = 3


class EmbeddedServerError(LotsmanError):
    """The embedded PostgreSQL server could not be started, found or stopped."""

    exit_code = 3


class SessionNotFoundError(LotsmanError):
    """A rag session name or id that does not exist."""

    exit_code = 4


def session_deleted(name: str) -> SessionNotFoundError:
    """The error of a turn whose session was deleted while it ran (not "the index does not answer this")."""
    return SessionNotFoundError(f"session '{name}' was deleted while answering: index the repository again "
                                f"with `lotsman index PATH --session {name}`")


class EmbedderMismatchError(LotsmanError):
    """A session is used with another embedder (or dimension) than it was built with."""

    exit_code = 5


class EmbedderUnavailableError(LotsmanError):
    """The configured embedder can't be loaded (unknown name, missing credentials)."""

    exit_code = 5


class IndexingError(LotsmanError):
    """Indexing could not run at all (missing path, not a directory)."""

    exit_code = 6


class IndexInterruptedError(LotsmanError):
    """Ctrl-C reached an index job after its rows had committed: the new index is live and the job done."""

    exit_code = 130


class InvalidQuestionError(LotsmanError):
    """An empty or unusable question."""

    exit_code = 2


class UsageError(LotsmanError):
    """Bad command-line arguments (argparse's own errors included)."""

    exit_code = 2


class InvalidInputError(LotsmanError):
    """A graph run's context or input that does not validate (a server client's bad request)."""

    exit_code = 2


class SessionBusyError(LotsmanError):
    """The session has an index job running: deleting it now would race the job's writes."""

    exit_code = 6


class LaneBudgetExceeded(LotsmanError):
    """A retrieval statement ran past its time budget and PostgreSQL cancelled it (`statement_timeout`):
    the adapter answers from the other lanes instead of waiting."""


def database_lost(exc: BaseException) -> DatabaseUnavailableError | None:
    """A one-line `DatabaseUnavailableError` for psycopg/pool failures mid-run (server stopped), else None.

    psycopg is looked up, not imported: if it is not loaded, the failure cannot be one of its errors.
    """
    psycopg = sys.modules.get("psycopg")
    pool = sys.modules.get("psycopg_pool")
    # getattr: a module another thread is still importing may lack the names yet (the check must not raise)
    pool_timeout = getattr(pool, "PoolTimeout", None) if pool is not None else None
    operational = getattr(psycopg, "OperationalError", None) if psycopg is not None else None
    if pool_timeout is not None and isinstance(exc, pool_timeout):  # a subclass of OperationalError: first
        reason = "no connection could be made in time"
    elif operational is not None and isinstance(exc, operational):
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        reason = lines[0] if lines else type(exc).__name__
    else:
        return None
    return DatabaseUnavailableError(
        f"lost the connection to PostgreSQL ({reason}): check that it runs (`lotsman db status`) and retry"
    )
