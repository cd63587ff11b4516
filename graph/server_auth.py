"""LangGraph custom auth of `lotsman serve` (`langgraph.json` `auth`): indexing is never open to anonymous clients.

The index graph reads any folder of the server's disk it is given, so it runs only for a client that sends the
server's token (`LOTSMAN_AUTH_TOKEN`); with no token configured nobody may run it over HTTP (index with the
CLI on the server instead). Asking stays open unless a token is configured; then every request needs it.

Without a token the server is open to one user on their own machine only: `lotsman serve` refuses a host other
machines can reach (`serve_problem`), and a server started another way refuses anonymous requests that arrive
on such an address (`exposure_problem`, applied to every route by `graph.http_app.OriginGuard`), unless the
operator opted out (`--insecure-no-auth`, `LOTSMAN_INSECURE_NO_AUTH=true`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID, uuid5

from langgraph_sdk import Auth

from graph.settings import get_settings

INDEX_GRAPH = "lotsman_index"
"""The index graph's id in langgraph.json."""
NAMESPACE_GRAPH = UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""langgraph-api's namespace for a graph's default assistant id (`langgraph_api.graph.NAMESPACE_GRAPH`): a run
names the index graph either by its id or by this assistant's uuid."""
INDEX_ASSISTANT_ID = str(uuid5(NAMESPACE_GRAPH, INDEX_GRAPH))
ASK = "lotsman:ask"
INDEX = "lotsman:index"
"""Permissions: everyone the server lets in may ask; only the token's holder may index."""

REFUSED_INDEXING = ("indexing is not open to anonymous clients: set LOTSMAN_AUTH_TOKEN on the server and send "
                    "Authorization: Bearer <token>, or index with `lotsman index PATH` on the server")

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})

REACHABLE_WITHOUT_TOKEN = ("this server is reachable from other machines without LOTSMAN_AUTH_TOKEN, so it "
                           "answers only this machine: set LOTSMAN_AUTH_TOKEN on the server and send "
                           "Authorization: Bearer <token> (or start it with LOTSMAN_INSECURE_NO_AUTH=true to leave "
                           "it open)")

