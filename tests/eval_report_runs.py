"""The committed eval runs the HTML report's tests render, and a run whose user text holds HTML; shared by the
unit tests (tests/unit/test_html_report*.py) and the browser test (tests/e2e/test_eval_report_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "eval_report"
BASE, NEW = FIXTURES / "rrf.json", FIXTURES / "learned.json"
"""click and structlog dev, first 8 cases each, RRF and learned order (trimmed: no evidence paths, answers
cut at 600 characters; every figure as the runner wrote it). Only the learned run has the file ceilings
(`files_top5` / `files_top10` per fact, computed by `evals.ceilings.add_file_ceilings` over the corpora): the
RRF run stands for a run made before they were recorded."""

HOSTILE_Q = '<script>window.__xss = 1</script> Как?'
HOSTILE_A = 'Ответ: <img src=x onerror="window.__xss = 2"> [docs/<b>.md:1-3]'


def data(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def hostile_report() -> dict[str, Any]:
    """The learned run with its first click case's text made of HTML, in a corpus named `c<x>"`."""
    report = data(NEW)
    corpus = report["corpora"].pop("click")
    row = corpus["results"][0]
    row.update(question=HOSTILE_Q, answer=HOSTILE_A, gold_paths=["docs/<b>.md"], key_facts=["<i>fact</i>"],
               fact_trace=[{"fact": "<i>fact</i>", "evidence": True, "reader": True, "answer": False}],
               retrieved_files=["docs/<b>.md", "a&b.md"], tags=["en", "<u>kind"], expected_route="<s>R")
    report["corpora"]['c<x>"'] = corpus
    return report
