"""A symbol card chosen as a passage is quoted by its definition's lines (read from the index beside it)."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.context_analysis.card_sources import MAX_SOURCES_PER_CARD, SOURCE_LANE, card_sources, cards
from nodes.evidence import EvidenceRow

PATH = "click/_termui_impl.py"
CARD = EvidenceRow(id="card", path=PATH, layer="C1_SYMBOL_CATALOG", span_start=694, span_end=709,
                   content="def get_editor(self) -> str\nclick._termui_impl.Editor.get_editor", lanes={"code": 1},
                   scores={"distance": 0.4})
GET_EDITOR = '''    def get_editor(self) -> str:
        if self.editor is not None:
            return self.editor
        for key in "VISUAL", "EDITOR":
            rv = os.environ.get(key)
            if rv:
                return rv
        if WIN:
            return "notepad"
        for editor in "sensible-editor", "vim", "nano":
            if which(editor) is not None:
                return editor
        return "vi"'''


def fetched(rid: str, start: int, end: int, path: str = PATH, layer: str = "C0_SOURCE_CHUNKS",
            content: str = "x") -> dict[str, Any]:
    """A row as `RagRepository.retrieve_exact_files` returns it."""
    return {"id": rid, "path": path, "layer": layer, "title": None, "content": content, "span_start": start,
            "span_end": end, "metadata": None}


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([fetched("inside", 694, 709)], ["inside"]),
        ([fetched("head", 694, 700), fetched("tail", 701, 709)], ["head", "tail"]),
        ([fetched("tail", 701, 709), fetched("head", 694, 700)], ["head", "tail"]),
        ([fetched("outside", 600, 650), fetched("after", 710, 720)], []),
        ([fetched("whole-module", 1, 800)], ["whole-module"]),
        ([fetched("other-file", 694, 709, path="click/termui.py")], []),
        ([fetched("a-card", 694, 709, layer="C1_SYMBOL_CATALOG")], []),
        ([fetched(f"m{i}", 694 + i, 694 + i) for i in range(10)], [f"m{i}" for i in range(MAX_SOURCES_PER_CARD)]),
    ],
    ids=["whole", "two-chunks", "sorted-by-line", "outside", "around", "other-file", "not-source", "capped"],
)
def test_card_sources_are_the_source_rows_that_overlap_the_card_span(rows: list[dict[str, Any]],
                                                                     expected: list[str]) -> None:
    out = card_sources(rows, [CARD])
    assert [r.id for r in out.get("card", [])] == expected


def test_a_source_row_stands_in_the_card_place() -> None:
    [row] = card_sources([fetched("inside", 694, 709)], [CARD])["card"]
    assert row.lanes == {"code": 1, SOURCE_LANE: 1} and row.scores == {"distance": 0.4}
    assert row.layer == "C0_SOURCE_CHUNKS"


def test_rows_already_in_the_evidence_and_one_line_cards_are_not_read_again() -> None:
    source = EvidenceRow(id="inside", path=PATH, layer="C0_SOURCE_CHUNKS", span_start=694, span_end=709)
    one_line = CARD.model_copy(update={"id": "short", "span_end": 694})
    assert card_sources([fetched("inside", 694, 709)], [CARD, source]) == {}
    assert cards([one_line, source]) == []


MODULE = EvidenceRow(id="mod", path="click/formatting.py", layer="C1_SYMBOL_CATALOG", span_start=1, span_end=20,
                     content="module click.formatting\nDefines: HelpFormatter, wrap_text", metadata={"kind": "module"})
HELP_PY = '''def dedent(self) -> None:
    """Decreases the indentation."""
    self.current_indent -= self.indent_increment'''


@pytest.mark.parametrize("module_first", [True, False], ids=["module-card-ranked-first", "function-card-first"])
def test_a_row_two_cards_share_goes_to_the_definition_whatever_their_order(module_first: bool) -> None:
    module = MODULE.model_copy(update={"path": PATH, "span_start": 1, "span_end": 800})
    whole = [fetched("whole-module", 1, 800, content="import os\n\n" + GET_EDITOR)]
    out = card_sources(whole, [module, CARD] if module_first else [CARD, module])
    assert [r.id for r in out["card"]] == ["whole-module"] and "mod" not in out
