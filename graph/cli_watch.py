"""`lotsman watch` and `lotsman hook install|uninstall`: keeping an index fresh (issue 26).

Both run the incremental index of `lotsman index PATH --session S` (`stores.indexing.service.index_repository`):
a changes job that applies the diff in one transaction, so a question asked meanwhile reads the previous rows
until the job commits. `watch` runs it after each burst of file changes (quiet for `watch_debounce_ms`); the
git hooks run it in the background after a commit, a merge or a checkout (`lotsman hook run`, which waits its
turn when another job of the session is running).
"""

from __future__ import annotations

import argparse
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.cli_commands import session_name
from graph.settings import Settings
from graph.terminal import printable
from stores.errors import IndexingError, IndexInterruptedError, LotsmanError, UsageError

if TYPE_CHECKING:
    from stores.indexing.service import IndexReport

WATCHED_SUFFIXES = (".md", ".markdown", ".py")
"""What the indexer reads (`stores.indexing.files.DEFAULT_INCLUDE_EXTS`); other files never trigger a run."""
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "__pypackages__", "site-packages", "venv"})
"""Folders the indexer never enters (`stores.indexing.files.IGNORED_DIR_NAMES`), besides hidden ones."""
SHOWN_CHANGES = 5
"""Changed paths listed by name per batch; the rest are counted."""
HOOKS = ("post-commit", "post-merge", "post-checkout")
HOOK_BEGIN = "# >>> lotsman: re-index after git changes the work tree >>>"
HOOK_END = "# <<< lotsman <<<"
BUSY_RETRY_S = 2.0
BUSY_WAIT_S = 600.0
"""`hook run` waits this long at most for another index job of the session to end (then gives up)."""


# ---- decisions (pure) --------------------------------------------------------------------------------------


def watched_path(rel: str) -> bool:
    """Whether a change to `rel` (relative to the watched root, `/`-separated) can change the index: a
    markdown or Python file outside hidden and skipped folders, or a deleted folder that may have held some."""
    parts = [p for p in rel.split("/") if p]
    if not parts or any(p.startswith(".") or p in SKIPPED_FOLDERS for p in parts[:-1]) or parts[-1].startswith("."):
        return False
    return parts[-1].lower().endswith(WATCHED_SUFFIXES)


def relevant_changes(changes: Iterable[tuple[Any, str]], root: Path) -> list[tuple[str, str]]:
    """`(relative path, added|modified|deleted)` of a batch from `watchfiles`, the last change per path,
    sorted; paths outside `root` and files the indexer does not read are left out."""
    kinds: dict[str, str] = {}
    for change, path in changes:
        try:
            rel = Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        name = getattr(change, "name", str(change))
        if watched_path(rel) or (name == "deleted" and not Path(rel).suffix):
            kinds[rel] = name
    return sorted(kinds.items())


def describe_changes(changes: list[tuple[str, str]], limit: int = SHOWN_CHANGES) -> str:
    shown = ", ".join(f"{printable(path)} ({kind})" for path, kind in changes[:limit])
    more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
    return f"changed: {shown}{more}"


def describe_report(report: IndexReport) -> str:
    skipped = f", {len(report.skipped)} skipped" if report.skipped else ""
    return (f"re-indexed session '{printable(report.session)}' in {report.timings.get('total', 0.0):.1f} s: "
            f"{_count(report.files_indexed, 'file')} indexed, {report.files_deleted} deleted, "
            f"{report.files_unchanged} unchanged{skipped}; {_count(report.rows_written, 'row')} written")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def hook_block(command: str) -> str:
    """The lines `hook install` puts into a hook: the command in the background, its output to a log."""
    return f"{HOOK_BEGIN}\n# `lotsman hook uninstall` removes this block\n{command}\n{HOOK_END}\n"


def with_hook_block(script: str | None, block: str) -> str:
    """The hook's text with our block in it: replacing an earlier one (idempotent), else right after the
    shebang (before any `exit` of the existing hook); a new hook is a `/bin/sh` script."""
    if script is None or not script.strip():
        return f"#!/bin/sh\n{block}"
    rest = without_hook_block(script)
    if rest.startswith("#!"):
        first, _, tail = rest.partition("\n")
        return f"{first}\n{block}{tail}"
    return f"{block}{rest}"