auth = Auth()
log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """Whether `host` (an address, `[v6]`, or a name) is this machine's loopback: 127.0.0.0/8, ::1 (also as
    ::ffff:127.x) or `localhost`. Any other name may resolve to anything, so it is not."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def serve_problem(host: str, *, token: bool, insecure: bool) -> str | None:
    """Why `lotsman serve --host HOST` refuses to start (one line), or None.

    Without a token anyone who reaches the port may ask about every session and create, change or delete
    threads and assistants: that is one user on their own machine, so only a loopback host is served that way,
    unless the operator passes `--insecure-no-auth`.
    """
    if token or insecure or is_loopback(host):
        return None
    return (f"--host {host} makes the server reachable from other machines and LOTSMAN_AUTH_TOKEN is not set "
            "(anyone could then ask, and create, change or delete threads and assistants): set "
            "LOTSMAN_AUTH_TOKEN, serve on --host 127.0.0.1, or pass --insecure-no-auth to leave it open")


def exposure_problem(local_address: str | None, *, token: bool, insecure: bool) -> str | None:
    """Why a request is refused because of the address it arrived on (one line), or None.

    A server with no token (and no opt-out) answers requests that reached it on a loopback address only: one
    started with `langgraph dev --host 0.0.0.0` or in a container would otherwise be open to the network. With a
    token the server's auth checks it. A request without a socket address (a Unix socket, guarded by its file's
    permissions) or with a name instead of one (an in-process test client) is not judged here.
    """
    if token or insecure or local_address is None:
        return None
    try:
        ipaddress.ip_address(local_address.strip("[]"))
    except ValueError:
        return None
    return None if is_loopback(local_address) else REACHABLE_WITHOUT_TOKEN


def identify(configured: str | None, authorization: str | None, api_key: str | None = None) -> dict[str, Any]:
    """The user a request acts as (a `MinimalUserDict`): the token may come as `Authorization: Bearer <token>`
    or as `X-Api-Key: <token>` (the header agent-chat-ui and LangGraph SDK clients send their key in).

    Raises:
        Auth.exceptions.HTTPException: 401 when a token is configured and the request does not carry it.
    """
    if not configured:
        return {"identity": "anonymous", "is_authenticated": False, "permissions": [ASK]}
    scheme, _, given = (authorization or "").strip().partition(" ")
    bearer = scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), configured.encode())
    keyed = api_key is not None and hmac.compare_digest(api_key.strip().encode(), configured.encode())
    if not (bearer or keyed):
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="this server needs a token: send Authorization: Bearer <LOTSMAN_AUTH_TOKEN>",
            headers={"WWW-Authenticate": 'Bearer realm="lotsman"'})
    return {"identity": "token", "is_authenticated": True, "permissions": [ASK, INDEX]}


def touches_index_graph(resource: str, action: str, value: Mapping[str, Any] | Any) -> bool:
    """Whether a request would create or run something of the index graph: an assistant of it, a run or a
    cron of its assistant (named by graph id or by its default assistant's uuid)."""
    if not isinstance(value, Mapping):
        return False
    if resource == "assistants" and action in ("create", "update"):
        return value.get("graph_id") == INDEX_GRAPH
    if (resource, action) in (("threads", "create_run"), ("crons", "create"), ("crons", "update")):
        payload = value.get("payload")  # a cron names its assistant inside its payload
        named = value.get("assistant_id") or (payload.get("assistant_id") if isinstance(payload, Mapping) else None)
        return _assistant(named) in (INDEX_ASSISTANT_ID, INDEX_GRAPH)
    return False


def _assistant(named: Any) -> str:
    """An assistant reference as compared: a uuid in its canonical form (any case or braces), else as given."""
    try:
        return str(uuid.UUID(str(named)))
    except ValueError:
        return str(named)


def allowed(permissions: Sequence[str], resource: str, action: str, value: Any) -> bool:
    return INDEX in permissions or not touches_index_graph(resource, action, value)


def assistant_to_look_up(resource: str, action: str, value: Mapping[str, Any] | Any) -> str | None:
    """The assistant whose graph decides a request, when its body does not say it (None: nothing to look up).

    A PATCH, DELETE or `/latest` of an assistant names it only by id (langgraph-api's `update` and `delete`
    actions carry no `graph_id` unless the PATCH moves the assistant); a run or cron may name an assistant made
    for the index graph by its own uuid. The graph's default assistant needs no lookup (`INDEX_ASSISTANT_ID`).
    """
    if not isinstance(value, Mapping):
        return None
    named: Any = None
    if resource == "assistants" and action in ("update", "delete"):
        named = value.get("assistant_id")
    elif (resource, action) in (("threads", "create_run"), ("crons", "create"), ("crons", "update")):
        payload = value.get("payload")
        named = value.get("assistant_id") or (payload.get("assistant_id") if isinstance(payload, Mapping) else None)
    if named is None:
        return None
    try:
        return str(uuid.UUID(str(named)))
    except ValueError:
        return None  # a graph id: compared by `touches_index_graph` itself


async def assistant_graph(assistant_id: str) -> str | None:
    """The graph of an existing assistant, asked of this server in-process (langgraph-sdk's loopback client,
    which skips this auth); None when there is no such assistant (the request itself then answers 404)."""
    import httpx
    from langgraph_sdk import get_client

    client = get_client(url=None, api_key=None)
    try:
        found = await client.assistants.get(assistant_id)
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            return None
        raise
    return str(found.get("graph_id"))


async def touches_index_assistant(resource: str, action: str, value: Any) -> bool:
    """Whether a request names, by its id, an assistant of the index graph (see `assistant_to_look_up`). A
    lookup that fails counts as yes: the request is refused rather than let through unchecked."""
    assistant = assistant_to_look_up(resource, action, value)
    if assistant is None:
        return False
    if assistant == INDEX_ASSISTANT_ID:
        return True
    try:
        return await assistant_graph(assistant) == INDEX_GRAPH
    except Exception:
        log.warning("could not look up assistant %s: the request is refused", assistant, exc_info=True)
        return True


@auth.authenticate
async def authenticate(authorization: str | None, headers: dict[bytes, bytes] | None) -> dict[str, Any]:
    token = get_settings().auth_token
    api_key = (headers or {}).get(b"x-api-key")
    return identify(token.get_secret_value() if token else None, authorization,
                    api_key.decode("latin-1") if api_key is not None else None)


@auth.on
async def authorize(ctx: Auth.types.AuthContext, value: Any) -> bool:
    permissions = list(ctx.permissions or [])
    if not allowed(permissions, ctx.resource, ctx.action, value) or (
            INDEX not in permissions and await touches_index_assistant(ctx.resource, ctx.action, value)):
        raise Auth.exceptions.HTTPException(status_code=403, detail=REFUSED_INDEXING)
    return True
