"""The lines a card points at: a card is what retrieval finds, the lines it stands for are what answers.

A symbol card (C1) or entrypoint card (C3) is one synthesized line — `def get_editor(self) -> str` and the
first sentence of the docstring — cited with the whole definition's span. Quoted as the answer it shows none
of the lines that do the work (`os.environ.get("VISUAL")`, the fallback editors), although retrieval ranked
the right definition. A document card (D1) is the page's summary, cited with the whole page: the section that
states the asked-about value or name is often not among the page's chunks retrieval kept (dev, four corpora:
key facts 0.425 -> 0.428, fastapi-ru +0.010, evidence key-fact recall 0.737 -> 0.741). The context_analysis
node reads the rows that overlap each card's span from the index (C0 for definition cards, D0 for document
cards) — only for the cards `analyze` chose to quote — and quotes the best passage inside the span in the
card's place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodes.evidence import EvidenceRow
from stores.layers import Layer
from stores.repository import RagRepository
from stores.sessions import RagSession

SOURCE_OF = {Layer.C1_SYMBOL_CATALOG.value: Layer.C0_SOURCE_CHUNKS.value,
             Layer.C3_ENTRYPOINTS.value: Layer.C0_SOURCE_CHUNKS.value,
             Layer.D1_DOCUMENT_CATALOG.value: Layer.D0_DOC_CHUNKS.value}
"""Card layer → the layer of the verbatim lines it stands for: a symbol or entrypoint card stands for its
definition's source, a document card (a summary of the whole page) for the page's chunks."""
CARD_LAYERS = tuple(SOURCE_OF)
SOURCE_LAYER = Layer.C0_SOURCE_CHUNKS.value
MAX_SOURCES_PER_CARD = 6
"""Source rows kept per definition card, from the top of its span (a long class is chunked by method: its
header, docstring and first methods say what it is)."""
MAX_SECTIONS_PER_DOCUMENT = 24
"""Chunks kept per document card: the passage that answers may sit in any section of the page."""
MAX_FETCHED = 240
"""Source rows read for all chosen cards of one request together (one statement)."""
SOURCE_LANE = "card_source"


def cards(rows: Sequence[EvidenceRow]) -> list[EvidenceRow]:
    """The card rows of the evidence whose span covers more than one line (a one-line card is its source)."""
    return [r for r in rows if r.layer in CARD_LAYERS and r.span_end > r.span_start]


def is_module_card(row: EvidenceRow) -> bool:
    """A module's card summarises the whole file (its docstring's first paragraph and what it defines): only
    the module docstring itself may replace it, never one definition of the file."""
    return (row.metadata or {}).get("kind") == "module"


def card_sources(fetched: Sequence[Mapping[str, Any]], rows: Sequence[EvidenceRow]) -> dict[str, list[EvidenceRow]]:
    """Card id → the fetched source rows that overlap its span, top first (≤ MAX_SOURCES_PER_CARD): rows
    inside it (a long class chunked by method) or around it (a small module chunked whole).

    Args:
        fetched: C0 rows of the cards' files (`RagRepository.retrieve_exact_files`: dicts with id, path,
            layer, title, content, span_start, span_end, metadata).
        rows: The ranked evidence.

    Returns:
        Only cards with at least one source row (a row overlapping several cards goes to the first definition
        card in `rows` order, module cards last); a source row takes its card's lanes and scores (it stands in
        the card's place) plus its rank among the card's sources in the `card_source` lane. Rows already in
        the evidence are not repeated.
    """
    have = {r.id for r in rows}
    out: dict[str, list[EvidenceRow]] = {}
    # Definitions claim their rows before module cards: in a small module chunked whole, one row overlaps both
    # the function's card and the module's, and only the function's card can be quoted by it.
    for card in sorted(cards(rows), key=is_module_card):
        source = SOURCE_OF[card.layer]
        keep = MAX_SECTIONS_PER_DOCUMENT if source != SOURCE_LAYER else MAX_SOURCES_PER_CARD
        inside = sorted(
            (f for f in fetched
             if f["path"] == card.path and f.get("layer") == source and str(f["id"]) not in have
             and int(f.get("span_start") or 0) <= card.span_end and card.span_start <= int(f.get("span_end") or 0)),
            key=lambda f: (int(f["span_start"]), int(f["span_end"]), str(f["id"])),
        )[:keep]
        if inside:
            out[card.id] = [
                EvidenceRow(id=str(f["id"]), path=f["path"], layer=source, title=f.get("title") or "",
                            content=f.get("content") or "", span_start=int(f["span_start"]),
                            span_end=int(f["span_end"]), metadata=dict(f.get("metadata") or {}),
                            lanes={**card.lanes, SOURCE_LANE: i}, scores=dict(card.scores),
                            fused_score=card.fused_score)
                for i, f in enumerate(inside, 1)
            ]
            have.update(r.id for r in out[card.id])
    return out


ReadSources = Callable[[Sequence[EvidenceRow]], Mapping[str, Sequence[EvidenceRow]]]
"""Card rows → `card_sources` of them (one read from the index)."""


def read_card_sources(repository: RagRepository, session: RagSession,
                      rows: Sequence[EvidenceRow]) -> dict[str, list[EvidenceRow]]:
    """`card_sources` of the cards among `rows`, read from the session's active generation (one statement over
    the cards' spans; none without a card)."""
    spans = [(r.path, r.span_start, r.span_end) for r in cards(rows)]
    if not spans:
        return {}
    layers = sorted({SOURCE_OF[r.layer] for r in cards(rows)})
    fetched = repository.retrieve_overlapping(session, spans, layers=layers, limit=MAX_FETCHED)
    return card_sources(fetched, rows)
