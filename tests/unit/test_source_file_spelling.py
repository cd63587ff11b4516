"""An incremental job reads a changed file by the name the walk listed, and only that name: on POSIX a deleted
`back\\slash.md` is "file not found" (its rows go), never the unrelated `back/slash.md` indexed under its name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stores.indexing.files import SkippedFile, SourceFile, read_source_file, source_spelling

posix_only = pytest.mark.skipif(os.sep == "\\", reason="a backslash is a name character on POSIX only")


@pytest.mark.parametrize(("rel", "separator", "spelling"), [
    ("docs/a.md", False, "docs/a.md"),
    ("back\\slash.md", False, "back\\slash.md"),   # POSIX: the name itself, no second guess
    ("back\\slash.md", True, "back/slash.md"),     # Windows: `\\` separates folders
    ("docs/a.md", True, "docs/a.md"),
])
def test_source_spelling(rel: str, separator: bool, spelling: str) -> None:
    assert source_spelling(rel, backslash_separator=separator) == spelling


@posix_only
def test_a_deleted_backslash_name_is_not_read_from_its_slash_twin(tmp_path: Path) -> None:
    (tmp_path / "back").mkdir()
    (tmp_path / "back" / "slash.md").write_text("# another file\n")
    got = read_source_file(tmp_path, "back\\slash.md")
    assert got == SkippedFile("back\\slash.md", "file not found")


@posix_only
def test_a_backslash_name_is_read_as_written(tmp_path: Path) -> None:
    (tmp_path / "back").mkdir()
    (tmp_path / "back" / "slash.md").write_text("# the folder's file\n")
    (tmp_path / "back\\slash.md").write_text("# the named file\n")
    got = read_source_file(tmp_path, "back\\slash.md")
    assert isinstance(got, SourceFile)
    assert (got.path, got.text) == ("back\\slash.md", "# the named file\n")
