"""Issue 37, newcomer item: `lotsman index` listed every empty `__init__.py` as a skipped file.

Empty (or whitespace-only) `.py` files are normal (package markers): the report counts them on its summary
line (`N empty .py files`, JSON `files_empty`, `-v` lists them) instead of a `skipped …: empty file` line
each. An empty `.md` page is still listed. What a diff does with them does not change: a module emptied
mid-edit keeps its last rows, like any file that cannot be indexed.
"""

from __future__ import annotations

import json
from pathlib import Path


def _repo(root: Path) -> Path:
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "\n\n",
        "pkg/tools.py": "def harbour_pilot():\n    return 'ladder'\n",
        "docs/guide.md": "# Guide\n\nThe harbour pilot boards by the ladder.\n",
        "docs/blank.md": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_empty_modules_are_counted_not_listed_as_skipped(lotsman, tmp_path: Path, session_name: str) -> None:
    root = _repo(tmp_path / "repo")

    done = lotsman("index", str(root), "--session", session_name, LOTSMAN_EMBEDDER="fake")

    assert done.returncode == 0, done.stderr
    # before: "skipped pkg/__init__.py: empty file" and "skipped pkg/sub/__init__.py: empty file (whitespace only)"
    assert "__init__.py" not in done.stdout, done.stdout
    assert "5 files seen, 2 indexed, 0 unchanged, 0 deleted, 1 skipped, 2 empty .py files" in done.stdout
    assert "skipped docs/blank.md: empty file" in done.stdout  # an empty page is still worth a line

    noop = lotsman("index", str(root), "--session", session_name, LOTSMAN_EMBEDDER="fake")
    assert noop.returncode == 0, noop.stderr
    assert "nothing changed since the last index job" in noop.stdout
    assert "5 files seen, 0 indexed, 2 unchanged, 0 deleted, 1 skipped, 2 empty .py files" in noop.stdout
    assert "__init__.py" not in noop.stdout

    verbose = lotsman("-v", "index", str(root), "--session", session_name, "--full", LOTSMAN_EMBEDDER="fake")
    assert verbose.returncode == 0, verbose.stderr
    assert "empty pkg/__init__.py" in verbose.stdout and "empty pkg/sub/__init__.py" in verbose.stdout

    (root / "pkg/tools.py").write_text("")  # emptied: counted as empty, and its old rows go (a4c29dc)
    (root / "docs/guide.md").write_text("# Guide\n\nThe harbour pilot boards by the ladder on the lee side.\n")
    diff = lotsman("index", str(root), "--session", session_name, "--json", LOTSMAN_EMBEDDER="fake")
    assert diff.returncode == 0, diff.stderr
    report = json.loads(diff.stdout)
    assert report["kind"] == "changes" and report["files_empty"] == 3 and report["files_indexed"] == 1
    assert report["skipped"] == [{"path": "docs/blank.md", "reason": "empty file"}]
    found = lotsman("retrieve", "harbour_pilot", "--session", session_name, "--json", LOTSMAN_EMBEDDER="fake")
    assert found.returncode == 0, found.stderr
    # an emptied module no longer answers with lines it does not have (review of issue 37, finding 17)
    assert "pkg/tools.py" not in {row["path"] for row in json.loads(found.stdout)["rows"]}
