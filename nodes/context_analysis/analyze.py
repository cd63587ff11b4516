"""`analyze`: score candidate passages, choose one coherent lead and ≤ 2 supporting ones, judge sufficiency."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from nodes.context_analysis.card_sources import ReadSources, cards, is_module_card, opens_with_docstring
from nodes.context_analysis.conflicts import find_conflicts
from nodes.context_analysis.models import Analysis, FileEvidence, Span
from nodes.context_analysis.outline import asks_for_summary, named_file, outline_first
from nodes.context_analysis.passages import (
    DEFINITION,
    MAX_PASSAGE_CHARS,
    MAX_PASSAGE_LINES,
    Candidate,
    block_text,
    fold_identifier,
    row_candidates,
)
from nodes.context_analysis.relations import relation_edges, relation_targets, with_edges
from nodes.context_analysis.scoring import (
    FUNCTION_WORDS,
    SOFT_WEIGHT,
    Embed,
    Question,
    Scored,
    identifier_share,
    question_identifiers,
    score_candidates,
    soft_terms,
    term_share,
)
from nodes.context_analysis.spans import cut_words, lead_span, row_text
from nodes.context_analysis.text import detect_language, idf_weights, stems_of, strip_markup, term_stems
from nodes.context_retrieval.pack import FILL_MARK
from nodes.conversation_understanding import is_generic_term
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult
from nodes.terms import key_terms

MAX_SUPPORTING = 3
DOCUMENT_CARD = "D1_DOCUMENT_CATALOG"
SUPPORT_RATIO = 0.25
"""A supporting passage scores at least this share of the lead's: weaker ones are noise, not support."""
CLOSE_SUPPORT_RATIO = 0.6
"""A support scoring this close to the lead is shown even without a new key term when it brings details the
lead lacks (values, identifiers, options): they often sit in passages that repeat the question's words.
Dev, five corpora, with MAX_SUPPORTING 3: honest key-fact coverage 0.277 → 0.316, answer length p50 864 →
1,132 characters, passage precision 0.267 → 0.257. 0.4 on the filled evidence pack (issue 29, session 12):
strict key facts fastapi-ru 0.547 → 0.570, other corpora unchanged, but everyday answers grew past the
readability limit of tests/integration/test_answers_fastapi.py (median 1,419 characters; 0.5: 1,315)."""
SUPPORT_MAX_RANK = 5
"""Supports come from the files retrieval ranked this high: further down they were mostly off-topic
(dev, five corpora: passage precision 0.262 → 0.268, key-fact coverage 0.325 → 0.327, p50 1,116 → 1,055)."""
LEAD_RANK_DECAY = 0.5
"""The lead is the best passage after its score is divided again by 1 + this × (file rank - 1): the passage
scores alone led with a lower-ranked file more often than retrieval's best file was right (dev, five corpora:
lead citation in gold 0.497 → 0.521, key-fact coverage 0.319 → 0.323; 1.0 and 3.0 gave no more lead).
Definitions (C0 `source` passages) keep their own score: with them exempt, lead citation 0.530 → 0.536."""
MAX_PASSAGES = 6
"""Passages handed to the LLM (and to its analysis): the lead, the support, then the next best."""
LEAD_MIN_CHARS = 240
"""The lead grows over the next blocks of its section until it says this much (a sentence alone is a
fragment; the paragraph and list after it usually carry the details)."""
REASON_CHARS = 200
SECTION_LAYER = "D0_DOC_CHUNKS"
OPEN_WITHIN_ROWS = 3
"""Retrieval's first page has its sections read before the passages are chosen when its document card is among
this many first rows and none of its sections is among the rows retrieval ranked in (the pack's fill may add
some after them; session 13: that blocked the read for the demo question): the card alone (a summary at KIND_FACTOR
0.3, edges, facts) cannot lead, so a lexical near-miss of a lower file did, although the page retrieval put
first states the answer (issue 29, the README demo question). Dev, five corpora (session 13): the read fires
in 2 of 480 questions at 3 (1: fewer), no metric moves; opening the first page whenever its card ranks first,
even with its sections in the evidence, changed 7 answers and lost key facts (lotsman-self 0.398 -> 0.363,
fastapi-ru 0.523 -> 0.514): a section read from the index then beat the section retrieval had chosen."""

