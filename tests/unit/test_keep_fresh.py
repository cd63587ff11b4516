"""`lotsman watch` and `lotsman hook`: which changes count, what a batch prints, how a hook file is edited."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from watchfiles import Change

from graph.cli_hook import (
    HOOK_BEGIN,
    HOOK_END,
    NEW_HOOK,
    hook_block,
    hook_command,
    hook_problem,
    is_busy,
    is_hook_command,
    with_hook_block,
    without_hook_block,
)
from graph.cli_watch import describe_changes, describe_report, relevant_changes, watched_path
from stores.errors import IndexingError, SessionNotFoundError


@pytest.mark.parametrize(("rel", "watched"), [
    ("docs/a.md", True),
    ("README.MD", True),
    ("notes.markdown", True),
    ("pkg/mod.py", True),
    ("pkg/mod.pyc", False),
    ("docs/image.png", False),
    (".git/index", False),
    (".git/hooks/post-commit.md", False),
    ("docs/.draft.md", False),
    ("pkg/__pycache__/mod.py", False),
    ("node_modules/x/readme.md", False),
    ("venv/lib/site.py", False),
    ("", False),
])
def test_only_files_the_indexer_reads_trigger_a_run(rel: str, watched: bool) -> None:
    assert watched_path(rel) is watched


def test_a_batch_keeps_the_last_change_per_file_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    batch = [
        (Change.added, str(root / "docs/a.md")),
        (Change.added, str(root / "pkg/m.py")),
        (Change.modified, str(root / "pkg/m.py")),
        (Change.modified, str(root / "pkg/m.pyc")),
        (Change.deleted, str(root / "old")),  # a folder removed with its files
        (Change.modified, str(tmp_path.parent / "elsewhere.md")),
        (Change.modified, str(root / ".git/HEAD")),
    ]
    assert relevant_changes(batch, root, {"old"}) == [("docs/a.md", "added"), ("old/", "deleted"),
                                                      ("pkg/m.py", "modified")]


def test_a_folders_own_event_counts_when_it_brings_or_takes_files_the_indexer_reads(tmp_path: Path) -> None:
    """A move sends one event naming the folder: moved in, renamed (`api.v1` is no file), moved out."""
    from graph.cli_watch import folders_under

    root = tmp_path.resolve()
    for folder, name in (("guide/deep", "intro.md"), ("api.v2", "routes.md"), ("pictures", "a.png"),
                         (".cache", "x.md"), ("docs", "a.md")):
        (root / folder).mkdir(parents=True)
        (root / folder / name).write_bytes(b"x")
    folders = {"docs", "api.v1", "old.d", "old.d/inner"}
    batch = [
        (Change.added, str(root / "guide")),  # moved in with a markdown file two levels down
        (Change.added, str(root / "api.v2")),  # renamed from api.v1
        (Change.deleted, str(root / "api.v1")),
        (Change.deleted, str(root / "old.d")),  # moved out
        (Change.added, str(root / "pictures")),  # nothing the indexer reads
        (Change.added, str(root / ".cache")),  # hidden
        (Change.modified, str(root / "docs")),  # a known folder's own metadata
        (Change.deleted, str(root / "gone.png")),  # a file the indexer never read, not a known folder
    ]
    assert relevant_changes(batch, root, folders) == [("api.v1/", "deleted"), ("api.v2/", "added"),
                                                      ("guide/", "added"), ("old.d/", "deleted")]
    assert folders == {"docs", "api.v2", "guide", "guide/deep", "pictures"}
    assert folders_under(root) == ({"docs", "api.v2", "guide", "guide/deep", "pictures"}, True)
    assert folders_under(root, "pictures") == ({"pictures"}, False)


def test_a_batch_names_a_few_files_and_counts_the_rest() -> None:
    changes = [(f"docs/{i}.md", "modified") for i in range(7)]
    assert describe_changes(changes, limit=2) == "changed: docs/0.md (modified), docs/1.md (modified) and 5 more"
    assert describe_changes([("a\nb.md", "added")]) == "changed: a\\nb.md (added)"


def test_a_report_line_says_what_the_job_did() -> None:
    report = SimpleNamespace(session="s", timings={"total": 0.42}, files_indexed=1, files_deleted=0,
                             files_unchanged=171, skipped=[], rows_written=12)
    assert describe_report(report) == ("re-indexed session 's' in 0.4 s: 1 file indexed, 0 deleted, 171 unchanged; "
                                       "12 rows written")


COMMAND = hook_command(Path("/repo"), "s", Path("/data"), Path("/repo/.git/lotsman-index.log"), runner=["lotsman"])
BLOCK = hook_block(COMMAND)


@pytest.mark.parametrize(("existing", "expected"), [
    (None, NEW_HOOK + hook_block(COMMAND, created=True)),
    (b"", BLOCK),
    (b"#!/bin/bash\nmake lint\nexit 0\n", b"#!/bin/bash\n" + BLOCK + b"make lint\nexit 0\n"),
    (b"echo no shebang\n", BLOCK + b"echo no shebang\n"),
], ids=["new", "empty", "existing-with-exit", "no-shebang"])
def test_install_adds_our_block_before_the_hooks_own_lines(existing: bytes | None, expected: bytes) -> None:
    assert with_hook_block(existing, COMMAND) == expected


def test_install_is_idempotent_and_replaces_an_older_block_of_the_same_folder_and_session() -> None:
    """A reinstall (another data folder, another runner) replaces the block; a block of another folder or
    session is refused (a shared `core.hooksPath`, another `--session`): replacing it stopped that re-index."""
    from graph.cli_hook import ForeignBlock

    own = b"#!/bin/sh\necho mine\n"
    older = hook_command(Path("/repo"), "s", Path("/old-data"), Path("/repo/.git/lotsman-index.log"),
                         runner=["/old/venv/bin/lotsman"])
    once = with_hook_block(own, older)
    twice = with_hook_block(with_hook_block(once, COMMAND), COMMAND)
    assert twice.count(HOOK_BEGIN) == 1 and twice.count(HOOK_END) == 1
    assert b"/old" not in twice and twice == with_hook_block(own, COMMAND)
    for root, session in (("/other", "s"), ("/repo", "t")):
        other = hook_command(Path(root), session, Path("/data"), Path(root) / ".git/lotsman-index.log",
                             runner=["lotsman"])
        with pytest.raises(ForeignBlock, match=f"already re-indexes session '{session}' from {root}"):
            with_hook_block(with_hook_block(own, other), COMMAND)


def test_uninstall_gives_back_the_hook_as_it_was() -> None:
    own = b"#!/bin/bash\nmake lint\nexit 0\n"
    assert without_hook_block(with_hook_block(own, COMMAND)) == own
    assert without_hook_block(own) == own
    assert without_hook_block(with_hook_block(None, COMMAND)) is None  # a hook install created goes
    assert without_hook_block(with_hook_block(b"#!/bin/sh\n", COMMAND)) == b"#!/bin/sh\n"  # the user's stays


@pytest.mark.parametrize("folder", [Path("/repo"), Path("/a 'quoted' $HOME `x`/r\u00e9po"), Path("/b/r\udce9po")],
                         ids=["plain", "quoted", "not-utf8"])
def test_every_command_install_writes_is_recognised_as_ours(folder: Path) -> None:
    import os

    for runner in (None, ["/usr/bin/python3", "-m", "graph.cli"]):
        line = hook_command(folder, "docs", folder / "data", folder / ".git/lotsman-index.log", runner=runner)
        assert is_hook_command(os.fsencode(line)), line
        assert not is_hook_command(os.fsencode(line + " echo mine"))
        assert not is_hook_command(os.fsencode(line.replace(" hook run ", " -v hook run ")))


def test_only_a_held_lock_is_worth_waiting_for() -> None:
    assert is_busy(IndexingError("another index job (or a delete) is running for session 's': wait for it"))
    assert not is_busy(IndexingError("path not found: /x"))
    assert not is_busy(SessionNotFoundError("no session 's'"))


@pytest.mark.parametrize(("script", "symlink", "refused"), [
    (None, False, None),
    (b"", False, None),
    (b"#!/bin/sh\necho hi\n", False, None),
    (b"#!/usr/bin/env bash\necho hi\n", False, None),
    (b"echo no shebang\n", False, None),
    (b"#!/usr/bin/env python3\nprint('hi')\n", False, "python3 script"),
    (b"#!/usr/bin/node\n", False, "node script"),
    (b"#!/bin/sh\n", True, "symlink"),
])
def test_hook_install_edits_only_shell_hooks_it_owns(tmp_path: Path, script: bytes | None, symlink: bool,
                                                     refused: str | None) -> None:
    """A shell block put into a Python hook made it a syntax error; writing through a symlink edited a shared
    target."""
    path = tmp_path / "post-commit"
    if symlink:
        (tmp_path / "shared").write_bytes(script or b"")
        path.symlink_to(tmp_path / "shared")
    problem = hook_problem("post-commit", path, script)
    assert (problem is None) if refused is None else (problem is not None and refused in problem)


def test_the_hooks_data_folder_is_shell_quoted(tmp_path: Path) -> None:
    import subprocess

    odd = tmp_path / 'a "b" $HOME `x`'
    line = hook_command(tmp_path, "s", odd, tmp_path / "log")
    assignment = line.split(" nohup ")[0]
    got = subprocess.run(["sh", "-c", f"{assignment}; printf %s \"$LOTSMAN_DATA_DIR\""], capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin"}, check=True).stdout
    assert got == str(odd)


def test_one_hook_runner_per_session_at_a_time(tmp_path: Path) -> None:
    """A rebase's hundred post-commits started a hundred runners, each holding a database connection."""
    from graph.cli_hook import hook_runner_lock, runner_files

    with (hook_runner_lock(tmp_path, "docs") as first, hook_runner_lock(tmp_path, "docs") as second,
          hook_runner_lock(tmp_path, "other") as other):
        assert (first, second, other) == (True, False, True)
    with hook_runner_lock(tmp_path, "docs") as again:
        assert again  # released when the runner ends
    lock, pending = runner_files(tmp_path, "docs")
    assert runner_files(tmp_path, "docs") == (lock, pending) and lock != runner_files(tmp_path, "other")[0]


