"""`lotsman index`: index a repository folder into a session (incremental by default)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from graph.cli_commands import open_deps, session_name
from graph.settings import Settings
from graph.terminal import printable


def _index(args: argparse.Namespace, settings: Settings) -> int:
    from graph.progress import ProgressBar
    from stores.embedders import make_embedder
    from stores.errors import IndexingError
    from stores.indexing.service import index_repository

    root = Path(args.path)
    if not root.exists():
        raise IndexingError(f"path not found: {printable(root)}")
    with open_deps(settings, production=False) as deps:
        db = deps.database()
        embedder_name = args.embedder or _session_embedder(db, args.session) or settings.embedder
        embedder = make_embedder(embedder_name, settings)
        if args.rebuild:
            from stores.sessions import delete_session, find_session

            with db.connection() as conn:
                if find_session(conn, args.session):
                    delete_session(conn, args.session)
        report = index_repository(db, root, session_name=args.session, embedder=embedder,
                                  incremental=not args.full, max_bytes=settings.max_file_bytes,
                                  batch_size=settings.embed_batch_size, progress=ProgressBar(),
                                  parse_workers=settings.parse_workers)
    if args.json:
        from graph.index_graph import report_dict

        print(json.dumps(report_dict(report), ensure_ascii=False, indent=2, default=str))
    else:
        _print_index_report(report, embedder.name, verbose=args.verbose)
    return 0


def _print_index_report(report: Any, embedder: str, *, verbose: bool) -> None:
    # File and session names are escaped: a name could otherwise forge a `skipped` line or move the cursor.
    t = report.timings
    print(f"session '{printable(report.session)}' ({report.kind}, embedder {embedder}): "
          f"{report.files_seen} files seen, {report.files_indexed} indexed, {report.files_unchanged} unchanged, "
          f"{report.files_deleted} deleted, {len(report.skipped)} skipped")
    print(f"parsed {report.parsed}, from cache {report.cache_hits}, embedded {report.embedded} rows, "
          f"wrote {report.rows_written} rows in {t.get('total', 0):.1f}s "
          f"(parse {t.get('parse', 0):.1f}s, embed {t.get('embed', 0):.1f}s, write {t.get('write', 0):.1f}s)")
    if report.rows_per_layer:
        print(f"{'layer':<22} {'rows':>7}")
        for layer, n in report.rows_per_layer.items():
            print(f"{layer:<22} {n:>7}")
    for s in report.skipped:
        print(f"skipped {printable(s.path)}: {printable(s.reason)}")
    if verbose:
        for w in report.warnings:
            print(f"warning {printable(w)}")
    elif report.warnings:
        print(f"{len(report.warnings)} warnings (-v to list)")


def _session_embedder(db: Any, name: str) -> str | None:
    from stores.sessions import find_session

    with db.connection() as conn:
        session = find_session(conn, name)
    return session.embedder if session else None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="index a repository folder (incremental by default)")
    p.add_argument("path")
    p.add_argument("--session", default="default", type=session_name)
    p.add_argument("--embedder", help="use (default), e5, gigachat; a new session records it")
    p.add_argument("--full", action="store_true", help="build a full snapshot (still uses the cache)")
    p.add_argument("--rebuild", action="store_true", help="delete the session first (e.g. to change embedder)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_index)
