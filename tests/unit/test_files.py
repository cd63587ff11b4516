"""collect_files / read_source_file: what gets indexed, what is skipped and why."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from stores.indexing.files import (
    SkippedFile,
    SourceFile,
    collect_files,
    git_blob_sha,
    normalize_newlines,
    read_source_file,
)


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, "README.md", "# Readme\n")
    write(root, "docs/ru/guide.markdown", "# Гайд\r\nтекст\r\n")
    write(root, "pkg/app.py", "print('hi')\n")
    write(root, "pkg/image.png", b"\x89PNG\0\0")  # other extension: ignored, not reported
    write(root, ".git/config.md", "# hidden\n")
    write(root, ".venv/lib/x.py", "x = 1\n")
    write(root, "node_modules/lib/readme.md", "# vendored\n")
    write(root, "pkg/__pycache__/app.py", "x = 1\n")
    write(root, ".langgraph_api/state.py", "x = 1\n")
    write(root, "bad/binary.py", b"abc\0def")
    write(root, "bad/latin1.md", "Привет".encode("cp1251"))
    write(root, "bad/empty.py", b"")
    write(root, "bad/blank.md", "  \n\t\n")
    write(root, "bad/huge.md", "x" * 2_000)
    return root


def test_collects_only_indexable_files_in_sorted_order(repo: Path) -> None:
    result = collect_files(repo, max_bytes=1_000)

    assert [f.path for f in result.files] == ["README.md", "docs/ru/guide.markdown", "pkg/app.py"]
    assert all(isinstance(f, SourceFile) and f.abs_path.is_absolute() for f in result.files)


def test_reports_each_bad_file_with_a_reason(repo: Path) -> None:
    reasons = {s.path: s.reason for s in collect_files(repo, max_bytes=1_000).skipped}

    assert reasons == {
        "bad/binary.py": "binary file (NUL byte)",
        "bad/blank.md": "empty file (whitespace only)",
        "bad/empty.py": "empty file",
        "bad/huge.md": "too large: 2000 bytes > limit 1000",
        "bad/latin1.md": "invalid UTF-8 at byte 0",
    }


def test_text_is_normalized_and_blob_sha_is_git_compatible(repo: Path) -> None:
    guide = next(f for f in collect_files(repo).files if f.path.endswith("guide.markdown"))
    raw = (repo / "docs/ru/guide.markdown").read_bytes()

    assert guide.text == "# Гайд\nтекст\n"
    assert guide.blob_sha == hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()
    # `git hash-object` of "hello\n" is a well-known constant.
    assert git_blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_normalize_newlines() -> None:
    assert normalize_newlines("a\r\nb\rc\n") == "a\nb\nc\n"


def test_include_exts_limits_candidates(repo: Path) -> None:
    result = collect_files(repo, include_exts=(".py",))

    assert [f.path for f in result.files] == ["pkg/app.py"]
    assert {s.path for s in result.skipped} == {"bad/binary.py", "bad/empty.py"}


def test_symlinks_leaving_the_root_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outside = tmp_path / "outside"
    write(outside, "secret.md", "# secret\n")
    write(root, "doc.md", "# doc\n")
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside, root / "leakdir")
    os.symlink(root / "doc.md", root / "alias.md")  # stays inside: indexed under its own path
    os.symlink(root / "missing.md", root / "broken.md")

    result = collect_files(root)

    assert [f.path for f in result.files] == ["alias.md", "doc.md"]
    assert {s.path: s.reason for s in result.skipped} == {
        "broken.md": "broken symlink",
        "leak.md": "symlink points outside the root",
        "leakdir": "symlink points outside the root",
    }


def test_unreadable_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "locked.md", "# locked\n")
    write(tmp_path, "open.md", "# open\n")
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        # chmod 000 does not stop root, so simulate the permission error instead.
        if self.name == "locked.md":
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = collect_files(tmp_path)

    assert [f.path for f in result.files] == ["open.md"]
    assert result.skipped == [SkippedFile("locked.md", "unreadable: Permission denied")]


def test_a_directory_named_like_a_file_is_not_a_candidate(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    write(tmp_path, "folder.md/inner.md", "# inner\n")

    assert [f.path for f in collect_files(tmp_path).files] == ["folder.md/inner.md"]
    assert read_source_file(tmp_path, "folder.md") == SkippedFile("folder.md", "not a regular file")


def test_missing_root_raises_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="path not found"):
        collect_files(tmp_path / "nope")
    write(tmp_path, "file.md", "# f\n")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        collect_files(tmp_path / "file.md")


def test_read_source_file_reads_one_change(repo: Path) -> None:
    got = read_source_file(repo, "pkg/app.py")

    assert isinstance(got, SourceFile)
    assert got.text == "print('hi')\n"
    assert got == next(f for f in collect_files(repo).files if f.path == "pkg/app.py")


@pytest.mark.parametrize(
    ("rel_path", "reason"),
    [
        ("../outside.md", "path escapes the root"),
        ("docs/../../outside.md", "path escapes the root"),
        ("/etc/passwd.md", "path escapes the root"),
        ("", "path escapes the root"),
        ("node_modules/lib/readme.md", "in an ignored directory or hidden"),
        (".git/config.md", "in an ignored directory or hidden"),
        ("pkg/image.png", "unsupported file type"),
        ("pkg/gone.py", "file not found"),
        ("bad/binary.py", "binary file (NUL byte)"),
        ("bad/huge.md", "too large: 2000 bytes > limit 1000"),
    ],
)
def test_read_source_file_rejects_bad_paths(repo: Path, rel_path: str, reason: str) -> None:
    got = read_source_file(repo, rel_path, max_bytes=1_000)

    assert isinstance(got, SkippedFile)
    assert got.reason == reason


def test_read_source_file_normalizes_the_path(repo: Path) -> None:
    got = read_source_file(repo, "pkg/../pkg/./app.py")

    assert isinstance(got, SourceFile) and got.path == "pkg/app.py"
