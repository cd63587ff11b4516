"""Held-out splits stay blind in code (issue 41): what is held-out, the refusals of every trainer and
calibrator, and the log of held-out runs.

- **What is held-out**: every registered suite's held-out dataset (`evals/suites.py`), any file whose name
  says so (`holdout`, `hold-out`, `hold_out`, `heldout`, `held-out`, `held_out`, any case, at the start of
  the name or after `_`, `-` or `.`), the ids of every case in those datasets and their questions (folded:
  `question_key`), so a copy, a hard link or a copy with renamed ids is held-out too (`holdout_content`).
- **Refusals** (`refuse_dataset`, `refuse_cases`, `refuse_report`): a trainer or calibrator given a
  held-out dataset, a report of a held-out run (`split: holdout`, a held-out dataset, held-out case ids)
  or data holding a held-out case id stops with one `error:` line (`HoldoutError`), whatever the procedure
  says.
- **The log** (`log_run`): every run of a held-out split appends one JSON line to
  `evals/holdout_log.jsonl` (committed): the commit (`+dirty` when tracked files differ from it), the
  command, the UTC date, the corpora, the datasets and the output path.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.suites import REPO_ROOT, SUITES
from stores.errors import LotsmanError

LOG_PATH = REPO_ROOT / "evals" / "holdout_log.jsonl"
"""The committed log of held-out runs; tests point `log_run(log=...)` elsewhere."""
DATASETS_DIR = REPO_ROOT / "evals" / "datasets"
_HOLDOUT_NAME = re.compile(r"(?:^|[_.-])(?:hold|held)[_-]?out", re.IGNORECASE)
_WORD = re.compile(r"\w+")


class HoldoutError(LotsmanError):
    """Held-out data given to something that fits weights or thresholds."""

    exit_code = 2


def holdout_name(path: str | Path) -> bool:
    """The file's name says held-out (`fastapi_ru_holdout.jsonl`, `eval-heldout.json`, `Click.Held-Out.jsonl`)."""
    return bool(_HOLDOUT_NAME.search(Path(path).name))


def holdout_datasets(root: Path = REPO_ROOT) -> list[Path]:
    """Every held-out dataset: the suites' held-out paths and any `*holdout*.jsonl` beside them, sorted."""
    found = {(root / s.holdout).resolve() for s in SUITES.values() if s.holdout}
    datasets = root / "evals" / "datasets"
    if datasets.is_dir():
        found |= {p.resolve() for p in datasets.glob("*.jsonl") if holdout_name(p)}
    return sorted(found)


def is_holdout_path(path: str | Path, root: Path = REPO_ROOT) -> bool:
    """A held-out dataset by its path (a suite's held-out set) or by its name."""
    if holdout_name(path):
        return True
    try:
        resolved = Path(path).resolve()
    except OSError:
        return False
    return resolved in holdout_datasets(root)


