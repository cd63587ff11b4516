"""`python -m evals.baselines.llamaindex`: the plain LlamaIndex pipeline (issue 38) on Lotsman's dev corpora.

    python -m evals.baselines.llamaindex --suite dev --corpora-dir /work/corpora --out out/baseline.json
    python -m evals.baselines.llamaindex --suite dev --corpus-set click,structlog --chars 16000 --out x.json
    python -m evals.baselines.llamaindex --dataset evals/datasets/click.jsonl --corpus /work/corpora/click

Per corpus: the files Lotsman's indexer takes (`collect_files`: `.md` and `.py`), split, embedded with the
`use` embedder and indexed in memory (`evals/baselines/pipeline.py`); per answerable case: recall@5/@10 and
MRR over distinct files in rank order, and evidence key-fact recall of the chunks in rank order up to each
character budget (`--chars`, and Lotsman's 4k-token cap in characters). Held-out data is refused
(`evals/holdout.py`), never run. See docs/evals/baseline.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evals.baselines.scoring import format_table, macro, score_case, summarize
from evals.cases import load_dataset
from evals.holdout import HoldoutError, refuse_dataset
from evals.suites import REPO_ROOT, SUITES, EvalJob, assemble_corpus, select
from nodes.context_retrieval.gate import CHARS_PER_TOKEN
from stores.errors import LotsmanError

LOTSMAN_CAP_TOKENS = 4000
"""Lotsman's evidence cap (4k tokens: `token_cap` 4096, each row also paying its path and overhead)."""
LOTSMAN_CAP_CHARS = int(CHARS_PER_TOKEN * LOTSMAN_CAP_TOKENS)
"""The same cap in characters, by the pack's own rate (`nodes/context_retrieval/gate.py: CHARS_PER_TOKEN`)."""
BY = "evals.baselines.llamaindex"
INSTALL = "pip install -c constraints.txt -e '.[baseline]'"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m evals.baselines.llamaindex",
                                description="A plain LlamaIndex pipeline on the eval corpora (issue 38).")
    p.add_argument("--suite", choices=["dev", "holdout"], help="run every registered corpus's split (dev only)")
    p.add_argument("--corpus-set", metavar="NAMES", help=f"comma-separated corpora: {', '.join(SUITES)}")
    p.add_argument("--corpora-dir", type=Path,
                   help="where the corpora are assembled and kept (default: <LOTSMAN_DATA_DIR>/corpora, as the eval)")
    p.add_argument("--dataset", type=Path, help="one dev dataset instead of a suite (needs --corpus)")
    p.add_argument("--corpus", type=Path, help="corpus root of --dataset")
    p.add_argument("--chars", type=int, default=16000, help="context budget in characters (default 16000)")
    p.add_argument("--top-k", type=int, default=20, help="chunks kept by each retriever and by the fusion (20)")
    p.add_argument("--question-only", action="store_true",
                   help="query with the question alone (default: a follow-up's earlier user turns come first)")
    p.add_argument("--limit", type=int, help="only the first N answerable cases of each dataset")
    p.add_argument("--out", type=Path, help="write the JSON report here")
    return p.parse_args(argv)


def jobs_of(args: argparse.Namespace) -> list[EvalJob]:
    """The datasets to run, each refused when it is held-out (a suite's held-out split, a held-out name, or
    a file holding held-out cases)."""
    if args.suite == "holdout":
        raise HoldoutError(f"{BY} refuses --suite holdout: held-out splits are run only by `python -m evals` at "
                           "a session's end, never by a baseline (use --suite dev)")
    if args.dataset:
        if args.suite or args.corpus_set or not args.corpus:
            raise LotsmanError("give either --dataset FILE --corpus PATH or --suite dev [--corpus-set NAMES]")
        jobs = [EvalJob(args.dataset.stem, args.dataset, args.corpus)]
    else:
        names = [n.strip() for n in args.corpus_set.split(",") if n.strip()] if args.corpus_set else None
        jobs, notes = select(names, "dev")
        for note in notes:
            print(note, file=sys.stderr)
    for job in jobs:
        refuse_dataset(job.dataset, by=BY)
    if not jobs:
        raise LotsmanError("nothing to run")
    return jobs


