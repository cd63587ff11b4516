"""`lotsman hook install|uninstall|run`: git hooks that re-index a working tree after git changes it.

`install` puts one marked block into post-commit, post-merge and post-checkout, right after the shebang; the
block runs `lotsman hook run` in the background, which runs the incremental index of `lotsman watch`
(`graph.cli_watch`). A hook is edited as bytes, so its CRLF line endings and bytes in any encoding stay as the
user wrote them, and only a block exactly as `install` wrote it is ever replaced or removed (markers may
carry trailing blanks). A block whose markers do not pair up, or whose lines were edited, stops either
command with one line naming the file, before any hook is changed: counting every line after a begin
marker as ours deleted users' hooks (issue 37).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from graph.cli_commands import session_name
from graph.cli_watch import _existing_folder, _index_once, _quoted, _say, describe_report, revision_refusal
from graph.settings import Settings
from graph.terminal import printable
from stores.errors import IndexingError, LotsmanError, UsageError

HOOKS = ("post-commit", "post-merge", "post-checkout")
HOOK_BEGIN = b"# >>> lotsman: re-index after git changes the work tree >>>"
HOOK_END = b"# <<< lotsman <<<"
HOOK_NOTE = b"# `lotsman hook uninstall` removes this block"
HOOK_NOTE_CREATED = b"# `lotsman hook uninstall` removes this block, and this file: `lotsman hook install` created it"
"""The note of a block in a hook `install` created: `uninstall` deletes that file when nothing else is in it
(a user's hook that holds only a shebang is the user's, and stays)."""
NEW_HOOK = b"#!/bin/sh\n"
"""What a hook `install` creates holds besides its block."""
TRAILING_BLANKS = b" \t\r\n"
"""What may follow a line of the block without making it another line (an editor's spaces, CRLF)."""
MARKER_LIKE = re.compile(rb"(>>>|<<<)\s*lotsman", re.IGNORECASE)
"""A line that is not one of our markers but looks like one: a marker that was edited or commented out."""
BUSY_RETRY_S = 2.0
BUSY_WAIT_S = 600.0
"""`hook run` waits this long at most for another index job of the session to end (then gives up)."""


# ---- the block (pure) --------------------------------------------------------------------------------------


def hook_command(root: Path, session: str, data_dir: Path, log: Path, runner: list[str] | None = None, *,
                 first_form: bool = False) -> str:
    """The shell line of a hook: `lotsman hook run` detached, with the data folder `hook install` used unless
    the committer's environment names another (a `DATABASE_URL` comes from the environment, never a file)."""
    if runner is None:
        script = Path(sys.executable).parent / "lotsman"
        runner = [str(script)] if script.exists() else [sys.executable, "-m", "graph.cli"]
    command = " ".join(shlex.quote(p) for p in [*runner, "hook", "run", str(root), "--session", session])
    # the default is quoted for the shell inside ${...:-...} (a `"`, `$` or backtick in the folder is data);
    # `first_form` is the command of the first hooks, which did not quote it (recognised, never written)
    default = (f'"${{LOTSMAN_DATA_DIR:-{data_dir}}}"' if first_form
               else f"${{LOTSMAN_DATA_DIR:-{shlex.quote(str(data_dir))}}}")
    return f"LOTSMAN_DATA_DIR={default} nohup {command} >> {shlex.quote(str(log))} 2>&1 < /dev/null &"


def hook_block(command: str, *, created: bool = False) -> bytes:
    """The lines `hook install` puts into a hook: the command in the background, its output to a log."""
    note = HOOK_NOTE_CREATED if created else HOOK_NOTE
    return b"\n".join([HOOK_BEGIN, note, os.fsencode(command), HOOK_END]) + b"\n"


_WORD = rb"(?:[\w@%+=:,./-]+|'[^']*'(?:\"'\"'[^']*')*)"  # one word as `shlex.quote` writes it
_REST = (rb" nohup (?P<runner>%(w)s(?: -m graph\.cli)?) hook run (?P<root>%(w)s) --session (?P<session>%(w)s)"
         rb" >> (?P<log>%(w)s) 2>&1 < /dev/null &" % {b"w": _WORD})
_COMMAND = re.compile(rb"LOTSMAN_DATA_DIR=\$\{LOTSMAN_DATA_DIR:-(?P<data>%s)\}%s" % (_WORD, _REST))
_FIRST_COMMAND = re.compile(rb'LOTSMAN_DATA_DIR="\$\{LOTSMAN_DATA_DIR:-(?P<data>[^"]*)\}"%s' % _REST)
"""The command of the first hooks (before the data folder was shell-quoted): theirs to remove as well."""


def is_hook_command(line: bytes) -> bool:
    """Whether `line` is a command `hook_command` writes (for any folder, session, data folder and log), or
    one the first hooks had."""
    return hook_target(line) is not None


def hook_target(line: bytes) -> tuple[str, str] | None:
    """(the folder, the session) a command `hook_command` writes (or the first hooks had) re-indexes; None
    for any other line."""
    for pattern, first_form in ((_COMMAND, False), (_FIRST_COMMAND, True)):
        if (found := pattern.fullmatch(line)) is not None:
            return _written_as(line, {key: os.fsdecode(value) for key, value in found.groupdict().items()},
                               first_form=first_form)
    return None


def _written_as(line: bytes, parts: dict[str, str], *, first_form: bool) -> tuple[str, str] | None:
    """(root, session) when `hook_command` writes exactly `line` from the parts a pattern found in it."""
    try:
        words = {key: shlex.split(value) for key, value in parts.items()}
    except ValueError:
        return None
    if any(len(words[key]) != 1 for key in ("root", "session", "log", *(() if first_form else ("data",)))):
        return None
    data_dir = parts["data"] if first_form else words["data"][0]
    root, session = words["root"][0], words["session"][0]
    again = hook_command(Path(root), session, Path(data_dir), Path(words["log"][0]), runner=words["runner"],
                         first_form=first_form)
    return (root, session) if os.fsencode(again) == line else None


class BlockProblem(ValueError):
    """Lotsman's block in a hook cannot be told apart from the user's lines (the message says where)."""


class ForeignBlock(ValueError):
    """The hook's block re-indexes another folder or session (a shared `core.hooksPath`, an install with
    another `--session`): replacing it would silently stop that re-index."""

    def __init__(self, root: str, session: str) -> None:
        super().__init__(f"already re-indexes session '{printable(session)}' from {printable(root)}")
        self.root, self.session = root, session


@dataclass(frozen=True)
class BlockSpan:
    """Where our block is in a hook's bytes."""

    start: int
    """Offset of the begin marker's line."""
    end: int
    """Offset just past the end marker's line (its newline included)."""
    created: bool
    """The block says `install` created the hook (`HOOK_NOTE_CREATED`)."""
    root: str = ""
    """The folder its command re-indexes."""
    session: str = ""
    """The session its command re-indexes."""


def _lines(script: bytes) -> list[bytes]:
    """The lines of a hook, each with its `\\n` (a `\\r` stays part of its line, as the shell reads it)."""
    parts = script.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def find_block(script: bytes) -> BlockSpan | None:
    """Our block in a hook: exactly its four lines, markers matched with trailing blanks; None when the hook
    holds no marker at all.

    Raises:
        BlockProblem: a marker alone, twice, edited or commented out, or the block's lines edited.
    """
    lines = _lines(script)
    begins: list[int] = []
    ends: list[int] = []
    for number, line in enumerate(lines, 1):
        text = line.rstrip(TRAILING_BLANKS)
        if text == HOOK_BEGIN:
            begins.append(number)
        elif text == HOOK_END:
            ends.append(number)
        elif MARKER_LIKE.search(line):
            raise BlockProblem(f"line {number} looks like an edited lotsman marker")
    if not begins and not ends:
        return None
    if len(begins) > 1 or len(ends) > 1:
        which = "begin" if len(begins) > 1 else "end"
        where = ", ".join(str(n) for n in (begins if which == "begin" else ends))
        raise BlockProblem(f"lotsman's {which} marker is there more than once (lines {where})")
    if not ends:
        raise BlockProblem(f"the lotsman block at line {begins[0]} has no end marker")
    if not begins:
        raise BlockProblem(f"line {ends[0]} holds lotsman's end marker without its begin marker")
    first, last = begins[0], ends[0]
    inner = [line.rstrip(TRAILING_BLANKS) for line in lines[first:last - 1]]
    target = hook_target(inner[1]) if last - first == 3 else None
    if target is None or inner[0] not in (HOOK_NOTE, HOOK_NOTE_CREATED):
        raise BlockProblem(f"the lotsman block (lines {first}-{last}) was edited")
    return BlockSpan(start=sum(map(len, lines[:first - 1])), end=sum(map(len, lines[:last])),
                     created=inner[0] == HOOK_NOTE_CREATED, root=target[0], session=target[1])


def with_hook_block(script: bytes | None, command: str) -> bytes:
    """The hook's bytes with our block in it: an earlier block of the same folder and session replaced where
    it is (idempotent; its data folder or runner may differ), else the block right after the shebang (before
    any `exit` of the existing hook), else first; a hook that does not exist yet becomes a `/bin/sh` script.
    Every other byte stays.

    Raises:
        BlockProblem: see `find_block`.
        ForeignBlock: the hook's block re-indexes another folder or session.
    """
    if script is None:
        return NEW_HOOK + hook_block(command, created=True)
    span = find_block(script)
    if span is not None and (span.root, span.session) != hook_target(os.fsencode(command)):
        raise ForeignBlock(span.root, span.session)
    if span is not None:
        return script[:span.start] + hook_block(command, created=span.created) + script[span.end:]
    if not script.startswith(b"#!"):
        return hook_block(command) + script
    shebang, _, rest = script.partition(b"\n")
    # a hook that is only a shebang without its newline gets one (the block cannot share its line); uninstall
    # leaves that newline
    return shebang + b"\n" + hook_block(command) + rest


def without_hook_block(script: bytes) -> bytes | None:
    """The hook's bytes without our block (the same bytes when it has none); None when it is a hook
    `install` created and nothing else was put in it (the file goes).

    Raises:
        BlockProblem: see `find_block`.
    """
    span = find_block(script)
    if span is None:
        return script
    rest = script[:span.start] + script[span.end:]
    return None if span.created and rest == NEW_HOOK else rest


def by_hand(path: Path, problem: BlockProblem, action: str) -> str:
    return (f"{printable(str(path))}: {printable(problem)}: edit the file by hand (keep your lines; delete "
            f"lotsman's block, or restore it as `lotsman hook install` wrote it), then run `lotsman hook {action}` "
            "again; no hook was changed")


SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
"""Interpreters whose hook can take our shell block; a Python or Node hook would become a syntax error."""


def hook_problem(name: str, path: Path, script: bytes | None) -> str | None:
    """Why `hook install` must not edit this hook (None when it may): a symlink (its target may be shared), or
    a script in another language."""
    if path.is_symlink():
        return f"{name} is a symlink ({printable(str(path))}): edit its target by hand or remove the link"
    if not script or not script.startswith(b"#!"):
        return None
    words = script.partition(b"\n")[0][2:].decode("utf-8", "replace").split()
    interpreter = Path(words[0]).name if words else ""
    if interpreter == "env" and len(words) > 1:
        interpreter = Path(words[1]).name
    if interpreter not in SHELLS:
        return (f"{name} is a {printable(interpreter or 'non-shell')} script: a shell block cannot go in it; "
                f"call `lotsman hook run PATH --session NAME` from it by hand")
    return None


def is_busy(exc: LotsmanError) -> bool:
    """The session's index lock is held by another job (a hook run then waits for its turn)."""
    return isinstance(exc, IndexingError) and "another index job" in str(exc)


# ---- git and files -----------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> str:
    from stores.indexing.git_source import git_environment

    try:
        # without the hook's GIT_DIR (a commit in another worktree runs this folder's hook runner): the runner's
        # lock and log belong in the git folder of the folder it indexes
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                              env=git_environment())
    except FileNotFoundError:
        raise UsageError("git is not installed (or not on PATH): hooks need it") from None
    if done.returncode != 0:
        raise UsageError(f"not a git repository: {printable(str(root))} (hooks live in a repository; "
                         "`lotsman watch PATH` keeps a plain folder fresh)")
    return done.stdout.strip()


