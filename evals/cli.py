"""The `eval` command: `lotsman eval` (entry-point group `lotsman.commands`) and `python -m evals`.

    lotsman eval --suite dev                       # every corpus's dev set, per-corpus table + macro
    lotsman eval --suite holdout --corpus-set fastapi-ru,click
    lotsman eval DATASET --corpus PATH             # one dataset on a corpus folder
    lotsman eval report RUN.json [RUN2.json …] --html FILE   # runs on disk as one HTML page
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, get_args

from evals.suites import SUITES, EvalJob, Split, select
from graph.cli_commands import session_name
from nodes.context_retrieval.choices import Ranker, Retriever
from stores.errors import LotsmanError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", nargs="?",
                   help="one JSONL dataset (needs --corpus), or `report` to render RUN.json files; omit to run a suite")
    p.add_argument("--corpus", help="corpus root the dataset's gold paths are relative to")
    p.add_argument("--suite", choices=["dev", "holdout"],
                   help="run this split of every registered corpus (default dev when no DATASET)")
    p.add_argument("--corpus-set", metavar="NAMES", help=f"comma-separated corpora of the suite: {', '.join(SUITES)}")
    p.add_argument("--corpora-dir", type=Path,
                   help="where corpora are assembled and kept (default: <LOTSMAN_DATA_DIR>/corpora)")
    p.add_argument("--out", help="write the JSON report (per corpus, macro, per case) here")
    p.add_argument("--retriever", choices=get_args(Retriever), default="full")
    p.add_argument("--ranker", choices=get_args(Ranker), default=None,
                   help="order of the fused candidates (default: the run context's, learned)")
    p.add_argument("--embedder", help="embedder for the eval sessions (default: settings)")
    p.add_argument("--session", type=session_name, help="session name for DATASET (default: eval-<corpus>-<embedder>)")
    p.add_argument("--limit", type=int, help="only the first N cases of each dataset")
    p.add_argument("--llm", action="store_true",
                   help="answer with the chat model (router, analysis and composition): GigaChat "
                        "(GIGACHAT_CREDENTIALS, GIGACHAT_MODEL) or LOTSMAN_LLM_PROVIDER=openai (OPENAI_BASE_URL, "
                        "LOTSMAN_LLM_MODEL); by default the eval runs offline, with extractive answers")
    p.add_argument("--langsmith", action="store_true", help="also upload and run evaluate() on LangSmith")
    p.add_argument("--list", action="store_true", help="list the registered corpora and exit")
    p.add_argument("runs", nargs="*", metavar="RUN.json",
                   help="with DATASET `report`: run JSONs to render (`eval report RUN.json [RUN2.json …] --html FILE`; "
                        "the first is the base the others are compared with)")
    p.add_argument("--html", metavar="FILE",
                   help="write the report as one self-contained HTML page (docs/api/eval_report.md)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `eval` subcommand to the `lotsman` parser."""
    p = sub.add_parser("eval", help="run eval datasets through the graph and print metrics per corpus")
    add_arguments(p)
    p.set_defaults(handler=handler)


def jobs_of(args: argparse.Namespace) -> tuple[list[EvalJob], list[str], str | None]:
    """What to run: (jobs, notes on skipped corpora, split or None for a single dataset)."""
    suite, corpus_set = getattr(args, "suite", None), getattr(args, "corpus_set", None)
    if args.dataset:
        if suite or corpus_set:
            raise LotsmanError("give either DATASET --corpus PATH or --suite/--corpus-set, not both")
        if not args.corpus:
            raise LotsmanError("DATASET needs --corpus PATH (the folder its gold paths are relative to)")
        dataset = Path(args.dataset)
        return [EvalJob(dataset.stem, dataset, Path(args.corpus))], [], None
    if args.corpus or getattr(args, "session", None):
        raise LotsmanError("--corpus and --session go with DATASET; a suite assembles and names its own corpora")
    names = [n.strip() for n in corpus_set.split(",") if n.strip()] if corpus_set else None
    split: Split = "holdout" if suite == "holdout" else "dev"
    jobs, notes = select(names, split)
    if not jobs:
        raise LotsmanError(f"nothing to run for split {split}: " + "; ".join(notes))
    return jobs, notes, split


def _list() -> int:
    from evals.suites import REPO_ROOT

    for s in SUITES.values():
        state = {split: ("-" if s.dataset(split) is None else "ok" if (REPO_ROOT / str(s.dataset(split))).exists()
                         else "missing") for split in ("dev", "holdout")}
        print(f"{s.name:<14} corpus {s.assemble or '(this repository)'}  dev {state['dev']}  "
              f"holdout {state['holdout']}")
    return 0


def handler(args: argparse.Namespace, settings: Any) -> int:
    """Run the selected datasets, print the per-corpus table, write the JSON, optionally go to LangSmith."""
    from evals.report import format_table, write_json
    from evals.runner import run_jobs

    if getattr(args, "list", False):
        return _list()
    if args.dataset == "report" or getattr(args, "runs", None):
        from evals.html_report.command import report_command

        return report_command(args)
    jobs, notes, split = jobs_of(args)
    for note in notes:
        print(note, file=sys.stderr)
    cache_dir = getattr(args, "corpora_dir", None) or Path(settings.data_dir) / "corpora"
    report = run_jobs(jobs, settings=settings, cache_dir=cache_dir, retriever=args.retriever, ranker=args.ranker,
                      embedder=args.embedder, limit=args.limit, session=getattr(args, "session", None),
                      progress=lambda line: print(line, file=sys.stderr, flush=True),
                      llm=getattr(args, "llm", False), out=args.out)  # out: named in the held-out log
    report = {"split": split, **report}
    print(format_table(report))
    if args.out:
        write_json(report, Path(args.out))
        print(f"wrote {args.out}")
    if getattr(args, "html", None):
        from evals.html_report.command import write_html

        write_html(report, Path(args.html), Path(args.out).stem if args.out else "this run")
    if getattr(args, "langsmith", False):
        from evals.langsmith_eval import upload_and_evaluate

        for job in jobs:
            print(upload_and_evaluate(job.dataset, report["corpora"][job.name], settings))
    return 0