# conversation_understanding appends carried terms as a trailing "(...)": not the user's own words.
_CARRIED = re.compile(r"\s*\([^()]*\)\s*$")
_GROWABLE = frozenset({"prose", "item", "table", "code"})


def _route_terms(route: RouteResult | None) -> list[str]:
    if route is None:
        return []
    anchors = route.anchors
    return [*route.target_terms, *anchors.entity_names, *anchors.endpoint_paths, *anchors.file_names]


def one_line(text: str) -> str:
    """`text` on one line without leading markdown markers, cut to REASON_CHARS."""
    line = strip_markup(" ".join(text.split()))
    return cut_words(line, REASON_CHARS)


def _grow(scored: Scored, q: Question, lead: bool) -> Span:
    """The candidate's block grown into a coherent passage under the same heading.

    A lead-in ending with ':' takes the list, table or code it introduces; a list item takes its lead-in.
    The lead also takes the next blocks of its section until it reaches LEAD_MIN_CHARS, and any
    neighbouring block that carries a key term, within MAX_PASSAGE_CHARS / MAX_PASSAGE_LINES.
    """
    c = scored.candidate
    layout = c.layout
    if layout is None or c.block < 0:
        return _span(c, c.text, c.start_line, c.end_line, scored)
    blocks = layout.blocks
    first = last = c.block

    def fits(a: int, b: int) -> bool:
        text, start, end = block_text(layout, a, b)
        return len(text) <= MAX_PASSAGE_CHARS and end - start + 1 <= MAX_PASSAGE_LINES

    def joinable(k: int) -> bool:
        return 0 <= k < len(blocks) and blocks[k].kind in _GROWABLE and blocks[k].heading == blocks[c.block].heading

    def step(k: int, direction: int) -> int:
        """The next block in `direction`, passing over include lines and admonition markers."""
        k += direction
        while 0 <= k < len(blocks) and blocks[k].kind == "noise":
            k += direction
        return k

    def intro(k: int) -> bool:
        return block_text(layout, k, k)[0].rstrip().endswith(":")

    if blocks[first].kind == "item":  # back over the list to its lead-in
        k = first - 1
        while joinable(k) and blocks[k].kind == "item" and fits(k, last):
            k -= 1
        if joinable(k) and blocks[k].kind == "prose" and intro(k) and fits(k, last):
            first = k
    while joinable(last + 1) and (intro(last) or (blocks[last].kind == "item" and blocks[last + 1].kind == "item"
                                                  and intro(first))) and fits(first, last + 1):
        last += 1
    if lead:
        while True:
            short = len(block_text(layout, first, last)[0]) < LEAD_MIN_CHARS
            nxt, prev = step(last, 1), step(first, -1)
            if joinable(nxt) and fits(first, nxt) and (
                    short or intro(last) or term_share(block_text(layout, nxt, nxt)[0], q)[1]):
                last = nxt
            elif joinable(prev) and blocks[prev].kind != "code" and fits(prev, last) and (
                    short or intro(prev) or term_share(block_text(layout, prev, prev)[0], q)[1]):
                first = prev
            else:
                break
    if first == last == c.block:
        return _span(c, c.text, c.start_line, c.end_line, scored)
    text, start, end = block_text(layout, first, last)
    return _span(c, text, start, end, scored)


def _span(c: Candidate, text: str, start: int, end: int, scored: Scored) -> Span:
    return Span(path=c.row.path, start_line=start, end_line=end, text=text, row_id=c.row.id,
                score=scored.score, layer=c.row.layer, code=c.kind in ("code", "source"),
                terms=scored.terms, section=c.heading, kind=c.kind)


def _overlaps(span: Span, taken: Sequence[Span]) -> bool:
    return any(t.path == span.path and span.start_line <= t.end_line and t.start_line <= span.end_line
               for t in taken)


