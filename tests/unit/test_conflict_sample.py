"""`python -m evals.conflict_sample`: the samples conflict-note precision is measured on (issue 29 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.conflict_sample import main


def sample(root: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> str:
    """Write `files` as the one corpus under `root`, run the sample over it, return what it printed."""
    for rel, text in files.items():
        (root / "c" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "c" / rel).write_text(text, encoding="utf-8")
    assert main(["--corpora-dir", str(root)]) == 0
    return capsys.readouterr().out


def test_a_setting_the_docs_state_like_the_code_is_planted_and_noted(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = sample(tmp_path, capsys, {"docs/cors.md": "* `max_age` - время кэша. По умолчанию `600`.\n",
                                    "pkg/cors.py": "def cors(app, max_age: int = 600):\n    pass\n",
                                    "tests/test_cors.py": "MAX_AGE = 5\n"})
    assert "would-be notes 0" in out and "planted conflicts in real docs noted 1/1" in out
    # and a planted docs line per code setting: agreeing (no note) and disagreeing (a note)
    assert "planted docs lines: 1 settings, false notes 0, conflicts noted 1/1" in out


def test_docs_that_disagree_with_the_code_are_a_would_be_note(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = sample(tmp_path, capsys, {"docs/cors.md": "The `max_age` defaults to `3600`.\n",
                                    "pkg/cors.py": "def cors(app, max_age: int = 600):\n    pass\n",
                                    "pkg/other.py": "def other(max_age=10):\n    pass\n"})
    assert "note: max_age: 3600 (docs/cors.md) ≠ 600 (pkg/cors.py) ≠ 10 (pkg/other.py)" in out


def test_a_missing_corpora_folder_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--corpora-dir", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.startswith("error: corpora folder not found")
