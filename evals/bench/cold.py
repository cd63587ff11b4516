"""Section `cold`: a question in a fresh process (issue 26.4) — what a CLI user pays on every `lotsman ask`.

- `lotsman ask` wall and CPU time: N fresh `python -m graph.cli ask QUESTION --session S` processes, one after the
  other, each question of `texts.QUESTIONS` in turn; one unmeasured run first (it also prepares the USE model
  under the data folder, as a user's first `ask` or `index` does). Targets: p50 ≤ 0.8 s on fastapi-ru,
  ≤ 1.0 s on the standard library (its session is the `stdlib` section's, indexed here when that section did
  not run; not in a `--quick` run). Next to the wall and CPU time, the time inside the graph (the answer's
  trailer) and the rest — start-up, imports, connecting, the session bundle, exit — which is what issue 26.4
  cut.
- the first question of a fresh server process, inside the graph: a process imports the deployed graph
  (`graph.app`, as `langgraph dev` does) and answers one question; the sum of its nodes' `timings_ms`
  (target ≤ 300 ms) and the `ainvoke` wall time.
- `lotsman watch` on the fastapi-ru folder: one file edited; the time until the watch reports its re-index
  (debounce + the incremental job) and until a fresh `lotsman ask` answers from the edit.
- before → after from one run: `--cold-before REF` exports that commit (`git archive`) and times its code the
  same way on the same database, runs interleaved (before, after, before, …) so machine load hits both alike;
  `--cold-after REF` times an export of that commit instead of the checkout (others' uncommitted edits aside),
  `--cold-also NAME=REF|FOLDER` one more tree (repeatable).

Standalone, on your own database and sessions (the environment's `DATABASE_URL` / `LOTSMAN_DATA_DIR`):
    python -m evals.bench.cold --session fastapi-ru [--session stdlib] [--runs 9] [--before REF] [--after REF]
        [--also NAME=REF|FOLDER]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evals.bench.common import PROJECT_ROOT, BenchError, Report, fmt_lat, load_average, summary, verdict
from evals.bench.texts import QUESTIONS

RUNS = 9
ASK_TARGETS_MS = {"fastapi": 800.0, "stdlib": 1000.0}
SERVER_FIRST_TARGET_MS = 300.0
STDLIB_SESSION = "stdlib-use"

_FIRST_QUESTION = """
import asyncio, json, sys, time
from langchain_core.messages import HumanMessage
from graph.app import graph
from graph.context import Context
t0 = time.perf_counter()
out = asyncio.run(graph.ainvoke({"messages": [HumanMessage(sys.argv[2])]},
                                context=Context(rag_session_id=sys.argv[1], use_llm=False)))
