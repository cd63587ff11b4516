"""Section `stdlib`: indexing a large real codebase — the interpreter's standard library (issue 13).

- cold index ÷ pure embedding of the same texts (target ≤ 1.2). The denominator embeds exactly the texts
  the pipeline embeds, in its batch size and on its workers (`INDEX_EMBED_WORKERS`), alone; with
  `--stdlib-embed-sample N` only every N-th text is embedded and the time is scaled up (labelled "est.").
- unchanged re-index ÷ cold (target ≤ 5 %).
- kill -9 at ~50 %: a `lotsman index` subprocess (same database, cold blob cache, new session) is
  SIGKILLed when its progress line reports ≥ 50 % of the texts embedded; the resumed run's
  `embedded` ÷ the cold run's says how much was embedded again (target ≤ 55 %). Its progress lines
  (with an ETA) are kept in the JSON.
The corpus comes from `evals/corpora/stdlib/assemble` (no download).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evals.bench.common import PROJECT_ROOT, BenchError, Report, load_average, ratio, verdict

ASSEMBLE = PROJECT_ROOT / "evals" / "corpora" / "stdlib" / "assemble"
SESSION, KILLED_SESSION = "stdlib-use", "stdlib-killed"
BATCH = 32
COLD_TARGET, UNCHANGED_TARGET, RESUME_TARGET = 1.2, 0.05, 0.55
KILL_AT = 50


def stdlib_corpus(base: Path) -> Path:
    """The standard-library corpus under `base` (assembled from the running interpreter)."""
    dest = base / "stdlib"
    result = subprocess.run(["bash", str(ASSEMBLE), str(dest)], capture_output=True, text=True,
                            env={**os.environ, "PYTHON": sys.executable})
    if result.returncode != 0:
        raise BenchError(f"cannot assemble the stdlib corpus: {result.stderr.strip()[-300:]}")
    return dest


def _texts(root: Path) -> tuple[int, list[str]]:
    from stores.indexing.files import collect_files
    from stores.indexing.parsing import parse_files

    files = collect_files(root).files
    texts = [r.embed_text or r.content for o in parse_files(files) for r in o.records if r.embed]
    return len(files), texts


def _pure_embed(embedder: Any, texts: list[str], every: int) -> tuple[float, int]:
    """Embedding alone, the way the job embeds (its batch size and `INDEX_EMBED_WORKERS`): the ratio is the
    job's overhead, not a difference in how the embedder is driven."""
    from stores.indexing.service import INDEX_EMBED_WORKERS

    chosen = texts[::every]
    t0 = time.perf_counter()
    for i in range(0, len(chosen), BATCH):
        np.asarray(embedder.embed_batch(chosen[i : i + BATCH], workers=INDEX_EMBED_WORKERS), dtype=np.float32)
    return (time.perf_counter() - t0) * len(texts) / max(1, len(chosen)), len(chosen)


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the parse workers); not PostgreSQL's."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _pg_cpu_s(base: Path) -> float | None:
    """CPU seconds of the benchmark's own PostgreSQL: the postmaster, its live processes and the ones it
    reaped (parallel index-build workers, autovacuum); None when it cannot be read."""
    import psutil

    try:
        postmaster = psutil.Process(int((base / "pg" / "postmaster.pid").read_text().split()[0]))
        total = 0.0
        for proc in [postmaster, *postmaster.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = proc.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
        return total
    except (OSError, ValueError, IndexError, psutil.Error):
        return None


def _delta(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else after - before


def _index(db: Any, root: Path, name: str, embedder: Any) -> tuple[Any, float]:
    from stores.indexing.service import index_repository

    t0 = time.perf_counter()
    rep = index_repository(db, root, session_name=name, embedder=embedder, batch_size=BATCH)
    return rep, time.perf_counter() - t0


def _killed_run(ctx: Any, root: Path) -> dict[str, Any]:
    """`lotsman index` in a subprocess, SIGKILLed at ≥ KILL_AT % embedded; returns its progress lines."""
    # PYTHONPATH: the editable install may point at another checkout; the killed run must be this tree's code.
    env = {**os.environ, "DATABASE_URL": ctx.url, "LOTSMAN_EMBEDDER": "use", "PYTHONPATH": str(PROJECT_ROOT),
           "LOTSMAN_EMBED_BATCH_SIZE": str(BATCH), "LOTSMAN_DATA_DIR": str(ctx.base / "unused")}
    cmd = [str(Path(sys.executable).parent / "lotsman"), "index", str(root), "--session", KILLED_SESSION]
    lines: list[str] = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    killed_at = None
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            lines.append(line.rstrip())
            if line.startswith("embed:") and "(" in line:
                pct = int(line.split("(", 1)[1].split("%", 1)[0])
                if pct >= KILL_AT:
                    killed_at = line.strip()
                    break
    finally:  # also when the bench itself is interrupted: the run is in its own session, nobody else kills it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return {"killed_at": killed_at, "seconds_before_kill": round(time.perf_counter() - t0, 1),
            "progress_lines": lines[-12:], "returncode": proc.returncode}


def _wait_for_job_lock(db: Any, name: str, timeout_s: float = 60.0) -> float:
    """Seconds until the killed run's job lock is free: its PostgreSQL backend outlives the SIGKILLed client
    until it notices the closed socket, and a resumed run started at once was refused ("another index job
    … is running"). That refusal is the product's documented answer; the bench waits instead."""
    from stores.sessions import find_session, job_lock_key

    t0 = time.perf_counter()
    with db.connection() as conn:
        session = find_session(conn, name)
        while session is not None:
            key = job_lock_key(session.rag_session_id)
            if conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
                break
            if time.perf_counter() - t0 > timeout_s:
                raise BenchError(f"the killed index job's lock was still held after {timeout_s:.0f} s")
            time.sleep(0.2)
        conn.commit()
    return time.perf_counter() - t0


def run(report: Report, ctx: Any) -> dict[str, Any]:
    from stores.embedders import make_embedder

    out = report.section("stdlib", "6. stdlib: cold / unchanged / killed-and-resumed index of the standard library")
    root = stdlib_corpus(ctx.base)
    embedder = make_embedder("use", threads=2)
    embedder.embed_documents(["прогрев модели", "warm-up"])
    db = ctx.db
    every = max(1, int(getattr(ctx.opts, "stdlib_embed_sample", 1) or 1))

    report.note("stdlib: cold index")
    load_cold, cpu0, pg0 = load_average(), _cpu_s(), _pg_cpu_s(ctx.base)
    cold, cold_s = _index(db, root, SESSION, embedder)
    cold_cpu, cold_pg = _cpu_s() - cpu0, _delta(_pg_cpu_s(ctx.base), pg0)
    files, texts = _texts(root)
    report.note(f"stdlib: embedding {len(texts[::every])} of {len(texts)} texts alone")
    load_embed, cpu0 = load_average(), _cpu_s()
    embed_s, sampled = _pure_embed(embedder, texts, every)
    embed_cpu = (_cpu_s() - cpu0) * len(texts) / max(1, sampled)
    out["cpu"] = {"cold_cpu_s": round(cold_cpu, 1), "pure_embed_cpu_s": round(embed_cpu, 1),
                  "cold_over_pure_embed_cpu": ratio(cold_cpu, embed_cpu),
                  "cold_postgres_cpu_s": None if cold_pg is None else round(cold_pg, 1),
                  "cold_with_postgres_over_pure_embed_cpu": None if cold_pg is None else
                  ratio(cold_cpu + cold_pg, embed_cpu),
                  "load_avg_before_cold": load_cold, "load_avg_before_embed": load_embed}
    report.note("stdlib: unchanged re-index")
    unchanged, unchanged_s = _index(db, root, SESSION, embedder)
    out.update(files=files, rows=cold.rows_written, embedded=cold.embedded, texts=len(texts),
               cold_s=round(cold_s, 1), cold_timings_s={k: round(v, 1) for k, v in cold.timings.items()},
               pure_embed_s=round(embed_s, 1), pure_embed_sampled=sampled, pure_embed_estimated=every > 1,
               cold_over_pure_embed=ratio(cold_s, embed_s),
               cold_over_own_embed=ratio(cold_s, cold.timings.get("embed", 0.0)), unchanged_s=round(unchanged_s, 2),
               unchanged_embedded=unchanged.embedded, unchanged_over_cold=ratio(unchanged_s, cold_s))
    report.say(f"{files} files → {cold.rows_written} rows, {cold.embedded} embedded; cold index {cold_s:.1f} s "
               f"(pipeline: " + ", ".join(f"{k} {v:.1f}" for k, v in cold.timings.items()) + ")")
    report.say(f"  pure embedding of the same {len(texts)} texts: {embed_s:.1f} s"
               f"{f' (est. from every {every}th text)' if every > 1 else ''}")
    report.say(f"  cold / pure embed = {out['cold_over_pure_embed']:.2f}  (target ≤ {COLD_TARGET}: "
               f"{verdict(out['cold_over_pure_embed'] <= COLD_TARGET)}); in CPU seconds of this process and its "
               f"workers {out['cpu']['cold_over_pure_embed_cpu']:.2f}, with PostgreSQL's "
               f"{out['cpu']['cold_with_postgres_over_pure_embed_cpu']} (load average {load_cold} / {load_embed})")
    # The same ratio under the same load: the two runs above are minutes apart on a shared machine, where
    # the embedder's speed alone moved 50–80 texts/s between runs.
    report.say(f"  cold / the job's own time in the embedder (same run, same load: stalls and tails only) = "
               f"{out['cold_over_own_embed']}")
    report.say(f"  unchanged re-index {unchanged_s:.2f} s = {out['unchanged_over_cold'] * 100:.1f}% of cold "
               f"(target ≤ {UNCHANGED_TARGET:.0%}: {verdict(out['unchanged_over_cold'] <= UNCHANGED_TARGET)})")
    report.save()

    with db.connection() as conn:  # a cold cache for the killed run (this is the benchmark's own database)
        conn.execute("DELETE FROM rag_blob_cache WHERE embedder = %s", (embedder.name,))
    report.note(f"stdlib: index in a subprocess, kill -9 at {KILL_AT}% embedded")
    killed = _killed_run(ctx, root)
    killed["lock_free_after_s"] = round(_wait_for_job_lock(db, KILLED_SESSION), 2)
    with db.connection() as conn:
        cached = conn.execute("SELECT count(*) FROM rag_blob_cache WHERE embedder = %s",
                              (embedder.name,)).fetchone()[0]
    report.note("stdlib: resumed index")
    resumed, resumed_s = _index(db, root, KILLED_SESSION, embedder)
    share = ratio(resumed.embedded, cold.embedded)
    out["kill"] = {**killed, "cache_entries_after_kill": cached, "resumed_s": round(resumed_s, 1),
                   "resumed_embedded": resumed.embedded, "resumed_cache_hits": resumed.cache_hits,
                   "resumed_rows": resumed.rows_written, "re_embedded_share": share}
    report.say(f"  kill -9 at “{killed['killed_at']}” after {killed['seconds_before_kill']} s "
               f"({cached} files already in the blob cache)")
    report.say(f"  resumed: {resumed_s:.1f} s, {resumed.cache_hits} cache hits, {resumed.embedded} texts "
               f"embedded = {share * 100 if share is not None else float('nan'):.1f}% of the cold run's "
               f"(target ≤ {RESUME_TARGET:.0%}: {verdict(share is not None and share <= RESUME_TARGET)}); "
               f"{resumed.rows_written} rows (cold: {cold.rows_written})")
    report.say("  last progress lines of the killed run: " + " | ".join(killed["progress_lines"][-3:]))
    return out
