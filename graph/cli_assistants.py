"""`lotsman assistants`: one LangGraph assistant per indexed session (issue 27).

A chat UI (agent-chat-ui, LangGraph Studio) or an MCP client of the server picks a repository by picking
an assistant: each carries its session in its run context, and the server's URL as the base of the
answer's citation links (docs/api/chat_ui.md).
"""

from __future__ import annotations

import argparse
import json
import uuid
from typing import Any

from graph.cli_commands import session_name
from graph.settings import Settings
from graph.terminal import printable
from stores.errors import LotsmanError

DEFAULT_URL = "http://127.0.0.1:2024"
"""Where `lotsman serve` listens by default."""
GRAPH_ID = "lotsman"
SESSION_KEY = "lotsman_session"
"""Assistant metadata naming its session (what `assistants list` reads)."""
BASE_URL_KEY = "lotsman_base_url"
"""Metadata key of the citation links' base (`graph.nodes.BASE_URL_KEY`; not imported: a light module)."""
ASSISTANT_NAMESPACE = uuid.UUID("6f1c1e0a-58a4-4d1c-9a43-2d4b0f6c7a10")


class ServerUnavailableError(LotsmanError):
    """The LangGraph server could not be reached or refused the request."""

    exit_code = 3


def assistant_id(session: str) -> str:
    """The assistant of `session` always has the same id: `create` run twice updates, never duplicates."""
    return str(uuid.uuid5(ASSISTANT_NAMESPACE, f"{GRAPH_ID}:{session}"))


def assistant_spec(session: str, url: str) -> dict[str, Any]:
    """What the assistant of `session` on the server at `url` holds."""
    return {
        "graph_id": GRAPH_ID,
        "context": {"rag_session_id": session},
        # Metadata, not config: the server refuses an assistant with both `configurable` and `context`, and
        # merges an assistant's metadata into each of its runs' (where graph.nodes.link_base reads it).
        "metadata": {SESSION_KEY: session, BASE_URL_KEY: url.rstrip("/"), "created_by": "lotsman assistants create"},
        "name": f"Lotsman: {session}",
        "description": f"Answers questions about the repository indexed as session '{session}', with cited "
                       "file:line references.",
    }


def server_problem(url: str, exc: Exception) -> str:
    """One line saying why the server at `url` did not do what was asked, and what to do."""
    import httpx

    where = printable(url)
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        if status in (401, 403):
            return f"the server at {where} refused the request ({status}): set LOTSMAN_AUTH_TOKEN to its token"
        if status == 404:
            return f"the server at {where} does not serve the '{GRAPH_ID}' graph (404): is it `lotsman serve`?"
        return f"the server at {where} answered {status}: see its log"
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return f"not a server URL: {where} (e.g. --url http://127.0.0.1:2024)"
    return (f"cannot reach a LangGraph server at {where} ({type(exc).__name__}): start one with "
            "`lotsman serve` or give its address with --url")


def _client(settings: Settings, url: str) -> Any:
    from langgraph_sdk import get_sync_client

    token = settings.auth_token.get_secret_value() if settings.auth_token else None
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return get_sync_client(url=url, api_key=None, headers=headers, timeout=30)


def _call(url: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    import httpx

    try:
        return fn(*args, **kwargs)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise ServerUnavailableError(server_problem(url, exc)) from None


def _check_session(settings: Settings, name: str) -> str:
    """The session's name as stored; an unknown one is the usual one-line `no session` error."""
    from stores.database import Database
    from stores.schema import ensure_tables
    from stores.sessions import get_session

    with Database.from_settings(settings) as db, db.connection() as conn:
        ensure_tables(conn)
        return get_session(conn, name).name


def _create(args: argparse.Namespace, settings: Settings) -> int:
    session = _check_session(settings, args.session)
    spec = assistant_spec(session, args.url)
    client = _client(settings, args.url)
    ident = assistant_id(session)
    found = _call(args.url, client.assistants.create, assistant_id=ident, if_exists="do_nothing", **spec)
    if any(found.get(key) != value for key, value in spec.items()):  # made before, for another URL or name
        _call(args.url, client.assistants.update, ident, **spec)
    print(f"assistant {ident} answers from session '{printable(session)}' on {printable(args.url)}")
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    client = _client(settings, args.url)
    found = _call(args.url, client.assistants.search, graph_id=GRAPH_ID, limit=1000)
    rows = [{"assistant_id": a["assistant_id"], "name": a.get("name", ""),
             "session": (a.get("context") or {}).get("rag_session_id") or (a.get("metadata") or {}).get(SESSION_KEY)
             or "default"} for a in found]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print(f"no assistants on {printable(args.url)}: `lotsman assistants create --session NAME` makes one")
        return 0
    print(f"{'assistant_id':<36}  {'session':<24} name")
    for row in rows:
        print(f"{row['assistant_id']:<36}  {printable(row['session']):<24} {printable(row['name'])}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands (module-level imports stay light: `lotsman ask` pays for them)."""
    p = sub.add_parser("assistants", help="LangGraph assistants, one per indexed session (chat UIs, MCP)")
    actions = p.add_subparsers(dest="assistants_action", required=True)
    create = actions.add_parser("create", help="create (or update) the assistant of a session on a running server")
    create.add_argument("--session", required=True, type=session_name, help="an indexed session")
    create.add_argument("--url", default=DEFAULT_URL, help=f"the server (default {DEFAULT_URL})")
    create.set_defaults(handler=_create)
    listing = actions.add_parser("list", help="the server's Lotsman assistants and their sessions")
    listing.add_argument("--url", default=DEFAULT_URL, help=f"the server (default {DEFAULT_URL})")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)
