"""Shared pieces of the benchmark: its own embedded server, the corpus, stats, binary COPY, the report."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evals.metrics import percentile

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CORPUS_SCRIPT = PROJECT_ROOT.parent / "shared" / "corpora" / "fastapi-ru" / "assemble"
USE_SESSION = "fastapi-use"
"""The fastapi-ru session indexed with `use`: built by the `index` section, or on demand."""


class BenchError(Exception):
    """An expected failure, printed as one line."""


# ---------------------------------------------------------------------------------------------- stats


def summary(values_ms: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / mean / min / max (ms) and the sample count."""
    vals = [float(v) for v in values_ms]
    if not vals:
        return {"n": 0}
    return {"n": len(vals), "p50": round(percentile(vals, 50), 2), "p95": round(percentile(vals, 95), 2),
            "mean": round(sum(vals) / len(vals), 2), "min": round(min(vals), 2), "max": round(max(vals), 2)}


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds)."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def vector_literal(vec: Sequence[float] | np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vec) + "]"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


# ---------------------------------------------------------------------------------------------- report


@dataclass
class Report:
    """Prints figures as they come and keeps them for `out/bench.json` (rewritten after each section)."""

    out_path: Path
    data: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str = "") -> None:
        print(text, flush=True)

    def note(self, text: str) -> None:
        """Progress, to stderr (the report on stdout stays compact)."""
        print(f"  … {text}", file=sys.stderr, flush=True)

    def section(self, name: str, title: str) -> dict[str, Any]:
        self.say("")
        self.say(f"== {title} ==")
        self.data.setdefault("sections", {})[name] = {}
        return self.data["sections"][name]

    def save(self) -> None:
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.out_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
        tmp.replace(self.out_path)


def fmt_lat(s: dict[str, float]) -> str:
    if not s.get("n"):
        return "n/a"
    return f"p50 {s['p50']:7.2f} ms  p95 {s['p95']:7.2f} ms  (n={s['n']})"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "NOT met")


# ---------------------------------------------------------------------------------------------- server


@contextmanager
def embedded_server(keep: bool = False) -> Iterator[tuple[str, Path]]:
    """The benchmark's own embedded PostgreSQL in a temp folder: started here, always stopped and removed.

    Never the user's `.data` nor `DATABASE_URL`: the benchmark loads 100k synthetic rows.
    """
    from stores.database import start_embedded, stop_embedded

    base = Path(tempfile.mkdtemp(prefix="lotsman-bench-"))
    try:
        url = start_embedded(base)
        yield url, base
    finally:
        try:
            stop_embedded(base)
        except Exception as exc:  # report, but still remove what can be removed
            print(f"bench: warning: could not stop the embedded PostgreSQL in {base}: {exc}", file=sys.stderr)
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def sqlalchemy_url(url: str) -> str:
    """`postgresql://…` (libpq URI, possibly a unix socket in `?host=`) → `postgresql+psycopg://…`."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    raise BenchError(f"unexpected database URI scheme: {url.split(':', 1)[0]}")


# ---------------------------------------------------------------------------------------------- corpus


def corpus_dir() -> Path:
    """The fastapi-ru corpus, assembled once into `$LOTSMAN_FASTAPI_CORPUS` or /tmp/lotsman-fastapi-ru."""
    default = Path(tempfile.gettempdir()) / "lotsman-fastapi-ru"
    dest = Path(os.environ.get("LOTSMAN_FASTAPI_CORPUS") or default)
    if (dest / "fastapi" / "__init__.py").exists() and (dest / "docs").is_dir():
        return dest
    if not CORPUS_SCRIPT.exists():
        raise BenchError(f"cannot assemble the fastapi-ru corpus: script not found: {CORPUS_SCRIPT}")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    result = subprocess.run(["bash", str(CORPUS_SCRIPT), str(dest)], env=env, capture_output=True, text=True)
    if result.returncode != 0 or not (dest / "fastapi" / "__init__.py").exists():
        lines = [ln for ln in (result.stderr or result.stdout).splitlines() if ln.strip()]
        reason = lines[-1].strip() if lines else f"exit code {result.returncode}"
        raise BenchError(f"cannot assemble the fastapi-ru corpus into {dest}: {reason}")
    return dest


# ---------------------------------------------------------------------------------------------- COPY

_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_COPY_TRAILER = struct.pack(">h", -1)
_NULL = struct.pack(">i", -1)


def _field(kind: str, value: Any) -> bytes:
    if value is None:
        return _NULL
    if kind == "text":
        data = str(value).replace("\x00", "").encode("utf-8")
    elif kind == "int4":
        data = struct.pack(">i", int(value))
    elif kind == "jsonb":
        data = b"\x01" + json.dumps(value, ensure_ascii=False).encode("utf-8")
    elif kind == "vector":  # pgvector's binary format: int16 dim, int16 unused, float4[dim] big-endian
        arr = np.asarray(value, dtype=np.float32)
        data = struct.pack(">HH", arr.shape[0], 0) + arr.astype(">f4").tobytes()
    else:
        raise ValueError(kind)
    return struct.pack(">i", len(data)) + data


def copy_binary(conn, table: str, columns: Sequence[str], kinds: Sequence[str],
                rows: Iterable[Sequence[Any]], chunk_rows: int = 2000) -> int:
    """COPY rows in PostgreSQL's binary format (vectors as pgvector binary): no float formatting."""
    from psycopg import sql

    stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns)))
    ncols = struct.pack(">h", len(columns))
    n = 0
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        buf = [_COPY_HEADER]
        for row in rows:
            buf.append(ncols + b"".join(_field(k, v) for k, v in zip(kinds, row, strict=True)))
            n += 1
            if len(buf) >= chunk_rows:
                copy.write(b"".join(buf))
                buf = []
        buf.append(_COPY_TRAILER)
        copy.write(b"".join(buf))
    return n


def hnsw_index(conn, table: str) -> tuple[str, str] | None:
    """(name, definition) of the table's HNSW index, or None."""
    row = conn.execute(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
        "WHERE i.indrelid = %s::regclass AND a.amname = 'hnsw'", (table,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def explain(conn, stmt, params: Any = None, *, analyze: bool = True, setup: Sequence[str] = ()) -> list[str]:
    """EXPLAIN lines of a statement (in a transaction rolled back afterwards)."""
    from psycopg import sql

    prefix = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " if analyze else "EXPLAIN (COSTS OFF) "
    try:
        with conn.transaction():
            for s in setup:
                conn.execute(s)
            query = sql.SQL(prefix) + (stmt if isinstance(stmt, sql.Composable) else sql.SQL(stmt))
            lines = [_short_vectors(r[0]) for r in conn.execute(query, params).fetchall()]
            raise _Rollback
    except _Rollback:
        pass
    return lines


class _Rollback(Exception):
    pass


_VECTOR_LITERAL = re.compile(r"'\[[-+0-9.eE,\s]+\]'::vector")


def _short_vectors(line: str) -> str:
    """Plans quote the query vector in full: 512 floats make them unreadable."""
    return _VECTOR_LITERAL.sub(lambda m: f"'[{m.group(0).count(',') + 1} floats]'::vector", line)


def uses_index(plan: Sequence[str], index_name: str) -> bool:
    return any(index_name in line for line in plan)
