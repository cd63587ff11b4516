"""Per-generation artifacts: what a session's first question would otherwise read from all its rows.

A question needs a few session-wide facts before it can retrieve anything: the file list (the repository's
layout), its symbol names (the code plan), the catalog rows the router's alias index is built from, the
layers present and how many rows carry a vector. Read from the chunk table they cost one scan each of the
session's rows on every fresh process (CLI `ask`, a new server worker). They are computed once when an
index job commits — `store_generation_artifacts`, in the job's own transaction — and stored in
`rag_generation_artifacts` beside the generation; readers load them in one short query
(`generation_artifacts`), and build and store them on first use when they are missing (a session indexed
before schema v9) or older than the session's last finished job (a job that did not store them).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from stores.layers import Layer
from stores.schema import chunk_table

FORMAT_VERSION = 1
"""Bumped whenever a payload's shape changes: a stored artifact of another version is built again."""

ALIAS_CATALOG_LAYERS = (Layer.D1_DOCUMENT_CATALOG.value, Layer.D3_ENTITY_CATALOG.value,
                        Layer.C3_ENTRYPOINTS.value, Layer.D2_FACT_INDEX.value)
"""The layers whose titles and metadata the router's alias index is built from."""

CATALOG_KEYS = ("id", "tags", "entities", "endpoints", "has_frontmatter", "domain", "subdomain", "headings",
                "name", "route_or_command", "object", "route")
"""The metadata keys of catalog rows the alias index reads; the rest of a row's metadata is not stored."""

NAMES = ("files", "symbols", "catalog", "stats")


@dataclass(frozen=True)
class GenerationArtifacts:
    """Session-wide facts of one generation of a session's index."""

    files: tuple[str, ...]
    """Every indexed path, sorted."""
    symbols: frozenset[str]
    """Lower-cased short and qualified names of the C1 symbols."""
    catalog: tuple[dict[str, Any], ...]
    """Rows of `ALIAS_CATALOG_LAYERS` as `{path, layer, title, metadata}` (metadata cut to `CATALOG_KEYS`), in
    the order the table returns them (the order `RagRepository.catalog_rows` reads them in)."""
    embedded_rows: int
    """Rows that carry a vector."""
    present_layers: frozenset[str]
    """Layers holding at least one row."""
    last_job: str | None = None
    """The session's last finished index job when these were computed (they describe its rows)."""

    def payloads(self) -> dict[str, Any]:
        """The JSON value stored under each name."""
        return {"files": list(self.files), "symbols": sorted(self.symbols), "catalog": list(self.catalog),
                "stats": {"embedded_rows": self.embedded_rows, "present_layers": sorted(self.present_layers),
                          "last_job": self.last_job}}

    @classmethod
    def from_payloads(cls, values: dict[str, Any]) -> GenerationArtifacts:
        stats = values["stats"]
        return cls(files=tuple(values["files"]), symbols=frozenset(values["symbols"]),
                   catalog=tuple(values["catalog"]), embedded_rows=int(stats["embedded_rows"]),
                   present_layers=frozenset(stats["present_layers"]), last_job=stats.get("last_job"))


def encode_payload(value: Any) -> bytes:
    """JSON, zlib-compressed: a safe format (nothing in it can run code when read back), ~4× smaller."""
    return zlib.compress(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 6)


def decode_payload(payload: bytes) -> Any:
    return json.loads(zlib.decompress(payload).decode("utf-8"))


def compute_generation_artifacts(conn: psycopg.Connection, rag_session_id: str, generation: int, table: str
                                 ) -> GenerationArtifacts:
    """Read the artifacts of a generation from its rows in `table` (three scans of the generation)."""
    ident = sql.Identifier(table)
    params = {"sid": rag_session_id, "gen": generation, "layers": list(ALIAS_CATALOG_LAYERS),
              "symbol_layer": Layer.C1_SYMBOL_CATALOG.value, "keys": list(CATALOG_KEYS)}
    where = sql.SQL("rag_session_id = %(sid)s AND generation = %(gen)s")
    groups = conn.execute(sql.SQL(
        "SELECT path, layer, count(embedding) AS vectors FROM {} WHERE {} GROUP BY path, layer").format(ident, where),
        params).fetchall()
    names = conn.execute(sql.SQL(
        "SELECT DISTINCT lower(metadata_json->>'name'), lower(metadata_json->>'qname') FROM {} "
        "WHERE {} AND layer = %(symbol_layer)s").format(ident, where), params).fetchall()
    catalog = conn.execute(sql.SQL(
        "SELECT path, layer, title, (SELECT coalesce(jsonb_object_agg(k, v), '{{}}'::jsonb) "
        "FROM jsonb_each(metadata_json) AS m(k, v) WHERE k = ANY(%(keys)s)) FROM {} "
        "WHERE {} AND layer = ANY(%(layers)s)").format(
            ident, where), params).fetchall()
    return GenerationArtifacts(
        files=tuple(sorted({path for path, _, _ in groups})),
        symbols=frozenset(x for pair in names for x in pair if x),
        catalog=tuple({"path": p, "layer": layer, "title": title, "metadata": meta or {}}
                      for p, layer, title, meta in catalog),
        embedded_rows=sum(int(n) for _, _, n in groups),
        present_layers=frozenset(layer for _, layer, _ in groups),
        last_job=last_done_job(conn, rag_session_id),
    )


