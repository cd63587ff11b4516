"""`lotsman` command line: every failure is one `error: ...` line and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import json
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from graph.terminal import printable
from stores.errors import LotsmanError, UsageError, database_lost

if TYPE_CHECKING:  # the command modules and the settings load in `main`, with the collector paused
    from graph.settings import Settings

Handler: TypeAlias = "Callable[[argparse.Namespace, Settings], int]"


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
    from stores.database import EMBEDDED_HINT, EXTERNAL_HINT, Database, embedded_status, redact_url
    from stores.schema import SCHEMA_VERSION, ensure_tables, existing_spaces

    hint = EXTERNAL_HINT
    if settings.database_url:
        print(f"database: external {redact_url(settings.database_url)}")
        url = settings.database_url
    else:
        hint = EMBEDDED_HINT
        st = embedded_status(settings.data_dir)
        print(f"database: embedded, data dir {st.data_dir / 'pg'}")
        print(f"  initialized: {st.initialized}  running: {st.running}  pid: {st.pid or '-'}")
        if st.stale_handles:
            print(f"  stale handles from killed processes (cleared on next start/stop): {st.stale_handles}")
        if not st.running:
            return 0
        url = st.uri or ""
    with Database(url, max_size=1, hint=hint) as db, db.connection() as conn:
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
            print(f"deleted session '{printable(s.name)}'")
            return 0
        rows = list_sessions(conn)
    if args.json:
        print(json.dumps(rows, default=str, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print("no sessions yet: `lotsman index PATH --session NAME` creates one")
        return 0
    print(f"{'name':<24} {'embedder':<16} {'dim':>5} {'rows':>8}  {'revision':<22}  last job")
    for r in rows:
        job = r["last_job"]
        last = f"{job['kind']} {job['status']} {job['finished_at'] or ''}" if job else "-"
        revision = f"{r.get('git_ref')} @ {r['commit_sha'][:12]}" if r.get("commit_sha") else "-"
        print(f"{printable(r['name']):<24} {r['embedder']:<16} {r['embedding_dim']:>5} {r['rows']:>8}  "
              f"{printable(revision):<22}  {last}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one `error: ...` line and exit 2, like every other failure."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser(*, plugins: bool = True) -> argparse.ArgumentParser:
    """The `lotsman` parser: the built-in commands and, with `plugins`, every installed command plug-in."""
    from graph import (
        cli_assistants,
        cli_commands,
        cli_feedback,
        cli_hook,
        cli_index,
        cli_mcp,
        cli_retrieve,
        cli_serve,
        cli_watch,
    )

    parser = _Parser(prog="lotsman", description="Grounded answers about a repository's docs and code.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    db = sub.add_parser("db", help="manage the embedded PostgreSQL")
    db.add_argument("action", choices=["status", "start", "stop"])
    db.set_defaults(handler=_cmd_db)

    sessions = sub.add_parser("sessions", help="list (or delete) indexed sessions")
    sessions.add_argument("--json", action="store_true")
    sessions.add_argument("--delete", metavar="NAME", type=cli_commands.session_name,
                          help="delete a session and its rows")
    sessions.set_defaults(handler=_cmd_sessions)

    cli_index.register(sub)
    cli_commands.register(sub)
    cli_serve.register(sub)
    cli_retrieve.register(sub)
    cli_watch.register(sub)
    cli_hook.register(sub)
    cli_mcp.register(sub)
    cli_assistants.register(sub)
    cli_feedback.register(sub)
    if plugins:
        load_plugins(sub)
    return parser


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for one command line: without plug-ins when it names a built-in command (reading the
    installed packages' entry points and importing the `eval` plug-in took ~10 ms of every `ask`), with them
    otherwise (a plug-in's command, `--help`, a typo: they list or run the plug-ins)."""
    parser = build_parser(plugins=False)
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    if command is not None and command in _commands(parser):
        return parser
    return build_parser()


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    return {name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices}


PLUGIN_GROUP = "lotsman.commands"
"""Entry-point group of command plug-ins: each is `register(sub: argparse._SubParsersAction) -> None` adding
a subparser whose `handler(args, settings) -> int` (e.g. `eval = "evals.cli:register"` in pyproject.toml)."""


