"""The evidence pack (`nodes/context_retrieval/pack.py`): the cap's room after the core, filled with further
candidates trimmed to the lines that name the request's key terms."""

from __future__ import annotations

import pytest

from nodes.context_retrieval.gate import row_tokens
from nodes.context_retrieval.pack import (
    FILL_MARK,
    card_spans,
    covered,
    fill_budget,
    fill_order,
    source_rows,
    term_hits,
    term_stems,
    trim_to_window,
)
from nodes.evidence import EvidenceRow


def ev(rid: str, path: str, content: str, start: int = 1, end: int | None = None, layer: str = "D0_DOC_CHUNKS",
       title: str = "") -> EvidenceRow:
    end = end if end is not None else start + content.count("\n")
    return EvidenceRow(id=rid, path=path, layer=layer, title=title, content=content, span_start=start, span_end=end)


FILLER = [f"line {i} about nothing in particular" for i in range(40)]
LONG = "\n".join([*FILLER[:20], "timeout defaults to five seconds", "retry the request", *FILLER[20:]])


@pytest.mark.parametrize(("row", "terms", "max_chars", "content", "span"), [
    # short rows are kept whole
    (ev("s", "a.md", "one\ntwo", 10), ["timeout"], 100, "one\ntwo", (10, 11)),
    # a long passage keeps the window naming the key terms, its span narrowed to those lines
    (ev("l", "a.md", LONG, 100), ["timeout", "retry"], 80, "timeout defaults to five seconds\nretry the request",
     (120, 121)),
    # no key term anywhere: the first lines that fit, span narrowed
    (ev("n", "a.md", "aaaa\nbbbb\ncccc\ndddd", 5), ["zzz"], 10, "aaaa\nbbbb", (5, 6)),
    # a source chunk's context line (more lines than its span) stays on top of the window
    (ev("c", "m.py", "# class K (continued)\nx = 1\ny = 2\ntimeout = 5\nz = 3", 40, 43, "C0_SOURCE_CHUNKS"),
     ["timeout"], 40, "# class K (continued)\ny = 2\ntimeout = 5", (41, 42)),
    # a card (fewer lines than its span) keeps its head and its span
    (ev("k", "m.py", "def f(a, b): timeout handling " * 5, 1, 80, "C1_SYMBOL_CATALOG"), ["timeout"], 20,
     "def f(a, b): timeout", (1, 80)),
    # one line longer than the room is cut
    (ev("w", "a.md", "x" * 50 + "\n" + "y" * 50, 1), ["timeout"], 20, "x" * 20, (1, 2)),
])
def test_trim_to_window(row: EvidenceRow, terms: list[str], max_chars: int, content: str,
                        span: tuple[int, int]) -> None:
    out = trim_to_window(row, term_stems(terms), max_chars)
    assert (out.content, (out.span_start, out.span_end)) == (content, span)
    assert len(out.content) <= max(max_chars, len(row.content) if len(row.content) <= max_chars else 0)


def test_term_hits_reads_snake_case_parts_and_stems() -> None:
    row = ev("r", "a.py", "MAX_RETRIES = 3  # retrying connections")
    assert term_hits(row, term_stems(["retries", "connection", "proxy"])) == 2


CORE = [ev("c1", "docs/a.md", "intro to a", 1), ev("c2", "docs/b.md", "intro to b", 1)]
A_PLAIN = ev("a2", "docs/a.md", "more about a", 10)
A_TERMS = ev("a3", "docs/a.md", "the timeout of a", 20)
OTHER = ev("o1", "docs/z.md", "timeout elsewhere", 1)


@pytest.mark.parametrize(("files", "expected"), [
    (3, ["a3", "a2", "o1"]),   # the core's files first, the rows naming more key terms first
    (0, ["o1", "a2", "a3"]),   # no file preference: rank order
])
def test_fill_order(files: int, expected: list[str]) -> None:
    candidates = [*CORE, OTHER, A_PLAIN, A_TERMS]
    assert [r.id for r in fill_order(CORE, candidates, term_stems(["timeout"]), files)] == expected


@pytest.mark.parametrize(("row", "is_covered"), [
    (ev("card", "m.py", "def f()", 12, 14, "C1_SYMBOL_CATALOG"), True),   # its passage is in the pack
    (ev("card2", "m.py", "def g()", 30, 40, "C1_SYMBOL_CATALOG"), False),  # lines outside the passage
    (ev("card3", "n.py", "def f()", 12, 14, "C1_SYMBOL_CATALOG"), False),  # another file
])
def test_a_row_whose_lines_a_passage_in_the_pack_spans_is_covered(row: EvidenceRow, is_covered: bool) -> None:
    pack = [ev("p", "m.py", "\n".join(["x"] * 20), 10, 29, "C0_SOURCE_CHUNKS")]
    assert covered(row, pack) is is_covered


def test_fill_budget_keeps_the_core_first_and_stays_within_the_cap() -> None:
    core = [ev("c1", "docs/a.md", "a" * 300, 1)]
    candidates = [*core, *(ev(f"r{i}", f"docs/r{i}.md", "timeout\n" * 60, 1) for i in range(10))]
    cap = 700
    pack = fill_budget(core, candidates, cap, ["timeout"], window_chars=200)
    assert pack[0] == core[0] and len(pack) > 1
    assert sum(row_tokens(r) for r in pack) <= cap
    assert all(r.metadata[FILL_MARK] and len(r.content) <= 200 for r in pack[1:])


