"""Section `revisions` (issue 26 items 1 and 3): two tags of one git repository, and the no-op re-index.

- Two tags: the fastapi-ru corpus committed into a git repository under `fastapi-ru/` (its own paths, so
  the blob cache starts cold whatever ran before) and tagged v1; then a fixed set of files is edited (one of
  them states a fact that changes: the documented version of the corpus) and tagged v2. Each tag is
  indexed with `use` through `index_repository(..., ref=...)` into its own session: rows, time, files
  parsed, and the share re-embedded for the second (target: about the share of changed files). The
  question whose answer differs is asked in each session with `lotsman ask --json`.
- No-op re-index: `lotsman index FOLDER --session S` (a fresh process each time, as a user or a git hook
  runs it) on the fastapi-ru session of the `index` section (indexed here when it did not run) and, when the
  `stdlib` section ran first, on the standard library's: wall time p50 of a few runs (targets 0.7 s and
  1.5 s). The same for `--ref v2` on the revision session.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from evals.bench.common import USE_SESSION, Report, load_average, verdict

PREFIX = "fastapi-ru"
CHANGED_EVERY = 20
"""Every 20th file (sorted) is edited for v2: 9 of fastapi-ru's 174 (about 5 %)."""
FACT_FILE = "docs/ru/docs/tutorial/cors.md"
FACT = "\n\n## Версия этой копии\n\nЭта копия документации собрана для выпуска {n}.\n"
QUESTION = "Для какого выпуска собрана эта копия документации?"
NOOP_RUNS = 5
NOOP_TARGETS_S = {"fastapi-ru": 0.7, "stdlib": 1.5}
STDLIB_SESSION = "stdlib-use"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@lotsman",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@lotsman"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def build_repository(corpus: Path, dest: Path) -> tuple[Path, list[str], int]:
    """A git repository with the corpus under `PREFIX/`, tags v1 and v2; returns (repo, changed files, files)."""
    tree = dest / PREFIX
    shutil.copytree(corpus, tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / FACT_FILE).write_text((tree / FACT_FILE).read_text(encoding="utf-8") + FACT.format(n="0.140"),
                                  encoding="utf-8")
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", "v1")
    _git(dest, "tag", "v1")
    files = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.suffix in (".md", ".py") and p.is_file())
    changed = [f for i, f in enumerate(files) if i % CHANGED_EVERY == 0 and f != FACT_FILE]
    for rel in changed:
        path = tree / rel
        comment = "# changed in v2\n" if rel.endswith(".py") else "\n\nИзменено в v2.\n"
        path.write_text(path.read_text(encoding="utf-8") + comment, encoding="utf-8")
    fact = tree / FACT_FILE
    fact.write_text(fact.read_text(encoding="utf-8").replace("выпуска 0.140", "выпуска 0.141"), encoding="utf-8")
    _git(dest, "commit", "-qam", "v2")
    _git(dest, "tag", "v2")
    return dest, [*changed, FACT_FILE], len(files)