def _topic_stems(span: Span, q: Question) -> set[str]:
    """The topic's key terms and names a passage states, read from its whole (grown) text: a lead grown over
    its section covers the terms of the blocks it took, which a support must not repeat."""
    found = {q.stems[t] for t in term_share(span.text, q)[1]
             if t in q.stems and not is_generic_term(t) and t not in FUNCTION_WORDS}
    return found | {name for name in q.identifiers if identifier_share(span.text, _only(q, name))}


def _only(q: Question, name: str) -> Question:
    return Question(text=q.text, stems=q.stems, idf=q.idf, identifiers=frozenset({name}))


def _is_definition(c: Candidate) -> bool:
    """A definition's source (a function, class or method), not module-level code between definitions: a list
    of constants (`QUESTIONS = (...)`) has no name that singles it out."""
    head = next((line for line in c.text.split("\n") if line.strip() and not line.lstrip().startswith("@")), "")
    return c.kind == "source" and DEFINITION.match(head) is not None


def rule_lead_scores(scored: Sequence[Scored], file_rank: dict[str, int]) -> list[float]:
    """Each passage's score once its file's retrieval rank is weighed in again (LEAD_RANK_DECAY), so a passage
    from a lower-ranked file leads only by a clear margin."""

    def lead_score(item: Scored) -> float:
        rank = file_rank.get(item.candidate.row.path, len(file_rank) + 1)
        # A definition is scored by its name and its use of the asked-about names, which single out the
        # defining code better than its rank does: prose about a name outranks the code that defines it.
        decay = 0.0 if _is_definition(item.candidate) else LEAD_RANK_DECAY
        return item.score / (1.0 + decay * (rank - 1))

    return [lead_score(item) for item in scored]


def lead_first(scored: Sequence[Scored], file_rank: dict[str, int]) -> list[Scored]:
    """`scored` with the lead moved to the front: the best `rule_lead_scores` (the earliest on a tie)."""
    if not scored:
        return []
    base = rule_lead_scores(scored, file_rank)
    best = max(range(len(scored)), key=lambda i: (base[i], -i))
    return [scored[best], *scored[:best], *scored[best + 1 :]]


def choose_passages(scored: Sequence[Scored], q: Question,
                    file_rank: dict[str, int] | None = None) -> tuple[list[Span], list[Span]]:
    """The answer's passages and the LLM's pool, all non-overlapping.

    The answer's passages are the first of `scored` (the lead), then ≤ MAX_SUPPORTING from files ranked
    ≤ SUPPORT_MAX_RANK (`file_rank`) that add key terms the lead lacks or score close to it; the pool is
    those, then the next best, ≤ MAX_PASSAGES.
    """
    chosen: list[Span] = []
    pool: list[Span] = []
    covered: set[str] = set()
    details: set[str] = set()
    for item in scored:
        if item.score <= 0 or len(pool) >= MAX_PASSAGES:
            break
        span = _grow(item, q, lead=not chosen)
        if _overlaps(span, pool):
            continue
        pool.append(span)
        topic = _topic_stems(span, q)
        if not chosen:
            chosen.append(span)
            covered = topic
            details = _details(span.text)
        elif (len(chosen) <= MAX_SUPPORTING and item.score >= SUPPORT_RATIO * chosen[0].score
              and (file_rank or {}).get(span.path, 1) <= SUPPORT_MAX_RANK
              and (topic - covered or (topic and item.score >= CLOSE_SUPPORT_RATIO * chosen[0].score
                                                and _details(span.text) - details))):
            chosen.append(span)
            covered |= topic
            details |= _details(span.text)
    return chosen, pool


_DETAIL = re.compile(r"`[^`]+`|\b\w*\d\w*\b|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*|--[\w-]+")


def _details(text: str) -> set[str]:
    """What answers are made of: code spans, numbers, identifiers, options."""
    return {m.group(0).strip("`").lower() for m in _DETAIL.finditer(text)}


