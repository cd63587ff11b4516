"""Writes layer rows into a session's chunk table: COPY in, atomic generation swap, per-path diffs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from stores.indexing.records import ChunkRecord
from stores.schema import chunk_table, existing_spaces

COLUMNS = ("rag_session_id", "generation", "layer", "path", "title", "content", "metadata_json",
           "span_start", "span_end", "blob_sha", "embedding")
COLUMN_TYPES = ("text", "int4", "text", "text", "text", "text", "jsonb", "int4", "int4", "text", "vector")


def _clean(text: str) -> str:
    # PostgreSQL text cannot hold NUL; the files are already UTF-8-checked.
    return text.replace("\x00", "")


def copy_rows(
    conn: psycopg.Connection, table: str, session_id: str, generation: int,
    rows: Iterable[tuple[ChunkRecord, str, np.ndarray | None]],
) -> int:
    """COPY (record, blob_sha, vector) rows into `table`; returns how many were written."""
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
            copy.write_row((
                session_id, generation, record.layer.value, record.path, _clean(record.title)[:500],
                _clean(record.content), Jsonb(record.metadata), record.span_start, record.span_end, blob_sha,
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


def swap_generation(conn: psycopg.Connection, table: str, session_id: str, old: int, new: int, *,
                    space: Space | None = None) -> None:
    """Make `new` the active generation and drop `old` (from `table`, the old generation's), in one
    transaction: readers see one or the other.

    Args:
        space: a rebuild's new embedder, dimension and root: `new` was written in that dimension's table,
            and the session now reads there.
    """
    with conn.transaction():
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
