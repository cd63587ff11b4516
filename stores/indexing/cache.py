"""Blob cache: parsed records and their vectors keyed by (blob_sha, path, pipeline version, embedder).

The path is part of the key because records carry path-derived metadata (domain, doc_type, module
qnames): the same bytes under another path are a different document.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from stores.indexing.records import ChunkRecord
from stores.indexing.versions import PIPELINE_VERSION  # noqa: E402,F401 - the parse cache key (re-exported)
from stores.layers import Layer


@dataclass(frozen=True)
class CachedFile:
    records: list[ChunkRecord]
    vectors: np.ndarray | None
    """One row per record with `embed=True`, in record order."""
    warnings: list[str] | None = None
    """What parsing the file reported (e.g. broken frontmatter); None for entries cached before schema v6."""


_RECORD_FIELDS = tuple(f.name for f in fields(ChunkRecord))


def record_json(record: ChunkRecord) -> dict:
    """A record as the JSON object the cache stores: its fields, shallow. (`dataclasses.asdict` deep-copied
    every metadata value: 4 s of the index job's main thread on 80 stdlib files, ~10 % of the job, taken
    from the embedding workers under the GIL.)"""
    return {name: getattr(record, name) for name in _RECORD_FIELDS}


def cache_key(blob_sha: str, path: str, embedder: str) -> str:
    raw = f"{blob_sha}\0{path}\0{PIPELINE_VERSION}\0{embedder}"
    return hashlib.sha256(raw.encode()).hexdigest()


def load_cached(conn: psycopg.Connection, keys: list[str], dim: int) -> dict[str, CachedFile]:
    """Cached entries for the given keys (missing keys are simply absent)."""
    if not keys:
        return {}
    rows = conn.execute(
        "SELECT cache_key, records, vectors, warnings FROM rag_blob_cache WHERE cache_key = ANY(%s)", (keys,)
    ).fetchall()
    out: dict[str, CachedFile] = {}
    for key, records_json, vectors, warnings in rows:
        records = [ChunkRecord(**{**r, "layer": Layer(r["layer"])}) for r in records_json]
        vec = np.frombuffer(vectors, dtype=np.float32).reshape(-1, dim) if vectors else None
        out[key] = CachedFile(records=records, vectors=vec, warnings=warnings)
    return out


def store_cached(
    conn: psycopg.Connection, entries: list[tuple[str, str, str, str, list[ChunkRecord], np.ndarray | None]],
    warnings: dict[str, list[str]] | None = None,
) -> None:
    """Insert (key, blob_sha, path, embedder, records, vectors) entries; existing keys are kept.

    Args:
        warnings: parse warnings by cache key, replayed on a cache hit (a key without any stores none).
    """
    if not entries:
        return
    warnings = warnings or {}
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO rag_blob_cache "
            "(cache_key, blob_sha, path, pipeline_version, embedder, records, vectors, warnings) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (cache_key) DO NOTHING",
            [
                (key, sha, path, PIPELINE_VERSION, embedder, Jsonb([record_json(r) for r in records]),
                 None if vectors is None else np.ascontiguousarray(vectors, dtype=np.float32).tobytes(),
                 warnings.get(key, []))
                for key, sha, path, embedder, records, vectors in entries
            ],
        )
