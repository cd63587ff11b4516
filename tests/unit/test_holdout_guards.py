"""Held-out data is refused in code by everything that fits weights or thresholds, and every held-out run is
logged (issue 41, item 5). Held-out datasets here are tmp files put in place of the registered ones; no test
writes to the committed `evals/holdout_log.jsonl`."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from evals import gate_calibration, holdout, runner, train_ranker
from evals.suites import REPO_ROOT, EvalJob, Suite
from graph.settings import Settings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ranker-features-small.jsonl.gz"


@pytest.fixture(autouse=True)
def no_committed_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The log's default path points into tmp: a test that forgets `log=` cannot touch the committed file."""
    log = tmp_path / "default-holdout-log.jsonl"
    monkeypatch.setattr(holdout, "LOG_PATH", log)
    return log


@pytest.fixture
def held_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One held-out dataset (ids `hx-1`, `hx-2`) standing for every registered one."""
    path = tmp_path / "held.jsonl"
    path.write_text('{"id": "hx-1", "question": "Where is the retry limit set?"}\n'
                    '{"id": "hx-2", "question": "Какой порт по умолчанию?"}\n', encoding="utf-8")
    monkeypatch.setattr(holdout, "holdout_datasets", lambda root=REPO_ROOT: [path.resolve()])
    return path


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


# ---- what is held-out ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "held"), [
    ("fastapi_ru_holdout.jsonl", True), ("eval-holdout.json", True), ("click_holdout.absent.json", True),
    ("click_heldout.jsonl", True), ("click-held-out.jsonl", True), ("click_hold_out.jsonl", True),
    ("click_held_out.jsonl", True), ("click-hold-out.jsonl", True), ("eval.HeldOut.json", True),
    ("Click_HOLD-OUT.jsonl", True), ("heldout.jsonl", True), ("hold_out-features.jsonl.gz", True),
    ("fastapi_ru.jsonl", False), ("eval-dev.json", False), ("noholdout.json", False), ("withheld-out.json", False),
    ("threshold_out.json", False), ("household.jsonl", False), ("beholden.jsonl", False),
])
def test_a_held_out_file_is_known_by_its_name(name: str, held: bool) -> None:
    assert holdout.holdout_name(name) is held


def test_every_registered_held_out_split_is_held_out() -> None:
    from evals.suites import SUITES

    for suite in SUITES.values():
        if suite.holdout:
            assert holdout.is_holdout_path(REPO_ROOT / suite.holdout)
            assert not holdout.is_holdout_path(REPO_ROOT / suite.dev)


# ---- the trainer -------------------------------------------------------------------------------------------

def test_the_trainer_refuses_a_dev_split_that_is_a_held_out_dataset(monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("lightgbm")
    monkeypatch.setattr(train_ranker, "pinned_suites", lambda: [
        Suite("click", "evals/corpora/click/assemble", "evals/datasets/click_holdout.jsonl", None)])
    assert train_ranker.main(["--dry-run"]) == 2
    assert "click_holdout.jsonl" in one_error_line(capsys)


def test_the_trainer_refuses_a_dev_split_holding_a_held_out_case(held_out: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"id": "d-1"}\n{"id": "hx-2"}\n', encoding="utf-8")
    monkeypatch.setattr(train_ranker, "pinned_suites", lambda: [Suite("c", None, str(dev), None)])
    assert train_ranker.main(["--collect", str(tmp_path / "f.jsonl.gz")]) == 2
    err = one_error_line(capsys)
    assert "hx-2" in err and "held-out" in err and not (tmp_path / "f.jsonl.gz").exists()


def renamed(held_out: Path, path: Path) -> Path:
    """The held-out cases under new ids, their questions re-spaced and re-cased."""
    path.write_text('{"id": "d-1", "question": "where is the  retry limit set"}\n'
                    '{"id": "d-2", "question": "КАКОЙ порт по умолчанию ?"}\n', encoding="utf-8")
    return path


def test_the_trainer_refuses_a_dev_split_that_is_a_held_out_file_with_renamed_ids(
        held_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    dev = renamed(held_out, tmp_path / "dev.jsonl")
    monkeypatch.setattr(train_ranker, "pinned_suites", lambda: [Suite("c", None, str(dev), None)])
    assert train_ranker.main(["--collect", str(tmp_path / "f.jsonl.gz")]) == 2
    err = one_error_line(capsys)
    assert "held-out questions" in err and "retry limit" in err and not (tmp_path / "f.jsonl.gz").exists()


def features_with(tmp_path: Path, name: str, *, case_id: str | None = None,
                  dataset: str | None = None) -> Path:
    """The small fixture feature file, one question renamed or its header's dev path changed."""
    lines = gzip.decompress(FIXTURE.read_bytes()).decode("utf-8").splitlines()
    header, first = json.loads(lines[0]), json.loads(lines[1])
    if dataset:
        header["datasets"]["click"]["path"] = dataset
    if case_id:
        first["case_id"] = case_id
    path = tmp_path / name
    path.write_text("\n".join([json.dumps(header), json.dumps(first), *lines[2:]]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("case", "kwargs", "says"), [
    ("a held-out case id", {"name": "f.jsonl", "case_id": "hx-1"}, "hx-1"),
    ("a held-out file name", {"name": "click_holdout-features.jsonl"}, "held-out feature file"),
    ("rows of a held-out split", {"name": "f.jsonl", "dataset": "evals/datasets/click_holdout.jsonl"},
     "click_holdout.jsonl"),
])
def test_the_trainer_refuses_held_out_features(case: str, kwargs: dict[str, Any], says: str, held_out: Path,
                                               tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("lightgbm")
    path = features_with(tmp_path, **kwargs)
    assert train_ranker.main(["--features", str(path), "--out", str(tmp_path / "m.json")]) == 2, case
    assert says in one_error_line(capsys)
    assert not (tmp_path / "m.json").exists()


def test_the_trainer_refuses_a_candidates_cache_of_held_out_cases(held_out: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.test_train_ranker import candidates

    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"id": "d-1"}\n', encoding="utf-8")
    suites = [Suite("c", None, str(dev), None)]
    monkeypatch.setattr(train_ranker, "pinned_suites", lambda: suites)
    cache = tmp_path / "cands.jsonl"
    got = candidates(1)
    got[0].case_id = "hx-1"
    train_ranker.save_candidates(got, cache, train_ranker.cache_header(suites, Settings().embedder))
    assert train_ranker.main(["--cache", str(cache), "--collect", str(tmp_path / "f.jsonl.gz")]) == 2
    assert "hx-1" in one_error_line(capsys)


# ---- the gate's calibration ------------------------------------------------------------------------------

def report(dataset: str = "evals/datasets/click.jsonl", split: str | None = "dev", ids: tuple[str, ...] = ("d-1",)
           ) -> dict[str, Any]:
    results = [{"id": cid, "answerable": True, "retrieval": {"signals": {"candidate_coverage": 0.5, "rows": 3}}}
               for cid in ids]
    return {"split": split, "corpora": {"click": {"dataset": dataset, "split": split, "results": results}}}


@pytest.mark.parametrize(("case", "name", "data", "says"), [
    ("a held-out split", "eval.json", report(split="holdout"), "split holdout"),
    ("a corpus report of a held-out dataset", "eval.json",
     report(dataset="evals/datasets/click_holdout.jsonl", split=None), "click_holdout.jsonl"),
    ("a held-out case id", "eval.json", report(ids=("d-1", "hx-2")), "hx-2"),
    ("a held-out question under another id", "eval.json",
     {"corpora": {"click": {"results": [{"id": "d-9", "question": "Where is the retry-limit set?"}]}}},
     "held-out questions"),
    ("a held-out file name", "eval-holdout.json", report(), "eval-holdout.json"),
])
def test_the_gate_calibration_refuses_a_held_out_report(case: str, name: str, data: dict[str, Any], says: str,
                                                        held_out: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    assert gate_calibration.main([str(path)]) == 2, case
    err = one_error_line(capsys)
    assert says in err and "refuses" in err


def test_the_gate_calibration_takes_a_dev_report(held_out: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "eval-dev.json"
    path.write_text(json.dumps(report()), encoding="utf-8")
    assert gate_calibration.main([str(path)]) == 0
    assert "chosen" in capsys.readouterr().out


# ---- the runner: split recorded, held-out runs logged ------------------------------------------------------

def run_stub(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(dataset: Path, corpus: Path, **_: Any) -> dict[str, Any]:
        return {"dataset": str(dataset), "split": runner.split_of(dataset), "embedder": "fake", "cases": 1,
                "results": []}

    monkeypatch.setattr(runner, "run", run)


def pipe_of(path: Path) -> Path:
    """`/dev/fd/N` of a pipe holding the file's text (what `<(cat FILE)` gives); closed at test teardown."""
    read, write = os.pipe()
    os.write(write, path.read_bytes())
    os.close(write)
    return Path(f"/dev/fd/{read}")


@pytest.mark.parametrize("how", ["copy", "hard link", "renamed ids", "pipe"])
def test_a_held_out_dataset_under_another_path_is_held_out(how: str, held_out: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    given = other / "mine.jsonl"
    if how == "copy":
        shutil.copyfile(held_out, given)
    elif how == "hard link":
        os.link(held_out, given)
    elif how == "renamed ids":
        renamed(held_out, given)
    else:
        given = pipe_of(held_out)
    try:
        assert runner.split_of(given) == "holdout", how
    finally:
        if how == "pipe":
            os.close(int(given.name))


def test_a_dataset_sharing_no_case_or_question_with_held_out_is_not(held_out: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"id": "d-1", "question": "Where is the retry limit documented?"}\n', encoding="utf-8")
    assert runner.split_of(mine) is None
    assert runner.split_of(REPO_ROOT / "evals" / "datasets" / "click.jsonl") == "dev"


def test_a_run_of_a_copied_held_out_dataset_is_logged(held_out: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    run_stub(monkeypatch)
    copy = tmp_path / "mine.jsonl"
    copy.write_text('{"id": "z-1", "question": "Where is the retry limit set?", "expected_route": "GENERAL_QA", '
                    '"gold_paths": [], "answerable": false}\n', encoding="utf-8")
    log = tmp_path / "log.jsonl"
    got = runner.run_jobs([EvalJob("mine", copy, tmp_path)], settings=Settings(), cache_dir=tmp_path, deps=object(),
                          holdout_log=log)
    assert got["split"] == "holdout" and got["corpora"]["mine"]["split"] == "holdout"
    assert json.loads(log.read_text(encoding="utf-8"))["datasets"] == [str(copy)]


@pytest.mark.parametrize("git_tree", ["this repository", "outside a git tree"])
def test_a_held_out_run_is_logged_before_it_starts_and_its_report_says_holdout(
        git_tree: str, held_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if git_tree == "outside a git tree":  # as in an exported tree, or where git refuses a dubious owner
        monkeypatch.setenv("GIT_DIR", str(tmp_path / "no-git"))
    run_stub(monkeypatch)
    held_out.write_text('{"id": "hx-1", "question": "q?", "expected_route": "GENERAL_QA", "gold_paths": [], '
                        '"answerable": false}\n', encoding="utf-8")
    log = tmp_path / "log.jsonl"
    jobs = [EvalJob("click", held_out, tmp_path)]
    got = runner.run_jobs(jobs, settings=Settings(), cache_dir=tmp_path, deps=object(), out="out/eval-holdout.json",
                          holdout_log=log)
    assert got["split"] == "holdout" and got["corpora"]["click"]["split"] == "holdout"
    [line] = log.read_text(encoding="utf-8").splitlines()
    entry = json.loads(line)
    assert set(entry) == {"commit", "command", "date", "corpora", "datasets", "out"}
    assert entry["corpora"] == ["click"] and entry["out"] == "out/eval-holdout.json"
    assert entry["datasets"] == [str(held_out)]  # outside the repository: as given
    assert datetime.strptime(entry["date"], "%Y-%m-%dT%H:%M:%SZ")
    # the module's own answer ("unknown" outside a git tree); `+dirty` may change as files are edited meanwhile
    assert entry["commit"].removesuffix("+dirty") == holdout.commit_of(REPO_ROOT, log).removesuffix("+dirty")
    assert entry["commit"] == "unknown" or git_tree == "this repository"


def test_a_dev_run_is_not_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_committed_log: Path) -> None:
    run_stub(monkeypatch)
    dev = REPO_ROOT / "evals" / "datasets" / "click.jsonl"
    log = tmp_path / "log.jsonl"
    got = runner.run_jobs([EvalJob("click", dev, tmp_path)], settings=Settings(), cache_dir=tmp_path, deps=object(),
                          holdout_log=log)
    assert got["split"] == "dev" and not log.exists() and not no_committed_log.exists()


def git(repo: Path, *args: str) -> str:
    """git in a tmp repository, whatever the global config says (signing, identity)."""
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false",
                           "-c", "tag.gpgsign=false", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def signing_global_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A global git config that signs every commit with a signer that always fails, and has no identity."""
    config = tmp_path / "gitconfig"
    config.write_text("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("signing_global_config")
def test_the_log_names_the_commit_and_whether_the_tree_was_dirty(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "evals").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\n", encoding="utf-8")
    log = repo / "evals" / "holdout_log.jsonl"
    log.write_text("", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    head = git(repo, "rev-parse", "HEAD")
    when = datetime(2026, 12, 2, 8, 0, 5, tzinfo=UTC)
    first = holdout.log_run(["click"], [repo / "evals" / "click_holdout.jsonl"], None, log=log, root=repo, now=when,
                            argv=["/x/.venv/bin/lotsman", "eval", "--suite", "holdout"])
    assert first == {"commit": head, "command": "lotsman eval --suite holdout", "date": "2026-12-02T08:00:05Z",
                     "corpora": ["click"], "datasets": ["evals/click_holdout.jsonl"], "out": None}
    # the log's own line does not make the tree dirty; an edited file does
    (repo / "a.py").write_text("x = 2\n", encoding="utf-8")
    second = holdout.log_run(["click"], [], "o.json", log=log, root=repo, now=when,
                             argv=["/r/evals/__main__.py", "--suite", "holdout", "--out", "o.json"])
    assert second["commit"] == head + "+dirty" and second["command"] == "python -m evals --suite holdout --out o.json"
    assert [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] == [first, second]
