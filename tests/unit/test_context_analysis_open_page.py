"""context_analysis: the page retrieval ranks first, held in the evidence only by its card, has its sections read
and competing for the answer (issue 29: the README demo answer led with a lexical near-miss of another file)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nodes.context_analysis import analyze
from nodes.context_analysis.analyze import OPEN_WITHIN_ROWS, page_to_open
from nodes.evidence import EvidenceRow

CARD, SECTION, EDGE, FACT, SOURCE = (
    "D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS", "D5_RELATION_GRAPH", "D2_FACT_INDEX", "C0_SOURCE_CHUNKS")


def row(rid: str, path: str, layer: str, start: int = 1, end: int = 40, content: str = "text",
        **extra: Any) -> EvidenceRow:
    return EvidenceRow(id=rid, path=path, layer=layer, content=content, span_start=start, span_end=end, **extra)


PAGE, OTHER = "docs/guide/policy.md", "docs/notes/timing.md"


@pytest.mark.parametrize(("rows", "opened"), [
    pytest.param([], None, id="no evidence"),
    pytest.param([row("c", PAGE, CARD), row("o", OTHER, SECTION)], "c", id="card first, no section of its page"),
    pytest.param([row("e", PAGE, EDGE, 3, 3), row("f", PAGE, FACT, 9, 9), row("c", PAGE, CARD)], "c",
                 id="card behind its own page's edge and fact"),
    pytest.param([row("e", PAGE, EDGE, 3, 3), row("o", OTHER, SECTION), row("c", PAGE, CARD)], "c",
                 id="card third, its page still first"),
    pytest.param([row("e", PAGE, EDGE, 3, 3), row("o", OTHER, SECTION), row("f", PAGE, FACT, 9, 9),
                  row("c", PAGE, CARD)], None, id="card below the first rows"),
    pytest.param([row("c", PAGE, CARD), row("s", PAGE, SECTION, 10, 20)], None,
                 id="a section of the page is in the evidence"),
    pytest.param([row("c", PAGE, CARD), row("o", OTHER, SECTION), row("s", PAGE, SECTION, 10, 20)], None,
                 id="a section of the page further down"),
    pytest.param([row("c", PAGE, CARD), row("o", OTHER, SECTION),
                  row("s", PAGE, SECTION, 10, 20, metadata={"evidence_fill": True})], "c",
                 id="only the pack's fill added a section of the page"),
    pytest.param([row("o", OTHER, SECTION), row("c", PAGE, CARD)], None, id="the card of the second file"),
    pytest.param([row("c", PAGE, CARD, 1, 1)], None, id="a one-line card is its own text"),
    pytest.param([row("k", "pkg/mod.py", "C1_SYMBOL_CATALOG", 5, 30), row("o", OTHER, SECTION)], None,
                 id="a symbol card is read only once chosen"),
    pytest.param([row("x", "pkg/mod.py", SOURCE, 5, 30), row("c", PAGE, CARD)], None, id="code first"),
])
def test_page_to_open(rows: list[EvidenceRow], opened: str | None) -> None:
    assert OPEN_WITHIN_ROWS == 3
    found = page_to_open(rows)
    assert (found.id if found is not None else None) == opened


POLICY_SECTIONS = [
    ("s1", 12, 14, "## Назначение\n\nPolicy превращает маршрут в план поиска без LLM и без I/O."),
    ("s2", 16, 20, "## Основной сценарий\n\n1. Resolver выбирает ветку по intent.\n"
                   "2. Ровно один сигнал выбирает профиль поиска; ноль или несколько → generic профиль.\n"
                   "3. Профиль задаёт слои и лимит."),
]
TIMING = ("## Замер\n\nПрофиль по времени (cProfile): поиск 850 мс, маршрут 380 мс, на вопрос про старт "
          "уходит почти всё время загрузки модели.")


class FakeSections:
    """The index's sections of a card (`read_card_sources`), counting the reads."""

    def __init__(self) -> None:
        self.reads: list[list[str]] = []

    def __call__(self, cards: Sequence[EvidenceRow]) -> dict[str, list[EvidenceRow]]:
        self.reads.append([c.id for c in cards])
        return {c.id: [row(rid, c.path, SECTION, start, end, text, lanes={**c.lanes, "card_source": i})
                       for i, (rid, start, end, text) in enumerate(POLICY_SECTIONS, 1)]
                for c in cards if c.path == PAGE}


def _evidence() -> list[EvidenceRow]:
    return [row("card", PAGE, CARD, 1, 60, "Policy: маршрут → план.", title="Policy", lanes={"exact": 1}),
            row("timing", OTHER, SECTION, 30, 33, TIMING, lanes={"lexical": 2}),
            row("edge", PAGE, EDGE, 5, 5, "policy —related_doc→ plan", lanes={"exact": 2})]


QUESTION = "Как выбирается профиль поиска?"


def test_first_page_sections_lead_when_only_its_card_was_retrieved() -> None:
    reader = FakeSections()
    result = analyze(QUESTION, [], _evidence(), True, sources=reader)
    lead = result.spans[0]
    assert lead.path == PAGE, [(s.path, s.start_line, s.text) for s in result.spans]
    assert "Ровно один сигнал выбирает профиль" in lead.text and 16 <= lead.start_line <= 19
    assert reader.reads[0] == ["card"] and len(reader.reads) <= 2  # one read for the page, at most one more
    assert "s2" in result.expanded  # the quoted section joins the evidence its citation is checked against


def test_without_a_reader_the_card_competes_as_before() -> None:
    result = analyze(QUESTION, [], _evidence(), True)
    assert result.spans[0].path == OTHER  # the near-miss the read is there to beat
