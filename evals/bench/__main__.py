"""`python -m evals.bench` (`make bench`): every performance figure of the issues, in one run.

Sections (all by default, in this order): embedders, hnsw, index, retrieval, ask, stdlib, scale, clients,
cold. The benchmark starts its OWN embedded PostgreSQL in a temp folder and stops and removes it at the end,
also on errors and Ctrl-C: it never touches the user's `.data` or `DATABASE_URL`. Figures are printed as
they come and written to `out/bench.json` (rewritten after every section, so a failure keeps what was
measured).
Benchmarks print numbers; targets are shown next to them, nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Offline and quiet whatever the shell has: no tracing uploads, no external database.
for _var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "GIGACHAT_CREDENTIALS", "DATABASE_URL"):
    os.environ.pop(_var, None)
os.environ.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")

from evals.bench.common import (  # noqa: E402
    PROJECT_ROOT,
    USE_SESSION,
    BenchError,
    Report,
    corpus_dir,
    embedded_server,
    load_average,
)

SECTIONS = ("embedders", "hnsw", "index", "retrieval", "ask", "stdlib", "revisions", "scale", "clients", "cold")


@dataclass
class Ctx:
    """What the sections share: options, the report, the benchmark's database and corpus."""

    opts: argparse.Namespace
    report: Report
    url: str
    base: Path
    db: Any
    failed: bool = False
    use_session_ready: bool = False
    _copy: Path | None = None

    def corpus_copy(self) -> Path:
        """A private copy of the corpus (the index section edits one file in it)."""
        if self._copy is None:
            src = corpus_dir()
            dst = self.base / "corpus"
            shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
            self._copy = dst
        return self._copy

    def use_session(self) -> Any:
        """The fastapi-ru session indexed with `use` (indexed now when the index section did not run)."""
        from stores.embedders import make_embedder
        from stores.indexing.service import index_repository
        from stores.schema import ensure_tables
        from stores.sessions import find_session

        with self.db.connection() as conn:
            ensure_tables(conn)
            session = find_session(conn, USE_SESSION)
        if session is None or session.active_generation == 0:
            self.report.note(f"indexing fastapi-ru with use into session '{USE_SESSION}' (needed here)")
            t0 = time.perf_counter()
            index_repository(self.db, self.corpus_copy(), session_name=USE_SESSION,
                             embedder=make_embedder("use", threads=2), batch_size=32)
            self.report.note(f"indexed in {time.perf_counter() - t0:.1f} s")
            with self.db.connection() as conn:
                session = find_session(conn, USE_SESSION)
        assert session is not None
        return session


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m evals.bench", description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(SECTIONS),
                   help=f"comma-separated sections to run (default: all): {','.join(SECTIONS)}")
    p.add_argument("--quick", action="store_true", help="small sizes, implies --skip-e5 (a smoke run)")
    p.add_argument("--embedders", default="use,e5", help="offline embedders of the embedders/index sections")
    p.add_argument("--skip-e5", action="store_true",
                   help="skip the e5 cold index (7–11 min on 2 cores); e5 throughput is still measured")
    p.add_argument("--full-e5-embed", action="store_true",
                   help="time e5's pure embedding on every corpus text instead of a 200-text sample")
    p.add_argument("--stdlib-embed-sample", type=int, default=1,
                   help="stdlib: embed every N-th text for the pure-embedding denominator (scaled up, 'est.')")
    p.add_argument("--scale-1m", action="store_true",
                   help="scale: also replicate to 1M rows (HNSW build of ~400k vectors: long on 2 cores)")
    p.add_argument("--cold-before", metavar="REF",
                   help="cold: also time this commit's code (git archive), interleaved with this checkout's")
    p.add_argument("--cold-after", metavar="REF",
                   help="cold: time this commit's code (git archive) instead of the checkout's")
    p.add_argument("--cold-also", metavar="NAME=REF|FOLDER", action="append", default=[],
                   help="cold: one more code tree to time, interleaved (repeatable)")
    p.add_argument("--out", default=str(PROJECT_ROOT / "out" / "bench.json"), help="JSON output file")
    p.add_argument("--traceback", action="store_true", help="print tracebacks of failures")
    args = p.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in args.sections if s not in SECTIONS]
    if unknown:
        p.error(f"unknown section(s) {', '.join(unknown)}: choose from {', '.join(SECTIONS)}")
    args.embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
    bad = [e for e in args.embedders if e not in ("use", "e5")]
    if bad:
        p.error(f"unknown offline embedder(s) {', '.join(bad)}: use, e5")
    if args.quick:
        args.skip_e5 = True
    return args


