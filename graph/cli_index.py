"""`lotsman index`: index a repository folder into a session (incremental by default)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from graph.cli_commands import revision, session_name
from graph.settings import Settings
from graph.terminal import printable


def _index(args: argparse.Namespace, settings: Settings) -> int:
    from stores.database import Database
    from stores.errors import IndexingError
    from stores.indexing.files import escaped_path

    root = Path(args.path)
    if not root.exists():
        raise IndexingError(f"path not found: {printable(escaped_path(str(root)))}")
    revision = None
    if args.ref is not None:  # a bad ref or a folder outside git: one line before anything is opened
        from stores.indexing.git_source import resolve_revision

        revision = resolve_revision(root, args.ref)
    session, report = _unchanged(root, revision, args, settings)
    embedder = session.embedder if report is not None else ""
    if report is None:
        with Database.from_settings(settings) as db:
            report, embedder = _run_index(db, session, root, args, settings)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2, default=str))
    else:
        _print_index_report(report, embedder, verbose=args.verbose)
    return 0


def _unchanged(root: Path, revision: Any, args: argparse.Namespace, settings: Settings) -> tuple[Any, Any]:
    """The session (None when new) and the no-op report when nothing changed since its last job (else None).

    Asked before the embedder, the pipelines and the indexing service are imported: a no-op re-index of
    fastapi-ru cost 1.7 s, nearly all of it imports it never used (see stores/indexing/unchanged.py). It asks
    through one plain connection: the pool registers pgvector's types on its connections, which imports numpy
    (~0.1 s of CPU a no-op does not need); a real job opens the pool afterwards.
    """
    from stores.database import EMBEDDED_HINT, EXTERNAL_HINT, connect, ensure_pgvector, resolve_database_url
    from stores.indexing.unchanged import check_source_size, unchanged_report
    from stores.schema import ensure_tables
    from stores.sessions import find_session

    url = resolve_database_url(settings.database_url, settings.data_dir)
    with connect(url, hint=EXTERNAL_HINT if settings.database_url else EMBEDDED_HINT, autocommit=True) as conn:
        ensure_pgvector(conn)  # a new database gets the extension before its tables, as the pool would do
        ensure_tables(conn)
        session = find_session(conn, args.session)
        # the service's guard, asked once here before the no-op check's stat walk (`lotsman index /` must not
        # walk the disk); the job is then told the size was checked
        check_source_size(root, session, revision, allow_large=args.yes, hint=INDEX_HINT)
        if session is None or args.full or args.rebuild:
            return session, None
        return session, unchanged_report(conn, session, root, max_bytes=settings.max_file_bytes,
                                         revision=revision, embedder=args.embedder)


def _run_index(db: Any, session: Any, root: Path, args: argparse.Namespace, settings: Settings) -> tuple[Any, str]:
    from graph.progress import ProgressBar
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    embedder_name = args.embedder or (session.embedder if session else None) or settings.embedder
    embedder = make_embedder(embedder_name, settings)
    # --rebuild builds the new generation beside the old one (in the new embedder's table when it
    # changes) and swaps only when it is complete: a failed rebuild leaves the old index answering.
    report = index_repository(db, root, session_name=args.session, embedder=embedder,
                              incremental=not args.full, max_bytes=settings.max_file_bytes,
                              batch_size=settings.embed_batch_size, progress=ProgressBar(),
                              parse_workers=settings.parse_workers, rebuild=args.rebuild, ref=args.ref,
                              check_unchanged=False, allow_large=args.yes, size_checked=True)
    return report, embedder.name


INDEX_HINT = "pass --yes"
"""What a refused `lotsman index` tells the user (`files.check_folder_size`'s hint)."""


def _print_index_report(report: Any, embedder: str, *, verbose: bool) -> None:
    # File and session names are escaped: a name could otherwise forge a `skipped` line or move the cursor.
    t = report.timings
    source = ""
    if report.revision:
        source = f" from {printable(report.revision['ref'])} @ {report.revision['commit'][:12]}"
    print(f"session '{printable(report.session)}' ({report.kind}{source}, embedder {embedder}): "
          f"{report.files_seen} files seen, {report.files_indexed} indexed, {report.files_unchanged} unchanged, "
          f"{report.files_deleted} deleted, {len(report.skipped)} skipped{_empty_note(report)}")
    if report.noop:
        print(f"nothing changed since the last index job: parsed 0, from cache 0, embedded 0 rows, wrote 0 rows "
              f"(checked in {t.get('total', 0):.2f}s)")
    else:
        print(f"parsed {report.parsed}, from cache {report.cache_hits}, embedded {report.embedded} rows, "
              f"wrote {report.rows_written} rows in {t.get('total', 0):.1f}s "
              f"(parse {t.get('parse', 0):.1f}s, embed {t.get('embed', 0):.1f}s, write {t.get('write', 0):.1f}s)")
    if report.reembedded_share is not None and report.vectors_reused:
        print(f"re-embedded {report.reembedded_share:.0%} of vectors ({report.embedded} new, "
              f"{report.vectors_reused} from the blob cache)")
    if report.rows_per_layer:
        print(f"{'layer':<22} {'rows':>7}")
        for layer, n in report.rows_per_layer.items():
            print(f"{layer:<22} {n:>7}")
    for s in report.skipped:
        print(f"skipped {printable(s.path)}: {printable(s.reason)}")
    if verbose:
        for s in report.empty:
            print(f"empty {printable(s.path)}")
        for w in report.warnings:
            print(f"warning {printable(w)}")
    elif report.warnings:
        print(f"{len(report.warnings)} warnings (-v to list)")


def _empty_note(report: Any) -> str:
    """`, 12 empty .py files` for the empty modules (mostly `__init__.py`): counted, not listed as skipped
    (they are normal, and a package of 30 folders printed 30 `skipped …: empty file` lines); `-v` lists them."""
    n = len(report.empty)
    return f", {n} empty .py file{'s' if n != 1 else ''}" if n else ""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="index a repository folder (incremental by default)")
    p.add_argument("path")
    p.add_argument("--session", default="default", type=session_name)
    p.add_argument("--embedder", help="use (default), e5, gigachat; a new session records it")
    p.add_argument("--full", action="store_true", help="build a full snapshot (still uses the cache)")
    p.add_argument("--rebuild", action="store_true",
                   help="build a complete new index, e.g. with another --embedder; the old one answers until it "
                        "is done, and stays if the rebuild fails")
    p.add_argument("--ref", metavar="REF", type=revision,
                   help="index this git revision (tag, branch or commit) of the repository at PATH, read from git "
                        "without touching the working tree; the session records repository, ref and commit")
    p.add_argument("--yes", action="store_true",
                   help="index a folder with more than 5000 .md/.py files (refused without it)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_index)
