"""The HTML eval report read back: its figures are the JSON's, a comparison lists the regressed cases worst
first, user text is shown as text, `--llm` rows show their answer mode, and the CLI writes the page."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import evals.runner
from evals.html_report.model import MACRO, Run, facts_of, labelled, load_run, lost_at
from evals.html_report.render import page
from evals.summary import METRICS
from graph.cli import main
from tests.eval_report_runs import BASE, NEW, data, hostile_report


class Parsed(HTMLParser):
    """Marked cells (`data-metric`), comparison entries (`data-change`), and a count of each start tag."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str, str], dict[str, str]] = {}
        self.deltas: dict[tuple[str, str, str], str] = {}
        self.changes: dict[str, list[str]] = {}
        self.tags: dict[str, int] = {}
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "data-run" in a and "data-metric" in a:
            self.cells[(a["data-run"], a["data-scope"], a["data-metric"])] = a
        if "data-compare" in a:
            self.deltas[(a["data-compare"], a["data-scope"], a["data-metric"])] = a["data-delta"]
        if tag == "li" and "data-change" in a:
            self.changes.setdefault(a["data-change"], []).append(a["data-case"])


def write(tmp_path: Path, name: str, report: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    return path


def value(v: Any) -> str:
    return "" if v is None else repr(float(v))


def test_every_metric_cell_is_the_json_figure() -> None:
    runs = [load_run(BASE), load_run(NEW)]
    cells = Parsed(page(runs)).cells
    checked = 0
    for i, run in enumerate(runs):
        for scope in [*run.corpora, MACRO]:
            for key in ("cases", "answerable", "answered", "code_gold_cases", *(k for _, k in METRICS)):
                assert cells[(str(i), scope, key)]["data-value"] == value(run.summary(scope).get(key)), (i, scope, key)
                checked += 1
    assert checked == 2 * 3 * (4 + len(METRICS))


def test_recall_curve_and_fact_budget_are_counted_from_the_cases() -> None:
    run = load_run(NEW)
    cells = Parsed(page([run])).cells
    for scope in [*run.corpora, MACRO]:
        for k in (5, 10):  # the curve's own computation lands on the runner's recall@5 / @10
            got = float(cells[("0", scope, f"recall_curve_{k}")]["data-value"])
            assert got == pytest.approx(run.summary(scope)[f"recall_at_{k}"])
    for scope in run.corpora:
        rows = [r for r in data(NEW)["corpora"][scope]["results"] if r["answerable"]]
        want = {"all": sum(len(r["key_facts"]) for r in rows),
                "top5": sum(len(r["key_facts"]) for r in rows if r["recall_at_5"] > 0),
                **{step: sum(bool(t[step]) for r in rows for t in r["fact_trace"])
                   for step in ("evidence", "reader", "answer")}}
        for step, count in want.items():
            cell = cells[("0", scope, f"alone_{step}")]  # each step on its own (the funnel: test_html_report_funnel)
            assert int(cell["data-count"]) == count, (scope, step)
            assert float(cell["data-value"]) == pytest.approx(count / want["all"])
        # per case the answer step is the strict key-fact figure of the JSON
        for r in rows:
            assert sum(f["answer"] for f in facts_of(r)) / len(r["key_facts"]) == r["key_fact_coverage"]
    shares = [float(cells[("0", s, "funnel_evidence")]["data-value"]) for s in run.corpora]
    assert float(cells[("0", MACRO, "funnel_evidence")]["data-value"]) == pytest.approx(sum(shares) / len(shares))


def _regressed_pair(tmp_path: Path) -> tuple[Path, Path]:
    base, new = data(BASE), data(BASE)
    rows = {r["id"]: r for r in new["corpora"]["click"]["results"]}
    # ck-001 loses everything it had (worst), sl-002 only its lead citation, ck-004 gains two facts
    rows["ck-001"].update(key_fact_coverage=0.0, mrr=0.5, lead_citation_in_gold=0.0)
    rows["ck-004"].update(key_fact_coverage=1.0)
    sl = {r["id"]: r for r in new["corpora"]["structlog"]["results"]}
    sl["sl-002"].update(lead_citation_in_gold=0.0)
    new["corpora"]["click"]["key_fact_coverage"] -= 0.125
    return write(tmp_path, "base.json", base), write(tmp_path, "new.json", new)


def test_a_comparison_lists_the_regressed_cases_worst_first(tmp_path: Path) -> None:
    base, new = _regressed_pair(tmp_path)
    parsed = Parsed(page(labelled([load_run(base), load_run(new)])))
    assert parsed.changes["regressed"] == ["click/ck-001", "structlog/sl-002"]
    assert parsed.changes["improved"] == ["click/ck-004"]
    assert float(parsed.deltas[("1", "click", "key_fact_coverage")]) == pytest.approx(-0.125)
    assert parsed.deltas[("1", "structlog", "key_fact_coverage")] == value(0.0)


def test_learned_vs_rrf_fixture_lists_its_real_changes() -> None:
    parsed = Parsed(page([load_run(BASE), load_run(NEW)]))
    # learned (NEW) states both facts of ck-004 that RRF missed, and none of ck-005's that RRF stated
    assert "click/ck-005" in parsed.changes["regressed"] and "click/ck-004" in parsed.changes["improved"]


def test_a_question_or_answer_holding_html_is_shown_as_text(tmp_path: Path) -> None:
    html = page(labelled([load_run(write(tmp_path, "run<em>.json", hostile_report()))]))
    for raw in ("<script>window", "<img", "<b>.md", "<i>fact", "<u>kind", "<s>R", 'c<x>"', "<em>"):
        assert raw not in html, raw
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt; Как?" in html
    assert "&lt;img src=x onerror=&quot;window.__xss = 2&quot;&gt;" in html
    tags = Parsed(html).tags
    assert tags["script"] == 1 and "img" not in tags and "em" not in tags and "u" not in tags  # only the filter script
    assert '<li class="gold">✓ docs/&lt;b&gt;.md</li>' in html  # still marked as gold
    assert '<span class="cite gold">[docs/&lt;b&gt;.md:1-3]</span>' in html


def test_llm_rows_show_the_answer_mode_the_fallback_reason_and_removed_citations(tmp_path: Path) -> None:
    report = data(NEW)
    report["answers"] = "llm"
    corpus = report["corpora"]["click"]
    corpus["results"][0].update(answer_mode="extractive fallback", answer_mode_reason="context_analysis: no answer",
                                citations_removed_share=1.0)
    corpus["results"][1].update(answer_mode="llm", answer_mode_reason="", citations_removed_share=0.25)
    corpus.update(answer_modes={"extractive fallback": 1, "llm": 7}, llm_fallbacks=1,
                  fallback_reasons={"context_analysis: no answer": 1})
    html = page([load_run(write(tmp_path, "llm.json", report))])
    assert "answer mode: extractive fallback · reason: context_analysis: no answer · citations removed: 1.00" in html
    assert "answer mode: llm · citations removed: 0.25" in html
    assert "<h3>answer modes (--llm)</h3>" in html and "<li>1 × context_analysis: no answer</li>" in html
    assert Parsed(html).cells[("0", "click", "llm_fallbacks")]["data-value"] == "1.0"


@pytest.mark.parametrize(("steps", "where"), [
    ({"top5": False, "evidence": False, "reader": False, "answer": False}, "top5"),
    ({"top5": True, "evidence": False, "reader": False, "answer": False}, "evidence"),
    ({"top5": True, "evidence": True, "reader": False, "answer": False}, "reader"),
    ({"top5": True, "evidence": True, "reader": True, "answer": False}, "answer"),
    ({"top5": True, "evidence": True, "reader": None, "answer": False}, "answer"),  # LangSmith: reader n/a
    ({"top5": False, "evidence": True, "reader": True, "answer": False}, "top5"),  # the first step it missed
    ({"top5": True, "evidence": True, "reader": True, "answer": True}, None),
])
def test_a_missed_fact_is_lost_at_the_first_step_it_missed(steps: dict[str, bool | None], where: str | None
                                                              ) -> None:
    assert lost_at(steps) == where


def test_a_run_without_the_fact_trace_knows_a_fact_only_when_all_or_none_reached_a_step() -> None:
    row = {"answerable": True, "key_facts": ["a", "b"], "recall_at_5": 1.0, "evidence_key_fact_recall": 1.0,
           "reader_key_fact_recall": None, "key_fact_coverage": 0.5}
    facts = facts_of(row)
    assert [f["evidence"] for f in facts] == [True, True] and [f["answer"] for f in facts] == [None, None]


def test_eval_report_writes_one_page_and_prints_its_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "report.html"
    assert main(["eval", "report", str(BASE), str(NEW), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out} ({out.stat().st_size / 1024:.0f} KB)"
    html = out.read_text(encoding="utf-8")
    assert "learned vs rrf" in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


@pytest.mark.parametrize(("argv", "error"), [
    (["eval", "report", str(BASE)], "error: eval report needs --html FILE (where to write the page)"),
    (["eval", "report", "--html", "x.html"], "error: eval report needs at least one run JSON"),
    (["eval", "report", "/nonexistent/run.json", "--html", "x.html"],
     "error: run JSON not found: /nonexistent/run.json"),
    (["eval", "report", str(BASE), "--suite", "dev", "--html", "x.html"],
     "error: eval report renders runs already made; options of a run: --suite"),
    (["eval", "a.jsonl", "b.jsonl", "--corpus", "."], "error: one DATASET at a time"),
])
def test_eval_report_errors_are_one_line(argv: list[str], error: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(error) and err.count("\n") == 1


def test_a_bad_run_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.json", {"not": "a report"})
    assert main(["eval", "report", str(bad), "--html", str(tmp_path / "x.html")]) == 1
    assert capsys.readouterr().err == f"error: {bad} is not an eval report (written by `lotsman eval --out`): " \
                                      "no corpora and macro\n"


def test_eval_html_writes_the_page_of_the_run_just_made(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    report = {k: v for k, v in data(NEW).items() if k != "split"}
    monkeypatch.setattr(evals.runner, "run_jobs", lambda *a, **kw: report)
    out = tmp_path / "run.html"
    assert main(["eval", "--suite", "dev", "--corpus-set", "click", "--out", str(tmp_path / "run.json"),
                 "--html", str(out)]) == 0
    assert f"wrote {out} (" in capsys.readouterr().out
    cells = Parsed(out.read_text(encoding="utf-8")).cells
    assert cells[("0", "click", "mrr")]["data-value"] == value(report["corpora"]["click"]["mrr"])


def test_runs_with_one_name_get_told_apart() -> None:
    a = Run("out", "x/out.json", {})
    assert [r.label for r in labelled([a, Run("out", "y/out.json", {})])] == ["out #1", "out #2"]