def _best_line(span: Span, q: Question) -> tuple[str, int]:
    """The one line of `span` that best says why its file matters (a code line with the definition's name)."""
    lines = span.text.split("\n")
    if span.code and _defines(lines[0], q):  # the definition of the asked-about name: its signature
        return lines[0], span.start_line
    if span.end_line - span.start_line + 1 != len(lines) or len(lines) == 1:
        return span.text, span.start_line  # a synthesized row, a single line, or code with skipped lines
    best, best_score = 0, -1.0
    for n, line in enumerate(lines):
        if not line.strip() or line.strip().startswith(("```", "~~~", "#")):
            continue
        score = term_share(line, q)[0] + identifier_share(line, q) + (0.01 if n == 0 else 0.0)
        if score > best_score:
            best, best_score = n, score
    return lines[best], span.start_line + best


def _defines(line: str, q: Question) -> bool:
    """`line` opens the definition of a name the question asks about."""
    m = DEFINITION.match(line)
    return m is not None and fold_identifier(m.group(1)) in q.identifiers


_SENTENCE_END = re.compile(r"(?<=[.!?…;])\s+(?=\S)")


def best_sentence(text: str, q: Question) -> str:
    """The sentence of a long line that carries the most of the question (the first one on a tie).

    A catalog summary or a paragraph is one line; cut at REASON_CHARS it keeps its opening, which
    names the topic, and loses the sentence with the asked-about term or name.
    """
    flat = " ".join(text.split())
    if len(flat) <= REASON_CHARS:
        return text
    sentences = [s for s in _SENTENCE_END.split(flat) if s.strip()]
    scores = [term_share(s, q)[0] + identifier_share(s, q) for s in sentences]
    return sentences[max(range(len(sentences)), key=lambda i: (scores[i], -i))] if sentences else text


def _title(rows: list[EvidenceRow]) -> str:
    for row in rows:
        if row.layer == "D1_DOCUMENT_CATALOG" and row.title:
            return row.title
    first = rows[0]
    return str(first.metadata.get("title") or first.title or first.path.rsplit("/", 1)[-1])


def _files(rows: Sequence[EvidenceRow], best: dict[str, Span], q: Question) -> list[FileEvidence]:
    by_path: dict[str, list[EvidenceRow]] = {}
    best_rank: dict[str, int] = {}
    for rank, row in enumerate(rows, start=1):
        by_path.setdefault(row.path, []).append(row)
        best_rank.setdefault(row.path, rank)
    files = []
    for path, file_rows in by_path.items():
        title = _title(file_rows)
        span = best.get(path)
        if span is None:
            lead = lead_span(file_rows[0])
            span = lead if lead.text.strip() else None
        if span is None:
            reason, start, end = (one_line(title or row_text(file_rows[0])), file_rows[0].span_start,
                                  file_rows[0].span_end)
        else:
            line, number = _best_line(span, q)
            single = line is not span.text
            reason, start, end = one_line(best_sentence(line, q)), number if single else span.start_line, \
                number if single else span.end_line
            if span.code and span.section and span.section not in reason:
                reason = one_line(f"{span.section}: {reason.strip()}")
        files.append(FileEvidence(path=path, rows=[r.id for r in file_rows], best_rank=best_rank[path],
                                  title=title, reason=reason, start_line=start, end_line=end))
    return files


def _lead_with_landing(rows: Sequence[EvidenceRow], spans: list[Span], pool: list[Span]) -> list[Span]:
    """The front door first, when retrieval also ranked it first.

    The overview signal also fires on questions about one part of the project ("What is a context in
    Click?", "what is in fastapi/concurrency.py?"); there retrieval ranks the part's own file above the
    landing page, and that file's passage stays the lead (dev, five corpora: of 13 overview cases the
    landing lead was wrong in 9, in 8 of them the landing page was not the top file).
    """
    landing = sorted((r for r in rows if "landing" in r.lanes), key=lambda r: r.lanes["landing"])
    if not landing or landing[0].path != rows[0].path:
        return spans
    door = landing[0]
    lead = next((p for p in pool if p.path == door.path), None) or lead_span(door)
    if lead not in pool:
        pool.insert(0, lead)
    return [lead, *[s for s in spans if s.path != door.path]][: 1 + MAX_SUPPORTING]


def _best_per_file(scored: Sequence[Scored]) -> list[Scored]:
    """The best scored passage of each file (a file's line in the answer), in score order."""
    seen: set[str] = set()
    out = []
    for item in scored:
        if item.candidate.row.path not in seen:
            seen.add(item.candidate.row.path)
            out.append(item)
    return out