def store_generation_artifacts(conn: psycopg.Connection, rag_session_id: str, generation: int, *,
                               table: str | None = None) -> None:
    """Compute a generation's artifacts from its rows and store them (replacing what was stored for it, and
    dropping older generations' artifacts).

    Call it at the end of the transaction that makes an index job's rows live, after the job is marked done
    (a snapshot: after `swap_generation`, so the session row names the generation's table; a changes job:
    after its writes): readers then see the rows and their artifacts together, and the artifacts name that
    job as the last one they describe.

    Args:
        table: the chunk table holding the generation; by default the session's current one.
    """
    if table is None:
        row = conn.execute("SELECT embedding_dim FROM rag_sessions WHERE rag_session_id = %s",
                           (rag_session_id,)).fetchone()
        if row is None:
            return  # deleted meanwhile: nothing to describe
        table = chunk_table(int(row[0]))
    artifacts = compute_generation_artifacts(conn, rag_session_id, generation, table)
    save_artifacts(conn, rag_session_id, generation, artifacts.payloads())


def save_artifacts(conn: psycopg.Connection, rag_session_id: str, generation: int, values: dict[str, Any], *,
                   format_version: int = FORMAT_VERSION) -> None:
    """Store named JSON values of a generation (an upsert: two processes storing the same one is harmless)."""
    with conn.transaction():
        for name, value in values.items():
            conn.execute(
                "INSERT INTO rag_generation_artifacts (rag_session_id, generation, name, format_version, payload) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (rag_session_id, generation, name) DO UPDATE SET "
                "format_version = EXCLUDED.format_version, payload = EXCLUDED.payload, created_at = now()",
                (rag_session_id, generation, name, format_version, encode_payload(value)))
        conn.execute("DELETE FROM rag_generation_artifacts WHERE rag_session_id = %s AND generation < %s",
                     (rag_session_id, generation))


def load_artifacts(conn: psycopg.Connection, rag_session_id: str, generation: int, names: tuple[str, ...], *,
                   format_version: int = FORMAT_VERSION) -> dict[str, Any] | None:
    """The named values of a generation, or None when one is missing or of another format version."""
    rows = conn.execute(
        "SELECT name, format_version, payload FROM rag_generation_artifacts "
        "WHERE rag_session_id = %s AND generation = %s AND name = ANY(%s)",
        (rag_session_id, generation, list(names))).fetchall()
    found = {name: bytes(payload) for name, version, payload in rows if version == format_version}
    if set(found) != set(names):
        return None
    return {name: decode_payload(payload) for name, payload in found.items()}


def last_done_job(conn: psycopg.Connection, rag_session_id: str) -> str | None:
    """The id of the session's last finished index job: what its rows are as of (None before the first)."""
    row = conn.execute(
        "SELECT job_id FROM rag_index_jobs WHERE rag_session_id = %s AND status = 'done' "
        "AND NOT coalesce((counts->>'noop')::boolean, false) "  # a no-op changed no row
        "ORDER BY finished_at DESC, started_at DESC LIMIT 1", (rag_session_id,)).fetchone()
    return str(row[0]) if row else None


def generation_artifacts(conn: psycopg.Connection, rag_session_id: str, generation: int, table: str
                         ) -> GenerationArtifacts:
    """The artifacts of a generation: loaded when stored and as of the session's last finished job, else
    computed from the rows and stored for the next reader (a session indexed before schema v9, or by a job
    that did not store them).

    `conn` must not be inside a transaction: the rows, the last job and the stored values are read in one
    snapshot (REPEATABLE READ), so artifacts computed while a job commits never claim to describe it.
    """
    with _one_snapshot(conn):
        values = load_artifacts(conn, rag_session_id, generation, NAMES)
        job = last_done_job(conn, rag_session_id)
        if values is not None and values["stats"].get("last_job") == job:
            return GenerationArtifacts.from_payloads(values)
        artifacts = compute_generation_artifacts(conn, rag_session_id, generation, table)
    _save_unless_busy(conn, rag_session_id, generation, artifacts)
    return artifacts


SAVE_LOCK_TIMEOUT_MS = 200
"""A reader storing artifacts it built waits at most this long for row locks: an index job storing the same
generation's holds them until it commits, and a question must not wait for a job (the next reader builds
them again, or finds the job's)."""


def _save_unless_busy(conn: psycopg.Connection, rag_session_id: str, generation: int,
                      artifacts: GenerationArtifacts) -> None:
    try:
        with conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = {SAVE_LOCK_TIMEOUT_MS}")
            save_artifacts(conn, rag_session_id, generation, artifacts.payloads())
    except psycopg.errors.LockNotAvailable:
        pass


@contextmanager
def _one_snapshot(conn: psycopg.Connection) -> Iterator[None]:
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        yield  # the caller's transaction decides
        return
    before = conn.isolation_level
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        with conn.transaction():
            yield
    finally:
        conn.isolation_level = before