print(json.dumps({"wall_ms": (time.perf_counter() - t0) * 1000, "nodes": out.get("timings_ms", {})}))
"""


def run(report: Report, ctx: Any) -> dict[str, Any]:
    out = report.section("cold", "cold: `lotsman ask` in a fresh process, and a fresh server's first question")
    sessions = [(ctx.use_session().name, "fastapi")]
    if _stdlib_session(report, ctx):
        sessions.append((STDLIB_SESSION, "stdlib"))
    env = _env(DATABASE_URL=ctx.url, LOTSMAN_DATA_DIR=str(ctx.base / "cold-data"))
    runs = 3 if ctx.opts.quick else RUNS
    with _code_trees(getattr(ctx.opts, "cold_before", None), getattr(ctx.opts, "cold_after", None),
                     getattr(ctx.opts, "cold_also", None) or ()) as trees:
        for session, kind in sessions:
            out[kind] = measure(report, env, session, kind, trees, runs)
    out["watch"] = watch_to_answer(report, env, sessions[0][0], ctx.corpus_copy())
    return out


def _stdlib_session(report: Report, ctx: Any) -> bool:
    """Whether the standard-library session is there; indexed now (as the `stdlib` section's cold index does,
    ~2.5 min on 2 cores) when that section did not run, except in a quick run."""
    from stores.sessions import find_session

    with ctx.db.connection() as conn:
        found = find_session(conn, STDLIB_SESSION)
    if found is not None and found.active_generation > 0:
        return True
    if ctx.opts.quick:
        report.note("cold: no stdlib session in a quick run (run the stdlib section, or cold without --quick)")
        return False
    from evals.bench.stdlib import BATCH, stdlib_corpus
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    report.note(f"indexing the standard library into session '{STDLIB_SESSION}' (needed here)")
    t0 = time.perf_counter()
    index_repository(ctx.db, stdlib_corpus(ctx.base), session_name=STDLIB_SESSION,
                     embedder=make_embedder("use", threads=2), batch_size=BATCH)
    report.note(f"indexed in {time.perf_counter() - t0:.1f} s")
    return True


WATCHED_FILE = "docs/ru/docs/tutorial/background-tasks.md"
WATCH_QUESTION = "Какой код проверки фоновых задач?"


def watch_to_answer(report: Report, env: dict[str, str], session: str, root: Path,
                    debounce_ms: int = 800) -> dict[str, Any]:
    """`lotsman watch` on the session's folder: one file edited, the time until its re-index is reported
    and until a fresh `lotsman ask` answers from the edit (the file is restored and re-indexed afterwards)."""
    target = root / WATCHED_FILE
    original = target.read_text(encoding="utf-8")
    code = f"WATCH-{uuid.uuid4().hex[:6].upper()}"
    proc = subprocess.Popen([sys.executable, "-m", "graph.cli", "watch", str(root), "--session", session],
                            cwd=PROJECT_ROOT, env={**env, "LOTSMAN_WATCH_DEBOUNCE_MS": str(debounce_ms)},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or ()], daemon=True).start()
    try:
        _line_starting(lines, "watching ")
        t0 = time.perf_counter()
        target.write_text(f"{original}\nКод проверки фоновых задач — {code}.\n", encoding="utf-8")
        reindexed = _line_starting(lines, "re-indexed ")
        t1 = time.perf_counter()
        asked = subprocess.run([sys.executable, "-m", "graph.cli", "ask", WATCH_QUESTION, "--session", session,
                                "--json"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
        t2 = time.perf_counter()
        answerable = asked.returncode == 0 and code in json.loads(asked.stdout).get("answer", "")
        target.write_text(original, encoding="utf-8")
        _line_starting(lines, "re-indexed ")  # the restore, indexed by the same watch
    finally:
        target.write_text(original, encoding="utf-8")
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    out = {"debounce_ms": debounce_ms, "edit_to_reindexed_ms": round((t1 - t0) * 1000),
           "reindex_line": reindexed.strip(), "edit_to_answer_ms": round((t2 - t0) * 1000),
           "answerable": answerable}
    report.say(f"  watch    edit → re-indexed {out['edit_to_reindexed_ms']} ms (debounce {debounce_ms} ms + the "
               f"job), → answered by a fresh ask {out['edit_to_answer_ms']} ms; answer quotes the edit: "
               f"{answerable}")
    return out


def _line_starting(lines: queue.Queue[str], prefix: str, timeout_s: float = 300) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line.startswith(prefix):
            return line
    raise BenchError(f"lotsman watch printed no line starting {prefix!r} in {timeout_s:.0f} s")


def measure(report: Report, env: dict[str, str], session: str, kind: str, trees: dict[str, Path],
            runs: int) -> dict[str, Any]:
    """Both figures for one session and every code tree (`after` = this checkout, `before` = an export)."""
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(runs)]
    result: dict[str, Any] = {"session": session, "runs": runs, "load_avg_start": load_average()}
    for tree in trees.values():  # unmeasured: page cache, the prepared model, the session's artifacts
        _ask(tree, env, session, questions[0])
        _first_question(tree, env, session, questions[0])
    walls: dict[str, list[tuple[float, float, float | None]]] = {name: [] for name in trees}
    inside: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for q in questions:
        for name, tree in trees.items():  # interleaved: load on the shared machine hits every tree alike
            walls[name].append(_ask(tree, env, session, q))
            inside[name].append(_first_question(tree, env, session, q))
    target = ASK_TARGETS_MS.get(kind)
    for name in trees:
        ask = summary([wall for wall, _, _ in walls[name]])
        cpu = summary([c for _, c, _ in walls[name]])
        in_graph = [g for _, _, g in walls[name] if g is not None]
        graph_ms = summary([sum(r["nodes"].values()) for r in inside[name]])
        result[name] = {"ask_wall_ms": ask, "ask_cpu_ms": cpu, "server_first_graph_ms": graph_ms,
                        "server_first_ainvoke_ms": summary([r["wall_ms"] for r in inside[name]]),
                        "server_first_nodes_p50_ms": _node_p50(inside[name])}
        report.say(f"  {kind:<8} {name:<6} lotsman ask wall      {fmt_lat(ask)}  target ≤ {target or 0:.0f} ms: "
                   f"{verdict(ask['p50'] <= target if target else None)}")
        report.say(f"  {kind:<8} {name:<6} lotsman ask CPU       {fmt_lat(cpu)}")
        if len(in_graph) == len(walls[name]):
            result[name]["ask_graph_ms"] = summary(in_graph)
            result[name]["ask_outside_graph_ms"] = summary([w - g for w, _, g in walls[name] if g is not None])
            report.say(f"  {kind:<8} {name:<6} of it, in the graph   {fmt_lat(result[name]['ask_graph_ms'])}; "
                       f"start-up, imports, bundle, exit {fmt_lat(result[name]['ask_outside_graph_ms'])}")
        report.say(f"  {kind:<8} {name:<6} server's 1st question {fmt_lat(graph_ms)} inside the graph  target ≤ "
                   f"{SERVER_FIRST_TARGET_MS:.0f} ms: {verdict(graph_ms['p50'] <= SERVER_FIRST_TARGET_MS)}")
    result["load_avg_end"] = load_average()
    return result


def _node_p50(rows: list[dict[str, Any]]) -> dict[str, float]:
    names = {n for r in rows for n in r["nodes"]}
    return {n: summary([r["nodes"][n] for r in rows if n in r["nodes"]])["p50"] for n in sorted(names)}


def _env(**extra: str) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE dropped: with it, an exported tree (and every module changed since the last
    # write) is compiled from source in every timed process (~0.1-0.3 s), which a user's install never is.
    dropped = ("DATABASE_URL", "LOTSMAN_DEBUG", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(LANGSMITH_TRACING="false", PYTHONWARNINGS="ignore", **extra)
    return env


def _user_env() -> dict[str, str]:
    """The caller's database for every tree: its `DATABASE_URL`, or its data folder named explicitly (an
    exported tree's default data folder would be inside the export)."""
    from graph.settings import get_settings

    settings = get_settings()
    extra = {"DATABASE_URL": settings.database_url} if settings.database_url else {}
    return _env(LOTSMAN_DATA_DIR=str(settings.data_dir), **extra)


