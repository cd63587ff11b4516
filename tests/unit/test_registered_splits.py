"""The twin rule over the registered datasets, with no corpus (issue 41 item 5): `make test` in a fresh clone
fails when a dev case twins a held-out case, or when an id or a question is in both splits of a corpus. The
integration check of the datasets (`tests/integration/test_datasets_valid.py`) needs the assembled corpora
and skips without them; this one reads only the dataset files."""

from __future__ import annotations

import sys

import pytest

from evals import holdout, runner
from evals.suites import REPO_ROOT, SUITES

sys.path.insert(0, str(REPO_ROOT / "evals" / "datasets"))
import check_dataset  # noqa: E402

SPLIT = [s for s in SUITES.values() if s.holdout]


def test_there_are_registered_held_out_splits() -> None:
    assert SPLIT and all((REPO_ROOT / s.dev).is_file() and (REPO_ROOT / s.holdout).is_file() for s in SPLIT)


def test_no_dev_case_twins_a_held_out_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_dataset.main(["--twins"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("suite", SPLIT, ids=lambda s: s.name)
def test_dev_and_held_out_share_no_id_and_no_question(suite) -> None:  # noqa: ANN001
    dev, held = REPO_ROOT / suite.dev, REPO_ROOT / str(suite.holdout)
    assert not set(holdout.dataset_ids(dev)) & set(holdout.dataset_ids(held))
    assert not holdout.dataset_questions(dev) & holdout.dataset_questions(held)


@pytest.mark.parametrize("suite", list(SUITES.values()), ids=lambda s: s.name)
def test_every_dev_split_is_dev_and_every_held_out_split_held_out(suite) -> None:  # noqa: ANN001
    """No dev set shares a case or a question with any held-out set (the trainers would refuse it)."""
    assert runner.split_of(REPO_ROOT / suite.dev) == "dev"
    holdout.refuse_dataset(REPO_ROOT / suite.dev, by="test")
    if suite.holdout:
        assert runner.split_of(REPO_ROOT / suite.holdout) == "holdout"
