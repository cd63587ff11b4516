"""`lotsman` command line: every failure is one `error: ...` line and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence

from graph.settings import Settings, get_settings
from stores.errors import LotsmanError

Handler = Callable[[argparse.Namespace, Settings], int]


def _cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    from stores.database import redact_url, start_embedded, stop_embedded

    if settings.database_url and args.action != "status":
        print(f"DATABASE_URL is set ({redact_url(settings.database_url)}): the embedded server is not used")
        return 0
    if args.action == "start":
        uri = start_embedded(settings.data_dir)
        print(f"embedded PostgreSQL running: {uri}")
    elif args.action == "stop":
        stopped = stop_embedded(settings.data_dir)
        print("embedded PostgreSQL stopped" if stopped else "embedded PostgreSQL was not running")
    else:
        return _db_status(settings)
    return 0


def _db_status(settings: Settings) -> int:
    from stores.database import Database, embedded_status, redact_url
    from stores.schema import SCHEMA_VERSION, ensure_tables, existing_spaces

    if settings.database_url:
        print(f"database: external {redact_url(settings.database_url)}")
        url = settings.database_url
    else:
        st = embedded_status(settings.data_dir)
        print(f"database: embedded, data dir {st.data_dir / 'pg'}")
        print(f"  initialized: {st.initialized}  running: {st.running}  pid: {st.pid or '-'}")
        if st.stale_handles:
            print(f"  stale handles from killed processes (cleared on next start/stop): {st.stale_handles}")
        if not st.running:
            return 0
        url = st.uri or ""
    with Database(url, max_size=1) as db, db.connection() as conn:
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        server = conn.execute("SHOW server_version").fetchone()
        ensure_tables(conn)
        print(f"  server: PostgreSQL {server[0] if server else '?'}, pgvector {version[0] if version else '-'}")
        print(f"  schema version: {SCHEMA_VERSION}, embedding spaces: {existing_spaces(conn) or '-'}")
    return 0


def _cmd_sessions(args: argparse.Namespace, settings: Settings) -> int:
    from stores.database import Database
    from stores.schema import ensure_tables
    from stores.sessions import delete_session, list_sessions

    with Database.from_settings(settings) as db, db.connection() as conn:
        ensure_tables(conn)
        if args.delete:
            s = delete_session(conn, args.delete)
            print(f"deleted session '{s.name}'")
            return 0
        rows = list_sessions(conn)
    if args.json:
        print(json.dumps(rows, default=str, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print("no sessions yet: `lotsman index PATH --session NAME` creates one")
        return 0
    print(f"{'name':<24} {'embedder':<16} {'dim':>5} {'rows':>8}  last job")
    for r in rows:
        job = r["last_job"]
        last = f"{job['kind']} {job['status']} {job['finished_at'] or ''}" if job else "-"
        print(f"{r['name']:<24} {r['embedder']:<16} {r['embedding_dim']:>5} {r['rows']:>8}  {last}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lotsman", description="Grounded answers about a repository's docs and code.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    db = sub.add_parser("db", help="manage the embedded PostgreSQL")
    db.add_argument("action", choices=["status", "start", "stop"])
    db.set_defaults(handler=_cmd_db)

    sessions = sub.add_parser("sessions", help="list (or delete) indexed sessions")
    sessions.add_argument("--json", action="store_true")
    sessions.add_argument("--delete", metavar="NAME", help="delete a session and its rows")
    sessions.set_defaults(handler=_cmd_sessions)

    for register in _EXTRA_COMMANDS:
        register(sub)
    return parser


# Commands defined in other modules register themselves here (keeps this file small).
_EXTRA_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def _load_extra_commands() -> None:
    from graph import cli_commands  # noqa: F401  (registers index/ask/chat/retrieve/eval/serve)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `lotsman` console script."""
    warnings.filterwarnings("ignore")
    _load_extra_commands()
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s",
                        stream=sys.stderr)
    try:
        settings = get_settings()
        code = args.handler(args, settings)
    except LotsmanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `lotsman retrieve ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if os.environ.get("LOTSMAN_DEBUG"):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"error: unexpected {type(exc).__name__}: {first} (set LOTSMAN_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    # Run through the imported module: `python -m graph.cli` would otherwise register the extra commands
    # into `graph.cli` while parsing with this `__main__` copy.
    from graph.cli import main as _main

    sys.exit(_main())