def query_of(case: dict[str, Any], *, question_only: bool = False) -> str:
    """The retriever's query: the question, after a follow-up's earlier user turns (no LLM condenses them)."""
    turns = [] if question_only else [t["content"] for t in case.get("history") or [] if t["role"] == "user"]
    return "\n".join([*turns, case["question"]])


def run_job(job: EvalJob, root: Path, embedder: Any, build: Callable[..., Any], args: argparse.Namespace,
            caps: Sequence[int], progress: Callable[[str], None]) -> dict[str, Any]:
    """Index one corpus and score its answerable cases."""
    from stores.indexing.files import collect_files

    cases = [c for c in load_dataset(job.dataset) if c["answerable"]][: args.limit]
    files = [(f.path, f.text) for f in collect_files(root).files]
    pipeline = build(files, embedder, top_k=args.top_k)
    progress(f"{job.name}: {len(files)} files, {pipeline.nodes} chunks, indexed in {pipeline.seconds['total']:.1f} s")
    rows, query_ms = [], []
    for case in cases:
        t = time.perf_counter()
        ranked = pipeline.retrieve(query_of(case, question_only=args.question_only))
        query_ms.append((time.perf_counter() - t) * 1000)
        rows.append(score_case(case, ranked, caps))
    dataset = job.dataset.resolve()
    return {"dataset": str(dataset.relative_to(REPO_ROOT) if dataset.is_relative_to(REPO_ROOT) else dataset),
            "corpus": str(root), "files": len(files), "chunks": pipeline.nodes,
            "index_seconds": round(pipeline.seconds["total"], 2),
            "index_seconds_parts": {k: round(v, 2) for k, v in pipeline.seconds.items()},
            "query_ms_p50": round(statistics.median(query_ms), 1) if query_ms else None,
            **summarize(rows, caps), "results": rows}


TABLE_ROWS = (("answerable", "answerable"), ("recall@5", "recall_at_5"), ("recall@10", "recall_at_10"),
              ("MRR", "mrr"))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return _run(args)
    except LotsmanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)


def _default_corpora_dir() -> Path:
    from graph.settings import load_settings

    return Path(load_settings().data_dir) / "corpora"


def _run(args: argparse.Namespace) -> int:
    jobs = jobs_of(args)
    try:
        from evals.baselines.pipeline import build
    except ImportError as exc:
        raise LotsmanError(f"llama-index is not installed ({exc.name}): {INSTALL}") from None
    from stores.embedders import make_embedder

    caps = sorted({args.chars, LOTSMAN_CAP_CHARS}, reverse=True)
    embedder = make_embedder("use")
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    corpora = {}
    for job in jobs:
        if job.corpus is not None:
            root = job.corpus
        else:
            assert job.suite is not None  # select() leaves only a suite's corpus to assemble
            root = assemble_corpus(job.suite, args.corpora_dir or _default_corpora_dir())
        corpora[job.name] = run_job(job, root, embedder, build, args, caps, progress)
    keys = ["recall_at_5", "recall_at_10", "mrr", *(f"evidence_key_fact_recall@{c}" for c in caps), "index_seconds"]
    report = {"baseline": "llamaindex", "split": "dev", "embedder": "use", "chunk_size": 512, "top_k": args.top_k,
              "caps_chars": caps, "question_only": args.question_only, "corpora": corpora,
              "macro": macro(corpora, keys)}
    rows = [*TABLE_ROWS, *((f"evidence kf recall @{c} chars", f"evidence_key_fact_recall@{c}") for c in caps),
            ("chunks", "chunks"), ("index seconds", "index_seconds")]
    print(format_table(corpora, report["macro"], rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
