"""Section `index`: cold / one-file-changed / unchanged indexing of fastapi-ru with each offline embedder.

Besides the pipeline's own `IndexReport.timings` (parse and embed overlap there: parsing runs while a
background thread embeds, and `write` is approximate), every phase is also measured *alone* on the same
files, so "total / pure embed" has an honest denominator:
- parse alone: `collect_files` + `parse_file` over every file, nothing else running;
- embed alone: `embedder.embed_documents` on exactly the texts the pipeline embeds, in its batches of 32
  (for e5 on an evenly spaced sample, extrapolated — marked "est.");
- write alone: the pipeline's COPY (`writer.copy_rows`) plus the blob-cache insert into a scratch copy of the
  chunk table, in a transaction rolled back afterwards (nothing is left behind, the cache stays cold).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from evals.bench.common import Report, ratio, timed, verdict

BATCH = 32
E5_SAMPLE = 200
COLD_TARGET_S = 120.0
TOTAL_OVER_EMBED_TARGET = 1.3
UNCHANGED_TARGET = 0.05
CHANGED_FILE = "docs/ru/docs/tutorial/cors.md"
APPENDED = ("\n\n## Замер производительности\n\nЭтот раздел добавлен бенчмарком Lotsman: файл изменился, "
            "и повторная индексация должна заново разобрать и встроить только его строки.\n")


def session_name(embedder: str) -> str:
    return f"fastapi-{embedder}"


def _parse_all(root: Path):
    from stores.indexing.code_pipeline import CodeParseError
    from stores.indexing.files import collect_files
    from stores.indexing.service import parse_file

    t0 = time.perf_counter()
    collected = collect_files(root)
    collect_s = time.perf_counter() - t0
    parsed = []
    t0 = time.perf_counter()
    for source in collected.files:
        try:
            records, _ = parse_file(source)
        except (CodeParseError, RecursionError):
            continue
        parsed.append((source, records))
    return parsed, collect_s, time.perf_counter() - t0


def _embed_alone(embedder: Any, texts: list[str], sample: int | None) -> tuple[float, int, np.ndarray]:
    """(seconds for all texts — extrapolated when sampled, texts actually embedded, vectors)."""
    chosen = texts
    if sample and len(texts) > sample:
        step = len(texts) / sample
        chosen = [texts[int(i * step)] for i in range(sample)]
    t0 = time.perf_counter()
    parts = [np.asarray(embedder.embed_documents(chosen[i : i + BATCH]), dtype=np.float32)
             for i in range(0, len(chosen), BATCH)]
    seconds = time.perf_counter() - t0
    vectors = np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
    return seconds * len(texts) / max(1, len(chosen)), len(chosen), vectors


def _write_alone(db: Any, embedder: Any, parsed: list, vectors: np.ndarray) -> float:
    """Seconds of COPY + blob-cache insert of every row into a scratch table (rolled back)."""
    from psycopg import sql

    from stores.indexing import cache, writer
    from stores.schema import chunk_table, ensure_space, ensure_tables

    src = chunk_table(embedder.dim)
    probe = f"bench_write_probe_d{embedder.dim}"
    rows, entries = [], []
    k = 0
    for source, records in parsed:
        n = sum(1 for r in records if r.embed)
        vecs = vectors[np.arange(k, k + n) % len(vectors)] if n and len(vectors) else None
        k += n
        i = 0
        for record in records:
            vec = None
            if record.embed and vecs is not None:
                vec, i = vecs[i], i + 1
            rows.append((record, source.blob_sha, vec))
        entries.append(("bench-probe:" + source.path, source.blob_sha, source.path, embedder.name, records,
                        vecs))
    with db.connection() as conn:
        ensure_tables(conn)
        ensure_space(conn, embedder.dim)  # the session's table may not exist yet (cold database)
        conn.commit()
        try:
            with conn.transaction():
                conn.execute(sql.SQL("CREATE TABLE {p} (LIKE {s} INCLUDING ALL)").format(
                    p=sql.Identifier(probe), s=sql.Identifier(src)))
                t0 = time.perf_counter()
                writer.copy_rows(conn, probe, "bench-probe", 1, iter(rows))
                cache.store_cached(conn, entries)
                seconds = time.perf_counter() - t0
                raise _Rollback
        except _Rollback:
            pass
    return seconds


class _Rollback(Exception):
    pass


def _index(db: Any, root: Path, name: str, embedder: Any):
    from stores.indexing.service import index_repository

    return timed(lambda: index_repository(db, root, session_name=name, embedder=embedder, incremental=True,
                                          batch_size=BATCH))


def _report_dict(rep: Any, wall: float) -> dict[str, Any]:
    return {"wall_s": round(wall, 2), "kind": rep.kind, "parsed": rep.parsed, "embedded": rep.embedded,
            "rows_written": rep.rows_written, "cache_hits": rep.cache_hits,
            "files_indexed": rep.files_indexed,
            "timings_s": {k: round(v, 2) for k, v in rep.timings.items()}}


def run_one(report: Report, ctx: Any, name: str) -> dict[str, Any]:
    from stores.embedders import make_embedder

    db, root = ctx.db, ctx.corpus_copy()
    embedder = make_embedder(name, threads=2)
    embedder.embed_documents(["прогрев модели", "warm-up"])
    res: dict[str, Any] = {"dim": embedder.dim}

    # --- each phase alone
    parsed, collect_s, parse_s = _parse_all(root)
    texts = [r.embed_text or r.content for _, recs in parsed for r in recs if r.embed]
    sample = E5_SAMPLE if (name == "e5" and not ctx.opts.full_e5_embed) else None
    report.note(f"index/{name}: embedding {sample or len(texts)} of {len(texts)} texts alone")
    embed_s, embedded_alone, vectors = _embed_alone(embedder, texts, sample)
    write_s = _write_alone(db, embedder, parsed, vectors)
    res["alone"] = {"files": len(parsed), "rows": sum(len(r) for _, r in parsed), "embed_texts": len(texts),
                    "collect_s": round(collect_s, 2), "parse_s": round(parse_s, 2),
                    "embed_s": round(embed_s, 2),
                    "embed_estimated": sample is not None, "embed_sample": embedded_alone,
                    "write_s": round(write_s, 2), "embed_rows_per_s": round(len(texts) / embed_s, 2)}

    # --- the real jobs
    report.note(f"index/{name}: cold index of {len(parsed)} files")
    cold, cold_s = _index(db, root, session_name(name), embedder)
    res["cold"] = _report_dict(cold, cold_s)
    unchanged, unchanged_s = _index(db, root, session_name(name), embedder)
    res["unchanged"] = _report_dict(unchanged, unchanged_s)
    target = root / CHANGED_FILE
    if not target.exists():
        target = next(p for p in sorted((root / "docs").rglob("*.md")))
    original = target.read_bytes()
    try:
        target.write_bytes(original + APPENDED.encode("utf-8"))
        changed, changed_s = _index(db, root, session_name(name), embedder)
    finally:
        target.write_bytes(original)
    res["one_file_changed"] = {**_report_dict(changed, changed_s), "file": str(target.relative_to(root))}
    reverted, reverted_s = _index(db, root, session_name(name), embedder)
    res["one_file_reverted"] = _report_dict(reverted, reverted_s)

    res["total_over_pure_embed"] = ratio(cold_s, embed_s)
    res["total_over_sum_alone"] = ratio(cold_s, collect_s + parse_s + embed_s + write_s)
    res["total_over_pipeline_embed"] = ratio(cold_s, cold.timings.get("embed"))
    res["unchanged_over_cold"] = ratio(unchanged_s, cold_s)
    res["changed_over_cold"] = ratio(changed_s, cold_s)
    res["pipeline_embed_rows"] = cold.embedded
    return res


def print_one(report: Report, name: str, r: dict[str, Any]) -> None:
    a, c = r["alone"], r["cold"]
    est = f" (est. from a {a['embed_sample']}-text sample)" if a["embed_estimated"] else ""
    t = c["timings_s"]
    report.say(f"[{name}] {a['files']} files → {c['rows_written']} rows, {c['embedded']} embedded")
    report.say(f"  cold index        {c['wall_s']:7.1f} s   pipeline-reported: "
               f"parse {t.get('parse', 0):.1f} / embed {t.get('embed', 0):.1f} / "
               f"write≈{t.get('write', 0):.1f} / total {t.get('total', 0):.1f} s")
    report.say(f"  each phase alone  collect {a['collect_s']:.1f} + parse {a['parse_s']:.1f} + embed "
               f"{a['embed_s']:.1f}{est} + write {a['write_s']:.1f} s  ({a['embed_rows_per_s']:.1f} rows/s)")
    ch = r["one_file_changed"]
    report.say(f"  one file changed  {ch['wall_s']:7.2f} s   ({ch['file']}: {ch['embedded']} rows "
               f"re-embedded; {r['changed_over_cold'] * 100:.1f}% of cold)")
    rv = r["one_file_reverted"]
    report.say(f"  reverted (cache)  {rv['wall_s']:7.2f} s   ({rv['embedded']} embedded, "
               f"{rv['cache_hits']} cache hit)")
    un = r["unchanged"]
    report.say(f"  unchanged         {un['wall_s']:7.2f} s   ({un['embedded']} embedded)")
    tpe = r["total_over_pure_embed"]
    ok_total = tpe is not None and tpe <= TOTAL_OVER_EMBED_TARGET
    report.say(f"  total / pure embed = {tpe:.2f}  (target ≤ {TOTAL_OVER_EMBED_TARGET}: "
               f"{verdict(ok_total)}{'; denominator estimated' if a['embed_estimated'] else ''});  "
               f"total / sum of phases alone = {r['total_over_sum_alone']:.2f}")
    report.say(f"  total / the pipeline's own embed time = {r['total_over_pipeline_embed']:.2f}  "
               "(how much of the job is not hidden behind the embedder)")
    ok_unch = r["unchanged_over_cold"] <= UNCHANGED_TARGET
    report.say(f"  unchanged / cold   = {r['unchanged_over_cold'] * 100:.1f}%  "
               f"(target ≤ {UNCHANGED_TARGET:.0%}: {verdict(ok_unch)})")
    if name == "use":
        ok_cold = c["wall_s"] <= COLD_TARGET_S
        report.say(f"  cold ≤ {COLD_TARGET_S:.0f} s with the default embedder: {verdict(ok_cold)}")


def run(report: Report, ctx: Any) -> dict[str, Any]:
    out = report.section("index", "3. index: fastapi-ru cold / one file changed / unchanged")
    names = [n for n in ctx.opts.embedders if not (n == "e5" and ctx.opts.skip_e5)]
    for name in names:
        try:
            out[name] = run_one(report, ctx, name)
        except Exception as exc:
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            report.say(f"[{name}] error: {type(exc).__name__}: {exc}")
            ctx.failed = True
            continue
        print_one(report, name, out[name])
        report.save()
        if name == "use":
            ctx.use_session_ready = True
    if "use" in out and "e5" in out and "cold" in out.get("e5", {}) and "cold" in out.get("use", {}):
        out["e5_cold_over_use_cold"] = ratio(out["e5"]["cold"]["wall_s"], out["use"]["cold"]["wall_s"])
        report.say(f"e5 cold / use cold = {out['e5_cold_over_use_cold']:.1f}×")
    if ctx.opts.skip_e5 and "e5" in ctx.opts.embedders:
        report.say("e5 skipped (--skip-e5); run `python -m evals.bench --only index --embedders e5` for it")
    return out
