"""`--ref` against git as users run it: a repository another user owns (the container's `safe.directory` set
through GIT_CONFIG_COUNT), and a revision whose blob is lost."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from stores.errors import IndexingError
from stores.indexing import git_source
from stores.indexing.git_source import collect_revision, resolve_revision
from tests.gitrepo import git


def _git(repo: Path, *args: str) -> str:
    return git(repo, *args, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")  # no user or system config


def _tagged(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "one")
    _git(root, "tag", "v1")
    return root


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_safe_directory_from_the_environment_lets_ref_read_another_users_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A container whose repository belongs to another user sets `safe.directory` through GIT_CONFIG_COUNT /
    GIT_CONFIG_KEY_0 / GIT_CONFIG_VALUE_0: `git rev-parse v1` works there, so `lotsman index --ref v1` must too
    (with the variables stripped it failed with git's "detected dubious ownership")."""
    repo = _tagged(tmp_path / "repo", {"docs/a.md": "# A\n\nowned by nobody\n"})
    commit = _git(repo, "rev-parse", "v1")
    shutil.chown(tmp_path, "nobody")
    for folder, dirs, files in os.walk(tmp_path):
        for name in dirs + files:
            shutil.chown(Path(folder) / name, "nobody")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)  # only the environment says the folder is safe
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in [n for n in os.environ if n.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("GIT_CONFIG_PARAMETERS", raising=False)
    monkeypatch.delenv("GIT_CONFIG_COUNT", raising=False)
    with pytest.raises(IndexingError, match="dubious ownership"):  # the premise: git refuses without it
        resolve_revision(repo, "v1")

    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.directory")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "*")
    revision = resolve_revision(repo, "v1")
    assert revision.commit_sha == commit
    assert [f.text for f in collect_revision(revision).files] == ["# A\n\nowned by nobody\n"]


def test_a_lost_blob_is_reported_by_name_not_as_a_timeout(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A revision whose first blob is gone (a damaged clone): git answers `<sha> missing` and goes on writing
    the blobs after it. Waiting for git then waited on a full pipe until the timeout, and the job said "took
    more than 120 s" instead of naming the lost object. The timeout is cut to 5 s so that a regression fails
    on the message, not by making the suite slow."""
    big = "".join(f"line {i:06d} of a large page\n" for i in range(10_000))  # 270 KB: more than a pipe holds
    repo = _tagged(tmp_path / "repo", {"a.md": "# Lost\n", **{f"b{i}.md": big for i in range(4)}})
    lost = _git(repo, "rev-parse", "v1:a.md")
    (repo / ".git/objects" / lost[:2] / lost[2:]).unlink()
    monkeypatch.setattr(git_source, "GIT_TIMEOUT_S", 5.0)
    revision = resolve_revision(repo, "v1")
    with pytest.raises(IndexingError) as failed:
        collect_revision(revision)
    message = str(failed.value)
    assert lost in message and "missing" in message
    assert "took more than" not in message


@pytest.mark.parametrize(("answer", "message"), [
    (b"deadbeef missing\n", "git cat-file: object deadbeef is missing"),
    (b"abc ambiguous\n", "git cat-file: object abc is ambiguous"),
    (b"\n", "git cat-file: an answer without a size: ''"),
])
def test_an_answer_without_content_names_the_object(answer: bytes, message: str) -> None:
    with pytest.raises(git_source.MissingObject) as failed:
        list(git_source.read_batch(io.BytesIO(answer), 1))
    assert str(failed.value) == message
