"""The eval corpora (issue 11): each names its assemble script, its dev set and its held-out set.

Corpora are assembled on demand into a cache folder (default `<data dir>/corpora/NAME`), never committed.
Assemble scripts take DEST as their only argument and are idempotent, so running one on every eval is
cheap once the corpus is there.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from stores.errors import LotsmanError

REPO_ROOT = Path(__file__).resolve().parent.parent
Split = Literal["dev", "holdout"]


@dataclass(frozen=True)
class Suite:
    """One eval corpus and its datasets; paths are relative to the repository root."""

    name: str
    assemble: str | None
    """Script that builds the corpus into DEST; None: the corpus is the repository itself."""
    dev: str
    holdout: str | None
    """Held-out set: run only to check, never to tune; None when the corpus has none."""

    def dataset(self, split: Split) -> str | None:
        return self.dev if split == "dev" else self.holdout


SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("fastapi-ru", "../shared/corpora/fastapi-ru/assemble", "evals/datasets/fastapi_ru.jsonl",
          "evals/datasets/fastapi_ru_holdout.jsonl"),
    Suite("atlas-pm", "evals/corpora/atlas-pm/assemble", "evals/datasets/atlas_pm.jsonl",
          "evals/datasets/atlas_pm_holdout.jsonl"),
    Suite("structlog", "evals/corpora/structlog/assemble", "evals/datasets/structlog.jsonl",
          "evals/datasets/structlog_holdout.jsonl"),
    Suite("click", "evals/corpora/click/assemble", "evals/datasets/click.jsonl", "evals/datasets/click_holdout.jsonl"),
    Suite("mcp", "evals/corpora/mcp/assemble", "evals/datasets/mcp.jsonl", None),
    Suite("libaudit", "evals/corpora/libaudit/assemble", "evals/datasets/libaudit.jsonl", None),
    Suite("urllib3", "evals/corpora/urllib3/assemble", "evals/datasets/urllib3.jsonl", None),
    Suite("lotsman-self", None, "evals/datasets/lotsman_self.jsonl", None),
)}


@dataclass(frozen=True)
class EvalJob:
    """One dataset to run against one corpus."""

    name: str
    """Row label in the report: the suite name, or the dataset's stem for `DATASET --corpus PATH`."""
    dataset: Path
    corpus: Path | None
    """Corpus root; None until the suite's corpus is assembled (`assemble_corpus`)."""
    suite: Suite | None = None


def select(names: Sequence[str] | None, split: Split, root: Path = REPO_ROOT) -> tuple[list[EvalJob], list[str]]:
    """Jobs for the named corpora (all when `names` is None) on one split, and notes on what was skipped.

    Naming a corpus explicitly makes a missing dataset or assemble script an error; a whole-suite run skips
    it with a note, so a suite works while some corpora are still being written.
    """
    unknown = [n for n in names or () if n not in SUITES]
    if unknown:
        raise LotsmanError(f"unknown corpus {', '.join(unknown)}; known: {', '.join(SUITES)}")
    jobs, notes = [], []
    for suite in (SUITES[n] for n in names) if names else SUITES.values():
        dataset = suite.dataset(split)
        missing = ("no held-out set" if dataset is None
                   else f"{dataset} not found" if not (root / dataset).exists()
                   else f"{suite.assemble} not found" if suite.assemble and not (root / suite.assemble).exists()
                   else None)
        if missing is None and dataset is not None:
            jobs.append(EvalJob(suite.name, root / dataset, root if suite.assemble is None else None, suite))
        elif names and dataset is not None:
            raise LotsmanError(f"corpus {suite.name}: {missing}")
        else:
            notes.append(f"skipped {suite.name} ({split}): {missing}")
    return jobs, notes


def assemble_corpus(suite: Suite, cache_dir: Path, root: Path = REPO_ROOT) -> Path:
    """The suite's corpus root, assembling it into `cache_dir/NAME` first when needed."""
    if suite.assemble is None:
        return root
    dest = cache_dir / suite.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str((root / suite.assemble).resolve()), str(dest)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise LotsmanError(f"assembling {suite.name} into {dest} failed (exit {proc.returncode}): {tail[0]}")
    return dest
