"""LangGraph custom auth of `lotsman serve` (`langgraph.json` `auth`): indexing is never open to anonymous clients.

The index graph reads any folder of the server's disk it is given, so it runs only for a client that sends the
server's token (`LOTSMAN_AUTH_TOKEN`); with no token configured nobody may run it over HTTP (index with the
CLI on the server instead). Asking stays open unless a token is configured; then every request needs it.
"""

from __future__ import annotations

import hmac
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

auth = Auth()


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


@auth.authenticate
async def authenticate(authorization: str | None, headers: dict[bytes, bytes] | None) -> dict[str, Any]:
    token = get_settings().auth_token
    api_key = (headers or {}).get(b"x-api-key")
    return identify(token.get_secret_value() if token else None, authorization,
                    api_key.decode("latin-1") if api_key is not None else None)


@auth.on
async def authorize(ctx: Auth.types.AuthContext, value: Any) -> bool:
    if not allowed(list(ctx.permissions or []), ctx.resource, ctx.action, value):
        raise Auth.exceptions.HTTPException(status_code=403, detail=REFUSED_INDEXING)
    return True
