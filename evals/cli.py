"""`lotsman eval`: a command plug-in, loaded by `graph.cli` from the `lotsman.commands` entry-point group."""

from __future__ import annotations

import argparse
from typing import Any


def _eval(args: argparse.Namespace, settings: Any) -> int:
    from evals.runner import run_cli

    return run_cli(args, settings)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `eval` subcommand (the `lotsman.commands` plug-in contract)."""
    p = sub.add_parser("eval", help="run an eval dataset through the graph and print metrics")
    p.add_argument("dataset")
    p.add_argument("--corpus", required=True, help="corpus root the dataset's gold paths are relative to")
    p.add_argument("--out", help="write the JSON report here")
    p.add_argument("--retriever", choices=["full", "vector", "bm25"], default="full")
    p.add_argument("--embedder", help="embedder for the eval session (default: settings)")
    p.add_argument("--session", help="session name (default: derived from corpus and embedder)")
    p.add_argument("--limit", type=int, help="only the first N cases")
    p.add_argument("--langsmith", action="store_true", help="also upload and run evaluate() on LangSmith")
    p.set_defaults(handler=_eval)
