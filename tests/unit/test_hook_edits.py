"""`lotsman hook install|uninstall` on hooks the user wrote or touched (issue 37 items 1, 17, 18).

Every case asserts that the user's own bytes survive exactly: CRLF line endings, bytes that are not UTF-8,
lines before and after Lotsman's block. A block whose markers do not pair up, or whose lines were edited, is
one `error:` line, a non-zero exit, and no hook changed.
"""

from __future__ import annotations

import importlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from graph.cli import main

HOOKS = ("post-commit", "post-merge", "post-checkout")
BEGIN = b"# >>> lotsman: re-index after git changes the work tree >>>"
END = b"# <<< lotsman <<<"

CRLF = b"#!/bin/sh\r\necho 'crlf hook'\r\nexit 0\r\n"
LATIN1 = b"#!/bin/sh\n# r\xe9sum\xe9 in latin-1, and a stray \xff\xfe\necho caf\xe9 >> /tmp/x\n"
PLAIN = b"#!/bin/bash\nmake lint\nexit 0\n"
NO_SHEBANG = b"echo no shebang\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository, and `lotsman` settings that never reach a database (install's session check is
    answered here: the session was not built from a revision)."""
    from graph.settings import get_settings

    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.setenv("LOTSMAN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        hook_module = importlib.import_module("graph.cli_hook")
    except ImportError:  # the code before the split: install never asked the database
        pass
    else:
        monkeypatch.setattr(hook_module, "session_revision", lambda settings, session: None)
    yield root
    get_settings.cache_clear()


def hook(repo: Path, name: str = "post-commit") -> Path:
    return repo / ".git" / "hooks" / name


def hooks_now(repo: Path) -> dict[str, bytes | None]:
    return {name: hook(repo, name).read_bytes() if hook(repo, name).exists() else None for name in HOOKS}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def user_hook(repo: Path, data: bytes, name: str = "post-commit") -> Path:
    path = hook(repo, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o755)
    return path


def one_error_line(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    return lines[0]


@pytest.mark.parametrize("own", [CRLF, LATIN1, PLAIN, NO_SHEBANG], ids=["crlf", "not-utf8", "plain", "no-shebang"])
def test_install_then_uninstall_gives_back_the_users_hook_byte_for_byte(
        repo: Path, capsys: pytest.CaptureFixture[str], own: bytes) -> None:
    path = user_hook(repo, own)
    for _ in range(2):  # a second install replaces the block in place
        code, _, err = run(capsys, "hook", "install", str(repo), "--session", "s")
        assert code == 0, err
        data = path.read_bytes()
        assert data.count(BEGIN) == 1 and data.count(END) == 1
        assert data.replace(_block_of(data), b"") == own  # the user's bytes around the block, untouched
    code, out, err = run(capsys, "hook", "uninstall", str(repo))
    assert code == 0, err
    assert path.read_bytes() == own
    assert f"removed the lotsman block from {path}" in out
    assert not hook(repo, "post-merge").exists() and not hook(repo, "post-checkout").exists()


def _block_of(data: bytes) -> bytes:
    start = data.index(BEGIN)
    end = data.index(END, start) + len(END)
    return data[start:data.index(b"\n", end) + 1]


def _installed(repo: Path, capsys: pytest.CaptureFixture[str], own: bytes, *, after: bytes = b"") -> Path:
    """The user's hook with our block installed, and `after` appended by the user later."""
    path = user_hook(repo, own)
    code, _, err = run(capsys, "hook", "install", str(repo), "--session", "s")
    assert code == 0, err
    with path.open("ab") as f:
        f.write(after)
    return path


def _edit_end(suffix: bytes) -> Callable[[bytes], bytes]:
    return lambda data: data.replace(END + b"\n", END + suffix)


def _comment_out(data: bytes) -> bytes:
    block = _block_of(data)
    commented = b"".join(b"# " + line for line in block.splitlines(keepends=True))
    return data.replace(block, commented)


EDITS: dict[str, Callable[[bytes], bytes]] = {
    "end-marker-commented": _edit_end(b"  # keep this\n"),
    "end-marker-deleted": lambda data: data.replace(END + b"\n", b""),
    "end-marker-retyped": _edit_end(b" lotsman\n"),
    "block-commented-out": _comment_out,
    "begin-duplicated": lambda data: data.replace(BEGIN + b"\n", BEGIN + b"\n" + BEGIN + b"\n"),
    "end-without-begin": lambda data: data.replace(BEGIN + b"\n", b""),
    "command-edited": lambda data: data.replace(b" 2>&1 < /dev/null &", b" 2>&1 < /dev/null & echo mine"),
    "line-added-inside": lambda data: data.replace(END, b"echo mine\n" + END),
    "block-copied": lambda data: data + _block_of(data),
}


