"""`lotsman eval … --html FILE` and `lotsman eval report RUN.json [RUN2.json …] --html FILE`: one
self-contained HTML page of eval runs (docs/api/eval_report.md). Charts are SVG drawn in Python, the filters
a few lines of inline script; the page loads nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.html_report.model import Run, labelled, load_run
from evals.html_report.render import write


def write_runs(paths: Sequence[Path], out: Path) -> int:
    """The page of the run JSONs at `paths` (the first is the base of each comparison); its size in bytes."""
    return write(labelled([load_run(p) for p in paths]), out)


def write_report(report: dict[str, Any], out: Path, label: str = "this run") -> int:
    """The page of one run just made (`lotsman eval --html`); its size in bytes."""
    return write([Run(label, "(this run)", report)], out)
