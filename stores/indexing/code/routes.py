"""Recognizing HTTP routes in `ast`: decorators like `@app.get("/x")`, calls like `add_api_route("/x", f)`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from stores.indexing.code.module import dotted_name

HTTP_VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "trace"})
GENERIC_ROUTES = frozenset({"api_route", "route"})
WEBSOCKET_ROUTES = frozenset({"websocket", "websocket_route"})
ROUTE_CALLS = {
    "add_api_route": "http",
    "add_route": "http",
    "add_url_rule": "http",
    "add_api_websocket_route": "websocket",
    "add_websocket_route": "websocket",
}
"""Imperative registrations: method name → protocol."""


@dataclass(frozen=True, slots=True)
class Route:
    """A route declared with a literal path."""

    route: str
    """Router prefix + path, e.g. `/orders/{order_id}`."""
    path: str
    methods: list[str]
    router: str
    """The object the route is declared on (`app`, `router`, `app.router`)."""
    router_prefix: str | None = None
    websocket: bool = False
    handler_ref: str | None = None
    """For registration calls: the handler as written (`create_order`, `views.create`)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        """Route attributes for the C3 row's metadata."""
        data: dict[str, Any] = {"path": self.path, "router": self.router, "router_prefix": self.router_prefix}
        if self.websocket:
            data["protocol"] = "websocket"
        return data | self.extra


def router_prefixes(tree: ast.Module) -> dict[str, str]:
    """`router = APIRouter(prefix="/items")` (or a Flask Blueprint's `url_prefix`) at module level."""
    prefixes = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
            target = dotted_name(node.targets[0])
            prefix = literal(keyword(node.value, ("prefix", "url_prefix")))
            if target and prefix:
                prefixes[target] = prefix.rstrip("/")
    return prefixes


def decorator_route(decorator: ast.expr, prefixes: dict[str, str]) -> Route | None:
    """`@app.get("/x")`, `@router.api_route("/x", methods=[...])`, `@app.websocket("/ws")`."""
    if not isinstance(decorator, ast.Call) or not isinstance(decorator.func, ast.Attribute):
        return None
    verb = decorator.func.attr
    if verb not in HTTP_VERBS | GENERIC_ROUTES | WEBSOCKET_ROUTES:
        return None
    path = _literal_path(decorator, ("path", "rule"))
    if path is None:
        return None
    if verb in HTTP_VERBS:
        methods = [verb.upper()]
    elif verb in WEBSOCKET_ROUTES:
        methods = ["WEBSOCKET"]
    else:
        methods = _methods_keyword(decorator) or ["GET"]
    return _route(decorator.func.value, path, methods, prefixes, verb in WEBSOCKET_ROUTES, None)


def registration_route(call: ast.Call, prefixes: dict[str, str]) -> Route | None:
    """`app.add_api_route("/x", handler, methods=[...])` and friends (a literal path is required)."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in ROUTE_CALLS:
        return None
    path = _literal_path(call, ("path", "rule", "route"))
    if path is None:
        return None
    target = call.args[1] if len(call.args) > 1 else keyword(call, ("endpoint", "view_func", "route"))
    handler_ref = dotted_name(target) if target is not None else None
    websocket = ROUTE_CALLS[call.func.attr] == "websocket"
    methods = ["WEBSOCKET"] if websocket else (_methods_keyword(call) or ["GET"])
    return _route(call.func.value, path, methods, prefixes, websocket, handler_ref)


def keyword(call: ast.Call, names: tuple[str, ...]) -> ast.expr | None:
    """The value of the first keyword argument named in `names`."""
    return next((k.value for k in call.keywords if k.arg in names), None)


def literal(node: ast.expr | None) -> str | None:
    """The value of a string constant, else None."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _route(
    receiver: ast.expr,
    path: str,
    methods: list[str],
    prefixes: dict[str, str],
    websocket: bool,
    handler_ref: str | None,
) -> Route:
    router = dotted_name(receiver) or ast.unparse(receiver)
    prefix = prefixes.get(router, "")
    return Route(f"{prefix}{path}" or "/", path, methods, router, prefix or None, websocket, handler_ref)


def _literal_path(call: ast.Call, keywords: tuple[str, ...]) -> str | None:
    path = literal(call.args[0]) if call.args else literal(keyword(call, keywords))
    # Routes start with "/" (or are empty under a router prefix); other strings are not paths.
    return path if path is not None and (path == "" or path.startswith("/")) else None


def _methods_keyword(call: ast.Call) -> list[str]:
    value = keyword(call, ("methods",))
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return [m.upper() for m in (literal(e) for e in value.elts) if m]
    return []
