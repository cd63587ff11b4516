"""`read_indexed_lines` against a real index: the lines a citation names, from the session's current generation."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from stores.embedders import FakeEmbeddings
from stores.errors import SessionNotFoundError, UsageError
from stores.indexing.service import index_repository
from stores.reading import MAX_READ_LINES, read_indexed_lines
from stores.sessions import delete_session

GUIDE = """---
title: Deploy guide
---
# Deploy

Run the service behind a reverse proxy. The proxy terminates TLS and forwards plain HTTP to port 8080.
Every request carries the X-Request-Id header so that logs of one call can be joined.

## Rollback

To roll back, redeploy the previous image tag. The database migrations are backwards compatible for one
release, so the old image runs against the new schema without changes of any kind.
"""

CODE = '''"""Retry helpers."""

import time


# a comment between definitions
def backoff(attempt: int) -> float:
    """Seconds to wait before the next attempt."""
    return min(30.0, 0.5 * 2 ** attempt)


class Retrier:
    """Calls a function until it succeeds."""

    def __init__(self, attempts: int) -> None:
        self.attempts = attempts

    def run(self, fn):
        for attempt in range(self.attempts):
            try:
                return fn()
            except OSError:
                time.sleep(backoff(attempt))
        raise RuntimeError("gave up")
'''


BIG = '"""A long class."""\n\n\nclass Big:\n    """Many methods."""\n' + "".join(
    f"\n    def method_{i}(self, value: int) -> int:\n        \"\"\"Step {i}.\"\"\"\n        return value + {i}\n"
    for i in range(60))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("read-repo")
    (root / "docs").mkdir()
    (root / "docs" / "deploy.md").write_text(GUIDE, encoding="utf-8")
    if os.sep == "/":  # a backslash is a name character on POSIX
        (root / "docs" / "back\\slash.md").write_text("# Back\n\nA file whose name holds a backslash.\n",
                                                      encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg" / "retry.py").write_text(CODE, encoding="utf-8")
    (root / "pkg" / "big.py").write_text(BIG, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def session(db, repo: Path) -> Iterator[str]:
    name = f"read-{uuid.uuid4().hex[:8]}"
    index_repository(db, repo, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    yield name
    with db.connection() as conn:
        delete_session(conn, name)


def _read(db, *args):  # type: ignore[no-untyped-def]
    with db.connection() as conn:
        return read_indexed_lines(conn, *args)


def test_reads_the_lines_of_a_doc_as_the_file_has_them(db, session: str) -> None:
    got = _read(db, session, "docs/deploy.md", 4, 7)
    assert got.lines == tuple(GUIDE.split("\n")[3:7])
    assert (got.path, got.start_line, got.end_line, got.session) == ("docs/deploy.md", 4, 7, session)
    assert got.text.startswith("# Deploy")


def test_reads_code_lines_without_the_class_comment_of_a_chunk(db, session: str) -> None:
    file_lines = CODE.split("\n")
    got = _read(db, session, "pkg/retry.py", 12, 24)
    assert got.lines == tuple(file_lines[11:24])
    assert got.missing_lines == ()
    # a class longer than a chunk is stored per method, each chunk starting with `# class Big`
    big = BIG.split("\n")
    got = _read(db, session, "pkg/big.py", 100, 130)
    assert got.lines == tuple(big[99:130])
    assert not any(line.startswith("# class") for line in got.lines)


def test_lines_no_passage_holds_are_blank_and_listed(db, session: str) -> None:
    got = _read(db, session, "docs/deploy.md", 1, 4)  # the frontmatter is not a passage
    assert got.missing_lines == (1, 2, 3)
    assert got.lines[:3] == ("", "", "")
    assert got.lines[3] == "# Deploy"


def test_an_end_past_the_file_is_cut_to_its_last_line(db, session: str) -> None:
    got = _read(db, session, "pkg/retry.py", 20, 200)
    assert got.end_line == got.last_line == len(CODE.rstrip("\n").split("\n"))
    assert got.lines[-1] == '        raise RuntimeError("gave up")'


def test_paths_as_users_write_them(db, session: str, repo: Path) -> None:
    for path in ("./docs/deploy.md", str(repo / "docs" / "deploy.md"), "docs\\deploy.md"):
        assert _read(db, session, path, 4, 4).lines == ("# Deploy",)


@pytest.mark.skipif(os.sep != "/", reason="a backslash is a separator on Windows")
def test_a_file_whose_name_holds_a_backslash_is_read_by_its_name(db, session: str) -> None:
    """It was read as docs/back/slash.md, which the session does not hold."""
    got = _read(db, session, "docs/back\\slash.md", 1, 1)
    assert (got.path, got.lines) == ("docs/back\\slash.md", ("# Back",))


@pytest.mark.parametrize(("args", "error", "message"), [
    (("no-such-session-x", "docs/deploy.md", 1, 2), SessionNotFoundError, "no session 'no-such-session-x'"),
    (("{s}", "docs/missing.md", 1, 2), UsageError, "docs/missing.md is not in session"),
    (("{s}", "deploy.md", 1, 2), UsageError, "did you mean docs/deploy.md"),
    (("{s}", "/etc/passwd", 1, 2), UsageError, "etc/passwd is not in session"),
    (("{s}", "docs/deploy.md", 500, 510), UsageError, "outside docs/deploy.md: it has 12 lines"),
    (("{s}", "docs/deploy.md", 9, 3), UsageError, "start_line 9 is after end_line 3"),
    (("{s}", "docs/deploy.md", 1, MAX_READ_LINES + 5), UsageError, "read at most"),
    (("{s}", "", 1, 2), UsageError, "path is empty"),
])
def test_bad_reads_are_one_clear_error(db, session: str, args, error, message) -> None:
    args = tuple(a.format(s=session) if isinstance(a, str) else a for a in args)
    with pytest.raises(error, match=message) as err:
        _read(db, *args)
    assert "\n" not in str(err.value)


def test_reads_the_current_generation_after_a_reindex(db, session: str, repo: Path, tmp_path: Path) -> None:
    name = f"read-gen-{uuid.uuid4().hex[:8]}"
    root = tmp_path / "r"
    (root / "docs").mkdir(parents=True)
    page = root / "docs" / "p.md"
    page.write_text("# Old title\n\nThe old text of the page, long enough to be a passage of its own here.\n")
    index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    try:
        assert _read(db, name, "docs/p.md", 1, 1).lines == ("# Old title",)
        page.write_text("# New title\n\nThe new text of the page, long enough to be a passage of its own here.\n")
        index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
        assert _read(db, name, "docs/p.md", 1, 3).lines[0] == "# New title"
    finally:
        with db.connection() as conn:
            delete_session(conn, name)
