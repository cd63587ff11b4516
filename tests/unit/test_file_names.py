"""Issue 25, items 2 and 4: file names that are not valid UTF-8, and the size guard of `lotsman index`.

A name such as `caf\\xe9.md` (Latin-1 bytes) reaches Python as `caf\\udce9.md`: encoding it for the blob cache
key raised `UnicodeEncodeError` and aborted the whole job. Such files (and folders) are skipped and listed
under an escaped name that can be stored in the job row and printed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stores.indexing.files import (
    CONFIRM_ABOVE_FILES,
    NON_UTF8_DIR,
    NON_UTF8_FILE,
    collect_files,
    count_candidates,
    escaped_path,
    is_utf8_name,
    needs_confirmation,
    read_source_file,
)

LATIN1_NAME = os.fsdecode(b"caf\xe9.md")


@pytest.mark.parametrize(("name", "escaped"), [
    ("docs/guide.md", "docs/guide.md"),
    ("docs/кафе.md", "docs/кафе.md"),
    (os.fsdecode(b"docs/caf\xe9.md"), "docs/caf\\xe9.md"),
    (os.fsdecode(b"\xff\xfe/x.py"), "\\xff\\xfe/x.py"),
    ("a\ud800b.md", "a\\ud800b.md"),  # a surrogate that did not come from the file system
])
def test_escaped_path(name: str, escaped: str) -> None:
    assert escaped_path(name) == escaped
    assert escaped_path(name).encode("utf-8")  # storable and printable
    assert is_utf8_name(name) == (name == escaped)


def test_a_non_utf8_file_name_is_skipped_with_its_escaped_name(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ok.md").write_text("# ok\n")
    (tmp_path / "docs" / LATIN1_NAME).write_text("# x\n")

    collected = collect_files(tmp_path)

    assert [f.path for f in collected.files] == ["docs/ok.md"]
    assert [(s.path, s.reason) for s in collected.skipped] == [("docs/caf\\xe9.md", NON_UTF8_FILE)]
    json.dumps([s.path for s in collected.skipped]).encode("utf-8")  # the job row stores it


def test_a_non_utf8_folder_is_skipped_once(tmp_path: Path) -> None:
    folder = tmp_path / os.fsdecode(b"d\xe9p\xf4t")
    folder.mkdir()
    for i in range(3):
        (folder / f"f{i}.md").write_text("# x\n")
    (tmp_path / "ok.py").write_text("x = 1\n")

    collected = collect_files(tmp_path)

    assert [f.path for f in collected.files] == ["ok.py"]
    assert [(s.path, s.reason) for s in collected.skipped] == [("d\\xe9p\\xf4t", NON_UTF8_DIR)]


def test_read_source_file_skips_a_non_utf8_name(tmp_path: Path) -> None:
    (tmp_path / LATIN1_NAME).write_text("# x\n")

    got = read_source_file(tmp_path, LATIN1_NAME)

    assert (got.path, getattr(got, "reason", None)) == ("caf\\xe9.md", NON_UTF8_FILE)


@pytest.mark.parametrize(("candidates", "confirmed", "known_root", "ask"), [
    (10, False, False, False),
    (CONFIRM_ABOVE_FILES, False, False, False),
    (CONFIRM_ABOVE_FILES + 1, False, False, True),
    (CONFIRM_ABOVE_FILES + 1, True, False, False),  # --yes
    (CONFIRM_ABOVE_FILES + 1, False, True, False),  # the session was built from this folder already
])
def test_needs_confirmation(candidates: int, confirmed: bool, known_root: bool, ask: bool) -> None:
    assert needs_confirmation(candidates, confirmed=confirmed, known_root=known_root) is ask


def test_count_candidates_counts_what_collect_files_would_vet_and_stops_early(tmp_path: Path) -> None:
    for rel in ("a.md", "b.py", "c.txt", ".hidden.md", "docs/d.markdown", ".git/e.md", "node_modules/f.py",
                "pkg/__pycache__/g.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")

    assert count_candidates(tmp_path, stop_after=100) == 3
    assert count_candidates(tmp_path, stop_after=1) == 2
