"""`lotsman watch`: keeping a folder's index fresh while it is edited (issue 26).

It runs the incremental index of `lotsman index PATH --session S` (`stores.indexing.service.index_repository`):
a changes job that applies the diff in one transaction, so a question asked meanwhile reads the previous rows
until the job commits. `watch` runs it after each burst of file changes (quiet for `watch_debounce_ms`). The
git hooks (`graph.cli_hook`) run the same job.
"""

from __future__ import annotations

import argparse
import signal
import sys
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
    if found is not None and found.revision is not None:
        raise UsageError(revision_refusal(session, found.revision))
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


def register(sub: argparse._SubParsersAction) -> None:
    """Add `lotsman watch` and `lotsman hook` (module-level imports stay light: `lotsman ask` pays for them)."""
    from graph import cli_hook

    p = sub.add_parser("watch", help="re-index a folder whenever its .md/.py files change (Ctrl-C stops)")
    p.add_argument("path")
    p.add_argument("--session", default="default", type=session_name)
    p.set_defaults(handler=_watch)
    cli_hook.register(sub)
