"""`analyze`: the answer's quotes are the evidence's best units (`units.py`), each file's line is its best unit,
then sufficiency and conflicts."""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodes.context_analysis.conflicts import find_conflicts
from nodes.context_analysis.models import Analysis, FileEvidence, Span
from nodes.context_analysis.relations import relation_edges, relation_targets, with_edges
from nodes.context_analysis.scoring import (
    SOFT_WEIGHT,
    Question,
    question_identifiers,
    soft_terms,
    term_share,
)
from nodes.context_analysis.spans import cut_words, lead_span, row_text
from nodes.context_analysis.text import detect_language, idf_weights, stems_of, strip_markup, term_stems
from nodes.context_analysis.units import (
    MAX_SUPPORTING,
    choose_units,
    quote_margin,
    score_here,
    shipped_scorer,
    unit_passages,
)
from nodes.conversation_understanding import is_generic_term
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult
from nodes.terms import key_terms

MAX_PASSAGES = 6
"""Passages of the analysis: the quotes, then the next best units (conflicts are looked for in them; the chat
model reads them, then the pack's rows: `reading_pool`)."""
REASON_CHARS = 200
SCREEN_LINES = 40
"""A file's line cites a whole row (a card's span) only when it is shorter than a screen; a longer one cites
its opening screen."""

# conversation_understanding appends carried terms as a trailing "(...)": not the user's own words.
_CARRIED = re.compile(r"\s*\([^()]*\)\s*$")


def _route_terms(route: RouteResult | None) -> list[str]:
    if route is None:
        return []
    anchors = route.anchors
    return [*route.target_terms, *anchors.entity_names, *anchors.endpoint_paths, *anchors.file_names]


def one_line(text: str) -> str:
    """`text` on one line without leading markdown markers, cut to REASON_CHARS."""
    return cut_words(strip_markup(" ".join(text.split())), REASON_CHARS)


def _overlaps(span: Span, taken: Sequence[Span]) -> bool:
    return any(t.path == span.path and span.start_line <= t.end_line and t.start_line <= span.end_line
               for t in taken)


def _title(rows: list[EvidenceRow]) -> str:
    for row in rows:
        if row.layer == "D1_DOCUMENT_CATALOG" and row.title:
            return row.title
    first = rows[0]
    return str(first.metadata.get("title") or first.title or first.path.rsplit("/", 1)[-1])


def file_line(span: Span | None, row: EvidenceRow, title: str) -> tuple[str, int, int]:
    """A file's reason and the lines it cites: its best unit, else its first row's opening (a card's span
    only when shorter than SCREEN_LINES, else its first screen)."""
    if span is None:
        lead = lead_span(row)
        if not lead.text.strip():
            return one_line(title or row_text(row)), row.span_start, min(row.span_end,
                                                                        row.span_start + SCREEN_LINES - 1)
        span = lead
    reason = one_line(span.text)
    if span.code and span.section and span.section not in reason:
        reason = one_line(f"{span.section}: {reason.strip()}")
    return reason, span.start_line, min(span.end_line, span.start_line + SCREEN_LINES - 1)


def _files(rows: Sequence[EvidenceRow], best: dict[str, Span]) -> list[FileEvidence]:
    by_path: dict[str, list[EvidenceRow]] = {}
    best_rank: dict[str, int] = {}
    for rank, row in enumerate(rows, start=1):
        by_path.setdefault(row.path, []).append(row)
        best_rank.setdefault(row.path, rank)
    files = []
    for path, file_rows in by_path.items():
        title = _title(file_rows)
        reason, start, end = file_line(best.get(path), file_rows[0], title)
        files.append(FileEvidence(path=path, rows=[r.id for r in file_rows], best_rank=best_rank[path],
                                  title=title, reason=reason, start_line=start, end_line=end))
    return files


def _list_edges(rows: Sequence[EvidenceRow], route: RouteResult | None, terms: Sequence[str], spans: list[Span],
                pool: list[Span]) -> tuple[list[Span], list[Span], list[EvidenceRow]]:
    """"Who uses X?": every edge of the asked relation the evidence holds leads the answer, each cited
    (`relations.py`); other questions keep their passages."""
    predicates = route.anchors.relation_predicates if route is not None else []
    edges = relation_edges(rows, predicates, relation_targets(route, terms)) if predicates else []
    if not edges:
        return spans, pool, edges
    spans = with_edges(edges, spans, 1 + MAX_SUPPORTING)
    return spans, [*(s for s in spans if not _overlaps(s, pool)), *pool], edges