def without_hook_block(script: str) -> str:
    """The hook's text with our block (every copy of it) removed; anything else is kept as it was."""
    out: list[str] = []
    inside = False
    for line in script.splitlines(keepends=True):
        if line.rstrip("\n") == HOOK_BEGIN:
            inside = True
        elif inside and line.rstrip("\n") == HOOK_END:
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


def only_our_block(script: str) -> bool:
    """A hook that holds nothing but a shebang and our block (`hook uninstall` deletes it)."""
    return all(not line.strip() or line.startswith("#!") for line in without_hook_block(script).splitlines())


def is_busy(exc: LotsmanError) -> bool:
    """The session's index lock is held by another job (a hook run then waits for its turn)."""
    return isinstance(exc, IndexingError) and "another index job" in str(exc)


# ---- indexing ----------------------------------------------------------------------------------------------


def _existing_folder(path: str) -> Path:
    from stores.indexing.files import escaped_path

    root = Path(path).expanduser()
    if not root.exists():
        raise IndexingError(f"path not found: {printable(escaped_path(str(root)))}")
    if not root.is_dir():
        raise IndexingError(f"not a directory: {printable(escaped_path(str(root)))} (watch a repository folder)")
    return root.resolve()


def _index_once(deps: Any, settings: Settings, root: Path, session: str) -> IndexReport:
    """The incremental index `lotsman index ROOT --session SESSION` runs, with the session's own embedder."""
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository
    from stores.schema import ensure_tables
    from stores.sessions import find_session

    db = deps.database()
    with db.connection() as conn:
        ensure_tables(conn)
        found = find_session(conn, session)
    if found is not None and found.commit_sha is not None:
        # an incremental index of the working tree would silently replace the revision the session holds
        raise UsageError(f"session '{printable(session)}' holds git revision {printable(found.git_ref or '')} "
                         f"({found.commit_sha[:12]}): watch and hooks keep a working tree's session fresh; "
                         "give another --session")
    embedder = make_embedder(found.embedder if found else settings.embedder, settings)
    return index_repository(db, root, session_name=session, embedder=embedder, incremental=True,
                            max_bytes=settings.max_file_bytes, batch_size=settings.embed_batch_size,
                            parse_workers=settings.parse_workers)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a service manager, `kill`) stops like Ctrl-C: a job in flight is cancelled cleanly."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _say(line: str, *, err: bool = False) -> None:
    print(line, file=sys.stderr if err else sys.stdout, flush=True)


def _watch(args: argparse.Namespace, settings: Settings) -> int:
    import watchfiles

    from graph.cli_commands import open_deps

    root = _existing_folder(args.path)
    step = max(settings.watch_debounce_ms, 1)
    with _sigterm_as_interrupt(), open_deps(settings, production=False) as deps:
        try:
            _say(describe_report(_index_once(deps, settings, root, args.session)))
            _say(f"watching {printable(str(root))} for session '{printable(args.session)}' "
                 f"(re-index after {settings.watch_debounce_ms} ms of quiet); Ctrl-C stops")
            for batch in watchfiles.watch(root, step=step, debounce=max(1600, 10 * step), watch_filter=None,
                                          raise_interrupt=True):
                changes = relevant_changes(batch, root)
                if changes:
                    _say(describe_changes(changes))
                    _run_batch(deps, settings, root, args.session)
        except (KeyboardInterrupt, IndexInterruptedError) as exc:
            if isinstance(exc, IndexInterruptedError):
                _say(f"note: {printable(exc)}")
            _say("stopped watching")
    return 0


def _run_batch(deps: Any, settings: Settings, root: Path, session: str) -> None:
    """One re-index; a failure is one `error:` line and the watch goes on (the next change retries)."""
    try:
        _say(describe_report(_index_once(deps, settings, root, session)))
    except LotsmanError as exc:
        _say(f"error: {printable(exc)}", err=True)


# ---- git hooks ---------------------------------------------------------------------------------------------


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


