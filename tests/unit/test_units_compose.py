"""Issue 38, item 4: the answer is composed from the pack's scored units (pure decisions, table-driven)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nodes.context_analysis.analyze import SCREEN_LINES, file_line
from nodes.context_analysis.models import Span
from nodes.context_analysis.units import MAX_SUPPORTING, choose_units, quote_margin, unit_passages
from nodes.context_retrieval.learned_ranker import LearnedRanker
from nodes.context_retrieval.units import UNIT_SCORES, Unit, UnitScorer, with_unit_scores
from nodes.evidence import EvidenceRow


def unit(path: str, start: int, score: float, end: int | None = None, text: str | None = None) -> Span:
    return Span(path=path, start_line=start, end_line=end or start, text=text or f"{path}:{start}", row_id=path,
                score=score)


def ranked(*units: Span) -> list[Span]:
    return sorted(units, key=lambda u: -u.score)


RANK = {"a.md": 1, "b.md": 2, "c.md": 3}


@pytest.mark.parametrize(("units", "margin", "quoted"), [
    # the scorer's best unit leads, whatever its file's rank (the scorer weighs the rank among its features)
    (ranked(unit("b.md", 5, 3.0), unit("a.md", 40, 1.0), unit("a.md", 9, 0.5)), None, [("b.md", 5, 5)]),
    # a tie goes to the better-ranked file
    (ranked(unit("c.md", 7, 2.0), unit("a.md", 40, 2.0)), None, [("a.md", 40, 40)]),
    # within the margin of the best unit: quoted after the lead, best first
    (ranked(unit("b.md", 5, 3.0), unit("a.md", 40, 1.0), unit("c.md", 7, 2.5)), 2.0,
     [("b.md", 5, 5), ("c.md", 7, 7), ("a.md", 40, 40)]),
    # below the margin: left out
    (ranked(unit("b.md", 5, 3.0), unit("a.md", 40, 1.0), unit("c.md", 7, 2.5)), 1.0,
     [("b.md", 5, 5), ("c.md", 7, 7)]),
    # a unit next to a quote (one line apart) joins it
    (ranked(unit("a.md", 40, 3.0), unit("a.md", 42, 2.9), unit("a.md", 50, 2.8)), 1.0,
     [("a.md", 40, 42), ("a.md", 50, 50)]),
    # at most MAX_SUPPORTING quotes after the lead
    (ranked(*(unit("c.md", 10 * k, 2.0 - k / 100) for k in range(1, 9))), 10.0,
     [(("c.md", 10 * k, 10 * k)) for k in range(1, MAX_SUPPORTING + 2)]),
    ([], 1.0, []),
], ids=["lead-is-the-best-unit", "tie-to-the-better-file", "within-margin", "below-margin", "adjacent-joined",
        "max-quotes", "no-units"])
def test_choose_units(units: list[Span], margin: float | None, quoted: list[tuple[str, int, int]]) -> None:
    chosen, pool = choose_units(units, RANK, margin)
    assert [(s.path, s.start_line, s.end_line) for s in chosen] == quoted
    assert pool[: len(chosen)] == chosen and len(pool) >= len(chosen)


@pytest.mark.parametrize(("meta", "margin"), [
    ({"quote_margin": 1.5}, 1.5), ({}, None), ({"quote_margin": True}, None), ({"quote_margin": "2"}, None),
], ids=["shipped", "absent", "bool", "text"])
def test_the_quote_margin_is_the_models(meta: dict[str, Any], margin: float | None) -> None:
    scorer = UnitScorer(LearnedRanker(trees=(), features=(), prior_weight=0.0, meta=meta))
    assert quote_margin(scorer) == margin


def row(rid: str, path: str, content: str, start: int, layer: str = "D0_DOC_CHUNKS", **meta: Any) -> EvidenceRow:
    return EvidenceRow(id=rid, path=path, layer=layer, content=content, span_start=start,
                       span_end=start + content.count("\n"), metadata=meta)


def test_a_unit_two_rows_hold_is_one_passage_with_its_best_score_and_its_section() -> None:
    doc = "## Pilot boat\n\nThe boat waits 45 minutes."
    a = row("a", "g.md", doc, 10, **{UNIT_SCORES: [[12, 12, 0.5, "sentence", "The boat waits 45 minutes."]]})
    b = row("b", "g.md", doc, 10, **{UNIT_SCORES: [[12, 12, 0.9, "sentence", "The boat waits 45 minutes."]]})
    code = row("c", "h.py", "def wait(self):\n    return 45", 3, layer="C0_SOURCE_CHUNKS",
               **{UNIT_SCORES: [[4, 4, 0.7, "statement", "    return 45"]]})
    got = unit_passages([a, b, code])
    assert [(u.row_id, u.start_line, u.score, u.section, u.code) for u in got] == [
        ("b", 12, 0.9, "Pilot boat", False), ("c", 4, 0.7, "wait", True)]


@pytest.mark.parametrize(("span", "card_end", "lines"), [
    (Span(path="p.md", start_line=100, end_line=101, text="two lines", row_id="r"), 300, (100, 101)),
    (None, 30, (1, 30)),  # a card shorter than a screen: its whole span
    (None, 167, (1, SCREEN_LINES)),  # a longer one: its first screen, never `1-167`
], ids=["best-unit", "short-card-whole", "long-card-first-screen"])
def test_a_files_line_is_its_best_unit_and_a_whole_file_only_under_a_screen(
        span: Span | None, card_end: int, lines: tuple[int, int]) -> None:
    card = EvidenceRow(id="card", path="p.md", layer="D1_DOCUMENT_CATALOG", content="Contributing guide",
                       span_start=1, span_end=card_end, title="Contributing")
    reason, start, end = file_line(span, card, "Contributing")
    assert (start, end) == lines and reason


def test_each_pack_row_carries_the_scored_units_it_holds() -> None:
    units = [Unit(row=0, path="g.md", layer="D0_DOC_CHUNKS", kind="sentence", start=2, end=2, text="Two."),
             Unit(row=0, path="g.md", layer="D0_DOC_CHUNKS", kind="sentence", start=9, end=9, text="Nine.")]
    core = row("r", "g.md", "One.\nTwo.\nThree.", 1)
    other = row("o", "x.md", "Two.", 2)
    out = with_unit_scores([core, other], units, np.array([0.25, 1.0]))
    assert out[0].metadata[UNIT_SCORES] == [[2, 2, 0.25, "sentence", "Two."]]  # line 9 lies outside its span
    assert UNIT_SCORES not in out[1].metadata  # another file


def test_a_card_unit_is_a_passage_quoted_as_text_under_its_title() -> None:
    card = "GET /heroes/{hero_id} → app.main.read_hero\nauth: get_current_user"
    c3 = row("k", "app/main.py", card, 30, layer="C3_ENTRYPOINTS",
             **{UNIT_SCORES: [[30, 31, 2.0, "card", card]]}).model_copy(update={"title": "GET /heroes/{hero_id}"})
    code = row("c", "app/main.py", "def read_hero(hero_id: int):\n    return db.get(hero_id)", 32,
               layer="C0_SOURCE_CHUNKS", **{UNIT_SCORES: [[33, 33, 1.0, "statement", "    return db.get(hero_id)"]]})
    got = unit_passages([code, c3])
    assert [(u.row_id, u.kind, u.code, u.section, u.start_line, u.end_line) for u in got] == [
        ("k", "card", False, "GET /heroes/{hero_id}", 30, 31), ("c", "source", True, "read_hero", 33, 33)]
    chosen, _ = choose_units(got, {"app/main.py": 1}, None)
    assert chosen[0].text == card


@pytest.mark.parametrize(("text", "navigation"), [
    ("{* ../../docs_src/cors/tutorial001.py hl[2,6:11] *}", True),
    ('--8<-- "docs_src/app.py"', True),
    ("/// tip | Подсказка", True),
    ('!!! note "Heads up"', True),
    ("[![CI](https://x/badge.svg)](https://x/actions) ![PyPI](https://x/pypi.svg)", True),
    ('<script src="https://widget.example/embed.js"></script>', False),  # a snippet to paste is an answer
    ("| [CORS](tutorial/cors.md) | CORS middleware |", True),
    ("Смотрите также [HTML](html.md), [Потоки](stream.md) и [JSON](json.md).", True),
    ("The default max_age is 600 seconds.", False),
    ("Set `allow_origins` as described in [the guide](cors.md) before you deploy the service.", False),
    ("| `max_age` | `600` | how long browsers cache the preflight |", False),
])
def test_navigation_and_markup_are_not_quotable(text: str, navigation: bool) -> None:
    from nodes.context_analysis.units import boilerplate

    assert boilerplate(text) is navigation


def test_an_include_line_glued_to_a_sentence_is_trimmed_off_with_its_line() -> None:
    from nodes.context_analysis.units import _trim_markup

    text = "{* ../../docs_src/cors/tutorial001.py *}\nThe default max_age is 600 seconds."
    assert _trim_markup(10, 11, text) == (11, 11, "The default max_age is 600 seconds.")
    assert _trim_markup(10, 10, "one line") == (10, 10, "one line")
