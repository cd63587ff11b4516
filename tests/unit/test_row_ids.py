"""Row ids (`stores/indexing/writer.row_id`): the first half names the row, the second keeps ids unique."""

from __future__ import annotations

from stores.indexing.writer import row_id


def test_the_same_row_orders_the_same_and_stays_unique() -> None:
    a = row_id("C0_SOURCE_CHUNKS", "pkg/a.py", 1, 10, "f", "def f(): pass")
    b = row_id("C0_SOURCE_CHUNKS", "pkg/a.py", 1, 10, "f", "def f(): pass")
    assert a.bytes[:8] == b.bytes[:8] and a != b


def test_any_difference_moves_the_row() -> None:
    base = ("C0_SOURCE_CHUNKS", "pkg/a.py", 1, 10, "f", "def f(): pass")
    for i, changed in enumerate(["D0_DOC_CHUNKS", "pkg/b.py", 2, 11, "g", "def g(): pass"]):
        other = list(base)
        other[i] = changed
        assert row_id(*base).bytes[:8] != row_id(*other).bytes[:8]  # type: ignore[arg-type]
    # parts never run into each other: ("ab", "c") is not ("a", "bc")
    assert row_id("L", "ab", 1, 1, "c", "").bytes[:8] != row_id("L", "a", 1, 1, "bc", "").bytes[:8]


def test_text_postgres_cannot_hold_still_gets_an_id() -> None:
    assert row_id("D0_DOC_CHUNKS", "a.md", 1, 1, "\ud800", "x").bytes
