"""Lotsman's error hierarchy: every user-facing failure is one of these, with a message that says what to do."""

from __future__ import annotations


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


class EmbedderMismatchError(LotsmanError):
    """A session is used with another embedder (or dimension) than it was built with."""

    exit_code = 5


class EmbedderUnavailableError(LotsmanError):
    """The configured embedder can't be loaded (unknown name, missing credentials)."""

    exit_code = 5


class IndexingError(LotsmanError):
    """Indexing could not run at all (missing path, not a directory)."""

    exit_code = 6


class InvalidQuestionError(LotsmanError):
    """An empty or unusable question."""

    exit_code = 2
