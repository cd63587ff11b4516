"""`lotsman watch`: keeping a folder's index fresh while it is edited (issues 26 and 37).

It runs the incremental index of `lotsman index PATH --session S` (`stores.indexing.service.index_repository`):
a changes job that applies the diff in one transaction, so a question asked meanwhile reads the previous rows
until the job commits. `watch` runs it after each burst of file changes (quiet for `watch_debounce_ms`). A
folder moved in, renamed or moved out counts as a change (its event names only the folder), the changes made
while the first job ran are indexed by a second, quiet job once the watcher runs, and a watched folder that is
deleted or replaced is waited for and watched again. The git hooks (`graph.cli_hook`) run the same job.
"""

from __future__ import annotations

import argparse
import os
import signal
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.cli_commands import session_name
from graph.settings import Settings
from graph.terminal import printable
from stores.errors import IndexingError, IndexInterruptedError, LotsmanError, UsageError
from stores.indexing.files import DEFAULT_INCLUDE_EXTS, is_ignored_name

if TYPE_CHECKING:
    from stores.indexing.service import IndexReport

SHOWN_CHANGES = 5
"""Changed paths listed by name per batch; the rest are counted."""
ROOT_CHECK_MS = 500
"""How often a quiet watch checks that its folder is still the one it watches: a deleted (or replaced)
folder sends no more events, and the watch went on deaf."""
ROOT_POLL_S = 0.5
"""How often a watch whose folder is gone looks for it again."""


# ---- decisions (pure) --------------------------------------------------------------------------------------


def watched_path(rel: str) -> bool:
    """Whether a change to the file `rel` (relative to the watched root, `/`-separated) can change the index:
    a markdown or Python file outside hidden and skipped folders."""
    parts = [p for p in rel.split("/") if p]
    if not parts or not entered_folder("/".join(parts[:-1])) or parts[-1].startswith("."):
        return False
    return parts[-1].lower().endswith(DEFAULT_INCLUDE_EXTS)


def entered_folder(rel: str) -> bool:
    """Whether the indexer enters the folder `rel` (`""` is the root): no part hidden or skipped."""
    return not any(is_ignored_name(p) for p in rel.split("/") if p)


def folders_under(root: Path, rel: str = "") -> tuple[set[str], bool]:
    """(the folders under `root / rel` the indexer enters, `rel` included and the root not, whether any of
    them holds a file it reads); symlinked folders are not entered, as the indexer does not enter them."""
    found: set[str] = set()
    readable = False
    for dirpath, dirnames, filenames in os.walk(root / rel if rel else root, followlinks=False):
        dirnames[:] = [d for d in dirnames if entered_folder(d)]
        here = Path(dirpath).relative_to(root).as_posix()
        if here != ".":
            found.add(here)
        readable = readable or any(watched_path(name) for name in filenames)
    return found, readable


def relevant_changes(changes: Iterable[tuple[Any, str]], root: Path, folders: set[str]) -> list[tuple[str, str]]:
    """`(relative path, added|modified|deleted)` of a batch from `watchfiles`, sorted, a folder's path ending
    in `/`; paths outside `root`, files the indexer does not read and folders without such files are left out.

    A folder's own event is all a move brings (its files send none): a folder that is here now and was not
    known, or holds files the indexer reads, was added; a known folder that is gone was deleted (renamed or
    moved out; a name like `v1.0` is no file). `folders` (the known folders, from `folders_under`) is kept
    up to date.
    """
    kinds: dict[str, str] = {}
    for change, path in changes:
        try:
            rel = Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        name = getattr(change, "name", str(change))
        if watched_path(rel):
            kinds[rel] = name
        elif rel != "." and entered_folder(rel):
            if (root / rel).is_dir() and not (root / rel).is_symlink():
                inside, readable = folders_under(root, rel)
                if rel not in folders and readable:
                    kinds[f"{rel}/"] = "added"
                folders |= inside
            elif rel in folders:
                folders.difference_update({f for f in folders if f == rel or f.startswith(f"{rel}/")})
                kinds[f"{rel}/"] = "deleted"
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


def revision_refusal(session: str, revision: str) -> str:
    """Why watch and hooks refuse a session built from a git revision (`lotsman index --ref`)."""
    return (f"session '{printable(session)}' holds git revision {printable(revision)}: watch and hooks keep a "
            "working tree's session fresh (an index of the work tree would replace that revision); give another "
            "--session")


# ---- indexing ----------------------------------------------------------------------------------------------


def _existing_folder(path: str) -> Path:
    from stores.indexing.files import escaped_path

    root = Path(path).expanduser()
    if not root.exists():
        raise IndexingError(f"path not found: {printable(escaped_path(str(root)))}")
    if not root.is_dir():
        raise IndexingError(f"not a directory: {printable(escaped_path(str(root)))} (watch a repository folder)")
    return root.resolve()


def watch_hint(root: Path, session: str) -> str:
    """What a watch refused by the 5000-file guard tells the user to pass."""
    return f"pass --yes (`lotsman watch {_quoted(root)} --session {_quoted(session)} --yes`)"


def _quoted(value: object) -> str:
    import shlex

    return printable(shlex.quote(str(value)))