def _on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # unwinds like Ctrl-C: the server is stopped, JSON written


def _server_info(db: Any) -> dict[str, str]:
    with db.connection() as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
        vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    return {"postgres": pg, "pgvector": vec}


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGHUP, _on_sigterm)
    report = Report(Path(opts.out))
    started = time.perf_counter()
    report.data["meta"] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "argv": sys.argv[1:],
        "sections": opts.sections, "quick": opts.quick, "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_avg_start": load_average(),
    }
    report.say(f"Lotsman bench — sections: {', '.join(opts.sections)}{' (quick)' if opts.quick else ''}; "
               f"{os.cpu_count()} CPUs, load average {load_average()} (shared machine: figures are noisy)")
    failed = False
    try:
        if any(s in opts.sections for s in ("index", "retrieval", "ask", "cold")):
            corpus_dir()  # fail early, with one line, when the corpus can't be assembled
        with embedded_server() as (url, base):
            from stores.database import Database
            from stores.schema import ensure_tables

            db = Database(url, max_size=4)
            try:
                with db.connection() as conn:
                    ensure_tables(conn)
                report.data["meta"].update(_server_info(db))
                report.say(f"own embedded PostgreSQL {report.data['meta']['postgres']} + pgvector "
                           f"{report.data['meta']['pgvector']} in {base}")
                ctx = Ctx(opts=opts, report=report, url=url, base=base, db=db)
                for name in SECTIONS:
                    if name not in opts.sections:
                        continue
                    t0 = time.perf_counter()
                    try:
                        _run_section(name, report, ctx)
                    except (Exception, KeyboardInterrupt) as exc:
                        failed = True
                        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
                        report.data.setdefault("sections", {}).setdefault(name, {})["error"] = msg
                        report.say(f"bench: section '{name}' failed: {msg}")
                        if opts.traceback:
                            traceback.print_exc()
                        if isinstance(exc, KeyboardInterrupt):
                            raise
                    report.data.setdefault("section_seconds", {})[name] = round(time.perf_counter() - t0, 1)
                    report.save()
                failed = failed or ctx.failed
            finally:
                db.close()
    except BenchError as exc:
        report.say(f"bench: error: {exc}")
        failed = True
    except KeyboardInterrupt:
        report.say("bench: interrupted (the embedded server was stopped)")
        failed = True
    except Exception as exc:
        report.say(f"bench: error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        if opts.traceback:
            traceback.print_exc()
        failed = True
    total = round(time.perf_counter() - started, 1)
    report.data["meta"].update(load_avg_end=load_average(), total_seconds=total)
    try:
        report.save()
        report.say("")
        report.say(f"wrote {report.out_path} · {total:.0f} s · load average now {load_average()}")
    except OSError as exc:
        report.say(f"bench: could not write {report.out_path}: {exc}")
        failed = True
    return 1 if failed else 0


SECTION_MODULES = {"index": "indexing"}
"""Sections whose module is not named like the section (`evals/bench/<module>.py`)."""


def _run_section(name: str, report: Report, ctx: Ctx) -> None:
    """Import a section's module on demand (some pull in heavy dependencies) and run it."""
    module = importlib.import_module(f"evals.bench.{SECTION_MODULES.get(name, name)}")
    if name == "embedders":
        module.run(report, ctx.opts)
    elif name == "hnsw":
        module.run(report, ctx.db, ctx.opts)
    else:
        module.run(report, ctx)


if __name__ == "__main__":
    sys.exit(main())