def _git_dirs(root: Path) -> tuple[Path, Path]:
    """(the hooks folder, the git folder) of the repository holding `root` (`core.hooksPath` honoured)."""
    if _git(root, "rev-parse", "--is-inside-work-tree") != "true":
        raise UsageError(f"not inside a git work tree: {printable(str(root))}")
    hooks = Path(_git(root, "rev-parse", "--git-path", "hooks"))
    git_dir = Path(_git(root, "rev-parse", "--git-dir"))
    return (hooks if hooks.is_absolute() else root / hooks), (git_dir if git_dir.is_absolute() else root / git_dir)


def _write_hook(path: Path, data: bytes) -> None:
    """Replace a hook's bytes in one step (a full disk or a crash leaves the old hook, never half of it),
    keeping its mode; a new hook is executable."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    temporary = path.with_name(f".{path.name}.lotsman-{os.getpid()}")
    try:
        temporary.write_bytes(data)
        temporary.chmod(mode if mode is not None else temporary.stat().st_mode | 0o111)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def session_revision(settings: Settings, session: str) -> str | None:
    """The git revision (`REF @ SHA`) a session was indexed from; None for a working tree's session or a
    session not indexed yet."""
    from stores.database import Database
    from stores.schema import ensure_tables
    from stores.sessions import find_session

    with Database.from_settings(settings) as db, db.connection() as conn:
        ensure_tables(conn)
        found = find_session(conn, session)
    return found.revision if found is not None else None


# ---- commands ----------------------------------------------------------------------------------------------


def _checked_session(settings: Settings, session: str) -> None:
    """Refuse a session built from a git revision (every hook run would fail into the log: an incremental
    index of the work tree would replace the revision); with the database unreachable, say so and go on (a
    hook can be installed before the database runs)."""
    from stores.database import EmbeddedStoppedError
    from stores.errors import DatabaseUnavailableError, EmbeddedServerError, PgvectorMissingError

    try:
        revision = session_revision(settings, session)
    except (DatabaseUnavailableError, EmbeddedServerError, EmbeddedStoppedError, PgvectorMissingError) as exc:
        _say(f"note: could not ask the database about session '{printable(session)}' "
             f"({printable(' '.join(str(exc).split()))[:200]}); installing anyway: if the session holds a git "
             "revision, each hook run fails into the log")
        return
    if revision is not None:
        raise UsageError(f"{revision_refusal(session, revision)}; no hook was changed")


def _hook_install(args: argparse.Namespace, settings: Settings) -> int:
    root = _existing_folder(args.path)
    hooks, git_dir = _git_dirs(root)
    log = git_dir / "lotsman-index.log"
    command = hook_command(root, args.session, settings.data_dir, log)
    _checked_session(settings, args.session)  # first: the hooks are read and written right after
    existing: dict[str, bytes | None] = {}
    edited: dict[str, bytes] = {}
    for name in HOOKS:  # every hook is checked first: a refusal changes nothing
        path = hooks / name
        existing[name] = path.read_bytes() if path.is_file() else None
        if problem := hook_problem(name, path, existing[name]):
            raise UsageError(f"{problem}; no hook was changed")
        try:
            edited[name] = with_hook_block(existing[name], command)
        except BlockProblem as exc:
            raise UsageError(by_hand(path, exc, "install")) from None
        except ForeignBlock as exc:
            raise UsageError(f"{name} {exc}: uninstall it there first (`lotsman hook uninstall "
                             f"{printable(shlex.quote(exc.root))}`); no hook was changed") from None
    if not _inside(hooks, git_dir):
        _say(f"note: the hooks folder {printable(str(hooks))} (core.hooksPath) is outside this repository's git "
             "folder: every repository using it runs these hooks, and they re-index only "
             f"{printable(str(root))}")
    hooks.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        path = hooks / name
        if edited[name] == existing[name]:
            _say(f"{printable(str(path))} already runs the lotsman block (left as it was)")
            continue
        _write_hook(path, edited[name])
        if existing[name] is not None and not path.stat().st_mode & 0o100:  # the user disabled it: left so, and said
            _say(f"note: {printable(str(path))} is not executable, so git does not run it (left as it was)")
        _say(f"{'updated' if existing[name] is not None else 'created'} {printable(str(path))}")
    _say(f"after a commit, merge or checkout, session '{printable(args.session)}' is re-indexed from "
         f"{printable(str(root))} in the background (log: {printable(str(log))})")
    return 0


def _hook_uninstall(args: argparse.Namespace, settings: Settings) -> int:
    """Remove this repository's blocks (of any session) from the hooks; a block of another repository (a
    shared `core.hooksPath`) stays, and is named."""
    root = _existing_folder(args.path)
    hooks, _ = _git_dirs(root)
    edited: dict[Path, bytes | None] = {}
    others = 0
    for name in HOOKS:  # every hook is checked first: a refusal changes nothing
        path = hooks / name
        if not path.is_file():
            continue
        script = path.read_bytes()
        try:
            span = find_block(script)
            rest = without_hook_block(script)
        except BlockProblem as exc:
            raise UsageError(by_hand(path, exc, "uninstall")) from None
        if span is not None and span.root != str(root):
            others += 1
            _say(f"left {printable(str(path))}: its lotsman block re-indexes session '{printable(span.session)}' "
                 f"from {printable(span.root)} (run `lotsman hook uninstall` there)")
            continue
        if rest == script:
            continue
        if path.is_symlink():
            raise UsageError(f"{name} is a symlink ({printable(str(path))}) to a hook holding lotsman's block: "
                             "edit its target by hand; no hook was changed")
        edited[path] = rest
    for path, rest in edited.items():
        if rest is None:
            path.unlink()
            _say(f"removed {printable(str(path))} (`lotsman hook install` had created it)")
        else:
            _write_hook(path, rest)
            _say(f"removed the lotsman block from {printable(str(path))}")
    if not edited and not others:
        _say(f"no hook in {printable(str(hooks))} holds a lotsman block: nothing to uninstall")
    return 0


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def runner_files(git_dir: Path, session: str) -> tuple[Path, Path]:
    """(the lock, the "index again" mark) of a session's hook runners, in the git folder."""
    import hashlib

    key = hashlib.sha1(session.encode()).hexdigest()[:12]
    return git_dir / f"lotsman-{key}.lock", git_dir / f"lotsman-{key}.pending"