def hook_command(root: Path, session: str, data_dir: Path, log: Path) -> str:
    """The shell line of a hook: `lotsman hook run` detached, with the data folder `hook install` used unless
    the committer's environment names another (a `DATABASE_URL` comes from the environment, never a file)."""
    script = Path(sys.executable).parent / "lotsman"
    runner = [str(script)] if script.exists() else [sys.executable, "-m", "graph.cli"]
    command = " ".join(shlex.quote(p) for p in [*runner, "hook", "run", str(root), "--session", session])
    # the default is quoted for the shell inside ${...:-...} (a `"`, `$` or backtick in the folder is data)
    return (f"LOTSMAN_DATA_DIR=${{LOTSMAN_DATA_DIR:-{shlex.quote(str(data_dir))}}} nohup {command} "
            f">> {shlex.quote(str(log))} 2>&1 < /dev/null &")


SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
"""Interpreters whose hook can take our shell block; a Python or Node hook would become a syntax error."""


def hook_problem(name: str, path: Path, script: str | None) -> str | None:
    """Why `hook install` must not edit this hook (None when it may): a symlink (its target may be shared), or
    a script in another language."""
    if path.is_symlink():
        return f"{name} is a symlink ({printable(str(path))}): edit its target by hand or remove the link"
    if script is None or not script.strip() or not script.startswith("#!"):
        return None
    words = script.partition("\n")[0][2:].split()
    interpreter = Path(words[0]).name if words else ""
    if interpreter == "env" and len(words) > 1:
        interpreter = Path(words[1]).name
    if interpreter not in SHELLS:
        return (f"{name} is a {printable(interpreter or 'non-shell')} script: a shell block cannot go in it; "
                f"call `lotsman hook run PATH --session NAME` from it by hand")
    return None


def _hook_install(args: argparse.Namespace, settings: Settings) -> int:
    root = _existing_folder(args.path)
    hooks, git_dir = _git_dirs(root)
    block = hook_block(hook_command(root, args.session, settings.data_dir, git_dir / "lotsman-index.log"))
    hooks.mkdir(parents=True, exist_ok=True)
    existing = {name: (hooks / name).read_text(encoding="utf-8") if (hooks / name).exists() else None
                for name in HOOKS}
    problems = [p for name in HOOKS if (p := hook_problem(name, hooks / name, existing[name]))]
    if problems:  # checked for every hook first: nothing is changed
        raise UsageError(f"{problems[0]}; no hook was changed")
    for name in HOOKS:
        path = hooks / name
        path.write_text(with_hook_block(existing[name], block), encoding="utf-8")
        if existing[name] is None:
            path.chmod(path.stat().st_mode | 0o111)
        elif not path.stat().st_mode & 0o100:  # the user disabled it: left so, and said
            _say(f"note: {printable(str(path))} is not executable, so git does not run it (left as it was)")
        _say(f"{'updated' if existing[name] else 'created'} {printable(str(path))}")
    _say(f"after a commit, merge or checkout, session '{printable(args.session)}' is re-indexed from "
         f"{printable(str(root))} in the background (log: {printable(str(git_dir / 'lotsman-index.log'))})")
    return 0


def _hook_uninstall(args: argparse.Namespace, settings: Settings) -> int:
    root = _existing_folder(args.path)
    hooks, _ = _git_dirs(root)
    removed = 0
    for name in HOOKS:
        path = hooks / name
        if not path.exists():
            continue
        script = path.read_text(encoding="utf-8")
        if HOOK_BEGIN not in script:
            continue
        removed += 1
        if only_our_block(script):
            path.unlink()
            _say(f"removed {printable(str(path))}")
        else:
            path.write_text(without_hook_block(script), encoding="utf-8")
            _say(f"removed the lotsman block from {printable(str(path))}")
    if not removed:
        _say("no lotsman hooks installed here")
    return 0


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


def _hook_index(settings: Settings, root: Path, session: str) -> None:
    from graph.cli_commands import open_deps

    deadline = time.monotonic() + BUSY_WAIT_S
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with open_deps(settings, production=False) as deps:
        while True:
            try:
                _say(f"{stamp} {describe_report(_index_once(deps, settings, root, session))}")
                return
            except LotsmanError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(BUSY_RETRY_S)


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands (module-level imports stay light: `lotsman ask` pays for them)."""
    p = sub.add_parser("watch", help="re-index a folder whenever its .md/.py files change (Ctrl-C stops)")
    p.add_argument("path")
    p.add_argument("--session", default="default", type=session_name)
    p.set_defaults(handler=_watch)

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
