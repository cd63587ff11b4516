"""Issue 25, items 2 and 4, through the real CLI: names that are not valid UTF-8, and folders far too large.

2. `printf '# x\\n' > $'n/caf\\xe9.md'` made `lotsman index` exit 1 (`unexpected UnicodeEncodeError`), and every
   incremental run of the session after it failed the same way until the file was renamed.
4. `lotsman index /usr` started on 21k files without a word; above `CONFIRM_ABOVE_FILES` candidates it now
   refuses with one line (exit 6, nothing indexed) unless `--yes` is given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from stores.indexing.files import CONFIRM_ABOVE_FILES

LATIN1_NAME = os.fsdecode(b"caf\xe9.md")


def test_a_non_utf8_file_name_is_skipped_and_incremental_runs_keep_working(lotsman, tmp_path: Path,
                                                                           session_name: str) -> None:
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "ok.md").write_text("# Ok\n\nA page about the harbour pilot.\n")
    (tmp_path / "n" / LATIN1_NAME).write_text("# x\n")

    first = lotsman("index", str(tmp_path), "--session", session_name, LOTSMAN_EMBEDDER="fake")

    assert first.returncode == 0, first.stderr
    assert "skipped n/caf\\xe9.md: file name is not valid UTF-8" in first.stdout
    assert "1 indexed" in first.stdout

    (tmp_path / "n" / "more.md").write_text("# More\n\nAnother page.\n")
    second = lotsman("index", str(tmp_path), "--session", session_name, "--json", LOTSMAN_EMBEDDER="fake")

    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["kind"] == "changes" and report["files_indexed"] == 1
    assert {"path": "n/caf\\xe9.md", "reason": "file name is not valid UTF-8: rename it to index it"} in report[
        "skipped"]

    listed = lotsman("sessions", "--json")
    [row] = [r for r in json.loads(listed.stdout) if r["name"] == session_name]
    assert row["last_job"]["status"] == "done" and row["rows"] > 0


def test_a_folder_with_too_many_files_is_refused_without_yes(lotsman, tmp_path: Path, session_name: str) -> None:
    big = tmp_path / "big"
    big.mkdir()
    for i in range(CONFIRM_ABOVE_FILES + 1):
        (big / f"m{i}.py").touch()  # empty: counted as candidates, skipped (cheaply) if ever indexed

    refused = lotsman("index", str(big), "--session", session_name, LOTSMAN_EMBEDDER="fake")

    assert refused.returncode == 6, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--yes" in lines[0], refused.stderr
    assert refused.stdout == ""
    listed = lotsman("sessions", "--json")
    assert session_name not in {r["name"] for r in json.loads(listed.stdout)}  # nothing indexed, not even a row

    accepted = lotsman("index", str(big), "--session", session_name, "--yes", LOTSMAN_EMBEDDER="fake")

    assert accepted.returncode == 0, accepted.stderr
    assert f"0 skipped, {CONFIRM_ABOVE_FILES + 1} empty .py files" in accepted.stdout
    # The session's own folder is accepted from now on: its incremental runs need no --yes.
    again = lotsman("index", str(big), "--session", session_name, LOTSMAN_EMBEDDER="fake")
    assert again.returncode == 0, again.stderr
    lotsman("sessions", "--delete", session_name)


def test_a_root_whose_name_is_not_utf8_is_one_line(lotsman, tmp_path: Path, session_name: str) -> None:
    """The session stores its root as text: such a root is refused (exit 6) with its escaped name."""
    root = tmp_path / os.fsdecode(b"r\xe9po")
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n\ntext\n")

    proc = lotsman("index", str(root), "--session", session_name, LOTSMAN_EMBEDDER="fake")

    assert proc.returncode == 6, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "r\\xe9po" in lines[0] and "not valid UTF-8" in lines[0], proc.stderr
