"""Indexing reliability without a database: backslashes in POSIX names, git's environment, the streamed
`cat-file --batch`, the ctime of the stat snapshot."""

from __future__ import annotations

import io
import os
import tracemalloc
from pathlib import Path

import pytest

from stores.errors import IndexingError
from stores.indexing.files import (
    STAT_RACY_NS,
    SkippedFile,
    SourceFile,
    changed_since,
    collect_files,
    path_spellings,
    read_source_file,
    stat_tree,
)
from stores.indexing.git_source import (
    collect_revision,
    git_environment,
    read_batch,
    resolve_revision,
    split_batch,
)
from stores.statements import normalize_path
from tests.gitrepo import git

# -- 1. a backslash is a name character on POSIX --------------------------------------------------------------


@pytest.mark.parametrize(("raw", "separator", "norm"), [
    ("back\\slash.md", False, "back\\slash.md"),       # POSIX: the name the indexer stored
    ("docs\\api\\x.md", True, "docs/api/x.md"),        # Windows: a separator
    ("./docs/a.md", False, "docs/a.md"),
    ("/docs/a.md", False, "docs/a.md"),
    ("  \\  ", False, ""),                                # no name: no file, no SQL
    ("/\\/", True, ""),
    ("\\%", False, "\\%"),
    ("a\x00b.md", False, "ab.md"),
])
def test_normalize_path_translates_backslashes_only_where_they_separate(raw: str, separator: bool,
                                                                        norm: str) -> None:
    assert normalize_path(raw, backslash_separator=separator) == norm


@pytest.mark.parametrize(("rel", "separator", "spellings"), [
    ("docs/a.md", False, ["docs/a.md"]),
    ("back\\slash.md", False, ["back\\slash.md", "back/slash.md"]),  # the literal name first
    ("back\\slash.md", True, ["back/slash.md"]),
    ("docs\\..\\a.md", False, ["docs\\..\\a.md", "docs/../a.md"]),
])
def test_path_spellings(rel: str, separator: bool, spellings: list[str]) -> None:
    assert path_spellings(rel, backslash_separator=separator) == spellings