def _index_once(deps: Any, settings: Settings, root: Path, session: str, *, allow_large: bool = False,
                large_hint: str | None = None) -> IndexReport:
    """The incremental index `lotsman index ROOT --session SESSION` runs, with the session's own embedder;
    `large_hint` ends the 5000-file guard's refusal (`watch_hint` unless given)."""
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository
    from stores.schema import ensure_tables
    from stores.sessions import find_session

    db = deps.database()
    with db.connection() as conn:
        ensure_tables(conn)
        found = find_session(conn, session)
    if found is not None and found.revision is not None:
        raise UsageError(revision_refusal(session, found.revision))
    embedder = make_embedder(found.embedder if found else settings.embedder, settings)
    return index_repository(db, root, session_name=session, embedder=embedder, incremental=True,
                            max_bytes=settings.max_file_bytes, batch_size=settings.embed_batch_size,
                            parse_workers=settings.parse_workers, allow_large=allow_large,
                            large_hint=large_hint or watch_hint(root, session))


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


# ---- the watch ---------------------------------------------------------------------------------------------

Job = Callable[[], "IndexReport"]


def _watch(args: argparse.Namespace, settings: Settings) -> int:
    from graph.cli_commands import open_deps

    root = _existing_folder(args.path)
    with _sigterm_as_interrupt(), open_deps(settings, production=False) as deps:

        def job() -> IndexReport:
            return _index_once(deps, settings, root, args.session, allow_large=args.yes)

        try:
            _say(describe_report(job()))  # a failure here ends the command (a revision's session, a huge folder)
            _watch_folder(job, root, settings, args.session, first=True)
            while True:  # the folder went away
                _wait_for(root, args.session)
                _watch_folder(job, root, settings, args.session, first=False)
        except (KeyboardInterrupt, IndexInterruptedError) as exc:
            if isinstance(exc, IndexInterruptedError):
                _say(f"note: {printable(exc)}")
            _say("stopped watching")
    return 0


def _watch_folder(job: Job, root: Path, settings: Settings, session: str, *, first: bool) -> None:
    """Re-index after each burst of changes in `root` until the folder is deleted, moved away or replaced.

    The watcher starts before the job that catches up: a change made while the previous job ran (the first
    index, or while the folder was away) is that job's, and one made after it started is the next batch's.
    After the first index the catching-up job is quiet when it finds nothing new.
    """
    import watchfiles

    step = max(settings.watch_debounce_ms, 1)
    identity = _identity(root)
    batches = watchfiles.watch(root, step=step, debounce=max(1600, 10 * step), watch_filter=None,
                               raise_interrupt=True, yield_on_timeout=True, rust_timeout=ROOT_CHECK_MS)
    try:
        try:
            next(batches)  # the watcher runs from here on (this is its first quiet tick or first changes)
        except FileNotFoundError:  # the folder went away again before the watcher started
            return
        folders, _ = folders_under(root)
        _run_batch(job, quiet_if_unchanged=first)
        _say(f"watching {printable(str(root))} for session '{printable(session)}' "
             f"(re-index after {settings.watch_debounce_ms} ms of quiet); Ctrl-C stops")
        for batch in batches:
            if _identity(root) != identity or (identity is not None and _names_root(batch, root)):
                return
            changes = relevant_changes(batch, root, folders)
            if changes:
                _say(describe_changes(changes))
                _run_batch(job)
    finally:
        batches.close()


def _identity(root: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder at `root`, None when no folder is there."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _names_root(batch: Iterable[tuple[Any, str]], root: Path) -> bool:
    """The batch reports the watched folder itself deleted (it may be back already, under the same inode)."""
    return any(getattr(change, "name", "") == "deleted" and Path(path) == root for change, path in batch)


def _wait_for(root: Path, session: str) -> None:
    """Say that the watched folder went away and wait until a folder is there again (Ctrl-C stops)."""
    if _identity(root) is None:
        _say(f"note: {printable(str(root))} is gone (deleted or moved): session '{printable(session)}' keeps "
             "its index; watching resumes when the folder is back (Ctrl-C stops)")
        while _identity(root) is None:
            time.sleep(ROOT_POLL_S)
        _say(f"{printable(str(root))} is back: re-indexing it")
    else:
        _say(f"note: {printable(str(root))} was deleted and created again: re-indexing the new folder")


def _run_batch(job: Job, *, quiet_if_unchanged: bool = False) -> None:
    """One re-index; a failure is one `error:` line and the watch goes on (the next change retries)."""
    try:
        report = job()
    except LotsmanError as exc:
        _say(f"error: {printable(exc)}", err=True)
        return
    if not (quiet_if_unchanged and report.noop):
        _say(describe_report(report))


def register(sub: argparse._SubParsersAction) -> None:
    """Add `lotsman watch` (module-level imports stay light: `lotsman ask` pays for them)."""
    p = sub.add_parser("watch", help="re-index a folder whenever its .md/.py files change (Ctrl-C stops)")
    p.add_argument("path")
    p.add_argument("--session", default="default", type=session_name)
    p.add_argument("--yes", action="store_true",
                   help="watch a folder with more than 5000 .md/.py files (refused without it)")
    p.set_defaults(handler=_watch)
