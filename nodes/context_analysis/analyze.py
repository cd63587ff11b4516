"""`analyze`: group evidence by file, pick the answering spans, judge sufficiency (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodes.context_analysis.conflicts import find_conflicts
from nodes.context_analysis.models import Analysis, FileEvidence, Span
from nodes.context_analysis.spans import Scoring, candidate_spans, lead_span, row_text
from nodes.context_analysis.text import detect_language, idf_weights, stems_of, strip_markup, term_stems
from nodes.conversation_understanding import is_generic_term
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult
from nodes.terms import key_terms

MAX_SPANS = 8
MAX_SPANS_PER_FILE = 3
MAX_SPANS_FEW_FILES = 5
"""Per-file cap when fewer than 3 files have answering spans: one good page should fill the answer."""
REASON_CHARS = 200

# conversation_understanding appends carried terms as a trailing "(...)": not the user's own words.
_CARRIED = re.compile(r"\s*\([^()]*\)\s*$")


def _route_terms(route: RouteResult | None) -> list[str]:
    if route is None:
        return []
    anchors = route.anchors
    return [*route.target_terms, *anchors.entity_names, *anchors.endpoint_paths, *anchors.file_names]


def _select(candidates: list[Span]) -> list[Span]:
    """Best-scoring spans under the caps; a span inside an already quoted verbatim span adds nothing."""
    picked: list[Span] = []
    per_file: dict[str, int] = {}
    cap = MAX_SPANS_PER_FILE if len({s.path for s in candidates}) >= 3 else MAX_SPANS_FEW_FILES
    for span in sorted(candidates, key=lambda s: -s.score):
        if len(picked) >= MAX_SPANS or per_file.get(span.path, 0) >= cap:
            continue
        if any(p.path == span.path and (p.text == span.text or (
                p.start_line <= span.start_line and span.end_line <= p.end_line and p.layer == span.layer))
               for p in picked):
            continue
        picked.append(span)
        per_file[span.path] = per_file.get(span.path, 0) + 1
    return picked


def _title(rows: list[EvidenceRow]) -> str:
    for row in rows:
        if row.layer == "D1_DOCUMENT_CATALOG" and row.title:
            return row.title
    first = rows[0]
    return str(first.metadata.get("title") or first.title or first.path.rsplit("/", 1)[-1])


def one_line(text: str) -> str:
    """`text` on one line without leading markdown markers, cut to REASON_CHARS."""
    line = strip_markup(" ".join(text.split()))
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _files(rows: Sequence[EvidenceRow], spans: list[Span]) -> list[FileEvidence]:
    by_path: dict[str, list[EvidenceRow]] = {}
    best_rank: dict[str, int] = {}
    for rank, row in enumerate(rows, start=1):
        by_path.setdefault(row.path, []).append(row)
        best_rank.setdefault(row.path, rank)
    files = []
    for path, file_rows in by_path.items():
        title = _title(file_rows)
        best = max((s for s in spans if s.path == path), key=lambda s: s.score, default=None)
        if best is None:
            lead = lead_span(file_rows[0])
            best = lead if lead.text.strip() else None
        reason, start, end = ((one_line(best.text), best.start_line, best.end_line) if best else
                              (one_line(title or row_text(file_rows[0])), file_rows[0].span_start,
                               file_rows[0].span_end))
        files.append(FileEvidence(path=path, rows=[r.id for r in file_rows], best_rank=best_rank[path],
                                  title=title, reason=reason, start_line=start, end_line=end))
    return files


def analyze(request: str, terms: Sequence[str], rows: Sequence[EvidenceRow], relevant: bool,
            route: RouteResult | None = None, *, question: str | None = None) -> Analysis:
    """Analyse the evidence of one request.

    Args:
        request: The standalone request.
        terms: Its key terms (`key_terms(request, route.target_terms)`); derived from the request and the
            route when empty.
        rows: Fused evidence, best first.
        relevant: The relevance gate's verdict.
        route: The router's result (adds target terms and anchors when `terms` is empty).
        question: The user's own words (their language is the answer's); without it, carried-over terms
            in a trailing "(...)" are stripped from `request` to find them.

    Returns:
        Files in rank order, up to MAX_SPANS answering spans (≤ MAX_SPANS_PER_FILE per file, or
        MAX_SPANS_FEW_FILES when fewer than 3 files have any) in rank order, sufficiency, key-term
        coverage of the spans, conflict notes and the request's language.
    """
    own = question or _CARRIED.sub("", request) or request
    terms = list(dict.fromkeys(terms)) or key_terms(request, _route_terms(route))
    stems = term_stems(terms)
    scoring = Scoring(stems=stems, idf=idf_weights(stems, [f"{r.title} {r.content}" for r in rows]))
    rank_of = {row.id: rank for rank, row in enumerate(rows, start=1)}
    candidates = [s for rank, row in enumerate(rows, start=1) for s in candidate_spans(row, rank, scoring)]
    spans = _select(candidates)
    exact = [row for row in rows if "exact" in row.lanes]
    for row in exact:
        if len(spans) < MAX_SPANS and not any(s.path == row.path for s in spans):
            spans.append(lead_span(row))  # the user named this file: show how it opens even without a hit
    spans.sort(key=lambda s: (rank_of.get(s.row_id, len(rows) + 1), s.start_line))
    span_stems = set().union(*(stems_of(s.text) for s in spans)) if spans else set()
    covered = sum(1 for st in stems.values() if st in span_stems)
    return Analysis(
        files=_files(rows, spans),
        spans=spans,
        sufficient=relevant and (bool(exact) or any(not is_generic_term(t) for s in spans for t in s.terms)),
        coverage=round(covered / len(stems), 4) if stems else 0.0,
        conflicts=find_conflicts(spans, rows, terms),
        language=detect_language(own),
        terms=terms,
    )