@pytest.mark.skipif(os.sep == "\\", reason="a POSIX file name with a backslash")
def test_a_changed_file_with_a_backslash_in_its_name_is_read(tmp_path: Path) -> None:
    """The incremental run reads a changed file by the name the walk gave it: with the backslash turned into
    a slash it was "file not found", and the job deleted the file's rows."""
    (tmp_path / "back\\slash.md").write_text("# Back\n\nslash\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("# A\n")
    walked = {f.path for f in collect_files(tmp_path).files}
    assert walked == {"back\\slash.md", "docs/a.md"}
    got = read_source_file(tmp_path, "back\\slash.md")
    assert isinstance(got, SourceFile) and got.path == "back\\slash.md" and got.text == "# Back\n\nslash\n"
    # POSIX: the name as written only (a deleted back\\slash.md must not be read from a back/slash.md)
    assert read_source_file(tmp_path, "docs\\a.md") == SkippedFile("docs\\a.md", "file not found")
    escaped = read_source_file(tmp_path, "..\\..\\etc\\passwd.md")
    assert isinstance(escaped, SkippedFile) and escaped.reason == "path escapes the root"


# -- 2. git runs on the repository it is given -----------------------------------------------------------------




def _repo(root: Path, text: str) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs/a.md").write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    git(root, "tag", "v1")
    return root


def test_a_revision_is_read_from_its_own_repository_inside_another_ones_hook(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git hook (or `git rebase --exec`) exports GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE... of its own
    repository: `lotsman index PATH --ref v1` run from there read the hook's repository instead of PATH's."""
    mine = _repo(tmp_path / "mine", "# Mine\n\nthe docs of PATH\n")
    other = _repo(tmp_path / "other", "# Other\n\nthe hook's repository\n")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git/index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(other / ".git/objects"))
    monkeypatch.setenv("GIT_COMMON_DIR", str(other / ".git"))
    revision = resolve_revision(mine, "v1")
    assert revision.repo_path == str(mine.resolve())
    assert revision.commit_sha == git(mine, "rev-parse", "v1")
    assert [f.text for f in collect_revision(revision).files] == ["# Mine\n\nthe docs of PATH\n"]


@pytest.mark.parametrize(("name", "kept"), [
    ("GIT_DIR", False), ("GIT_WORK_TREE", False), ("GIT_INDEX_FILE", False), ("GIT_OBJECT_DIRECTORY", False),
    ("GIT_ALTERNATE_OBJECT_DIRECTORIES", False), ("GIT_COMMON_DIR", False), ("GIT_PREFIX", False),
    ("GIT_QUARANTINE_PATH", False), ("GIT_NAMESPACE", False), ("GIT_SHALLOW_FILE", False),
    ("GIT_GRAFT_FILE", False), ("GIT_REPLACE_REF_BASE", False), ("GIT_NO_REPLACE_OBJECTS", False),
    ("GIT_IMPLICIT_WORK_TREE", False), ("GIT_INTERNAL_SUPER_PREFIX", False),
    # the user's configuration, not a repository's: a container's `safe.directory` comes this way
    ("GIT_CONFIG_PARAMETERS", True), ("GIT_CONFIG_COUNT", True), ("GIT_CONFIG_KEY_0", True),
    ("GIT_CONFIG_VALUE_0", True), ("GIT_CONFIG", True),
    ("GIT_CONFIG_NOSYSTEM", True), ("GIT_CEILING_DIRECTORIES", True), ("GIT_CONFIG_GLOBAL", True),
    ("GIT_EXEC_PATH", True), ("GIT_TRACE", True),
    ("HOME", True), ("PATH", True), ("LANG", True),
])
def test_git_environment(name: str, kept: bool) -> None:
    env = git_environment({name: "x", "PATH": "/usr/bin"})
    assert (name in env) is kept
    assert env["LC_ALL"] == "C"  # git's messages are matched in English ("not a git repository")


# -- 3. cat-file --batch is read one blob at a time ----------------------------------------------------------

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_the_batch_stream_gives_the_same_blobs_as_the_whole_output() -> None:
    stream = b"%s blob 3\nab\n\n%s blob 0\n\n%s blob 5\n\x00\n\nx\n\n" % (SHA.encode(), SHA.encode(), SHA.encode())
    assert list(read_batch(io.BytesIO(stream), 3)) == split_batch(stream, 3) == [b"ab\n", b"", b"\x00\n\nx\n"]
    with pytest.raises(IndexingError, match="missing"):
        list(read_batch(io.BytesIO(b"deadbeef missing\n"), 1))
    with pytest.raises(IndexingError, match="ended early"):
        list(read_batch(io.BytesIO(b"%s blob 9\nab" % SHA.encode()), 1))


def test_a_large_revision_is_not_held_twice_in_memory(tmp_path: Path) -> None:
    """The whole `cat-file --batch` output was read at once, then cut into blobs: on a large tag the
    process held the output, its copies and the decoded texts together. Streamed, only the texts stay."""
    repo = tmp_path / "big"
    (repo / "docs").mkdir(parents=True)
    blob = 200_000
    for i in range(30):  # 6 MB of text
        (repo / f"docs/p{i:02}.md").write_text(f"# Page {i}\n\n" + ("lorem ipsum dolor sit amet " * 8 + "\n")
                                               * (blob // 217))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "big")
    revision = resolve_revision(repo, "HEAD")
    tracemalloc.start()
    try:
        collected = collect_revision(revision)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    texts = sum(len(f.text) for f in collected.files)
    assert len(collected.files) == 30 and texts > 5_000_000
    assert peak < texts * 1.3


# -- 4. the stat snapshot has the ctime --------------------------------------------------------------------

NOW = 10**19
OLD = NOW - 10 * STAT_RACY_NS


@pytest.mark.parametrize(("previous", "current", "expected"), [
    ({"a.md": [1, OLD, [5, OLD], "s"]}, {"a.md": (1, OLD, (5, OLD))}, []),
    # rewritten in place, same size, mtime put back (`touch -r`, an editor, a checkout): only ctime moved
    ({"a.md": [1, OLD, [5, OLD], "s"]}, {"a.md": (1, OLD, (5, OLD + 1))}, ["a.md"]),
    # a snapshot recorded before the ctime was: no stat matches, every file's blob sha decides (no error)
    ({"a.md": [1, OLD, 5, "s"]}, {"a.md": (1, OLD, (5, OLD))}, ["a.md"]),
    # a change too recent to trust (git's racy files), told by the ctime when mtime was put back
    ({"a.md": [1, OLD, [5, NOW - 1], "s"]}, {"a.md": (1, OLD, (5, NOW - 1))}, ["a.md"]),
    ({"x": [-1, -1, [-1, -1], None]}, {"x": (-1, -1, (-1, -1))}, []),
])
def test_changed_since_compares_the_ctime(previous: dict, current: dict, expected: list[str]) -> None:
    assert changed_since(previous, current, NOW) == expected


def test_stat_tree_records_the_ctime(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("# A\n")
    st = page.stat()
    assert stat_tree(tmp_path) == {"a.md": (st.st_size, st.st_mtime_ns, (st.st_ino, st.st_ctime_ns))}