@pytest.mark.parametrize("own", [CRLF, LATIN1, PLAIN], ids=["crlf", "not-utf8", "plain"])
@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("action", ["uninstall", "install"])
def test_a_touched_block_is_one_error_line_and_no_hook_changes(
        repo: Path, capsys: pytest.CaptureFixture[str], own: bytes, edit: str, action: str) -> None:
    """A touched end marker made every line after the begin marker count as ours: uninstall deleted the
    user's whole hook, install dropped the user's lines after the block."""
    path = _installed(repo, capsys, own, after=b"echo 'users line after the block'\n")
    path.write_bytes(EDITS[edit](path.read_bytes()))
    before = hooks_now(repo)
    args = ("hook", action, str(repo)) + (("--session", "s") if action == "install" else ())
    code, _, err = run(capsys, *args)
    assert path.exists() and own.rstrip(b"\r\n").splitlines()[-1] in path.read_bytes()  # the user's lines
    assert b"echo 'users line after the block'\n" in path.read_bytes()
    assert hooks_now(repo) == before
    line = one_error_line(code, err)
    assert str(path) in line and "by hand" in line, line


@pytest.mark.parametrize("spaces", [b"  ", b"\t", b"\r", b" \r"], ids=["spaces", "tab", "cr", "space-cr"])
@pytest.mark.parametrize("own", [CRLF, LATIN1, PLAIN], ids=["crlf", "not-utf8", "plain"])
def test_markers_with_trailing_whitespace_still_match(repo: Path, capsys: pytest.CaptureFixture[str],
                                                      own: bytes, spaces: bytes) -> None:
    """Trailing blanks (an editor, a CRLF conversion) leave the block unambiguous: both commands work and
    only the block goes."""
    after = b"echo 'users line after the block'\r\n"
    path = _installed(repo, capsys, own, after=after)
    path.write_bytes(path.read_bytes().replace(BEGIN + b"\n", BEGIN + spaces + b"\n")
                     .replace(END + b"\n", END + spaces + b"\n"))
    code, _, err = run(capsys, "hook", "install", str(repo), "--session", "s")
    assert code == 0, err
    assert path.read_bytes().replace(_block_of(path.read_bytes()), b"") == own + after
    code, out, err = run(capsys, "hook", "uninstall", str(repo))
    assert code == 0, err
    assert path.read_bytes() == own + after


