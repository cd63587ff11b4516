"""The CLI side: `lotsman eval report RUN.json [RUN2.json …] --html FILE` and `lotsman eval … --html FILE`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from stores.errors import LotsmanError

RUN_OPTIONS = ("corpus", "suite", "corpus_set", "out", "session", "limit", "llm", "langsmith")
"""Options of a run, meaningless when rendering runs already on disk."""


def _written(out: Path, size: int) -> str:
    return f"wrote {out} ({size / 1024:.0f} KB)"


def _write(write: Any, out: Path) -> int:
    try:
        return int(write())
    except OSError as exc:
        raise LotsmanError(f"cannot write the HTML report {out}: {exc.strerror or exc}") from None


def report_command(args: argparse.Namespace) -> int:
    """Render run JSONs (the first is the base every later one is compared with) into one HTML page."""
    from evals.html_report import write_runs

    if args.dataset != "report":
        raise LotsmanError("one DATASET at a time; to render run JSONs: lotsman eval report RUN.json [RUN2.json …] "
                           "--html FILE")
    if not args.runs:
        raise LotsmanError("eval report needs at least one run JSON (written by `lotsman eval --out`)")
    if not getattr(args, "html", None):
        raise LotsmanError("eval report needs --html FILE (where to write the page)")
    given = [f"--{name.replace('_', '-')}" for name in RUN_OPTIONS if getattr(args, name, None)]
    if given:
        raise LotsmanError(f"eval report renders runs already made; options of a run: {', '.join(given)}")
    out = Path(args.html)
    size = _write(lambda: write_runs([Path(p) for p in args.runs], out), out)
    print(_written(out, size))
    return 0


def write_html(report: dict[str, Any], out: Path, label: str) -> None:
    """After a run: its page beside the table (and the JSON, when `--out` was given)."""
    from evals.html_report import write_report

    size = _write(lambda: write_report(report, out, label), out)
    print(_written(out, size))