def _upgrades(read: ReadSources | None, chosen: Sequence[EvidenceRow], file_rank: dict[str, int], q: Question
              ) -> tuple[list[EvidenceRow], dict[str, Scored]]:
    """The source rows read for the chosen cards, and card id → the passage quoted in its place (chosen by key
    terms and names, without meaning: for a function card it is the function itself, and a second embedding
    batch cost a cross-lingual request 60–250 ms with no gain on dev)."""
    wanted = cards(chosen)
    sources = read(wanted) if read is not None and wanted else {}
    source_rows = [row for card in wanted for row in sources.get(card.id, ())]
    spans = {card.id: (card.span_start, card.span_end) for card in wanted}
    owner = {row.id: card for card, rows in sources.items() for row in rows}
    inside = [c for row in source_rows for c in row_candidates(row, q.wanted)
              if spans[owner[row.id]][0] <= c.start_line <= c.end_line <= spans[owner[row.id]][1]]
    modules = {card.id for card in wanted if is_module_card(card)}
    heads = {card: min((c for c in inside if owner[c.row.id] == card), key=lambda c: c.start_line, default=None)
             for card in modules}
    inside = [c for c in inside if owner[c.row.id] not in modules
              or (c is heads[owner[c.row.id]] and opens_with_docstring(c.text))]
    return source_rows, _card_upgrades(score_candidates(inside, file_rank, q) if inside else [],
                                       wanted, sources)


def _card_upgrades(scored: Sequence[Scored], cards: Sequence[EvidenceRow],
                   sources: Mapping[str, Sequence[EvidenceRow]]) -> dict[str, Scored]:
    """Card row id → the best scored passage of its source rows that lies inside the card's span (the first
    on a tie: the top of the span)."""
    out: dict[str, Scored] = {}
    for card in cards:
        mine = {row.id for row in sources.get(card.id, ())}
        item = next((s for s in scored if s.candidate.row.id in mine
                     and card.span_start <= s.candidate.start_line <= s.candidate.end_line <= card.span_end), None)
        if item is not None:
            out[card.id] = item
    return out


def _quote_sources(spans: list[Span], pool: list[Span], upgrades: Mapping[str, Scored], q: Question
                   ) -> tuple[list[Span], list[Span]]:
    """`spans` and `pool` with every card passage that has a source passage (`upgrades`) replaced by it."""
    def quoted(span: Span, lead: bool) -> Span:
        item = upgrades.get(span.row_id)
        return span if item is None else _grow(item, q, lead=lead)

    swapped = {id(span): quoted(span, i == 0) for i, span in enumerate(spans)}  # the pool holds the same objects
    return [swapped[id(span)] for span in spans], [swapped.get(id(span)) or quoted(span, False) for span in pool]


def _cards_to_read(rows: Sequence[EvidenceRow], pool: Sequence[Span], best_items: Sequence[Scored]
                   ) -> list[EvidenceRow]:
    """The cards whose lines are read: every chosen definition card, and a document card only when it is one
    of the passages (its file's line keeps the summary: reading every listed page's chunks cost ~80 ms a
    question for no measured gain).

    A card competes for the answer as itself (its rank and weight); once chosen, its best source passage (by
    key terms and names, competing only with each other) is quoted in its place. In evidence order: a set's
    order changes with the interpreter's hash seed, and which card claims a source row two cards share decided
    whether the definition was quoted (the same question flipped between runs).
    """
    quoted = {s.row_id for s in pool}
    chosen = quoted | {item.candidate.row.id for item in best_items}
    return [row for row in rows if row.id in chosen and (row.layer != DOCUMENT_CARD or row.id in quoted)]


