"""`python -m evals.bench.scale_1m DATA_DIR`: the `scale` section's 1M-row stage on an existing database.

The benchmark's own server would have to index the standard library again first (~20 min on the shared
cores); this runs the same stage (`scale._load`, `_measure`, `_recall`) against the embedded server under
DATA_DIR, whose `stdlib` session (`lotsman index <stdlib corpus> --session stdlib`) provides the real rows.
Writes `out/scale-1m.json`. The synthetic sessions are removed at the end.
"""

from __future__ import annotations

import json
import sys
import time
import types
from pathlib import Path

import numpy as np

from evals.bench import scale
from evals.bench.common import PROJECT_ROOT, Report, copy_binary
from evals.bench.retrieval import COLUMNS, KINDS, _real_rows, _synthetic
from evals.bench.texts import STDLIB_QUESTIONS


def main(data_dir: str, size: int = 1_000_000, source: str = "stdlib") -> None:
    from stores.database import Database, start_embedded
    from stores.embedders import make_embedder
    from stores.sessions import create_session, delete_session, get_session

    base = Path(data_dir)
    db = Database(start_embedded(base), max_size=8)
    report = Report(PROJECT_ROOT / "out" / "scale-1m.json")
    ctx = types.SimpleNamespace(base=base, db=db, opts=types.SimpleNamespace(quick=False))
    use = make_embedder("use", threads=2)
    with db.connection() as conn:
        real_session = get_session(conn, source)
        for name in ("scale-1m-big", "scale-1m-5k"):
            if conn.execute("SELECT 1 FROM rag_sessions WHERE name = %s", (name,)).fetchone():
                delete_session(conn, name)
        conn.commit()
    real = _real_rows(db, real_session)
    vectors = {q: use.embed_query(q) for q in STDLIB_QUESTIONS}
    with db.connection() as conn:
        big = create_session(conn, "scale-1m-big", use.name, use.dim)
        small = create_session(conn, "scale-1m-5k", use.name, use.dim)
        for s in (big, small):
            conn.execute("UPDATE rag_sessions SET active_generation = 1, stop_lexemes = %s WHERE rag_session_id = %s",
                         (real_session.stop_lexemes, s.rag_session_id))
        conn.commit()
        big, small = get_session(conn, "scale-1m-big"), get_session(conn, "scale-1m-5k")
    rng = np.random.default_rng(13)
    out: dict = {"source_rows": len(real), "size": size}
    try:
        with db.connection() as conn:
            rows = _synthetic(real, small.rag_session_id, 0, scale.SMALL_ROWS, rng)
            copy_binary(conn, small.table, COLUMNS, KINDS, rows)
        t0 = time.perf_counter()
        out["load"] = scale._load(db, real, big, 0, size, rng, report)
        out["load_s"] = round(time.perf_counter() - t0, 1)
        report.say(f"{size:,} rows loaded: {out['load']}")
        out["adapter"] = scale._measure(report, ctx, big, vectors, use, f"{size:,} rows")
        out["recall_5k_session"] = scale._recall(db, small, vectors)
        report.say("  5k-row session beside them — vector lane: " + scale._recall_text(out["recall_5k_session"]))
    finally:
        report.data = out
        report.save()
        print(json.dumps({k: v for k, v in out.items() if k != "adapter"}, default=str)[:2000], flush=True)
        with db.connection() as conn:
            for s in (big, small):
                delete_session(conn, s.name)
        db.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)
