"""From graph state to per-case rows, corpus summaries, the macro average, and the multi-corpus CLI."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import evals.runner
from evals.answer_text import blocks, own_text, passages
from evals.cli import add_arguments, jobs_of
from evals.report import format_table
from evals.scoring import score_case
from evals.suites import SUITES, assemble_corpus, select
from evals.summary import aggregate, macro
from stores.errors import LotsmanError

ROOT = Path(__file__).resolve().parents[2]


def case(cid: str, gold: list[str], facts: list[str], answerable: bool = True,
         route: str = "DOC_EXPLAIN/SUMMARY") -> dict[str, Any]:
    return {"id": cid, "question": "q?", "history": [], "expected_route": route, "gold_paths": gold,
            "key_facts": facts, "answerable": answerable, "tags": []}


def state(answer: str, paths: list[str], *, abstained: bool = False, cites: list[str] | None = None,
          route: tuple[str, str] = ("DOC_EXPLAIN", "SUMMARY"), **extra: Any) -> dict[str, Any]:
    return {"answer": answer, "abstained": abstained,
            "evidence": [{"path": p, "span_start": 1, "span_end": 9} for p in paths],
            "citations": [{"path": p, "start_line": 1, "end_line": 2} for p in (cites or [])],
            "route": {"intent": route[0], "subintent": route[1]},
            "retrieval": {"relevant": not abstained, "gate": "ok" if not abstained else "low coverage"},
            "timings_ms": {"context_retrieval": 10.0, "answer_composition": 2.0}, **extra}


ROWS = [
    # code gold found, fact quoted
    score_case(case("a", ["pkg/mod.py"], ["make_id"]),
               state("- `def make_id(route):` [pkg/mod.py:1-2]", ["pkg/mod.py", "docs/x.md"], cites=["pkg/mod.py"])),
    # docs gold missed; the fact appears only in the sources list
    score_case(case("b", ["docs/a.md"], ["Alpha Beta"]),
               state("- gamma [docs/x.md:1-2]\n\nSources:\n- `docs/x.md` — Alpha Beta", ["docs/x.md"],
                     cites=["docs/x.md"])),
    # answerable, nothing retrieved, abstained
    score_case(case("c", ["pkg/other.py"], ["zeta"]), state("Not found.", [], abstained=True)),
    # unanswerable, answered anyway
    score_case(case("d", [], [], answerable=False), state("- something [docs/x.md:1-2]", ["docs/x.md"],
                                                          cites=["docs/x.md"])),
]


def test_case_row_carries_diagnostics() -> None:
    a, b, c, d = ROWS
    assert a["evidence_paths"] == ["pkg/mod.py", "docs/x.md"] and a["evidence_rows"] == 2
    assert a["gate"] == {"relevant": True, "reason": "ok"} and c["gate"]["relevant"] is False
    assert (a["code_gold"], b["code_gold"], c["code_gold"], d["code_gold"]) == (True, False, True, False)
    assert c["empty_candidates"] and not a["empty_candidates"]
    assert b["key_fact_coverage"] == 0.0 and b["key_fact_coverage_legacy"] == 1.0
    assert d["recall_at_5"] is None and d["key_fact_coverage"] is None  # unanswerable: answer metrics n/a
    assert a["citations_removed_share"] is None  # the output state has no `citations_removed` yet


def test_removed_citations_are_counted_when_the_state_has_them() -> None:
    row = score_case(case("e", ["docs/x.md"], ["x"]),
                     state("- x [docs/x.md:1-2]", ["docs/x.md"], cites=["docs/x.md"], citations_removed=["a.md:1-9"]))
    assert row["citations_removed_share"] == 0.5


def test_corpus_summary() -> None:
    m = aggregate(ROWS)
    assert (m["cases"], m["answerable"], m["answered"], m["code_gold_cases"]) == (4, 3, 2, 2)
    assert m["recall_at_5"] == pytest.approx(1 / 3)
    assert m["code_gold_recall_at_5"] == 0.5  # a found, c not
    assert m["key_fact_coverage"] == pytest.approx(1 / 3) and m["key_fact_coverage_legacy"] == pytest.approx(2 / 3)
    assert m["lead_citation_in_gold"] == 0.5  # a yes, b no, c cites nothing (n/a)
    assert m["passage_precision"] == 0.5
    assert (m["abstention_precision"], m["abstention_recall"]) == (0.0, 0.0)
    assert m["empty_candidate_sets"] == 1
    answered = sorted(len(r["answer"]) for r in (ROWS[0], ROWS[1], ROWS[3]))  # not the abstained "Not found."
    assert m["answer_chars_p50"] == answered[1] and m["answer_chars_p95"] > answered[1]
    assert m["citations_removed_share"] is None
    assert set(m["latency_ms"]) == {"context_retrieval", "answer_composition", "total"}


def test_macro_skips_na_and_sums_counts() -> None:
    one = aggregate(ROWS)
    two = aggregate(ROWS[:2])  # no abstention, no unanswerable case: both n/a
    assert two["abstention_precision"] is None and two["abstention_recall"] is None
    m = macro({"one": one, "two": two})
    assert m["abstention_precision"] == 0.0  # the mean of the defined values only
    assert m["recall_at_5"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert m["cases"] == 6 and m["empty_candidate_sets"] == 1
    table = format_table({"retriever": "full", "embedder": "fake", "corpora": {"one": one, "two": two}, "macro": m})
    assert "n/a" in table and "macro" in table and "code-gold recall@5" in table


def test_blocks_keep_a_code_fence_with_its_bullet() -> None:
    text = "Lead:\n\n- [a.py:1-3]\n  ```\n  def f():\n      return 1\n  ```\n- two [b.md:1-2]\n\n> q\n> r\n"
    assert [b.kind for b in blocks(text)] == ["paragraph", "item", "item", "quote"]
    assert passages(text) == [p for p in passages(text) if p.strip()] and len(passages(text)) == 3
    assert "a.py" not in own_text(text) and "def f" in own_text(text)


# --- suites and the command line --------------------------------------------------------------------
def test_registry_names_the_issue_11_corpora() -> None:
    assert set(SUITES) == {"fastapi-ru", "atlas-pm", "structlog", "click", "lotsman-self"}
    assert SUITES["lotsman-self"].holdout is None and SUITES["lotsman-self"].assemble is None


def _fake_root(tmp_path: Path) -> Path:
    (tmp_path / "evals/datasets").mkdir(parents=True)
    (tmp_path / "evals/corpora/click").mkdir(parents=True)
    for name in ("fastapi_ru.jsonl", "click.jsonl", "lotsman_self.jsonl"):
        (tmp_path / "evals/datasets" / name).write_text("", encoding="utf-8")
    script = tmp_path / "evals/corpora/click/assemble"
    script.write_text('#!/bin/sh\nmkdir -p "$1" && echo built > "$1/README.md"\n', encoding="utf-8")
    script.chmod(0o755)
    (tmp_path.parent / "shared/corpora/fastapi-ru").mkdir(parents=True, exist_ok=True)
    (tmp_path.parent / "shared/corpora/fastapi-ru/assemble").write_text("#!/bin/sh\n", encoding="utf-8")
    return tmp_path


def test_a_suite_skips_missing_corpora_but_a_named_one_must_exist(tmp_path: Path) -> None:
    root = _fake_root(tmp_path / "repo")
    jobs, notes = select(None, "dev", root)
    assert [j.name for j in jobs] == ["fastapi-ru", "click", "lotsman-self"]
    assert jobs[2].corpus == root and jobs[1].corpus is None  # the repo itself vs assembled on demand
    assert any("atlas-pm" in n for n in notes) and any("structlog" in n for n in notes)
    holdout, notes = select(None, "holdout", root)
    assert holdout == [] and any("lotsman-self (holdout): no held-out set" in n for n in notes)
    with pytest.raises(LotsmanError, match="structlog"):
        select(["click", "structlog"], "dev", root)
    with pytest.raises(LotsmanError, match="unknown corpus nope"):
        select(["nope"], "dev", root)


def test_corpus_is_assembled_into_the_cache(tmp_path: Path) -> None:
    root = _fake_root(tmp_path / "repo")
    dest = assemble_corpus(SUITES["click"], tmp_path / "cache", root)
    assert dest == tmp_path / "cache/click" and (dest / "README.md").read_text().strip() == "built"


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["d.jsonl"], "needs --corpus"),
        (["d.jsonl", "--corpus", ".", "--suite", "dev"], "not both"),
        (["--suite", "dev", "--corpus", "."], "go with DATASET"),
        (["--corpus-set", "nope"], "unknown corpus"),
    ],
)
def test_bad_argument_combinations_are_one_clear_error(argv: list[str], error: str) -> None:
    with pytest.raises(LotsmanError, match=error):
        jobs_of(_args(*argv))


def test_the_old_single_dataset_form_still_works() -> None:
    jobs, notes, split = jobs_of(_args("evals/datasets/x.jsonl", "--corpus", "/tmp/c"))
    assert [(j.name, j.dataset, j.corpus) for j in jobs] == [("x", Path("evals/datasets/x.jsonl"), Path("/tmp/c"))]
    assert split is None and notes == []


def test_run_jobs_reports_each_corpus_and_the_macro(monkeypatch, tmp_path: Path) -> None:
    calls = []

    def fake_run(dataset, corpus, **kw):
        calls.append((dataset.name, corpus, kw["label"], kw["session"]))
        rows = ROWS if dataset.name == "a.jsonl" else ROWS[:2]
        return {"dataset": str(dataset), "embedder": "fake", **aggregate(rows), "results": rows}

    monkeypatch.setattr(evals.runner, "run", fake_run)
    from evals.suites import EvalJob

    jobs = [EvalJob("a", Path("a.jsonl"), tmp_path, SUITES["click"]), EvalJob("b", Path("b.jsonl"), tmp_path)]
    report = evals.runner.run_jobs(jobs, settings=None, cache_dir=tmp_path, deps=object())
    # A suite's session is named after the suite; a lone dataset's after its corpus folder (as before).
    assert [c[2] for c in calls] == ["click", None] and all(c[3] is None for c in calls)
    assert set(report["corpora"]) == {"a", "b"} and report["macro"]["cases"] == 6
    assert report["corpora"]["a"]["results"][0]["id"] == "a"


def test_python_m_evals_lists_the_corpora() -> None:
    out = subprocess.run([sys.executable, "-m", "evals", "--list"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert "fastapi-ru" in out and "lotsman-self" in out and "(this repository)" in out


def test_stage_models_in_the_state_score_like_dicts() -> None:
    # The typed state holds frozen models (EvidenceRow, RetrievalReport); scoring reads them as dicts.
    from pydantic import BaseModel

    class Row(BaseModel):
        path: str
        span_start: int
        span_end: int

    class Report(BaseModel):
        relevant: bool
        gate: str

    as_dicts = state("- `def make_id(route):` [pkg/mod.py:1-2]", ["pkg/mod.py"], cites=["pkg/mod.py"])
    as_models = {**as_dicts, "evidence": [Row(**e) for e in as_dicts["evidence"]],
                 "retrieval": Report(**as_dicts["retrieval"])}
    c = case("m", ["pkg/mod.py"], ["make_id"])
    assert score_case(c, as_models) == score_case(c, as_dicts)
