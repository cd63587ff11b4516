"""The LangGraph server's own HTTP routes (`langgraph.json` `http.app`): the MCP tools at `/mcp`, and the web page.

`lotsman serve` (`langgraph dev`) mounts this app's routes before its own API and runs its lifespan. The
server's built-in `/mcp`, which published every graph as a tool (the index graph too, so any client could
make the server read any folder), is turned off in langgraph.json (`http.disable_mcp`); this `/mcp` offers the
four reading tools of `graph.mcp_server` instead. See docs/api/mcp.md.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from graph import web
from graph.errors import shown
from graph.mcp_server import LotsmanTools, build_server
from graph.server_auth import exposure_problem
from graph.server_auth import is_loopback as _is_loopback
from graph.settings import Settings, get_settings
from stores.database import keep_stopped_after_stop

MCP_PATH = "/mcp"
HEALTH_PATH = "/ok"
"""Open on every address: a container's or load balancer's health check carries no token."""


def bearer_problem(configured: str | None, authorization: str | None) -> str | None:
    """Why a request may not use the tools (one line), or None: without a configured token everyone may;
    with one, the request must carry `Authorization: Bearer <token>` (compared in constant time)."""
    if not configured:
        return None
    if not authorization:
        return "this server needs a token: send Authorization: Bearer <LOTSMAN_AUTH_TOKEN>"
    scheme, _, given = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return "send the token as Authorization: Bearer <LOTSMAN_AUTH_TOKEN>"
    if not hmac.compare_digest(given.strip().encode(), configured.encode()):
        return "the token is wrong: send the server's LOTSMAN_AUTH_TOKEN"
    return None


def _host_name(host_header: str) -> str:
    """The host of a `Host` header value, without its port (`[::1]:2024` → `::1`)."""
    value = host_header.strip()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def rebinding_problem(local_address: str | None, host_header: str | None, origin: str | None,
                      allowed_origins: frozenset[str] = frozenset()) -> str | None:
    """Why a request that reached the server on a loopback address is refused (DNS rebinding), or None.

    A web page on `evil.example` whose name the attacker points at 127.0.0.1 can make the browser of someone
    running `lotsman serve` on their machine POST to the local server: the request then names `evil.example`
    in `Host` and `Origin`. A request on a loopback address must name a loopback host (and origin, if any).
    Requests that arrived on another address (a server shared with a team on 0.0.0.0) are not judged here:
    the token is what protects those.

    The same check stops any other web page the user visits from reading the local index: the server's API
    answers every origin (CORS), so without it a page could list sessions and ask the graph cross-site.
    `Origin: null` (a sandboxed frame, a `file:` page) is foreign too; `allowed_origins`
    (`LOTSMAN_ALLOWED_ORIGINS`, LangGraph Studio by default) are let through.
    """
    if local_address is None or not _is_loopback(local_address):
        return None
    if not host_header or not _is_loopback(_host_name(host_header)):
        return f"Host '{shown(host_header or '')}' is not this machine: use http://127.0.0.1 or http://localhost"
    if origin and origin.rstrip("/") not in allowed_origins and (
            origin == "null" or not _is_loopback(urlsplit(origin).hostname or "")):
        return (f"requests from the web page at '{shown(origin)}' are not accepted "
                "(add it to LOTSMAN_ALLOWED_ORIGINS to allow it)")
    return None


class OriginGuard:
    """Every request of the server (the LangGraph API, the web page, `/mcp`, websockets) behind
    `rebinding_problem` and, unless `open_beyond_loopback` (a token is configured, or the operator opted out),
    `exposure_problem`: langgraph-api applies the custom app's middleware to all its routes."""

    def __init__(self, app: ASGIApp, allowed_origins: frozenset[str] = frozenset(), *,
                 open_beyond_loopback: bool = True) -> None:
        self.app, self.allowed, self.open_beyond_loopback = app, allowed_origins, open_beyond_loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        server = scope.get("server")
        local = server[0] if server else None
        problem = rebinding_problem(local, headers.get("host"), headers.get("origin"), self.allowed)
        if problem is None and not self.open_beyond_loopback and scope.get("path") != HEALTH_PATH:
            problem = exposure_problem(local, token=False, insecure=False)
        if problem is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
        else:
            await send_error(send, 403, problem)


async def send_error(send: Send, status: int, problem: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON `{"error": problem}` response straight over ASGI."""
    body = json.dumps({"error": problem}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


def allowed_origins(settings: Settings) -> frozenset[str]:
    return frozenset(o.strip().rstrip("/") for o in settings.allowed_origins.split(",") if o.strip())


class GuardedEndpoint:
    """The MCP endpoint behind the token check (a 401 with one line); the app's `OriginGuard` has already
    refused foreign hosts and pages."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        problem = bearer_problem(self.token, headers.get("authorization"))
        if problem is None:
            await self.app(scope, receive, send)
        else:
            await send_error(send, 401, problem, [(b"www-authenticate", b'Bearer realm="lotsman"')])


def build_app(settings: Settings | None = None, tools: LotsmanTools | None = None,
              web_routes: list[BaseRoute] | None = None) -> Starlette:
    """The app `langgraph.json` mounts: `/mcp` (stateless streamable HTTP, JSON responses) and the web page."""
    settings = settings or get_settings()
    tools = tools or LotsmanTools(settings)
    server = build_server(tools, warm=True)
    # Host checks are OriginGuard's (loopback only): the SDK's own allow-list would refuse a team's server
    # reached by its name.
    server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                               transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    token = settings.auth_token.get_secret_value() if settings.auth_token else None
    endpoint = GuardedEndpoint(StreamableHTTPASGIApp(server.session_manager), token)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # A request must not undo `lotsman db stop` (issue 37, item 16): while the server serves, the embedded
        # database is started on demand only if nobody stopped it on purpose.
        keep_stopped_after_stop(True)
        async with server.session_manager.run():
            try:
                yield
            finally:
                tools.close()
                keep_stopped_after_stop(False)

    routes = [Route(MCP_PATH, endpoint=endpoint), *(web.routes() if web_routes is None else web_routes)]
    return Starlette(routes=routes, lifespan=lifespan,
                     middleware=[Middleware(OriginGuard, allowed_origins=allowed_origins(settings),
                                            open_beyond_loopback=bool(token) or settings.insecure_no_auth)])


app = build_app()
