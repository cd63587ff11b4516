"""The eval report as a terminal table (metrics down, corpora across, macro last) and as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.summary import COUNTS, METRICS

_CHARS = ("answer_chars_p50", "answer_chars_p95")


def cell(key: str, value: Any) -> str:
    """One value as printed: n/a for None, counts and character lengths as integers."""
    if value is None:
        return "n/a"
    if key in COUNTS or key in _CHARS:
        return f"{value:.0f}"
    return f"{value:.3f}"


def format_table(report: dict[str, Any]) -> str:
    """Per-corpus columns plus the macro average; latency p50/p95 in ms at the bottom (per node, and each
    case's wall time, pooled over all cases in the macro column); in `--llm` runs, why answers fell back."""
    columns = {**{name: r for name, r in report["corpora"].items()}, "macro": report["macro"]}
    width = max(12, *(len(n) + 2 for n in columns))
    head = f"retriever={report['retriever']} · ranker={report.get('ranker', 'rrf')} · embedder={report['embedder']}"
    if report.get("answers"):
        head += f" · answers={report['answers']}"
    if report.get("split"):
        head += f" · split={report['split']}"
    lines = [head, f"{'':<25}" + "".join(f"{n:>{width}}" for n in columns)]
    for label, key in (("cases", "cases"), ("answerable", "answerable"), ("answered (not abstained)", "answered"),
                       ("code-gold cases", "code_gold_cases"), *METRICS):
        lines.append(f"{label:<25}" + "".join(f"{cell(key, c.get(key)):>{width}}" for c in columns.values()))
    nodes = list(dict.fromkeys(n for c in columns.values() for n in c.get("latency_ms", {})))
    lines.append("latency ms p50/p95")
    for node in nodes:
        row = []
        for c in columns.values():
            lat = c.get("latency_ms", {}).get(node)
            row.append(f"{lat['p50']:.0f}/{lat['p95']:.0f}" if lat else "-")
        lines.append(f"  {node:<23}" + "".join(f"{v:>{width}}" for v in row))
    for name, corpus in report["corpora"].items():
        for reason, count in sorted((corpus.get("fallback_reasons") or {}).items()):
            lines.append(f"fallback {name}: {count} × {reason or 'no reason given'}")
    return "\n".join(lines)


def write_json(report: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