def test_fill_budget_keeps_the_first_files_rows_whole() -> None:
    """The lines that answer in a long definition of the best file seldom name the key terms."""
    core = [ev("c1", "m.py", "def confirm(text):", 1, 1, "C1_SYMBOL_CATALOG"), ev("c2", "n.py", "x = 1", 1)]
    body = "\n".join(["    # timeout handling", *(f"    rv = step({i})" for i in range(40)), '    echo("y/N")'])
    first, other = ev("s1", "m.py", body, 2), ev("s2", "n.py", body, 2)
    pack = fill_budget(core, [*core, first, other], 4096, ["timeout"], window_chars=200, whole_files=1)
    by_id = {r.id: r for r in pack}
    assert by_id["s1"].content == body and '"y/N"' in by_id["s1"].content  # the first file's row, whole
    assert len(by_id["s2"].content) <= 200  # another file's row, its window
    pack = fill_budget(core, [*core, first, other], 4096, ["timeout"], window_chars=200, whole_files=0)
    assert all(len(r.content) <= 200 for r in pack[2:])


def test_a_first_file_row_too_long_for_the_room_left_keeps_its_largest_window() -> None:
    """Dropping it lost the lines that answer exactly for the long definitions whole rows are kept for."""
    core = [ev("c1", "m.py", "def f(timeout):", 1, 1, "C1_SYMBOL_CATALOG"), ev("d1", "n.py", "x" * 6000, 1)]
    body = "\n".join([*(f"    rv = step({i})" for i in range(300)), "    timeout = 30"])
    pack = fill_budget(core, [*core, ev("s1", "m.py", body, 2)], 3000, ["timeout"], window_chars=200)
    assert [r.id for r in pack] == ["c1", "d1", "s1"]
    assert "timeout = 30" in pack[2].content and 200 < len(pack[2].content) < len(body)
    assert sum(row_tokens(r) for r in pack) <= 3000


def test_fill_budget_skips_a_card_whose_passage_is_in_the_pack() -> None:
    passage = ev("p", "m.py", "\n".join(["x = 1"] * 20), 10, 29, "C0_SOURCE_CHUNKS")
    card = ev("card", "m.py", "def f()", 12, 14, "C1_SYMBOL_CATALOG")
    other = ev("o", "n.py", "def g()", 1, 3, "C1_SYMBOL_CATALOG")
    assert [r.id for r in fill_budget([passage], [passage, card, other], 4096, ["f"])] == ["p", "o"]


@pytest.mark.parametrize("core", [[], [ev("c1", "docs/a.md", "a" * 3000, 1)]])
def test_fill_budget_adds_nothing_to_an_empty_or_full_core(core: list[EvidenceRow]) -> None:
    assert fill_budget(core, [*core, OTHER], 1000, ["timeout"]) == core


@pytest.mark.parametrize(("rows", "spans"), [
    ([ev("k", "m.py", "def f()", 10, 30, "C1_SYMBOL_CATALOG")], [("m.py", 10, 30)]),
    ([ev("e", "m.py", "cli run → m.main", 40, 60, "C3_ENTRYPOINTS")], [("m.py", 40, 60)]),
    ([ev("one", "m.py", "X = 1", 5, 5, "C1_SYMBOL_CATALOG")], []),          # a one-line card is its source
    ([ev("mod", "m.py", "module m", 1, 900, "C1_SYMBOL_CATALOG")], []),     # a whole module: too long
    ([ev("p", "m.py", "x = 1\ny = 2", 1, 2, "C0_SOURCE_CHUNKS")], []),       # a passage is no card
    ([ev("d", "a.md", "Page\nSummary", 1, 40, "D1_DOCUMENT_CATALOG")], []),  # nor a document card
])
def test_card_spans(rows: list[EvidenceRow], spans: list[tuple[str, int, int]]) -> None:
    assert card_spans(rows) == spans


def fetched(rid: str, layer: str = "C0_SOURCE_CHUNKS") -> dict[str, object]:
    return {"id": rid, "path": "m.py", "layer": layer, "title": "m.f", "content": "TIMEOUT = 5", "span_start": 12,
            "span_end": 14, "metadata": {"qname": "m.f"}}


def test_source_rows_skips_known_and_non_source_rows() -> None:
    rows = source_rows([fetched("s1"), fetched("known"), fetched("s1"), fetched("d", "D0_DOC_CHUNKS")],
                       [ev("known", "m.py", "x", 1)])
    assert [(r.id, r.layer, r.span_start, r.span_end, r.lanes) for r in rows] == [
        ("s1", "C0_SOURCE_CHUNKS", 12, 14, {"card_source": 1})]


def test_a_source_row_carries_the_provenance_of_the_card_it_stands_for() -> None:
    card = ev("card", "m.py", "def f()", 10, 30, "C1_SYMBOL_CATALOG").model_copy(
        update={"lanes": {"code": 2, "semantic": 5}, "scores": {"learned": 1.5}, "fused_score": 0.04})
    elsewhere = ev("far", "m.py", "def g()", 40, 60, "C1_SYMBOL_CATALOG")
    rows = source_rows([fetched("s1"), fetched("s2")], [card, elsewhere], [card, elsewhere])
    assert [(r.lanes, r.scores, r.fused_score) for r in rows] == [
        ({"code": 2, "semantic": 5, "card_source": 1}, {"learned": 1.5}, 0.04),
        ({"code": 2, "semantic": 5, "card_source": 2}, {"learned": 1.5}, 0.04)]