def dataset_cases(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL dataset (blank and malformed lines skipped: this is a guard, not a checker;
    a missing or unreadable file has none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    except OSError:
        return []
    cases = []
    for line in text.splitlines():
        try:
            case = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(case, dict):
            cases.append(case)
    return cases


def dataset_ids(path: Path) -> list[str]:
    """The case ids of a JSONL dataset."""
    return [c["id"] for c in dataset_cases(path) if isinstance(c.get("id"), str)]


def question_key(question: str) -> str:
    """A question folded for comparison: its words, case-folded, `ё` as `е`, joined by one space (punctuation,
    quotes and spacing do not count)."""
    return " ".join(_WORD.findall(question.casefold().replace("ё", "е")))


def dataset_questions(path: Path) -> set[str]:
    """The folded questions (`question_key`) of a JSONL dataset; empty ones left out."""
    return {k for c in dataset_cases(path) if isinstance(c.get("question"), str) and (k := question_key(c["question"]))}


def holdout_ids(root: Path = REPO_ROOT) -> set[str]:
    """The ids of every case of every held-out dataset."""
    return {cid for path in holdout_datasets(root) for cid in dataset_ids(path)}


def holdout_questions(root: Path = REPO_ROOT) -> set[str]:
    """The folded questions of every case of every held-out dataset."""
    return {q for path in holdout_datasets(root) for q in dataset_questions(path)}


def holdout_content(path: str | Path, root: Path = REPO_ROOT) -> str | None:
    """Why a dataset holds held-out cases whatever its path (a copy, a hard link, renamed ids): `held-out
    cases (ids)` or `held-out questions ("...")`; None when it holds neither."""
    ids = set(dataset_ids(Path(path))) & holdout_ids(root)
    if ids:
        return f"held-out cases ({_named(ids)})"
    questions = dataset_questions(Path(path)) & holdout_questions(root)
    if questions:
        return f"held-out questions ({_named(repr(q[:40]) for q in questions)})"
    return None


def _named(ids: Iterable[str]) -> str:
    found = sorted(set(ids))
    return ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")


def refuse_dataset(path: str | Path, *, by: str, root: Path = REPO_ROOT) -> None:
    """Raise `HoldoutError` when `path` is a held-out dataset or holds a held-out case id.

    Args:
        path: the dataset a trainer or calibrator was given.
        by: who refuses (`train_ranker`), for the message.
        root: the repository whose held-out datasets count.
    """
    if is_holdout_path(path, root):
        raise HoldoutError(f"{by} refuses {path}: a held-out dataset is never trained or calibrated on "
                           "(use the dev split)")
    held = holdout_content(path, root)
    if held:
        raise HoldoutError(f"{by} refuses {path}: it holds {held}; held-out cases are never trained or "
                           "calibrated on (remove them from dev)")


def refuse_cases(ids: Iterable[str], *, source: str, by: str, root: Path = REPO_ROOT) -> None:
    """Raise `HoldoutError` when any of `ids` is a held-out case id."""
    held = set(ids) & holdout_ids(root)
    if held:
        raise HoldoutError(f"{by} refuses {source}: it holds held-out cases ({_named(held)}); held-out cases "
                           "are never trained or calibrated on (remove them from dev)")


def refuse_report(data: Any, path: str | Path, *, by: str, root: Path = REPO_ROOT) -> None:
    """Raise `HoldoutError` for an eval report of a held-out run: a held-out file name, `split: holdout` at
    the top or in a corpus's report, a corpus report of a held-out dataset, or a result of a held-out case
    (its id, or its question under another id).
    """
    if holdout_name(path):
        raise HoldoutError(f"{by} refuses {path}: a held-out report is never calibrated on (pass a dev report)")
    reports = [data] if isinstance(data, dict) else []
    if isinstance(data, dict) and isinstance(data.get("corpora"), dict):
        reports += [r for r in data["corpora"].values() if isinstance(r, dict)]
    for report in reports:
        dataset = report.get("dataset")
        if report.get("split") == "holdout" or (isinstance(dataset, str) and is_holdout_path(dataset, root)):
            raise HoldoutError(f"{by} refuses {path}: it reports a held-out run (split holdout"
                               f"{f', {dataset}' if isinstance(dataset, str) else ''}); calibrate on dev reports")
    results = [r for report in reports for r in report.get("results") or [] if isinstance(r, dict)]
    refuse_cases([str(r.get("id")) for r in results], source=str(path), by=by, root=root)
    asked = {question_key(r["question"]) for r in results if isinstance(r.get("question"), str)}
    held = asked & holdout_questions(root)
    if held:
        raise HoldoutError(f"{by} refuses {path}: it holds held-out questions ({_named(repr(q[:40]) for q in held)}); "
                           "held-out cases are never calibrated on (pass a dev report)")


# ---- the log of held-out runs ------------------------------------------------------------------------

def _git(*args: str, root: Path) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def commit_of(root: Path = REPO_ROOT, log: Path | None = None) -> str:
    """`git rev-parse HEAD`, plus `+dirty` when a tracked or new (not ignored) file differs from it; the log
    itself does not count (appending to it is not a change of what ran). `unknown` outside a git tree."""
    head = _git("rev-parse", "HEAD", root=root)
    if head is None:
        return "unknown"
    log_path = (log or LOG_PATH).resolve()
    inside = log_path.is_relative_to(root.resolve())
    exclude = [f":(exclude){log_path.relative_to(root.resolve()).as_posix()}"] if inside else []
    status = _git("status", "--porcelain", "--", ".", *exclude, root=root)
    return head + ("+dirty" if status else "")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed: `lotsman eval ...` or `python -m evals ...` (not the interpreter's full path)."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        return ""
    first = Path(args[0])
    head = "python -m evals" if first.name == "__main__.py" and first.parent.name == "evals" else first.name
    return " ".join([head, *(shlex.quote(a) for a in args[1:])])


def log_run(corpora: Sequence[str], datasets: Sequence[str | Path], out: str | Path | None, *,
            argv: Sequence[str] | None = None, log: Path | None = None, root: Path = REPO_ROOT,
            now: datetime | None = None) -> dict[str, Any]:
    """Append one line for a held-out run to the log (`log`, default `LOG_PATH`) and return it."""
    path = log or LOG_PATH
    entry = {"date": (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "commit": commit_of(root, path), "command": command_line(argv),
             "corpora": list(corpora), "datasets": [_relative(d, root) for d in datasets],
             "out": str(out) if out is not None else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
    return entry


def _relative(path: str | Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