def _show_named_files(exact: Sequence[EvidenceRow], best: dict[str, Span], spans: list[Span],
                      pool: list[Span]) -> None:
    """The user named these files: each shows its best unit, or how it opens (appended to `spans` and `pool`
    while there is room)."""
    for row in exact:
        if len(spans) <= MAX_SUPPORTING and not any(s.path == row.path for s in spans):
            shown = best.get(row.path) or lead_span(row)
            if shown not in pool:
                pool.append(shown)
            spans.append(shown)


def question_of(request: str, terms: Sequence[str], rows: Sequence[EvidenceRow]) -> Question:
    soft = soft_terms(request, terms)
    stems = term_stems([*terms, *soft])
    idf = idf_weights(stems, [f"{r.title} {r.content}" for r in rows])
    # Soft words and generic verbs (`настроить`, `use`) say what to do, not what it is about: they weigh less.
    idf = {t: w * SOFT_WEIGHT if t in soft or is_generic_term(t) else w for t, w in idf.items()}
    return Question(text=request, stems=stems, idf=idf, identifiers=question_identifiers(request, terms),
                    soft=frozenset(soft))


def _with_terms(spans: Sequence[Span], q: Question) -> list[Span]:
    return [s.model_copy(update={"terms": term_share(s.text, q)[1]}) for s in spans]


def analyze(request: str, terms: Sequence[str], rows: Sequence[EvidenceRow], relevant: bool,
            route: RouteResult | None = None, *, question: str | None = None, overview: bool = False,
            cross_lingual: bool = False) -> Analysis:
    """Analyse the evidence of one request.

    Args:
        request: The standalone request.
        terms: Its key terms (`key_terms(request, route.target_terms)`); derived from the request and the
            route when empty.
        rows: The evidence pack, best first; rows of the unit fill carry their scored units, and so do the
            core's rows of the files the units were read from (`UNIT_SCORES`).
        relevant: The relevance gate's verdict.
        route: The router's result (adds target terms and anchors when `terms` is empty; relation questions).
        question: The user's own words (their language is the answer's); without it, carried-over terms
            in a trailing "(...)" are stripped from `request` to find them.
        overview: The request asks about the repository itself and the gate passed it on its landing
            pages: the best units suffice even without a key term in them.
        cross_lingual: The request and the evidence are in different languages and the gate passed it: the
            best units suffice without a stemmed key term.

    Returns:
        Files in rank order each with its best unit as its line, the answer's quotes (`spans`: the best unit
        then the units within the model's margin), the best units (`passages`, ≤ MAX_PASSAGES after the quotes),
        sufficiency, key-term coverage of the quotes, conflict notes and the request's language.
    """
    own = question or _CARRIED.sub("", request) or request
    terms = list(dict.fromkeys(terms)) or key_terms(request, _route_terms(route))
    q = question_of(own, terms, rows)
    file_rank: dict[str, int] = {}
    for row in rows:
        file_rank.setdefault(row.path, len(file_rank) + 1)
    scorer = shipped_scorer()
    units = unit_passages(score_here(rows, own, terms, scorer))
    if not units:  # no text to cut (cards, facts, edges): each row as it reads, in rank order
        units = [span for row in rows if (span := lead_span(row)).text.strip()]
    spans, pool = choose_units(units, file_rank, quote_margin(scorer))
    units, spans, pool = _with_terms(units, q), _with_terms(spans, q), _with_terms(pool, q)
    best: dict[str, Span] = {}
    for u in units:
        best.setdefault(u.path, u)
    exact = [row for row in rows if "exact" in row.lanes]
    spans, pool, edges = _list_edges(rows, route, terms, spans, pool)
    _show_named_files(exact, best, spans, pool)
    for span in spans:
        best.setdefault(span.path, span)
    span_stems = set().union(*(stems_of(s.text) for s in spans)) if spans else set()
    key_stems = [st for t, st in q.stems.items() if t not in q.soft]
    covered = sum(1 for st in key_stems if st in span_stems)
    return Analysis(
        files=_files(rows, best),
        spans=spans,
        passages=pool[: max(MAX_PASSAGES, len(spans))],
        sufficient=relevant and (bool(exact) or bool(edges) or ((overview or cross_lingual) and bool(spans))
                                 or any(not is_generic_term(t) for s in pool[:MAX_PASSAGES * 2] for t in s.terms)),
        coverage=round(covered / len(key_stems), 4) if key_stems else 0.0,
        conflicts=find_conflicts(pool[:MAX_PASSAGES], rows, terms),
        language=detect_language(own),
        terms=terms,
    )
