"""`lotsman eval`: index each corpus into its own session, run every case through the graph, score it.

The same runner serves the full pipeline and the plain baselines (`--retriever vector|bm25`), so their
numbers compare side by side. Several corpora run one after the other (the machine's cores are shared)
and the report holds each corpus's metrics plus their macro average.

Each report records its `split` (`holdout` for a held-out dataset, `dev` for a suite's dev set, else None),
so a calibrator can refuse a held-out report (`evals.holdout.refuse_report`), and every run of a held-out
dataset appends a line to `evals/holdout_log.jsonl` before it starts (`evals.holdout.log_run`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evals.cases import load_dataset
from evals.ceilings import add_file_ceilings
from evals.holdout import holdout_content, is_holdout_path, log_run
from evals.scoring import score_case
from evals.suites import REPO_ROOT, SUITES, EvalJob, assemble_corpus
from evals.summary import aggregate, macro
from evals.wiring import eval_context, eval_deps
from nodes.context_retrieval.choices import DEFAULT_RANKER
from stores.errors import LotsmanError


async def run_cases(graph: Any, cases: list[dict[str, Any]], context: Any, *, llm: bool = False
                    ) -> list[dict[str, Any]]:
    """Each case on a fresh thread (its history as earlier turns), scored from the final state.

    `wall_ms` is the case's wall-clock time around the whole graph run (the node timings leave out the
    graph's own overhead).
    """
    from langchain_core.messages import AIMessage, HumanMessage

    results = []
    for case in cases:
        messages = [HumanMessage(t["content"]) if t["role"] == "user" else AIMessage(t["content"])
                    for t in case["history"]] + [HumanMessage(case["question"])]
        config = {"configurable": {"thread_id": f"eval-{case['id']}-{time.time_ns()}"}}
        t0 = time.perf_counter()
        await graph.ainvoke({"messages": messages}, config=config, context=context)
        wall_ms = round((time.perf_counter() - t0) * 1000, 2)
        state = (await graph.aget_state(config)).values
        results.append({**score_case(case, state, llm=llm, token_cap=context.token_cap), "wall_ms": wall_ms})
    return results


def answers_of(deps: Any) -> str:
    """`llm` when the graph has a chat model (GigaChat routes, analyses and answers), else `extractive`."""
    return "llm" if getattr(deps, "chat_model", None) is not None else "extractive"


def session_name(label: str, embedder: str) -> str:
    return f"eval-{label}-{embedder.replace(':', '-')}"


def split_of(dataset: Path, root: Path = REPO_ROOT) -> str | None:
    """`holdout` for a held-out dataset: a suite's or one named so (`evals.holdout.is_holdout_path`), any file
    holding a held-out case id or question (a copy, a hard link, renamed ids: `holdout_content`), and any
    dataset that is not a regular file (a pipe such as `/dev/fd/63` is read once, so what it held cannot be
    checked); `dev` for a suite's dev set; else None."""
    if is_holdout_path(dataset, root) or not dataset.is_file() or holdout_content(dataset, root):
        return "holdout"
    dev = {(root / s.dev).resolve() for s in SUITES.values()}
    return "dev" if dataset.resolve() in dev else None


def run(dataset: Path, corpus: Path, *, settings: Any, retriever: str = "full", ranker: str | None = None,
        embedder: str | None = None,
        session: str | None = None, limit: int | None = None, deps: Any = None,
        label: str | None = None, llm: bool = False) -> dict[str, Any]:
    """Index `corpus` (incrementally, reusing the cache), run the dataset, return one corpus's report.

    The session is `--session`, else `eval-<label or corpus folder>-<embedder>`, so each corpus keeps its
    own index across runs.
    """
    cases = load_dataset(dataset)[:limit]  # a bad dataset is one line before anything is indexed

    from langgraph.checkpoint.memory import InMemorySaver

    from graph.builder import build_graph
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    if not corpus.is_dir():
        raise LotsmanError(f"corpus not found: {corpus}")
    deps = deps or eval_deps(settings, llm)
    emb = deps.embedder or make_embedder(embedder or settings.embedder, settings)
    session = session or session_name(label or corpus.resolve().name, emb.name)
    t0 = time.perf_counter()
    report = index_repository(deps.database(), corpus, session_name=session, embedder=emb,
                              max_bytes=settings.max_file_bytes, batch_size=settings.embed_batch_size,
                              parse_workers=settings.parse_workers)
    index_s = time.perf_counter() - t0
    graph = build_graph(deps, checkpointer=InMemorySaver())
    context = eval_context(session, retriever, settings, ranker)
    t0 = time.perf_counter()
    llm_run = answers_of(deps) == "llm"
    results = asyncio.run(run_cases(graph, cases, context, llm=llm_run))
    add_file_ceilings(results, corpus)
    return {
        "dataset": str(dataset), "split": split_of(dataset), "corpus": str(corpus), "retriever": retriever,
        "ranker": context.ranker,
        "embedder": emb.name, "answers": answers_of(deps),
        "session": session, "index_seconds": round(index_s, 2), "index_kind": report.kind,
        "run_seconds": round(time.perf_counter() - t0, 2), **aggregate(results, llm=llm_run), "results": results,
    }


def run_jobs(jobs: Sequence[EvalJob], *, settings: Any, cache_dir: Path, retriever: str = "full",
             ranker: str | None = None, embedder: str | None = None, limit: int | None = None,
             session: str | None = None, deps: Any = None, progress: Callable[[str], None] | None = None,
             llm: bool = False, out: str | Path | None = None, holdout_log: Path | None = None) -> dict[str, Any]:
    """Run several datasets, each on its own corpus and session; per-corpus reports plus the macro average.

    `session` overrides the session name and only makes sense with one job. Every dataset is read first,
    so a malformed or empty one stops the run before any corpus is assembled or indexed. A run with a
    held-out dataset is logged then, before it starts (`out`: where the caller writes the report;
    `holdout_log`: the log, default `evals/holdout_log.jsonl`). The report's `split` is `holdout` when any
    dataset is held-out, `dev` when every one is a suite's dev set, else None.
    """
    for job in jobs:
        load_dataset(job.dataset)
    splits = {split_of(job.dataset) for job in jobs}
    split = "holdout" if "holdout" in splits else "dev" if splits == {"dev"} else None
    if split == "holdout":
        log_run([job.name for job in jobs], [job.dataset for job in jobs], out, log=holdout_log)
    deps = deps or eval_deps(settings, llm)  # one pool and embedder cache for all corpora
    corpora: dict[str, dict[str, Any]] = {}
    for job in jobs:
        corpus = job.corpus or assemble_corpus(job.suite, cache_dir)  # type: ignore[arg-type]
        if progress:
            progress(f"{job.name}: {job.dataset.name} on {corpus}")
        corpora[job.name] = run(job.dataset, corpus, settings=settings, retriever=retriever, ranker=ranker,
                                embedder=embedder, session=session, label=job.suite.name if job.suite else None,
                                limit=limit, deps=deps)
    summaries = {name: {k: v for k, v in r.items() if k != "results"} for name, r in corpora.items()}
    embedders = sorted({r["embedder"] for r in corpora.values()})
    rows = [row for r in corpora.values() for row in r.get("results", [])]
    used = {r.get("ranker") for r in corpora.values()} - {None}
    return {"split": split, "retriever": retriever, "ranker": ", ".join(sorted(used)) or ranker or DEFAULT_RANKER,
            "embedder": ", ".join(embedders), "answers": answers_of(deps), "corpora": corpora,
            "macro": macro(summaries, rows)}
