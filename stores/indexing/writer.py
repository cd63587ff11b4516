"""Writes layer rows into a session's chunk table: COPY in, atomic generation swap, per-path diffs."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from stores.indexing.records import ChunkRecord
from stores.schema import chunk_table, existing_spaces

if TYPE_CHECKING:
    import numpy as np

COLUMNS = ("id", "rag_session_id", "generation", "layer", "path", "title", "content", "metadata_json",
           "span_start", "span_end", "blob_sha", "embedding")
COLUMN_TYPES = ("uuid", "text", "int4", "text", "text", "text", "text", "jsonb", "int4", "int4", "text", "vector")


def row_id(layer: str, path: str, span_start: int, span_end: int, title: str, content: str) -> uuid.UUID:
    """A row's id: its first half a hash of what the row is, its second half random.

    The lexical lanes take their first matches in id order (an index walk: `ORDER BY id LIMIT cap`,
    `stores/statements.py`), so with random ids two fresh indexes of the same files handed the ranker other
    candidates (90 of 552 dev questions) and `make ranker` could not reproduce a model from a fresh index. The
    content half orders rows the same way in every index; the random half keeps ids unique between sessions,
    generations and identical rows, whose relative order does not matter.
    """
    digest = hashlib.blake2b(digest_size=8)
    for part in (layer, path, str(span_start), str(span_end), title, content):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return uuid.UUID(bytes=digest.digest() + os.urandom(8))


def _clean(text: str) -> str:
    # PostgreSQL text cannot hold NUL; the files are already UTF-8-checked.
    return text.replace("\x00", "")


class RowOrigin(NamedTuple):
    """Where a job's rows come from, recorded on every code row (seed 003: `repo_id`, `commit_sha`, `lang`)."""

    repo_id: str
    """The repository: the git repository's path for a revision, the indexed folder otherwise."""
    commit_sha: str | None
    """The commit indexed; None for a folder's working tree."""


CODE_LANGUAGES = {".py": "python"}
"""`lang` of a code row by its file's extension (the code pipeline parses Python only)."""


def row_metadata(record: ChunkRecord, origin: RowOrigin | None) -> dict:
    """The metadata stored for `record`: a code row's gets its origin and language; others are unchanged.

    Stamped at write time, not at parse time: the blob cache shares one file's parse between revisions (and
    sessions), so the revision cannot be part of what it stores.
    """
    if origin is None or not record.layer.value.startswith("C"):
        return record.metadata
    lang = CODE_LANGUAGES.get(record.path[record.path.rfind("."):].lower()) if "." in record.path else None
    return {**record.metadata, "repo_id": origin.repo_id, "commit_sha": origin.commit_sha, "lang": lang}


def copy_rows(
    conn: psycopg.Connection, table: str, session_id: str, generation: int,
    rows: Iterable[tuple[ChunkRecord, str, np.ndarray | None]], *, origin: RowOrigin | None = None,
) -> int:
    """COPY (record, blob_sha, vector) rows into `table`; returns how many were written.

    Args:
        origin: recorded in the metadata of code rows (`row_metadata`).
    """
    # numpy and pgvector load here, not with the module: the no-op check of `lotsman index` (which only
    # cleans up with `discard_inactive`) then starts without them
    import numpy as np
    from pgvector.psycopg import register_vector

    n = 0
    # Binary COPY: a vector goes over as 512 big-endian floats in one `tobytes()`, where the text format
    # spent ~0.5 ms of Python (holding the GIL) formatting each one.
    stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, COLUMNS))
    )
    if conn.adapters.types.get("vector") is None:
        register_vector(conn)
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        copy.set_types(list(COLUMN_TYPES))
        for record, blob_sha, vector in rows:
            title, content = _clean(record.title)[:500], _clean(record.content)
            copy.write_row((
                row_id(record.layer.value, record.path, record.span_start, record.span_end, title, content),
                session_id, generation, record.layer.value, record.path, title,
                content, Jsonb(row_metadata(record, origin)), record.span_start, record.span_end,
                blob_sha,
                None if vector is None else np.asarray(vector, dtype=np.float32),
            ))
            n += 1
    return n


