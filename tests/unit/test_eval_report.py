"""From graph state to per-case rows, corpus summaries, the macro average, and the multi-corpus CLI."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import evals.runner
from evals.answer_text import blocks, own_text, passages
from evals.cli import add_arguments, jobs_of
from evals.report import format_table
from evals.scoring import reader_texts, score_case
from evals.suites import SUITES, assemble_corpus, select
from evals.summary import METRICS, aggregate, macro
from nodes.answer_composition import Answer, compose_extractive
from nodes.context_analysis import Analysis, FileEvidence, Span
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult
from stores.errors import LotsmanError

ROOT = Path(__file__).resolve().parents[2]


def case(cid: str, gold: list[str], facts: list[str], answerable: bool = True,
         route: str = "DOC_EXPLAIN/SUMMARY") -> dict[str, Any]:
    return {"id": cid, "question": "q?", "history": [], "expected_route": route, "gold_paths": gold,
            "key_facts": facts, "answerable": answerable, "tags": []}


def span(path: str, text: str, section: str = "", code: bool = False) -> Span:
    return Span(path=path, start_line=1, end_line=text.strip("\n").count("\n") + 1, row_id=path, text=text,
                section=section, kind="source" if code else "prose", code=code)


def composed(*spans: Span, route: RouteResult | None = None) -> tuple[Answer, Analysis]:
    """What the extractive composer writes for these passages (no passage: "not found")."""
    files = [FileEvidence(path=s.path, best_rank=i, title=s.section, reason=s.text.split("\n")[0])
             for i, s in enumerate(spans, 1)]
    analysis = Analysis(files=files, spans=list(spans), passages=list(spans), sufficient=bool(spans),
                        language="en")
    return compose_extractive("q?", analysis, route or SUMMARY), analysis


def state(spans: list[Span], paths: list[str], *, route: tuple[str, str] = ("DOC_EXPLAIN", "SUMMARY"),
          **extra: Any) -> dict[str, Any]:
    answer, analysis = composed(*spans, route=RouteResult(user_query="q", intent=route[0], subintent=route[1]))
    return {"answer": answer.text, "abstained": answer.abstained, "analysis": analysis,
            "evidence": [{"path": p, "span_start": 1, "span_end": 9,
                          "content": "\n".join(s.text for s in spans if s.path == p)} for p in paths],
            "citations": [c.model_dump() for c in answer.citations], "citations_removed": [],
            "route": {"intent": route[0], "subintent": route[1]},
            "retrieval": {"relevant": not answer.abstained, "gate": "low coverage" if answer.abstained else "ok"},
            "timings_ms": {"context_retrieval": 10.0, "answer_composition": 2.0}, **extra}


SUMMARY = RouteResult(user_query="q", intent="DOC_EXPLAIN", subintent="SUMMARY")
MAKE_ID = span("pkg/mod.py", "def make_id(route):\n    return route.name\n", "make_id", code=True)
ROWS = [
    # code gold found, fact quoted
    score_case(case("a", ["pkg/mod.py"], ["make_id"]), state([MAKE_ID], ["pkg/mod.py", "docs/x.md"])),
    # docs gold missed; the fact is only the section label the composer puts above the quote
    score_case(case("b", ["docs/a.md"], ["Alpha Beta"]),
               state([span("docs/x.md", "gamma delta", "Alpha Beta")], ["docs/x.md"])),
    # answerable, nothing retrieved, abstained
    score_case(case("c", ["pkg/other.py"], ["zeta"]), state([], [])),
    # unanswerable, answered anyway
    score_case(case("d", [], [], answerable=False), state([span("docs/x.md", "something")], ["docs/x.md"])),
    # docs and code gold: the docs page found and quoted, the code not
    score_case(case("e", ["docs/a.md", "pkg/other.py"], ["zeta"]),
               state([span("docs/a.md", "zeta is here")], ["docs/a.md"])),
]


def test_case_row_carries_diagnostics() -> None:
    a, b, c, d, e = ROWS
    assert a["evidence_paths"] == ["pkg/mod.py", "docs/x.md"] and a["evidence_rows"] == 2
    assert a["gate"] == {"relevant": True, "reason": "ok"} and c["gate"]["relevant"] is False
    assert [r["code_gold"] for r in ROWS] == [True, False, True, False, True]
    assert c["empty_candidates"] and not a["empty_candidates"]
    assert a["key_fact_coverage"] == 1.0 and b["key_fact_coverage"] == 0.0  # a section label is no statement
    assert d["recall_at_5"] is None and d["key_fact_coverage"] is None  # unanswerable: answer metrics n/a
    assert (e["recall_at_5"], e["code_gold_recall_at_5"]) == (0.5, 0.0)  # code gold only
    # The ceiling: facts in the evidence rows' text (b's fact is only a heading the row does not hold).
    assert [r["evidence_key_fact_recall"] for r in ROWS] == [1.0, 0.0, 0.0, None, 1.0]
    assert (c["lead_citation_in_gold"], c["lead_citation_in_gold_answered"]) == (0.0, None)
    assert (c["passage_precision"], c["passage_precision_answered"]) == (0.0, None)
    assert not any("legacy" in key for key in a)


def test_offline_nothing_can_be_removed_so_citations_removed_is_na() -> None:
    row = score_case(case("e", ["docs/x.md"], ["x"]), state([span("docs/x.md", "x")], ["docs/x.md"]))
    assert row["citations_removed_share"] is None and row["answer_mode"] == "extractive"
    m = aggregate([row])
    assert m["citations_removed_share"] is None and m["llm_fallbacks"] is None


LLM_TEXT = "Use x, as the page says [docs/x.md:1-2]."


def test_llm_runs_record_the_answer_mode_and_count_fallbacks() -> None:
    llm_answer = {"answer": LLM_TEXT, "citations": [{"path": "docs/x.md", "start_line": 1, "end_line": 2}],
                  "citations_removed": ["docs/secret.md:1-9"], "answer_mode": "llm", "offline_reason": ""}
    llm_row = score_case(case("l", ["docs/x.md"], ["x"]), {**state([], ["docs/x.md"]), **llm_answer,
                                                           "abstained": False}, llm=True)
    assert (llm_row["answer_mode"], llm_row["citations_removed_share"]) == ("llm", 0.5)
    # The request went offline (the graph says why): the extractive answer is a fallback with that reason.
    offline = score_case(case("g", ["docs/x.md"], ["x"]),
                         state([span("docs/x.md", "x")], ["docs/x.md"], answer_mode="offline",
                               offline_reason="answer_composition: no answer within 3s"), llm=True)
    assert offline["answer_mode"] == "extractive fallback" and offline["citations_removed_share"] is None
    assert offline["answer_mode_reason"] == "answer_composition: no answer within 3s"
    # The model answered, but its reply was unusable (every citation removed): still a fallback.
    unusable = score_case(case("u", ["docs/x.md"], ["x"]),
                          state([span("docs/x.md", "x")], ["docs/x.md"], answer_mode="llm"), llm=True)
    assert unusable["answer_mode"] == "extractive fallback"
    assert unusable["answer_mode_reason"].startswith("model reply unusable")
    # When the graph reports what the verifier removed from the discarded model answer, all of it was.
    emptied = score_case(case("z", ["docs/x.md"], ["x"]),
                         state([span("docs/x.md", "x")], ["docs/x.md"], answer_mode="llm",
                               citations_removed=["docs/secret.md:1-9"]), llm=True)
    assert (emptied["answer_mode"], emptied["citations_removed_share"]) == ("extractive fallback", 1.0)
    # A FIND_FILES list is deterministic by design; an abstention needs no model.
    files = score_case(case("ff", ["docs/x.md"], ["x"], route="DOC_EXPLAIN/FIND_FILES"),
                       state([span("docs/x.md", "x")], ["docs/x.md"], route=("DOC_EXPLAIN", "FIND_FILES"),
                             answer_mode="llm"), llm=True)
    assert files["answer_mode"] == "find_files"
    m = aggregate([llm_row, offline, unusable, files, ROWS[2]], llm=True)
    assert m["llm_fallbacks"] == 2 and m["citations_removed_share"] == 0.5
    assert m["fallback_reasons"] == {"answer_composition: no answer within 3s": 1,
                                     unusable["answer_mode_reason"]: 1}
    assert m["answer_modes"] == {"llm": 1, "extractive fallback": 2, "find_files": 1, "not_found": 1}


def test_corpus_summary() -> None:
    m = aggregate(ROWS)
    assert (m["cases"], m["answerable"], m["answered"], m["code_gold_cases"]) == (5, 4, 3, 3)
    assert m["recall_at_5"] == pytest.approx((1 + 0 + 0 + 0.5) / 4)
    assert m["code_gold_recall_at_5"] == pytest.approx(1 / 3)  # a found; c and e did not find their .py gold
    assert m["key_fact_coverage"] == 0.5  # a and e state their fact; b has it only as a label; c abstained
    assert m["evidence_key_fact_recall"] == 0.5
    assert m["lead_citation_in_gold"] == 0.5  # over all answerable: a yes, b no, c abstained (0), e yes
    assert m["lead_citation_in_gold_answered"] == pytest.approx(2 / 3)  # a, b, e
    assert m["passage_precision"] == 0.5 and m["passage_precision_answered"] == pytest.approx(2 / 3)
    assert (m["abstention_precision"], m["abstention_recall"]) == (0.0, 0.0)
    assert m["empty_candidate_sets"] == 1
    answered = sorted(len(r["answer"]) for r in ROWS if not r["abstained"])  # not the abstained "not found"
    assert m["answer_chars_p50"] == pytest.approx((answered[1] + answered[2]) / 2)
    assert m["citations_removed_share"] is None and m["llm_fallbacks"] is None  # offline: n/a, not 0
    assert set(m["latency_ms"]) == {"context_retrieval", "answer_composition"}
    assert "key_fact_coverage_legacy" not in m and all("legacy" not in key for _, key in METRICS)


def test_macro_skips_na_sums_counts_and_pools_latency() -> None:
    one = [{**r, "wall_ms": 100.0} for r in ROWS]
    two = [{**r, "wall_ms": 10.0} for r in ROWS[:2]]  # no abstention, no unanswerable case: both n/a
    s1, s2 = aggregate(one), aggregate(two)
    assert s2["abstention_precision"] is None and s2["abstention_recall"] is None
    m = macro({"one": s1, "two": s2}, one + two)
    assert m["abstention_precision"] == 0.0  # the mean of the defined values only
    assert m["recall_at_5"] == pytest.approx((0.375 + 0.5) / 2)
    assert m["cases"] == 7 and m["empty_candidate_sets"] == 1 and m["llm_fallbacks"] is None
    # Pooled over the 7 cases, not the mean of the corpora's p95 (100 and 10 → 55).
    assert m["latency_ms"]["case wall"] == {"p50": 100.0, "p95": 100.0}
    assert s2["latency_ms"]["case wall"]["p95"] == 10.0
    table = format_table({"retriever": "full", "embedder": "fake", "corpora": {"one": s1, "two": s2}, "macro": m})
    assert "n/a" in table and "macro" in table and "code-gold recall@5" in table and "legacy" not in table
    assert "… of answered cases" in table and "case wall" in table


def test_blocks_keep_a_code_fence_with_its_bullet() -> None:
    text = "Lead:\n\n- [a.py:1-3]\n  ```\n  def f():\n      return 1\n  ```\n- two [b.md:1-2]\n\n> q\n> r\n"
    assert [b.kind for b in blocks(text)] == ["paragraph", "item", "item", "quote"]
    assert passages(text) == [p for p in passages(text) if p.strip()] and len(passages(text)) == 3
    assert "a.py" not in own_text(text) and "def f" in own_text(text)


# --- suites and the command line --------------------------------------------------------------------
def test_registry_names_the_issue_11_and_41_corpora() -> None:
    assert set(SUITES) == {"fastapi-ru", "atlas-pm", "structlog", "click", "lotsman-self", "mcp", "libaudit", "urllib3"}
    assert all(SUITES[n].holdout is None for n in ("mcp", "libaudit", "urllib3"))  # dev corpora of issue 41 item 1
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

    for name in ("a.jsonl", "b.jsonl"):  # run_jobs reads every dataset before it runs one
        (tmp_path / name).write_text(json.dumps(case("x", ["docs/a.md"], ["f"])), encoding="utf-8")
    jobs = [EvalJob("a", tmp_path / "a.jsonl", tmp_path, SUITES["click"]),
            EvalJob("b", tmp_path / "b.jsonl", tmp_path)]
    report = evals.runner.run_jobs(jobs, settings=None, cache_dir=tmp_path, deps=object())
    # A suite's session is named after the suite; a lone dataset's after its corpus folder (as before).
    assert [c[2] for c in calls] == ["click", None] and all(c[3] is None for c in calls)
    assert set(report["corpora"]) == {"a", "b"} and report["macro"]["cases"] == 7
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

    as_models = state([MAKE_ID], ["pkg/mod.py"])  # the analysis is the composer's model already
    as_models = {**as_models, "evidence": [Row(**e) for e in as_models["evidence"]],
                 "retrieval": Report(**as_models["retrieval"])}
    as_dicts = {k: v.model_dump() if hasattr(v, "model_dump") else [e.model_dump() for e in v]
                if k == "evidence" else v for k, v in as_models.items()}
    c = case("m", ["pkg/mod.py"], ["make_id"])
    assert score_case(c, as_models) == score_case(c, as_dicts)


def test_what_gigachat_reads_is_the_analysis_passages_then_the_pack_within_the_cap() -> None:
    quoted = span("docs/a.md", "alpha")
    rows = [EvidenceRow(id="docs/a.md", path="docs/a.md", layer="D0_DOC_CHUNKS", content="alpha", span_start=1,
                        span_end=1),
            EvidenceRow(id="r2", path="docs/b.md", layer="D0_DOC_CHUNKS", content="zeta is 7", span_start=3,
                        span_end=3),
            EvidenceRow(id="r3", path="docs/c.md", layer="D0_DOC_CHUNKS", content="eta " * 900, span_start=1,
                        span_end=1)]
    got = {"analysis": Analysis(spans=[quoted], passages=[quoted]), "evidence": rows}
    assert reader_texts(got) == ["alpha", "zeta is 7", "eta " * 900]
    assert reader_texts(got, token_cap=100) == ["alpha", "zeta is 7"]  # the long row does not fit
    facts_case = case("r", ["docs/b.md"], ["zeta is 7"])
    scored = score_case(facts_case, {**state([quoted], ["docs/a.md"]), **got})
    assert scored["reader_key_fact_recall"] == 1.0
    # LangSmith outputs carry neither the analysis object nor the rows' text: n/a, not 0
    assert reader_texts({"analysis": {"passages": []}, "evidence": [{"path": "docs/b.md"}]}) is None


def test_evidence_recall_counts_only_the_rows_retrieval_handed_over() -> None:
    quoted = span("docs/a.md", "alpha")
    got = state([quoted], ["docs/a.md", "docs/b.md"])
    got["evidence"][1]["content"] = "zeta is 7"  # a section analysis read from the index for itself
    got["retrieval"] = {**got["retrieval"], "provenance": [{"path": "docs/a.md"}]}
    assert score_case(case("h", ["docs/b.md"], ["zeta is 7"]), got)["evidence_key_fact_recall"] == 0.0
    got["retrieval"]["provenance"].append({"path": "docs/b.md"})
    assert score_case(case("h", ["docs/b.md"], ["zeta is 7"]), got)["evidence_key_fact_recall"] == 1.0