@contextmanager
def hook_runner_lock(git_dir: Path, session: str) -> Iterator[bool]:
    """One `hook run` per repository and session at a time (an advisory file lock in the git folder):
    yields False when another runner holds it. A rebase's hundred post-commits started a hundred runners,
    each holding a database connection while it waited for the session's lock."""
    import fcntl

    with runner_files(git_dir, session)[0].open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _hook_run(args: argparse.Namespace, settings: Settings) -> int:
    """What a hook runs: the incremental index, after waiting for another job of the session to end. A
    runner that finds another one running leaves a mark and exits; the running one indexes again once it is
    done, so the last commit of a burst is indexed by one process."""
    root = _existing_folder(args.path)
    _, git_dir = _git_dirs(root)
    pending = runner_files(git_dir, args.session)[1]
    with hook_runner_lock(git_dir, args.session) as mine:
        if not mine:
            pending.touch()
            _say(f"{time.strftime('%Y-%m-%d %H:%M:%S')} another run is indexing session "
                 f"'{printable(args.session)}': it will index again when done")
            return 0
        while True:
            pending.unlink(missing_ok=True)
            _hook_index(settings, root, args.session)
            if not pending.exists():
                return 0


def hook_hint(root: Path, session: str) -> str:
    """What a hook run refused by the 5000-file guard writes into its log: hooks take no `--yes`, and once the
    session's index was built from the folder with it, hook runs are not counted again."""
    return (f"run `lotsman index {_quoted(root)} --session {_quoted(session)} --yes` once (the hooks then "
            "re-index the folder without asking)")