def discard_generation(conn: psycopg.Connection, table: str, session_id: str, generation: int) -> None:
    """Remove rows of one generation (leftovers of a failed snapshot, or the old index after a swap)."""
    conn.execute(
        sql.SQL("DELETE FROM {} WHERE rag_session_id = %s AND generation = %s").format(sql.Identifier(table)),
        (session_id, generation),
    )


class Space(NamedTuple):
    """The embedding space a rebuilt generation was written in, recorded on the session by the swap."""

    embedder: str
    dim: int
    root_path: str


class SessionRevision(NamedTuple):
    """The git revision a generation was read from, recorded on the session by the swap (all None: a folder)."""

    repo_path: str | None
    git_ref: str | None
    commit_sha: str | None


def swap_generation(conn: psycopg.Connection, table: str, session_id: str, old: int, new: int, *,
                    space: Space | None = None, revision: SessionRevision | None = None) -> None:
    """Make `new` the active generation and drop `old` (from `table`, the old generation's), in one
    transaction: readers see one or the other.

    Args:
        space: a rebuild's new embedder, dimension and root: `new` was written in that dimension's table,
            and the session now reads there.
        revision: the git revision `new` was read from (all None for a folder's working tree), recorded on
            the session with the swap; None leaves what the session records.
    """
    with conn.transaction():
        if revision is not None:
            conn.execute("UPDATE rag_sessions SET repo_path = %s, git_ref = %s, commit_sha = %s "
                         "WHERE rag_session_id = %s", (*revision, session_id))
        if space is None:
            conn.execute(
                "UPDATE rag_sessions SET active_generation = %s, updated_at = now() WHERE rag_session_id = %s",
                (new, session_id),
            )
        else:
            conn.execute(
                "UPDATE rag_sessions SET active_generation = %s, embedder = %s, embedding_dim = %s, root_path = %s, "
                "updated_at = now() WHERE rag_session_id = %s",
                (new, space.embedder, space.dim, space.root_path, session_id),
            )
        discard_generation(conn, table, session_id, old)


def discard_inactive(conn: psycopg.Connection, session_id: str, table: str, generation: int) -> int:
    """Remove a session's rows that no reader can see: other generations of its table, and any rows in other
    embedding spaces' tables (left by a job killed between its commit of rows and its swap, or by a rebuild
    into another space). Call it under the session's job lock. Returns the rows removed."""
    removed = 0
    with conn.transaction():
        for dim in existing_spaces(conn):
            other = chunk_table(dim)
            if other == table:
                # Two ranges, not `<>`: each is an index range scan of (rag_session_id, generation, layer),
                # where `<>` reads every live row of the session on each job (100k rows: 1.2 ms against 38 ms).
                cur = conn.execute(sql.SQL("DELETE FROM {} WHERE rag_session_id = %s AND "
                                           "(generation < %s OR generation > %s)").format(sql.Identifier(other)),
                                   (session_id, generation, generation))
            else:
                cur = conn.execute(sql.SQL("DELETE FROM {} WHERE rag_session_id = %s").format(sql.Identifier(other)),
                                   (session_id,))
            removed += cur.rowcount
    return removed


def delete_paths(conn: psycopg.Connection, table: str, session_id: str, generation: int, paths: list[str]) -> int:
    """Delete every row of the given paths in a generation; returns the row count."""
    if not paths:
        return 0
    cur = conn.execute(
        sql.SQL("DELETE FROM {} WHERE rag_session_id = %s AND generation = %s AND path = ANY(%s)").format(
            sql.Identifier(table)
        ),
        (session_id, generation, paths),
    )
    return cur.rowcount


def indexed_blobs(conn: psycopg.Connection, table: str, session_id: str, generation: int) -> dict[str, str]:
    """path → blob_sha of what the active index holds (the base of an incremental diff)."""
    rows = conn.execute(
        sql.SQL("SELECT DISTINCT path, blob_sha FROM {} WHERE rag_session_id = %s AND generation = %s").format(
            sql.Identifier(table)
        ),
        (session_id, generation),
    ).fetchall()
    return {path: sha for path, sha in rows}