def page_to_open(rows: Sequence[EvidenceRow], within: int = OPEN_WITHIN_ROWS) -> EvidenceRow | None:
    """The document card of retrieval's first file, when it is among the first `within` rows, stands for more
    than one line, and none of that page's sections is among the rows retrieval ranked in (a section the
    pack's fill added after them, `FILL_MARK`, is not a choice); else None (OPEN_WITHIN_ROWS)."""
    if not rows:
        return None
    first = rows[0].path
    if any(row.path == first and row.layer == SECTION_LAYER and not row.metadata.get(FILL_MARK) for row in rows):
        return None  # retrieval chose which of its sections to hand over: they compete as they are
    return next((row for row in rows[:within] if row.layer == DOCUMENT_CARD and row.path == first
                 and row.span_end > row.span_start), None)


def _open_page(read: ReadSources | None, rows: Sequence[EvidenceRow]) -> tuple[EvidenceRow | None,
                                                                               list[EvidenceRow]]:
    """`page_to_open(rows)` and its sections read from the index (one statement; none without a reader)."""
    card = page_to_open(rows)
    if card is None or read is None:
        return None, []
    return card, list(read([card]).get(card.id, ()))


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


def _show_named_files(exact: Sequence[EvidenceRow], spans: list[Span], pool: list[Span]) -> None:
    """The user named these files: each shows its best passage, or how it opens when nothing in it matched
    (appended to `spans` and `pool` while there is room)."""
    for row in exact:
        if len(spans) <= MAX_SUPPORTING and not any(s.path == row.path for s in spans):
            shown = next((p for p in pool if p.path == row.path), None)
            if shown is None:
                shown = lead_span(row)
                pool.append(shown)
            spans.append(shown)


def _topical(text: str, q: Question) -> bool:
    """Whether `text` carries a key term naming the topic (what makes evidence sufficient)."""
    return any(not is_generic_term(t) for t in term_share(text, q)[1])


def _scored_passages(rows: Sequence[EvidenceRow], file_rank: dict[str, int], q: Question, embed: Embed | None,
                     *, relevant: bool) -> list[Scored]:
    """Every candidate passage of the evidence, scored, best first (one `embed` call).

    A long run of code between definitions is cut at its head. When the gate passed the evidence (`relevant`:
    False too for overview and cross-lingual requests, whose passages suffice without a key term), only a key
    term in a passage can make it sufficient (no exactly named file), and no passage carries one, the cut may
    have hidden the lines that do (a 50-line run of `xN = N` asked about `x49999`): the runs are cut again at
    the lines that use the asked-about names, so `ask` quotes the row `retrieve` showed as relevant instead
    of saying the index does not answer (issue 25, item 8). Only then: cut by use everywhere, such runs
    (import blocks, constants, continued function bodies) changed the passages of 7,700 question-row pairs
    of the eval corpora; at their head they quote what the answers quoted before.
    """
    candidates = [c for row in rows for c in row_candidates(row, q.wanted)]
    by_terms = relevant and not any("exact" in row.lanes for row in rows)
    if by_terms and not any(_topical(c.text, q) for c in candidates):
        candidates = [c for row in rows for c in row_candidates(row, q.wanted, runs_at_use=True)]
    return score_candidates(candidates, file_rank, q, embed)


def question_of(request: str, terms: Sequence[str], rows: Sequence[EvidenceRow]) -> Question:
    soft = soft_terms(request, terms)
    stems = term_stems([*terms, *soft])
    idf = idf_weights(stems, [f"{r.title} {r.content}" for r in rows])
    # Soft words and generic verbs (`настроить`, `use`) say what to do, not what it is about: they weigh less.
    idf = {t: w * SOFT_WEIGHT if t in soft or is_generic_term(t) else w for t, w in idf.items()}
    return Question(text=request, stems=stems, idf=idf, identifiers=question_identifiers(request, terms),
                    soft=frozenset(soft))