def _cli(ctx: Any, *args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """(the finished `lotsman ARGS`, wall seconds, CPU seconds of the process: steadier on a shared machine)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOTSMAN_DEBUG",)}
    env.update(DATABASE_URL=ctx.url, LANGSMITH_TRACING="false", PYTHONWARNINGS="ignore")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "import sys; from graph.cli import main; sys.exit(main())",
                           *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _noop_walls(ctx: Any, *args: str) -> dict[str, Any]:
    """p50 wall of `lotsman index ARGS` run `NOOP_RUNS` times after one run that records the tree."""
    first, _, _ = _cli(ctx, "index", *args, "--json")
    walls, cpus, noop = [], [], True
    for _ in range(NOOP_RUNS):
        proc, wall, cpu = _cli(ctx, "index", *args, "--json")
        if proc.returncode != 0:
            return {"error": proc.stderr.strip()[-300:]}
        noop = noop and '"noop": true' in proc.stdout
        walls.append(wall)
        cpus.append(cpu)
    return {"p50_s": round(statistics.median(walls), 3), "min_s": round(min(walls), 3), "runs": len(walls),
            "cpu_p50_s": round(statistics.median(cpus), 3), "all_noop": noop,
            "first_run_noop": '"noop": true' in first.stdout}


def _answer(ctx: Any, session: str) -> str:
    import json

    proc, _, _ = _cli(ctx, "ask", QUESTION, "--session", session, "--json")
    if proc.returncode != 0:
        return f"error: {proc.stderr.strip()[-200:]}"
    return str(json.loads(proc.stdout).get("answer", ""))


def run(report: Report, ctx: Any) -> dict[str, Any]:
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    out = report.section("revisions", "revisions: two tags of one git repository, and the no-op re-index")
    repo, changed, files = build_repository(ctx.corpus_copy(), ctx.base / "revisions-repo")
    embedder = make_embedder("use", threads=2)
    tags: dict[str, Any] = {}
    for tag in ("v1", "v2"):
        report.note(f"revisions: indexing tag {tag}")
        t0 = time.perf_counter()
        rep = index_repository(ctx.db, repo, session_name=f"rev-{tag}", embedder=embedder, ref=tag)
        tags[tag] = {"seconds": round(time.perf_counter() - t0, 1), "rows": rep.rows_written,
                     "files": rep.files_indexed, "parsed": rep.parsed, "cache_hits": rep.cache_hits,
                     "embedded": rep.embedded, "vectors_reused": rep.vectors_reused,
                     "reembedded_share": rep.reembedded_share, "commit": (rep.revision or {}).get("commit")}
    changed_share = round(len(changed) / files, 4)
    answers = {tag: _answer(ctx, f"rev-{tag}") for tag in ("v1", "v2")}
    differs = "0.140" in answers["v1"] and "0.141" in answers["v2"] and "0.141" not in answers["v1"]
    out.update(tags=tags, files=files, changed_files=len(changed), changed_share=changed_share,
               question=QUESTION, answers={t: a[:300] for t, a in answers.items()}, answers_differ=differs)
    for tag, t in tags.items():
        report.say(f"  tag {tag}: {t['files']} files → {t['rows']} rows in {t['seconds']:.1f} s (parsed {t['parsed']}, "
                   f"from cache {t['cache_hits']}, embedded {t['embedded']}, re-embedded share "
                   f"{t['reembedded_share']})")
    report.say(f"  changed files v1→v2: {len(changed)} of {files} ({changed_share:.1%}); re-embedded "
               f"{tags['v2']['reembedded_share']:.1%} of v2's vectors")
    report.say(f"  «{QUESTION}» v1: {'0.140' in answers['v1']}, v2: {'0.141' in answers['v2']} "
               f"(answers differ as the tags do: {verdict(differs)})")

    noop: dict[str, Any] = {}
    report.say(f"  no-op re-index, load average {load_average()} (wall time is inflated by a loaded machine, CPU "
               "time much less)")
    ctx.use_session()
    noop["fastapi-ru"] = _noop_walls(ctx, str(ctx.corpus_copy()), "--session", USE_SESSION)
    noop["revision v2"] = _noop_walls(ctx, str(repo), "--ref", "v2", "--session", "rev-v2")
    stdlib = ctx.base / "stdlib"
    if stdlib.is_dir():
        noop["stdlib"] = _noop_walls(ctx, str(stdlib), "--session", STDLIB_SESSION)
    else:
        noop["stdlib"] = {"skipped": "run with the stdlib section first (--only stdlib,revisions)"}
    out["noop_reindex"] = {**noop, "load_avg": load_average()}
    for name, r in noop.items():
        if not isinstance(r, dict):
            continue
        if "p50_s" in r:
            target = NOOP_TARGETS_S.get(name)
            met = verdict(r["p50_s"] <= target) if target else "n/a"
            report.say(f"  no-op re-index {name:<12} p50 {r['p50_s']:.2f} s wall, {r['cpu_p50_s']:.2f} s CPU (min "
                       f"{r['min_s']:.2f} s, {r['runs']} runs, all no-op: {r['all_noop']})"
                       f"{f'  target ≤ {target} s: {met}' if target else ''}")
        else:
            report.say(f"  no-op re-index {name:<12} {r.get('skipped') or r.get('error')}")
    return out
