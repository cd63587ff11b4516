"""The fact budget's ceilings: key facts stated anywhere in the whole text of the first k retrieved files.

A fact missing from the evidence pack may still be in a file retrieval ranked high: reading (choosing the lines
of those files) lost it, not ranking. `files_top5` / `files_top10` say, per key fact, whether the first 5 / 10
distinct files of the run (`retrieved_files`, the evidence's files in rank order) state it (`fact_in_text`,
the metrics' one matcher), so the step between "a gold file in the top five" and "in the evidence pack" is
measured, not guessed (issues 38 and 40). Evidence at or near the ceiling means the rest is file recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from evals.facts import fact_in_text

CEILINGS = {"files_top5": 5, "files_top10": 10}
"""Fact-trace key → how many of the retrieved files it reads."""


@lru_cache(maxsize=4096)
def _file_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def add_file_ceilings(results: Sequence[dict[str, Any]], corpus: Path) -> None:
    """Set `files_top5` / `files_top10` on each fact of every answerable result's `fact_trace` and the
    cases' shares (`files_top5_key_fact_recall`, `files_top10_key_fact_recall`). A gate-refused case's files
    still count: the ceiling is what retrieval found, the evidence recall what was handed on."""
    root = corpus.resolve()
    for row in results:
        trace = row.get("fact_trace")
        if not row.get("answerable") or not trace:
            continue
        files = list(row.get("retrieved_files") or [])
        texts = [_file_text(str(root / p)) for p in files[:max(CEILINGS.values())]]
        for key, k in CEILINGS.items():
            for fact in trace:
                fact[key] = any(fact_in_text(fact["fact"], text) for text in texts[:k])
            row[f"{key}_key_fact_recall"] = sum(bool(f[key]) for f in trace) / len(trace)
