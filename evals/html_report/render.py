"""The one HTML file: runs, then macro and each corpus (fact budget, recall@k, headline figures, every
metric, latency per stage), the comparison of each later run with the first, and every case.

Figures are printed as the terminal table prints them (`evals.report.cell`); each cell also carries its
exact value (`data-value`), so a test can read the page back and compare it with the JSON.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from evals.html_report import svg
from evals.html_report.assets import CSS, JS
from evals.html_report.cases import anchor, cards, filters, slug
from evals.html_report.compare import CASE_METRICS, LOWER_IS_BETTER, NEUTRAL, Comparison, compare
from evals.html_report.model import (
    KS,
    MACRO,
    STEPS,
    Run,
    corpus_names,
    fact_budget,
    funnel_shares,
    latencies,
    recall_curve,
)
from evals.report import cell
from evals.summary import METRICS

HEADLINE = (("recall@5", "recall_at_5"), ("MRR", "mrr"), ("lead citation in gold", "lead_citation_in_gold"),
            ("strict key facts", "key_fact_coverage"), ("abstention precision", "abstention_precision"),
            ("abstention recall", "abstention_recall"))


def _value(v: Any) -> str:
    return "" if v is None else repr(float(v)) if isinstance(v, (int, float)) else escape(str(v))


def _swatch(i: int) -> str:
    return f'<span class="swatch" style="background:{svg.color(i)}"></span>'


def count_text(count: float) -> str:
    """A fact count: whole for traced runs; share × facts of a run without the trace can be fractional."""
    return format(round(count, 2), "g")


def _cell(run: int, scope: str, metric: str, value: Any, text: str, count: float | None = None) -> str:
    extra = "" if count is None else f' data-count="{count_text(count)}"'
    return (f'<td class="num" data-run="{run}" data-scope="{escape(scope)}" data-metric="{escape(metric)}" '
            f'data-value="{_value(value)}"{extra}>{escape(text)}</td>')


def _head(runs: Sequence[Run], first: str) -> str:
    return f"<tr><th>{escape(first)}</th>" + "".join(f'<th class="num">{_swatch(i)}{escape(r.label)}</th>'
                                                     for i, r in enumerate(runs)) + "</tr>"


def runs_table(runs: Sequence[Run]) -> str:
    rows = []
    for i, r in enumerate(runs):
        d = r.data
        cases = sum(len(r.rows(c)) for c in r.corpora)
        rows.append(f"<tr><td>{_swatch(i)}<b>{escape(r.label)}</b></td><td><code>{escape(r.source)}</code></td>"
                    + "".join(f"<td>{escape(str(d.get(k) or '—'))}</td>" for k in
                              ("split", "retriever", "ranker", "embedder", "answers"))
                    + f"<td>{escape(', '.join(r.corpora))}</td><td class=num>{cases}</td></tr>")
    return ("<table><tr><th>run</th><th>file</th><th>split</th><th>retriever</th><th>ranker</th><th>embedder</th>"
            "<th>answers</th><th>corpora</th><th class=num>cases</th></tr>" + "".join(rows) + "</table>")


FUNNEL = "funnel: reached this and every earlier step"
ALONE = "this step alone"


def budget(runs: Sequence[Run], scope: str) -> str:
    """The funnel (bars and a row per run) and, in the table beside it, each step counted alone."""
    labels = [text for _, text in STEPS]
    series = []
    rows = []
    for i, run in enumerate(runs):
        counted = fact_budget(run.rows(scope))
        for nested, kind, name in ((True, "funnel", FUNNEL), (False, "alone", ALONE)):
            shares = funnel_shares(run, scope, nested)
            counts = counted.reached if nested else counted.alone
            if nested:
                series.append((run.label, [shares[s] for s, _ in STEPS], [counts[s] for s, _ in STEPS]))
            rows.append(f"<tr><td>{_swatch(i)}{escape(run.label)} <span class=muted>· {name}</span></td>" + "".join(
                _cell(i, scope, f"{kind}_{s}", shares[s], "n/a" if shares[s] is None else
                      f"{shares[s]:.3f} ({count_text(counts[s] or 0)})", counts[s]) for s, _ in STEPS) + "</tr>")
    table = ("<table class=small><tr><th>run</th>" + "".join(f'<th class="num">{escape(t)}</th>' for t in labels)
             + "</tr>" + "".join(rows) + "</table>")
    note = ("<p class='small muted'>Share of the key facts of answerable cases (fact count in brackets"
            + ("; macro: the unweighted mean over corpora, counts summed" if scope == MACRO else "")
            + f"). <b>{FUNNEL}</b> (the bars): a fact counts at a step only when it reached that step and every "
            f"earlier step measured for it, so a step never holds more than the one before. <b>{ALONE}</b>: the "
            "step whatever the earlier ones (a fact can be read from a file outside the evidence); these are "
            "fact-weighted, the every-metric table's evidence / reader / coverage figures are means over cases. "
            "The top five files: the fact is stated anywhere in the first five retrieved files, the ceiling of "
            "reading them (n/a for runs made before it was recorded). A run written before the per-fact trace "
            "counts a case by its shares (share × facts; the funnel: the smallest share so far); a step not "
            "measured for some facts is a share of those measured.</p>")
    return svg.funnel(labels, series, f"fact budget · {scope}") + table + note


def recall(runs: Sequence[Run], scope: str) -> str:
    curves = [(run.label, recall_curve(run, scope)) for run in runs]
    rows = "".join(f"<tr><td>{_swatch(i)}{escape(label)}</td>" + "".join(
        _cell(i, scope, f"recall_curve_{k}", v, cell("", v)) for k, v in zip(KS, values, strict=True)) + "</tr>"
        for i, (label, values) in enumerate(curves))
    table = ("<table class=small><tr><th>recall@k</th>" + "".join(f'<th class="num">{k}</th>' for k in KS)
             + "</tr>" + rows + "</table>")
    return svg.lines(KS, curves, f"recall@k · {scope}", "k (distinct files)") + table


def metrics_table(runs: Sequence[Run], scope: str) -> str:
    counts = (("cases", "cases"), ("answerable", "answerable"), ("answered (not abstained)", "answered"),
              ("code-gold cases", "code_gold_cases"))
    rows = [f"<tr><td>{escape(label)}</td>" + "".join(
        _cell(i, scope, key, r.summary(scope).get(key), cell(key, r.summary(scope).get(key)))
        for i, r in enumerate(runs)) + "</tr>" for label, key in (*counts, *METRICS)]
    return f"<table class=small>{_head(runs, 'metric')}{''.join(rows)}</table>"


def answer_modes(runs: Sequence[Run], scope: str) -> str:
    """Answer modes and fallback reasons, for runs that answered with a model (`--llm`)."""
    if not any(r.data.get("answers") == "llm" for r in runs) or scope == MACRO:
        return ""
    out = []
    for i, r in enumerate(runs):
        s = r.summary(scope)
        modes = ", ".join(f"{escape(m or '—')}: {n}" for m, n in sorted((s.get("answer_modes") or {}).items()))
        reasons = "".join(f"<li>{n} × {escape(k or 'no reason given')}</li>"
                          for k, n in sorted((s.get("fallback_reasons") or {}).items()))
        out.append(f"<p class=small>{_swatch(i)}{escape(r.label)}: {modes}</p>"
                   + (f"<ul class=small>{reasons}</ul>" if reasons else ""))
    return "<h3>answer modes (--llm)</h3>" + "".join(out)


def scope_section(runs: Sequence[Run], scope: str) -> str:
    headline = svg.bars([label for label, _ in HEADLINE],
                        [(r.label, [r.summary(scope).get(key) for _, key in HEADLINE]) for r in runs],
                        f"headline figures · {scope}")
    lat = [(r.label, latencies(r.rows(scope))) for r in runs]
    nodes = list(dict.fromkeys(n for _, per in lat for n in per))
    title = "macro (unweighted mean over corpora; latency pooled over every case)" if scope == MACRO else scope
    return (f'<section id="scope-{slug(scope)}"><h2>{escape(title)}</h2>'
            f"<h3>fact budget</h3>{budget(runs, scope)}"
            f'<div class="grid"><div><h3>recall@k</h3>{recall(runs, scope)}</div>'
            f"<div><h3>headline figures</h3>{headline}</div></div>"
            f'<div class="grid"><div><h3>every metric</h3>{metrics_table(runs, scope)}{answer_modes(runs, scope)}</div>'
            f"<div><h3>latency per stage (ms, log scale; p50 / p95 at the right)</h3>"
            f"{svg.latency(nodes, lat, f'latency · {scope}')}</div></div></section>")


def _delta(key: str, d: float | None) -> str:
    if d is None:
        return "n/a"
    return f"{d:+.0f}" if key.startswith("answer_chars") or key in ("llm_fallbacks", "empty_candidate_sets") \
        else f"{d:+.3f}"


def _tone(key: str, d: float | None) -> str:
    if not d or key in NEUTRAL:
        return "flat"
    return "up" if (d > 0) != (key in LOWER_IS_BETTER) else "down"


def _change_list(kind: str, changes: Sequence[Any], limit: int = 200) -> str:
    items = "".join(
        f'<li data-change="{kind}" data-case="{escape(c.corpus)}/{escape(c.id)}">'
        f'<a href="#{anchor(c.corpus, c.id)}">{escape(c.corpus)} {escape(c.id)}</a> '
        f'<b class="{"down" if c.total < 0 else "up" if c.total > 0 else "flat"}">{c.total:+.2f}</b> '
        + ", ".join(f"{escape(k)} {v:+.2f}" for k, v in c.deltas.items())
        + f' <span class="muted">{escape(c.question)}</span></li>' for c in changes[:limit])
    more = f"<p class=muted>… and {len(changes) - limit} more</p>" if len(changes) > limit else ""
    return f"<h3>{len(changes)} {kind}</h3><ol class=small>{items}</ol>{more}"


def comparison_section(comp: Comparison, k: int) -> str:
    scopes = [*corpus_names([comp.base, comp.new]), MACRO]
    rows = "".join(f"<tr><td>{escape(label)}</td>" + "".join(
        f'<td class="num {_tone(key, comp.metric_deltas[s][key])}" data-compare="{k}" data-scope="{escape(s)}" '
        f'data-metric="{key}" data-delta="{_value(comp.metric_deltas[s][key])}">'
        f"{_delta(key, comp.metric_deltas[s][key])}</td>" for s in scopes) + "</tr>" for label, key in METRICS)
    head = "<tr><th>metric</th>" + "".join(f'<th class="num">{escape(s)}</th>' for s in scopes) + "</tr>"
    rule = ", ".join(label for label, _ in CASE_METRICS)
    return (f'<section id="compare-{k}"><h2>{escape(comp.new.label)} vs {escape(comp.base.label)}</h2>'
            f"<p class=small>Δ = {escape(comp.new.label)} − {escape(comp.base.label)}; {comp.matched} cases "
            f"compared by id" + (f", {comp.unmatched} in one run only (not compared)" if comp.unmatched else "")
            + f".</p><table class=small>{head}{rows}</table>"
            f"<p class='small muted'>A case's change is the sum of its changes in {escape(rule)} (an unanswerable "
            "case: abstaining), plus its route turning right or wrong. Regressed cases worst first.</p>"
            + _change_list("regressed", comp.regressed) + _change_list("improved", comp.improved)
            + _change_list("mixed", comp.mixed) + "</section>")


def page(runs: Sequence[Run]) -> str:
    comparisons = [compare(runs[0], r) for r in runs[1:]]
    scopes = [MACRO, *corpus_names(runs)]
    nav = "".join(f'<a href="#scope-{slug(s)}">{escape(s)}</a>' for s in scopes)
    nav += "".join(f'<a href="#compare-{k}">{escape(c.new.label)} vs {escape(c.base.label)}</a>'
                   for k, c in enumerate(comparisons, 1)) + '<a href="#cases">cases</a>'
    title = "Lotsman eval: " + " vs ".join(r.label for r in runs)
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
            f"<header><h1>{escape(title)}</h1>{runs_table(runs)}<nav>{nav}</nav></header><main>"
            + "".join(scope_section(runs, s) for s in scopes)
            + "".join(comparison_section(c, k) for k, c in enumerate(comparisons, 1))
            + f'<section id="cases"><h2>cases</h2>{filters(runs, comparisons)}{cards(runs, comparisons)}</section>'
            f"</main><script>{JS}</script></body></html>")


def write(runs: Sequence[Run], out: Path) -> int:
    """Write the page atomically (a temp file in the same folder, then `os.replace`): a reader or a failed
    write never sees half a page, and the old page stays whole until the new one is complete. Its size."""
    data = page(runs).encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)