def test_uninstall_says_what_it_did_for_each_hook(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It said "removed the lotsman block" of a hook it left as it was."""
    own = user_hook(repo, PLAIN)
    code, out, err = run(capsys, "hook", "uninstall", str(repo))
    assert code == 0, err
    assert "removed" not in out and "no hook" in out and "lotsman block" in out, out
    assert own.read_bytes() == PLAIN

    code, _, err = run(capsys, "hook", "install", str(repo), "--session", "s")
    assert code == 0, err
    with hook(repo, "post-merge").open("ab") as f:  # the user adds a line to a hook install created
        f.write(b"echo mine\n")
    code, out, err = run(capsys, "hook", "uninstall", str(repo))
    assert code == 0, err
    assert out.count("removed the lotsman block from") == 2, out  # post-commit and the post-merge the user kept
    assert f"removed {hook(repo, 'post-checkout')}" in out
    assert hook(repo, "post-commit").read_bytes() == PLAIN
    assert hook(repo, "post-merge").read_bytes() == b"#!/bin/sh\necho mine\n"
    assert not hook(repo, "post-checkout").exists()


def test_a_user_hook_that_is_only_a_shebang_is_kept(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hook that held nothing but `#!/bin/sh` was deleted with our block: it was the user's file."""
    for own in (b"#!/bin/sh\n", b""):
        path = user_hook(repo, own)
        assert run(capsys, "hook", "install", str(repo), "--session", "s")[0] == 0
        assert run(capsys, "hook", "uninstall", str(repo))[0] == 0
        assert path.exists() and path.read_bytes() == own


def test_a_non_utf8_hook_in_another_language_is_refused_by_name(repo: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = user_hook(repo, b"#!/usr/bin/env python3\nprint('\xe9')\n")
    line = one_error_line(*run(capsys, "hook", "install", str(repo), "--session", "s")[::2])
    assert "python3 script" in line
    assert path.read_bytes() == b"#!/usr/bin/env python3\nprint('\xe9')\n"
    assert not hook(repo, "post-merge").exists()


def test_a_block_the_first_hook_install_wrote_is_still_ours(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first hooks did not shell-quote the data folder: their block is replaced and removed, not refused."""
    here = bytes(repo.resolve())
    first = (b'LOTSMAN_DATA_DIR="${LOTSMAN_DATA_DIR:-/home/u/.lotsman}" nohup /venv/bin/lotsman hook run ' + here +
             b" --session s >> " + here + b"/.git/lotsman-index.log 2>&1 < /dev/null &")
    block = b"\n".join([BEGIN, b"# `lotsman hook uninstall` removes this block", first, END]) + b"\n"
    path = user_hook(repo, b"#!/bin/sh\n" + block + PLAIN[len(b"#!/bin/bash\n"):])
    code, _, err = run(capsys, "hook", "install", str(repo), "--session", "s")
    assert code == 0, err
    assert first not in path.read_bytes() and path.read_bytes().count(BEGIN) == 1
    code, _, err = run(capsys, "hook", "uninstall", str(repo))
    assert code == 0, err
    assert path.read_bytes() == b"#!/bin/sh\nmake lint\nexit 0\n"
    path.write_bytes(b"#!/bin/sh\n" + block.replace(here + b" --session", here + b" -v --session"))
    assert one_error_line(*run(capsys, "hook", "uninstall", str(repo))[::2])


# ---- review of issue 37: a block of another repository or session; the database asked first ---------------


def _foreign_block(root: str, session: str) -> bytes:
    from graph.cli_hook import hook_block, hook_command

    return hook_block(hook_command(Path(root), session, Path("/old-data-dir"), Path(root) / ".git/lotsman-index.log",
                                   runner=["lotsman"]))


@pytest.mark.parametrize(("other_root", "other_session"), [("/a", "sa"), (None, "sa")],
                         ids=["another-repository", "another-session"])
def test_install_refuses_a_block_of_another_repository_or_session(
        repo: Path, capsys: pytest.CaptureFixture[str], other_root: str | None, other_session: str) -> None:
    """A shared `core.hooksPath`, or a reinstall with another `--session`: install replaced the other block
    silently (that repository or session was no longer re-indexed)."""
    root = other_root or str(repo.resolve())
    path = user_hook(repo, b"#!/bin/sh\n" + _foreign_block(root, other_session) + b"echo mine\n")
    before = hooks_now(repo)
    line = one_error_line(*run(capsys, "hook", "install", str(repo), "--session", "s")[::2])
    assert f"post-commit already re-indexes session '{other_session}' from {root}: uninstall it there first" in line
    assert hooks_now(repo) == before and path.read_bytes().count(BEGIN) == 1
    assert main(["hook", "install", str(repo), "--session", "s"]) == 2


def test_reinstalling_the_same_repository_and_session_replaces_the_block(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = user_hook(repo, b"#!/bin/sh\n" + _foreign_block(str(repo.resolve()), "s") + b"echo mine\n")
    code, _, err = run(capsys, "hook", "install", str(repo), "--session", "s")
    assert code == 0, err
    assert b"/old-data-dir" not in path.read_bytes() and path.read_bytes().count(BEGIN) == 1  # new data folder


def test_uninstall_leaves_another_repositorys_block(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Uninstall in one repository of a shared hooks folder removed the other repository's block too."""
    own = b"#!/bin/sh\n" + _foreign_block("/a", "sa") + b"echo mine\n"
    path = user_hook(repo, own)
    code, out, err = run(capsys, "hook", "uninstall", str(repo))
    assert code == 0, err
    assert path.read_bytes() == own
    assert "session 'sa' from /a" in out and "removed" not in out, out


def test_a_shared_hooks_folder_is_noted(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shared = tmp_path / "shared-hooks"
    subprocess.run(["git", "-C", str(repo), "config", "core.hooksPath", str(shared)], check=True)
    code, out, err = run(capsys, "hook", "install", str(repo), "--session", "s")
    assert code == 0, err
    assert (shared / "post-commit").exists()
    assert "outside this repository's git folder" in out, out


def test_install_asks_the_database_first_and_installs_without_it(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The database was asked after every hook was read; unreachable, it stopped the install."""
    import graph.cli_hook as cli_hook
    from stores.errors import DatabaseUnavailableError

    asked: list[bool] = []
    real_read = Path.read_bytes

    def down(settings, session):  # type: ignore[no-untyped-def]
        asked.append(True)
        raise DatabaseUnavailableError("cannot connect to PostgreSQL at postgresql://u@10.0.0.1:1/x")

    def read_bytes(self: Path) -> bytes:
        assert asked or self.name not in HOOKS, "a hook was read before the database was asked"
        return real_read(self)

    monkeypatch.setattr(cli_hook, "session_revision", down)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    user_hook(repo, PLAIN)
    code, out, err = run(capsys, "hook", "install", str(repo), "--session", "s")
    assert code == 0, err
    assert asked and "note:" in out and "database" in out, out
    assert BEGIN in real_read(hook(repo))
