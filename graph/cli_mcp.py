"""`lotsman mcp`: the MCP server over stdio (issue 27), for coding agents on this machine."""

from __future__ import annotations

import argparse

from graph.cli_commands import session_name
from graph.settings import Settings


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    # stdout is the protocol's channel from here on: everything else (logs, warnings) goes to stderr.
    from graph.mcp_server import LotsmanTools, build_server

    tools = LotsmanTools(settings, session=args.session)
    try:
        build_server(tools, warm=True).run("stdio")
    finally:
        tools.close()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands (module-level imports stay light: `lotsman ask` pays for them)."""
    p = sub.add_parser("mcp", help="serve the MCP tools (list_sessions, ask, search, read) over stdio",
                       description="An MCP server on stdin/stdout for coding agents (Claude Code, Cursor, "
                                   "Continue): it answers from the indexed sessions and never indexes.")
    p.add_argument("--session", type=session_name, default=None,
                   help="the session a tool call reads when it names none (default: the only session, "
                        "else LOTSMAN_DEFAULT_SESSION)")
    p.set_defaults(handler=_mcp)