_TRAILER_MS = re.compile(r"^\[[^\]\n]*?; (\d+) ms[;\]]", re.MULTILINE)
"""The answer's trailer on stderr (`[DOC_EXPLAIN/SUMMARY, routed by rules; 106 ms; ...]`): the sum of the nodes'
times, i.e. the time inside the graph."""


def _ask(tree: Path, env: dict[str, str], session: str, question: str) -> tuple[float, float, float | None]:
    """(wall ms, CPU ms, ms inside the graph or None) of one `lotsman ask` process. The CPU time (user +
    system, the process alone) is what a quiet machine's wall time comes close to; on a busy one the wall
    time waits for a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "graph.cli", "ask", question, "--session", session],
                          cwd=tree, env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True, timeout=300)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise BenchError(f"lotsman ask failed in {tree}: {done.stderr.strip()[:300]}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    trailer = _TRAILER_MS.search(done.stderr)  # the trailer goes to stderr, the answer to stdout
    return wall, cpu, float(trailer.group(1)) if trailer else None


def _first_question(tree: Path, env: dict[str, str], session: str, question: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _FIRST_QUESTION, session, question], cwd=tree,
                          env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise BenchError(f"the server's first question failed in {tree}: {done.stderr.strip()[-300:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@contextmanager
def _code_trees(before: str | None, after: str | None = None,
                also: Sequence[str] = ()) -> Iterator[dict[str, Path]]:
    """`{"before": export of BEFORE, "after": this checkout or an export of AFTER, NAME: ...}` (no `before`
    without BEFORE). An export of AFTER times a commit alone, without uncommitted edits in the checkout;
    each `NAME=REF` of `also` is one more tree: a commit (exported) or a folder holding a tree (e.g. a
    proposed change in files one does not own)."""
    folders: list[Path] = []
    try:
        trees: dict[str, Path] = {}
        for name, ref in [("before", before), ("after", after), *(_named(a) for a in also)]:
            if not ref:
                continue
            if Path(ref).is_dir():
                trees[name] = Path(ref).resolve()
                continue
            folders.append(Path(tempfile.mkdtemp(prefix=f"lotsman-cold-{name}-")))
            _export(ref, folders[-1])
            trees[name] = folders[-1]
        trees.setdefault("after", PROJECT_ROOT)
        yield trees
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _named(spec: str) -> tuple[str, str]:
    name, sep, ref = spec.partition("=")
    if not sep or not name or not ref:
        raise BenchError(f"a code tree is NAME=REF or NAME=FOLDER, not {spec!r}")
    return name, ref


def _export(ref: str, folder: Path) -> None:
    archive = subprocess.run(["git", "-C", str(PROJECT_ROOT), "archive", ref], capture_output=True)
    if archive.returncode != 0:
        raise BenchError(f"git archive {ref}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m evals.bench.cold", description=__doc__.splitlines()[0])
    p.add_argument("--session", action="append", required=True, help="an indexed session (repeatable)")
    p.add_argument("--runs", type=int, default=RUNS)
    p.add_argument("--before", help="a commit whose code is timed too, interleaved (before → after)")
    p.add_argument("--after", help="time this commit's code instead of the checkout (uncommitted edits aside)")
    p.add_argument("--also", action="append", default=[], metavar="NAME=REF|FOLDER",
                   help="one more code tree to time, interleaved (repeatable)")
    p.add_argument("--out", help="write the figures as JSON here")
    args = p.parse_args(argv)
    report = Report(Path(args.out) if args.out else Path(tempfile.gettempdir()) / "lotsman-cold.json")
    report.say(f"cold ask, {os.cpu_count()} CPUs, load average {load_average()}")
    figures: dict[str, Any] = {}
    try:
        with _code_trees(args.before, args.after, args.also) as trees:
            for session in args.session:
                kind = "stdlib" if "stdlib" in session else "fastapi" if "fastapi" in session else session
                figures[session] = measure(report, _user_env(), session, kind, trees, args.runs)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    report.data = {"cold": figures}
    if args.out:
        report.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