def analyze(request: str, terms: Sequence[str], rows: Sequence[EvidenceRow], relevant: bool,
            route: RouteResult | None = None, *, question: str | None = None, embed: Embed | None = None,
            overview: bool = False, cross_lingual: bool = False,
            sources: ReadSources | None = None) -> Analysis:
    """Analyse the evidence of one request.

    Args:
        request: The standalone request.
        terms: Its key terms (`key_terms(request, route.target_terms)`); derived from the request and the
            route when empty.
        rows: Fused evidence, best first (rows of one file may be appended after the ranked ones: a file
            is weighted by its best row).
        relevant: The relevance gate's verdict.
        route: The router's result (adds target terms and anchors when `terms` is empty).
        question: The user's own words (their language is the answer's); without it, carried-over terms
            in a trailing "(...)" are stripped from `request` to find them.
        embed: The session's embedder over a batch of texts (`embed_documents`); None scores passages by
            key terms, identifiers and headings only. One call per analysis.
        overview: The request asks about the repository itself and the gate passed it on its landing
            pages: their opening passages answer it even without a key term in them.
        cross_lingual: The request and the evidence are in different languages and the gate passed it (by
            similarity or by the names they share): stemmed key terms cannot be expected in the passages,
            so the best passages suffice without one.
        sources: Reads the source rows around the symbol cards the analysis chose to quote (one call with
            those cards; `read_card_sources`): the best definition inside a card's span is quoted in its
            place, and the rows quoted are listed in `Analysis.expanded` (the caller adds them to the
            evidence the citations are checked against). None quotes cards as they are.

    Returns:
        Files in rank order each with its best line, the answer's passages (`spans`: the lead, then up to
        two supporting ones that carry key terms the lead lacks), the LLM's passage pool (`passages`),
        sufficiency, key-term coverage of the answer's passages, conflict notes and the request's language.
    """
    own = question or _CARRIED.sub("", request) or request
    terms = list(dict.fromkeys(terms)) or key_terms(request, _route_terms(route))
    q = question_of(own, terms, rows)
    file_rank: dict[str, int] = {}
    for row in rows:
        file_rank.setdefault(row.path, len(file_rank) + 1)
    opened, sections = _open_page(sources, rows)
    # The page's sections compete in its card's place (with its file rank): quoted, the card would be replaced
    # by one of them anyway, and read again.
    competing = [*(row for row in rows if opened is None or not sections or row.id != opened.id), *sections]
    scored = _scored_passages(competing, file_rank, q, embed, relevant=relevant and not (overview or cross_lingual))
    spans, pool = choose_passages(lead_first(scored, file_rank), q, file_rank)
    best_items = _best_per_file(scored)
    to_read = [row for row in _cards_to_read(rows, pool, best_items) if opened is None or row.id != opened.id]
    source_rows, upgrades = _upgrades(sources, to_read, file_rank, q)
    source_rows = [*sections, *source_rows]
    spans, pool = _quote_sources(spans, pool, upgrades, q)
    exact = [row for row in rows if "exact" in row.lanes]
    named = named_file(rows)
    if named and asks_for_summary(own, terms, named):  # "what is in <file>?": its outline
        spans, pool = outline_first(named, rows, spans, pool, source_rows)
    elif overview:  # about the repository itself: its front door (README, package docstring) leads the answer
        spans = _lead_with_landing(rows, spans, pool)
    spans, pool, edges = _list_edges(rows, route, terms, spans, pool)
    _show_named_files(exact, spans, pool)
    best = {item.candidate.row.path: _quote_sources([_grow(item, q, lead=False)], [], upgrades, q)[0][0]
            for item in best_items}
    for span in spans:
        best.setdefault(span.path, span)
    used = {s.row_id for s in [*pool, *spans, *best.values()]}
    span_stems = set().union(*(stems_of(s.text) for s in spans)) if spans else set()
    key_stems = [st for t, st in q.stems.items() if t not in q.soft]
    covered = sum(1 for st in key_stems if st in span_stems)
    return Analysis(
        files=_files(rows, best, q),
        spans=spans,
        passages=pool,
        sufficient=relevant and (bool(exact) or bool(edges) or ((overview or cross_lingual) and bool(spans))
                                 or any(not is_generic_term(t) for s in pool for t in s.terms)),
        coverage=round(covered / len(key_stems), 4) if key_stems else 0.0,
        conflicts=find_conflicts(pool, rows, terms),
        language=detect_language(own),
        terms=terms,
        expanded=[row.id for row in source_rows if row.id in used or any(  # a quote may run across rows
            s.path == row.path and s.layer == row.layer and row.span_start <= s.end_line
            and s.start_line <= row.span_end for s in spans)],
    )
