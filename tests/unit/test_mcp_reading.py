"""`stores.reading`: lines rebuilt from verbatim passages, and the input a read refuses before any SQL."""

from __future__ import annotations

import pytest

from stores.errors import UsageError
from stores.reading import MAX_READ_LINES, assemble_lines, check_range, clean_path


def _row(span_start: int, span_end: int, content: str, layer: str = "D0_DOC_CHUNKS", chunk_index: int | None = None):
    return {"layer": layer, "span_start": span_start, "span_end": span_end, "content": content,
            "chunk_index": None if chunk_index is None else str(chunk_index)}


@pytest.mark.parametrize(("rows", "start", "end", "lines", "missing"), [
    # one passage, a slice of it
    ([_row(3, 5, "c\nd\ne")], 4, 5, ["d", "e"], []),
    # two passages with a blank line between them that no passage holds
    ([_row(1, 2, "a\nb"), _row(4, 4, "d")], 1, 4, ["a", "b", "", "d"], [3]),
    # a code chunk starts with a comment naming its class: not a line of the file
    ([_row(10, 11, "# class A(Base)\n    def f(self):\n        pass", "C0_SOURCE_CHUNKS")], 10, 11,
     ["    def f(self):", "        pass"], []),
    # one huge line stored in two character-cut rows of the same span, out of order
    ([_row(7, 7, "world", chunk_index=2), _row(7, 7, "hello ", chunk_index=1)], 7, 7, ["hello world"], []),
    # text shorter than its span is not trusted
    ([_row(1, 3, "only one line")], 1, 3, ["", "", ""], [1, 2, 3]),
    # nothing covers the range
    ([], 5, 6, ["", ""], [5, 6]),
    # overlapping passages agree; the earliest span answers
    ([_row(2, 3, "b\nc"), _row(1, 2, "a\nb")], 1, 3, ["a", "b", "c"], []),
])
def test_assemble_lines(rows, start, end, lines, missing) -> None:
    assert assemble_lines(rows, start, end) == (lines, missing)


@pytest.mark.parametrize(("start", "end", "message"), [
    (0, 3, "start_line must be 1 or more"),
    (-2, 3, "start_line must be 1 or more"),
    (5, 3, "start_line 5 is after end_line 3"),
    (1, MAX_READ_LINES + 1, f"read at most {MAX_READ_LINES} at a time"),
    ("1", 3, "start_line must be a line number"),
    (True, 3, "start_line must be a line number"),
    (1, 2.5, "end_line must be a line number"),
])
def test_check_range_refuses(start, end, message) -> None:
    with pytest.raises(UsageError, match=message) as err:
        check_range(start, end)
    assert "\n" not in str(err.value)


def test_check_range_accepts_the_cap() -> None:
    check_range(1, MAX_READ_LINES)
    check_range(7, 7)


@pytest.mark.parametrize(("path", "root", "expected"), [
    ("docs/a.md", None, "docs/a.md"),
    ("./docs/a.md", None, "docs/a.md"),
    ("docs\\a.md", None, "docs/a.md"),
    ("  docs/a.md ", None, "docs/a.md"),
    ("/srv/repo/docs/a.md", "/srv/repo", "docs/a.md"),
    ("/srv/repo/docs/a.md", "/srv/repo/", "docs/a.md"),
    ("/elsewhere/a.md", "/srv/repo", "elsewhere/a.md"),
])
def test_clean_path(path, root, expected) -> None:
    assert clean_path(path, root) == expected


@pytest.mark.parametrize("path", ["", "   ", "./", "/", "x" * 2000, None])
def test_clean_path_refuses(path) -> None:
    with pytest.raises(UsageError):
        clean_path(path)
