"""Every case as a card (question, routes, gold files, top five with gold marked, answer with its citations,
key facts found and missed and where each was lost), side by side per run, and the filters over them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape, unescape
from typing import Any

from evals.html_report.compare import Comparison
from evals.html_report.model import LOST_AT, OUTCOMES, Run, corpus_names, facts_of, outcome, tags_of
from evals.html_report.svg import color

CITATION = re.compile(r"\[([^\[\]\s]+?):(\d+)(?:-(\d+))?\]")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def anchor(corpus: str, cid: str) -> str:
    return f"case-{slug(corpus)}-{slug(cid)}"


def answer_html(answer: str, gold: Sequence[str]) -> str:
    """The answer escaped, its `[path:start-end]` citations highlighted (a gold file's in green)."""
    def mark(m: re.Match[str]) -> str:
        cls = "cite gold" if unescape(m.group(1)) in gold else "cite"
        return f'<span class="{cls}">{m.group(0)}</span>'

    return CITATION.sub(mark, escape(answer))


def _tick(v: bool | None) -> str:
    return "<td class=muted>n/a</td>" if v is None else "<td class=ok>✓</td>" if v else "<td class=bad>✗</td>"


def _facts_table(row: dict[str, Any]) -> str:
    facts = facts_of(row)
    if not facts:
        return ""
    head = ("<tr><th>key fact</th><th>gold in top 5</th><th>top 5 files</th><th>evidence</th><th>LLM reads</th>"
            "<th>answer</th><th>lost at</th></tr>")
    body = "".join(
        f"<tr><td><code>{escape(f['fact'])}</code></td>{_tick(f['top5'])}{_tick(f['candidates'])}"
        f"{_tick(f['evidence'])}{_tick(f['reader'])}{_tick(f['answer'])}"
        f"<td>{'' if f['answer'] else escape(LOST_AT.get(f['lost_at'] or '', 'unknown'))}</td></tr>"
        for f in facts)
    return f'<table class="small">{head}{body}</table>'


def _run_column(run: Run, i: int, row: dict[str, Any] | None, same_as: str | None = None) -> str:
    """One run's side of a case; `same_as`: the label of an earlier run whose answer is the same text
    (printed once: a dev-suite page of two runs is half as heavy)."""
    if row is None:
        return f'<div><h4><span class="swatch" style="background:{color(i)}"></span>{escape(run.label)}</h4>' \
               '<p class="muted">not in this run</p></div>'
    gold = list(row.get("gold_paths") or [])
    top5 = "".join(f'<li class="gold">✓ {escape(p)}</li>' if p in gold else f"<li>{escape(p)}</li>"
                   for p in (row.get("retrieved_files") or [])[:5]) or '<li class="muted">nothing retrieved</li>'
    route_ok = '<span class="ok">✓</span>' if row.get("route_correct") else '<span class="bad">✗</span>'
    mode = escape(str(row.get("answer_mode") or ""))
    reason = row.get("answer_mode_reason")
    removed = row.get("citations_removed_share")
    llm = f" · reason: {escape(str(reason))}" if reason and reason != "offline" else ""
    llm += f" · citations removed: {removed:.2f}" if removed is not None else ""
    gate = row.get("gate") or {}
    answer = f'<p class="small muted">the same answer as {escape(same_as)}</p>' if same_as else \
        f"<pre class=answer>{answer_html(str(row.get('answer') or ''), gold)}</pre>"
    return (f'<div><h4><span class="swatch" style="background:{color(i)}"></span>{escape(run.label)} '
            f'<span class="badge o-{slug(outcome(row))}">{escape(outcome(row))}</span></h4>'
            f"<p class=small>route: {escape(str(row.get('route') or ''))} {route_ok} · answer mode: {mode}{llm} · "
            f"{row.get('citations', 0)} citations · gate: {escape(str(gate.get('reason') or ''))}</p>"
            f"<p class=small>{_figures(row)}</p>"
            f"<p class=small>top five retrieved (gold ✓):</p><ol class=small>{top5}</ol>"
            f"{_facts_table(row)}{answer}</div>")


def _figures(row: dict[str, Any]) -> str:
    """The case's own figures, as the JSON has them (n/a for an unanswerable case)."""
    return " · ".join(f"{label} {'n/a' if row.get(key) is None else format(row[key], '.2f')}" for label, key in
                      (("recall@5", "recall_at_5"), ("MRR", "mrr"), ("evidence facts", "evidence_key_fact_recall"),
                       ("strict key facts", "key_fact_coverage"), ("lead citation in gold", "lead_citation_in_gold")))


def _change_of(comparisons: Sequence[Comparison], corpus: str, cid: str) -> str:
    tokens = []
    for k, comp in enumerate(comparisons, 1):
        for kind, changes in (("regressed", comp.regressed), ("improved", comp.improved), ("mixed", comp.mixed)):
            if any(c.corpus == corpus and c.id == cid for c in changes):
                tokens.append(f"r{k}:{kind}")
    return " ".join(tokens)


def filters(runs: Sequence[Run], comparisons: Sequence[Comparison]) -> str:
    def select(name: str, label: str, options: Sequence[tuple[str, str]]) -> str:
        opts = "".join(f'<option value="{escape(v)}">{escape(t)}</option>' for v, t in options)
        return (f'<label>{escape(label)} <select data-filter="{name}"><option value="">all</option>{opts}'
                "</select></label>")

    parts = [select("corpus", "corpus", [(slug(c), c) for c in corpus_names(runs)]),
             select("outcome", "outcome", [(f"r{i}:{slug(o)}", f"{r.label}: {o}") for i, r in enumerate(runs)
                                           for o in OUTCOMES]),
             select("tags", "question kind", [(slug(t), t) for t in tags_of(runs)])]
    if comparisons:
        parts.append(select("change", "change", [(f"r{k}:{kind}", f"{c.new.label} vs {c.base.label}: {kind}")
                                                  for k, c in enumerate(comparisons, 1)
                                                  for kind in ("regressed", "improved", "mixed")]))
    return f'<div class="filters">{"".join(parts)} <span class="muted">showing <b id="shown">0</b> cases</span></div>'


def _same_answer(runs: Sequence[Run], rows: Sequence[dict[str, Any] | None], i: int) -> str | None:
    """The label of the first earlier run that answered this case with the very same text."""
    row = rows[i]
    if row is None or not row.get("answer"):
        return None
    return next((runs[j].label for j in range(i) if (rows[j] or {}).get("answer") == row["answer"]), None)


def card(runs: Sequence[Run], corpus: str, cid: str, rows: Sequence[dict[str, Any] | None], change: str) -> str:
    """One case: its question and gold files, then a column per run (absent when the run lacks the case)."""
    first = next(r for r in rows if r is not None)
    outcomes = " ".join(f"r{i}:{slug(outcome(r))}" for i, r in enumerate(rows) if r is not None)
    tags = list(first.get("tags") or [])
    badges = "".join(f'<span class="badge o-{slug(outcome(r))}" title="{escape(runs[i].label)}">'
                     f"{escape(outcome(r))}</span>" for i, r in enumerate(rows) if r is not None)
    marks = "".join(f' <span class="{"down" if "regressed" in t else "up" if "improved" in t else "flat"}">'
                    f"{escape(t.split(':', 1)[1])}</span>" for t in change.split())
    gold = ", ".join(f"<code>{escape(g)}</code>" for g in first.get("gold_paths") or []) or \
        '<span class="muted">none (unanswerable)</span>'
    columns = "".join(_run_column(run, i, r, _same_answer(runs, rows, i))
                      for i, (run, r) in enumerate(zip(runs, rows, strict=True)))
    return (f'<details class="case" id="{anchor(corpus, cid)}" data-corpus="{slug(corpus)}" '
            f'data-outcome="{outcomes}" data-tags="{" ".join(slug(t) for t in tags)}" data-change="{change}">'
            f"<summary><b>{escape(cid)}</b> <span class=muted>{escape(corpus)}</span> "
            f"{escape(str(first.get('question') or ''))} {badges}{marks}</summary>"
            f"<p class=small>expected route: {escape(str(first.get('expected_route') or ''))} · gold: {gold} · "
            f"tags: {escape(', '.join(tags)) or '—'}</p>"
            f'<div class="runs">{columns}</div></details>')


def cards(runs: Sequence[Run], comparisons: Sequence[Comparison]) -> str:
    out = []
    for corpus in corpus_names(runs):
        by_run = [{r["id"]: r for r in run.rows(corpus)} for run in runs]
        for cid in dict.fromkeys(cid for rows in by_run for cid in rows):
            rows = [rows.get(cid) for rows in by_run]
            out.append(card(runs, corpus, cid, rows, _change_of(comparisons, corpus, cid)))
    return "".join(out)
