"""Pure scoring of a baseline's ranked chunks (no llama-index here, so the unit tests need none).

A baseline returns chunks in rank order, each with the file it came from. Its figures use the definitions
of `evals/metrics.py`: recall@k and MRR over the *distinct* files in rank order, and evidence key-fact
recall = share of a case's key facts stated (`fact_in_text`) in some chunk of the context, the context
being the chunks in rank order up to a character budget.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from evals.metrics import distinct_files, evidence_key_fact_recall, mean_or_none, recall_at_k, reciprocal_rank


def capped_context(texts: Sequence[str], chars: int) -> list[str]:
    """The chunks in rank order while they fit `chars` characters; the first one that does not fit is cut to
    the room left and ends the context (so the context fills the budget exactly when there is enough text).

    The chunks are kept apart (a fact is stated in one chunk, as in Lotsman's evidence rows); only their
    own text counts against the budget.
    """
    kept: list[str] = []
    room = chars
    for text in texts:
        if room <= 0:
            break
        kept.append(text[:room])
        room -= len(kept[-1])
    return kept


def file_scores(paths: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """recall@5, recall@10 and MRR of one case, over the distinct files of its ranked chunks."""
    return {"recall_at_5": recall_at_k(paths, gold, 5), "recall_at_10": recall_at_k(paths, gold, 10),
            "mrr": reciprocal_rank(paths, gold)}


def score_case(case: Mapping[str, Any], ranked: Sequence[tuple[str, str]], caps: Sequence[int]) -> dict[str, Any]:
    """One answerable case's row: its files and scores, and per character cap the evidence key-fact recall
    and the context's length.

    Args:
        case: the dataset case (`id`, `question`, `gold_paths`, `key_facts`).
        ranked: (file path, chunk text) in the pipeline's rank order.
        caps: character budgets of the context.
    """
    paths = [p for p, _ in ranked]
    row: dict[str, Any] = {"id": case["id"], "question": case["question"], "gold_paths": list(case["gold_paths"]),
                           "files": distinct_files(paths)[:10], **file_scores(paths, case["gold_paths"])}
    for cap in caps:
        context = capped_context([t for _, t in ranked], cap)
        row[f"evidence_key_fact_recall@{cap}"] = evidence_key_fact_recall(case.get("key_facts") or [], context)
        row[f"context_chars@{cap}"] = sum(len(t) for t in context)
    return row


def summarize(rows: Sequence[Mapping[str, Any]], caps: Sequence[int]) -> dict[str, Any]:
    """Mean of each metric over a corpus's answerable cases (a case without key facts leaves the evidence
    figure out, as in `evals/summary.py`), and the context length p50."""
    keys = ["recall_at_5", "recall_at_10", "mrr", *(f"evidence_key_fact_recall@{c}" for c in caps)]
    out: dict[str, Any] = {"answerable": len(rows), **{k: mean_or_none(r.get(k) for r in rows) for k in keys}}
    for cap in caps:
        chars = [r[f"context_chars@{cap}"] for r in rows]
        out[f"context_chars_p50@{cap}"] = statistics.median(chars) if chars else None
    return out


def macro(corpora: Mapping[str, Mapping[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    """Unweighted mean over corpora of each key (a corpus where it is None is left out); counts summed."""
    out: dict[str, Any] = {k: mean_or_none(c.get(k) for c in corpora.values()) for k in keys}
    out["answerable"] = sum(int(c.get("answerable") or 0) for c in corpora.values())
    return out


def format_table(corpora: Mapping[str, Mapping[str, Any]], macro_row: Mapping[str, Any],
                 rows: Sequence[tuple[str, str]]) -> str:
    """Metrics down, corpora across, macro last; `rows` are (label, key)."""
    columns = {**corpora, "macro": macro_row}
    width = max(12, *(len(n) + 2 for n in columns))
    lines = [f"{'':<30}" + "".join(f"{n:>{width}}" for n in columns)]
    for label, key in rows:
        lines.append(f"{label:<30}" + "".join(f"{_cell(key, c.get(key)):>{width}}" for c in columns.values()))
    return "\n".join(lines)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int) or "chars" in key:
        return f"{value:.0f}"
    return f"{value:.1f}" if "seconds" in key else f"{value:.3f}"