def _hook_index(settings: Settings, root: Path, session: str) -> None:
    from graph.cli_commands import open_deps

    deadline = time.monotonic() + BUSY_WAIT_S
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with open_deps(settings, production=False) as deps:
        while True:
            try:
                report = _index_once(deps, settings, root, session, large_hint=hook_hint(root, session))
                _say(f"{stamp} {describe_report(report)}")
                return
            except LotsmanError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(BUSY_RETRY_S)


def register(sub: argparse._SubParsersAction) -> None:
    """Add `lotsman hook` (module-level imports stay light: `lotsman ask` pays for them)."""
    hook = sub.add_parser("hook", help="git hooks that re-index after a commit, merge or checkout")
    actions = hook.add_subparsers(dest="action", required=True)
    install = actions.add_parser("install", help="add the hooks (an existing hook keeps its own lines)")
    install.add_argument("path", nargs="?", default=".")
    install.add_argument("--session", default="default", type=session_name)
    install.set_defaults(handler=_hook_install)
    uninstall = actions.add_parser("uninstall", help="remove what `hook install` added")
    uninstall.add_argument("path", nargs="?", default=".")
    uninstall.set_defaults(handler=_hook_uninstall)
    run = actions.add_parser("run", help="what the hooks run: the incremental index, waiting for a running job")
    run.add_argument("path")
    run.add_argument("--session", default="default", type=session_name)
    run.set_defaults(handler=_hook_run)