def load_plugins(sub: argparse._SubParsersAction) -> None:
    """Register every installed command plug-in; a missing or broken one costs one warning line, not the CLI."""
    for ep in entry_points(group=PLUGIN_GROUP):
        try:
            ep.load()(sub)
        except Exception as exc:  # any plug-in bug: the other commands must keep working
            print(f"warning: command plug-in '{printable(ep.name)}' ({printable(ep.value)}) not loaded: "
                  f"{type(exc).__name__}: {_first_line(exc)}", file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return printable(text.splitlines()[0]) if text else ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `lotsman` console script."""
    warnings.filterwarnings("ignore")
    collecting = gc.isenabled()
    gc.disable()  # until the command's modules are loaded, and for a one-shot command to its end (ONE_SHOT)
    try:
        from graph.settings import get_settings

        args = parser_for(sys.argv[1:] if argv is None else argv).parse_args(argv)
        _configure_logging(args.verbose)
        _require_stdout()
        settings = get_settings()
        _import_graph_stack(args.command)
        if collecting and args.command not in ONE_SHOT:
            gc.enable()
        code = args.handler(args, settings)
        sys.stdout.flush()  # a reader that left shows here, not as an ignored error at exit
        if skip_finalization(args.command, own_argv=argv is None, unfinished_threads=_unfinished_threads()):
            _exit_now(code)
    except LotsmanError as exc:
        print(f"error: {printable(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `lotsman ask ... | true`: the answer is lost, which is not a success
        _drop_stdout()
        print("error: stdout was closed before all output was written (its reader exited): the output is lost",
              file=sys.stderr)
        return OUTPUT_LOST
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if os.environ.get("LOTSMAN_DEBUG"):
            raise
        lost = database_lost(exc)
        if lost is not None:
            print(f"error: {printable(lost)}", file=sys.stderr)
            return lost.exit_code
        print(f"error: unexpected {type(exc).__name__}: {_first_line(exc)} (set LOTSMAN_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1
    finally:
        if collecting:
            gc.enable()
    return code


def skip_finalization(command: str, *, own_argv: bool, unfinished_threads: int) -> bool:
    """Whether the process may end right after a command instead of tearing the interpreter down: only the
    `lotsman` program itself (`main()` on the process's own argv; never `main(argv)` called in a process
    that goes on), only after a one-shot command, and only with no thread left that is not a daemon (a
    LangSmith tracing thread uploads the runs while the interpreter shuts down: such a process ends the
    ordinary way). Tearing down the ~1,200 modules of the graph's stack took ~20 ms of CPU after the
    answer was printed."""
    return own_argv and command in ONE_SHOT and unfinished_threads == 0


def _unfinished_threads() -> int:
    main_thread = threading.main_thread()
    return sum(1 for t in threading.enumerate() if t is not main_thread and not t.daemon and t.is_alive())


def _exit_now(code: int) -> NoReturn:
    """End the process as the interpreter would, minus the teardown: output flushed, exit handlers run."""
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()  # logging's flush, temporary files: what a normal exit runs first
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


ONE_SHOT = frozenset({"ask", "retrieve"})
"""Commands that answer one question and exit: the cyclic garbage collector stays paused for the whole
command, not only while its modules load. One question leaves little cyclic garbage, and the process frees
everything at exit; the collections skipped took ~33 ms of a fresh `ask` (92 young collections: 18 ms while
the command modules and settings loaded, 15 ms while the question ran; 2026-12-01, 2 shared cores). Long
commands (`index`, `chat`, `watch`, `serve`) collect as usual once their modules are loaded."""


GRAPH_COMMANDS = {"ask": ("graph.context", "graph.deps", "graph.builder"),
                  "chat": ("graph.context", "graph.deps", "graph.builder"),
                  "retrieve": ("graph.context", "graph.deps"), "watch": ("graph.context", "graph.deps")}
"""Commands that load the graph's stack (LangGraph, LangChain, the stages), and the modules that pull it in.
`index` is not one: it asks the no-op check first and imports what a real job needs only then (a no-op
re-index of fastapi-ru: 0.85 → 0.37 s of CPU). `graph.context` comes first: its `Context` takes field
descriptions from attribute docstrings, and pydantic finds a class's source through `inspect.getmodule`, which
resolves the file of every module loaded so far (once each); before the stack that is ~320 modules, after it
~1,200 (importing it last cost ~30 ms of CPU, first ~13 ms)."""


def _import_graph_stack(command: str) -> None:
    """Import the stack a command needs with the cyclic garbage collector paused, then freeze what was loaded.

    The imports create ~1M long-lived objects (pydantic models, LangChain's classes), and the collector
    walked them over and over while they were created: ~0.1 s of the 0.9 s of CPU they took (2 cores). The
    frozen objects stay out of later collections too (a long `chat`, `watch`). The stack's `LEAF_MODULES`
    are loaded first, each without its package's `__init__`.
    """
    modules = GRAPH_COMMANDS.get(command, ())
    if not modules:
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        load_leaf_modules(LEAF_MODULES)
        for name in modules:
            importlib.import_module(name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


LEAF_MODULES = ("langsmith.types.run_select_field", "langgraph_sdk.auth.types")
"""Modules the graph's stack imports from packages whose `__init__` loads much more than it needs.
`langchain_core`'s tracers import `langsmith.run_trees`, whose `_v2_migration_utils` takes one `Literal` alias
from `langsmith.types.run_select_field`; the `langsmith.types` package builds ~200 pydantic models of
LangSmith's REST API on import (~0.1 s of CPU), which tracing never uses. `langgraph.runtime` takes the
`BaseUser` protocol from `langgraph_sdk.auth.types`, and `langgraph_sdk`'s package loads the SDK's HTTP
client (httpx with its CLI's rich/click/pygments, websockets: ~0.05 s). Both leaves import only the standard
library and `typing_extensions` (`tests/unit/test_cold_imports.py` checks it), so one loaded alone is the
module the package would load. The packages still load normally, in full, the first time anything imports
them (LangSmith's run queries, `langgraph_sdk.get_client`), and reuse these same module objects."""


def load_leaf_modules(names: Sequence[str]) -> list[str]:
    """Load each `package.sub.leaf` module from its file without running `package.sub`'s `__init__`, unless
    it or its package is loaded already or cannot be found; returns the names loaded. Anything unexpected
    leaves the module to the ordinary import, which then loads the package in full."""
    import importlib.util

    loaded = []
    for name in names:
        package = name.rpartition(".")[0]
        if name in sys.modules or package in sys.modules:
            continue
        top, *middle, leaf = name.split(".")
        try:
            spec = importlib.util.find_spec(top)  # finds the top package without importing it
            roots = list(spec.submodule_search_locations or ()) if spec else []
            if not roots:
                continue
            folder = os.path.join(roots[0], *middle)
            path = os.path.join(folder, f"{leaf}.py")
            if not (os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.isfile(path)):
                continue
            leaf_spec = importlib.util.spec_from_file_location(name, path)
            if leaf_spec is None or leaf_spec.loader is None:
                continue
            module = importlib.util.module_from_spec(leaf_spec)
            sys.modules[name] = module
            leaf_spec.loader.exec_module(module)
        except Exception:  # a changed layout: the ordinary import does it, at the ordinary cost
            sys.modules.pop(name, None)
            continue
        loaded.append(name)
    return loaded


OUTPUT_LOST = 141
"""Exit status when stdout's reader left before all output was written: what a shell shows for a program
ended by SIGPIPE (`yes | head` under `set -o pipefail`), so pipelines treat both alike."""


def _require_stdout() -> None:
    """Refuse to work for nobody: with stdout closed (`>&-`) Python has no `sys.stdout`, `print` drops the
    answer silently and the command would exit 0."""
    if sys.stdout is None or sys.stdout.closed:
        raise UsageError("stdout is closed, so the output would be lost: "
                         "redirect it instead (e.g. > answer.txt or > /dev/null)")


def _drop_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's own flush at exit cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no descriptor (a replaced sys.stdout)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s", stream=sys.stderr)
    # psycopg_pool logs a warning per failed reconnect attempt (dozens when the server stops mid-run); the
    # CLI reports the outcome as one `error:` line instead.
    logging.getLogger("psycopg.pool").setLevel(logging.INFO if verbose else logging.CRITICAL)


if __name__ == "__main__":
    sys.exit(main())
