"""Issue 14, item 11: without the fastapi-ru corpus the corpus tests fail in CI and skip loudly elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/integration/test_fastapi_corpus_parsing.py::test_fastapi_ru_docs_parse_into_sensible_rows"


def run_without_corpus(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "LOTSMAN_FASTAPI_CORPUS")}
    base.update(LOTSMAN_FASTAPI_CORPUS=str(tmp_path / "no-corpus"), LOTSMAN_FASTAPI_ASSEMBLE=str(tmp_path / "none"))
    base.update(env)
    # Its own --basetemp: a nested pytest would otherwise reset /tmp/pytest-of-<user> to mode 0700 and lock
    # the embedded server's `pgserver` user out of data dirs other tests keep there.
    cmd = [sys.executable, "-m", "pytest", "-q", "--basetemp", str(tmp_path / "basetemp"), TARGET]
    return subprocess.run(cmd, capture_output=True, text=True, env=base, cwd=ROOT, timeout=300)


def test_ci_fails_without_the_corpus(tmp_path: Path) -> None:
    proc = run_without_corpus(tmp_path, CI="true")
    assert proc.returncode != 0, proc.stdout
    assert "corpus tests must run" in proc.stdout


def test_elsewhere_the_skip_is_one_loud_summary_line(tmp_path: Path) -> None:
    proc = run_without_corpus(tmp_path)
    assert proc.returncode == 0, proc.stdout
    loud = [line for line in proc.stdout.splitlines() if line.startswith("WARNING: 1 tests SKIPPED")]
    assert len(loud) == 1, proc.stdout
    assert "LOTSMAN_FASTAPI_CORPUS" in loud[0] and "assemble" in loud[0]