class _Indexed(Exception):
    """Raised by the stand-in `index_repository` with the arguments it was given."""


@pytest.mark.parametrize("yes", [True, False])
def test_watch_passes_yes_on_as_allow_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, yes: bool) -> None:
    """The 5000-file guard of `index_repository` applies to `watch`; `--yes` passes `allow_large` on, and a
    refusal tells the user watch's own `--yes`."""
    from contextlib import contextmanager

    import graph.cli_commands as cli_commands
    import stores.embedders as embedders
    import stores.indexing.service as service
    import stores.schema as schema
    import stores.sessions as sessions
    from graph.cli import build_parser
    from graph.cli_watch import _watch
    from graph.settings import Settings

    class Db:
        @contextmanager
        def connection(self):  # type: ignore[no-untyped-def]
            yield None

    @contextmanager
    def open_deps(settings, production=False):  # type: ignore[no-untyped-def]
        yield SimpleNamespace(database=Db)

    def index_repository(db, root, **kwargs):  # type: ignore[no-untyped-def]
        raise _Indexed(kwargs)

    monkeypatch.setattr(cli_commands, "open_deps", open_deps)
    monkeypatch.setattr(schema, "ensure_tables", lambda conn: None)
    monkeypatch.setattr(sessions, "find_session", lambda conn, name: None)
    monkeypatch.setattr(embedders, "make_embedder", lambda name, settings: SimpleNamespace(name=name))
    monkeypatch.setattr(service, "index_repository", index_repository)
    args = build_parser(plugins=False).parse_args(["watch", str(tmp_path), "--session", "s", *(["--yes"] * yes)])
    with pytest.raises(_Indexed) as indexed:
        _watch(args, Settings(embedder="fake"))
    [kwargs] = indexed.value.args
    assert kwargs["allow_large"] is yes
    assert "lotsman watch" in kwargs["large_hint"] and "--yes" in kwargs["large_hint"]
