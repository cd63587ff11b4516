"""Seed 003 §5.2 C3 attributes read statically: `http.auth`, `request_model`, `response_model`,
`cli.args_schema`, `task.queue`, `task.cron`.

Everything comes from the `ast` of one module: a route decorator's `response_model=` and `dependencies=`,
the handler's annotations and `Depends(...)` / `Security(...)` defaults, click/typer/argparse options,
Celery task decorators and APScheduler / cron triggers. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from stores.indexing.code.module import BUILTIN_NAMES, dotted_name
from stores.indexing.code.routes import keyword, literal

DEPENDENCY_CALLS = frozenset({"Depends", "Security"})
"""FastAPI's dependency markers; `Security(...)` always declares an auth requirement."""
PARAM_MARKERS = frozenset({"Query", "Path", "Header", "Cookie", "Form", "File", "Depends", "Security"})
"""Defaults that make a parameter something other than the request body."""
BODY_MARKERS = frozenset({"Body"})
SECURITY_CLASSES = frozenset(
    {"OAuth2PasswordBearer", "OAuth2AuthorizationCodeBearer", "OAuth2", "HTTPBearer", "HTTPBasic", "HTTPDigest",
     "APIKeyHeader", "APIKeyQuery", "APIKeyCookie", "OpenIdConnect", "SecurityScopes"}
)
"""`fastapi.security` classes: a dependency on one of them (or on an object built from one) is auth."""
_AUTH_NAME = re.compile(r"auth|current_user|user|token|login|permission|scope|admin|secur|credential|api_key"
                        r"|oauth|jwt|bearer|verify|principal", re.IGNORECASE)
"""Dependency names that by common convention check who the caller is (`get_current_user`, `verify_token`)."""
SIMPLE_TYPES = frozenset({"str", "int", "float", "bool", "bytes", "dict", "list", "set", "tuple", "None", "Any",
                          "Request", "Response", "WebSocket", "BackgroundTasks", "UploadFile", "Session"})
"""Annotations that are not request or response models."""
SCHEDULE_TRIGGERS = frozenset({"cron", "interval", "date"})
"""APScheduler trigger names (`add_job(f, "cron", hour=3)`, `@scheduled_job("interval", minutes=15)`)."""
CRON_DECORATORS = frozenset({"crontab", "cron", "periodic_task", "scheduled"})
"""Decorators that run a function on a schedule (aiocron, celery's old periodic_task, spring-like libs)."""
AUTH_GLOSS = "the route needs auth (маршрут требует авторизации)"
TAKES_GLOSS = "the endpoint takes (эндпоинт принимает)"
RETURNS_GLOSS = "returns (возвращает)"
"""Glosses in the row's text: a question asks in its own words ("which endpoint takes X", «какой эндпоинт
принимает X»), and the row's lexical match and the gate's key-term coverage count those words."""
SCHEDULE_GLOSS = "runs on a schedule (по расписанию)"
BACKGROUND_GLOSS = "a background task (фоновая задача, выполняется в фоне)"
"""A Celery task's gloss: "what runs as a background task?" asks in these words (issue 41 item 4)."""


@dataclass(slots=True)
class HttpDetails:
    """What a route takes, returns and requires."""

    request_model: list[str] = field(default_factory=list)
    response_model: str | None = None
    auth: list[str] = field(default_factory=list)
    """Security dependencies (`get_current_user`, `Security(get_current_user, scopes=['admin'])` → its callee)."""
    dependencies: list[str] = field(default_factory=list)
    """Every dependency the route declares (decorator `dependencies=` and parameter defaults)."""

    def metadata(self) -> dict[str, Any]:
        """The seed's attributes that are set (a route without models or dependencies adds nothing)."""
        found = {"request_model": self.request_model, "response_model": self.response_model,
                 "http.auth": self.auth, "dependencies": self.dependencies}
        return {key: value for key, value in found.items() if value}

    def lines(self) -> list[str]:
        out = []
        if self.request_model or self.response_model:
            models = [f"request_model — {TAKES_GLOSS}: {', '.join(self.request_model)}" if self.request_model else "",
                      f"response_model — {RETURNS_GLOSS}: {self.response_model}" if self.response_model else ""]
            out.append(" · ".join(m for m in models if m))
        if self.auth:
            out.append(f"http.auth — {AUTH_GLOSS}: {', '.join(self.auth)}")
        return out


def _call_name(node: ast.expr | None) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    written = dotted_name(node.func)
    return written.rsplit(".", 1)[-1] if written else None


def _annotation_names(node: ast.expr | None) -> list[str]:
    """Model-like names in an annotation: `HeroCreate`, `list[HeroRead]` → HeroRead, `Annotated[X, ...]` → X."""
    if node is None:
        return []
    if isinstance(node, ast.Subscript):
        base = dotted_name(node.value) or ""
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base.rsplit(".", 1)[-1] == "Annotated":
            inner = inner[:1]
        return [name for element in inner for name in _annotation_names(element)]
    if isinstance(node, ast.BinOp):  # `X | None`
        return [*_annotation_names(node.left), *_annotation_names(node.right)]
    written = dotted_name(node)
    if not written:
        return []
    short = written.rsplit(".", 1)[-1]
    if short in SIMPLE_TYPES or short in BUILTIN_NAMES or not short[:1].isupper():
        return []
    return [short]


def _annotated_marker(node: ast.expr | None) -> ast.Call | None:
    """`Annotated[str, Depends(f)]` → the `Depends(f)` call."""
    if isinstance(node, ast.Subscript) and (dotted_name(node.value) or "").endswith("Annotated"):
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else []
        return next((e for e in elements[1:] if isinstance(e, ast.Call)), None)
    return None


def is_auth_dependency(marker: str, callee: str, security_objects: frozenset[str]) -> bool:
    """Whether a dependency checks who the caller is.

    Args:
        marker: `Depends` or `Security`.
        callee: The dependency as written (`get_current_user`, `oauth2_scheme`).
        security_objects: Module-level names bound to a `fastapi.security` class instance.

    Returns:
        True for `Security(...)`, a security class or object, or a conventionally named checker.
    """
    short = callee.rsplit(".", 1)[-1]
    return marker == "Security" or short in SECURITY_CLASSES or short in security_objects or bool(
        _AUTH_NAME.search(short))


def security_objects(tree: ast.Module) -> frozenset[str]:
    """Module-level names assigned a security scheme: `oauth2_scheme = OAuth2PasswordBearer(...)`."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _call_name(node.value) in SECURITY_CLASSES:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(names)


def http_details(decorator: ast.Call | None, function: ast.FunctionDef | ast.AsyncFunctionDef | None,
                 security: frozenset[str]) -> HttpDetails:
    """Models and dependencies of one route: the decorator's keywords, then the handler's signature."""
    details = HttpDetails()

    def depend(call: ast.Call) -> None:
        marker = _call_name(call) or ""
        target = call.args[0] if call.args else keyword(call, ("dependency",))
        callee = dotted_name(target) if target is not None else None
        if marker not in DEPENDENCY_CALLS or not callee:
            return
        details.dependencies.append(callee)
        if is_auth_dependency(marker, callee, security):
            details.auth.append(callee)

    if decorator is not None:
        response = keyword(decorator, ("response_model",))
        details.response_model = next(iter(_annotation_names(response)), None)
        deps = keyword(decorator, ("dependencies",))
        for element in deps.elts if isinstance(deps, ast.List | ast.Tuple) else []:
            if isinstance(element, ast.Call):
                depend(element)
    if function is not None:
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
        for arg, default in pairs:
            marker = default if isinstance(default, ast.Call) else _annotated_marker(arg.annotation)
            name = _call_name(marker)
            if marker is not None and name in DEPENDENCY_CALLS:
                depend(marker)
            elif name is None or name in BODY_MARKERS:
                details.request_model += _annotation_names(arg.annotation)
        if details.response_model is None:
            details.response_model = next(iter(_annotation_names(function.returns)), None)
    details.request_model = list(dict.fromkeys(details.request_model))
    details.auth = list(dict.fromkeys(details.auth))
    details.dependencies = list(dict.fromkeys(details.dependencies))
    return details


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A background task or scheduled job declared by a decorator or a registration call."""

    framework: str
    """`celery`, `apscheduler` or `cron`."""
    name: str | None
    """The task's registered name (`name=`), if any."""
    queue: str | None = None
    cron: str | None = None
    """The schedule as written: `cron hour=3 minute=30`, `interval minutes=15`, `0 3 * * *`."""

    def lines(self) -> list[str]:
        return [line for line in (f"celery task — {BACKGROUND_GLOSS}" if self.framework == "celery" else "",
                                  f"task.queue: {self.queue}" if self.queue else "",
                                  f"task.cron — {SCHEDULE_GLOSS}: {self.cron}" if self.cron else "") if line]


def _trigger_text(call: ast.Call, skip: int) -> str | None:
    """`"cron", hour=3` → `cron hour=3`; None when the first remaining argument is no known trigger."""
    trigger = literal(call.args[skip]) if len(call.args) > skip else literal(keyword(call, ("trigger",)))
    if trigger not in SCHEDULE_TRIGGERS:
        return None
    options = [f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords if k.arg and k.arg not in (
        "trigger", "id", "name", "replace_existing", "misfire_grace_time", "args", "kwargs")]
    return " ".join([trigger, *options])


def decorator_task(decorator: ast.expr, *, celery: bool) -> TaskInfo | None:
    """`@app.task(queue="q")`, `@shared_task`, `@scheduler.scheduled_job("cron", hour=3)`, `@crontab("0 3 * * *")`.

    Args:
        decorator: One decorator of a function.
        celery: Whether the module imports celery (a bare `@x.task` is only a Celery task then).
    """
    call = decorator if isinstance(decorator, ast.Call) else None
    func = call.func if call is not None else decorator
    written = dotted_name(func) or ""
    short = written.rsplit(".", 1)[-1]
    if short == "shared_task" or (short == "task" and celery and "." in written):
        queue = literal(keyword(call, ("queue",))) if call is not None else None
        name = literal(keyword(call, ("name",))) if call is not None else None
        return TaskInfo("celery", name, queue=queue)
    if short == "scheduled_job" and call is not None and (cron := _trigger_text(call, 0)):
        return TaskInfo("apscheduler", literal(keyword(call, ("id", "name"))), cron=cron)
    if short in CRON_DECORATORS and call is not None:
        spec = literal(call.args[0]) if call.args else None
        every = keyword(call, ("run_every", "schedule"))
        cron = spec or (ast.unparse(every) if every is not None else None)
        if cron:
            return TaskInfo("cron", None, cron=cron)
    return None


def registered_job(call: ast.Call) -> tuple[str, TaskInfo] | None:
    """`scheduler.add_job(purge, "cron", hour=3)` → (`purge`, the job); None for other calls."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_job" and call.args):
        return None
    handler = dotted_name(call.args[0])
    cron = _trigger_text(call, 1)
    if not handler or not cron:
        return None
    return handler, TaskInfo("apscheduler", literal(keyword(call, ("id", "name"))), cron=cron)


@dataclass(frozen=True, slots=True)
class CliParam:
    """One parameter of a command line (seed 003 `cli.args_schema` item)."""

    name: str
    kind: str
    """`option`, `argument` or `flag`."""
    type: str | None = None
    default: str | None = None
    help: str | None = None

    def text(self) -> str:
        parts = [self.name if self.kind != "argument" else self.name.upper()]
        if self.kind == "flag":
            parts.append("(flag)")
        if self.type:
            parts.append(self.type)
        if self.default is not None:
            parts.append(f"(default {self.default})")
        if self.help:
            parts.append(f"— {self.help}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "type": self.type, "default": self.default, "help": self.help}


def _value(node: ast.expr | None) -> str | None:
    return None if node is None else (literal(node) or ast.unparse(node))


def option_param(call: ast.Call) -> CliParam | None:
    """`click.option("--dry-run", is_flag=True)`, `click.argument("src")`, `parser.add_argument("--x", type=int)`,
    `typer.Option(...)` (name filled in by the caller)."""
    name = _call_name(call)
    names = [v for v in (literal(a) for a in call.args) if v]
    flag = isinstance(k := keyword(call, ("is_flag",)), ast.Constant) and k.value is True
    action = literal(keyword(call, ("action",))) or ""
    if name == "argument":
        kind = "argument"
    elif name in ("option", "add_argument", "Option", "Argument"):
        positional = bool(names) and not names[0].startswith("-")
        kind = "argument" if positional or name == "Argument" else (
            "flag" if flag or action.startswith("store_") and action != "store" else "option")
    else:
        return None
    long_name = next((n for n in names if n.startswith("--")), names[0] if names else "")
    return CliParam(long_name, kind, type=_value(keyword(call, ("type",))),
                    default=_value(keyword(call, ("default",))), help=literal(keyword(call, ("help",))))


def function_cli_params(function: ast.FunctionDef | ast.AsyncFunctionDef, *, typer: bool) -> list[CliParam]:
    """The command's options: click decorators (top-down), or with `typer` its parameters
    (`x: int = typer.Option(...)`; typer reads the whole signature)."""
    params = [p for d in function.decorator_list if isinstance(d, ast.Call) and (p := _click_param(d))]
    if params or not typer:
        return params
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]:
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else None
        marker = default if isinstance(default, ast.Call) and _call_name(default) in ("Option", "Argument") else None
        if marker is not None:
            found = option_param(marker)
            kind = "argument" if _call_name(marker) == "Argument" else "option"
            params.append(CliParam(f"--{arg.arg.replace('_', '-')}" if kind == "option" else arg.arg, kind,
                                   type=annotation, default=_value(marker.args[0]) if marker.args else None,
                                   help=found.help if found else None))
        else:
            params.append(CliParam(arg.arg if default is None else f"--{arg.arg.replace('_', '-')}",
                                   "argument" if default is None else "option", type=annotation,
                                   default=_value(default)))
    return params


def _click_param(decorator: ast.Call) -> CliParam | None:
    written = dotted_name(decorator.func) or ""
    if written.rsplit(".", 1)[-1] not in ("option", "argument"):
        return None
    return option_param(decorator)


def args_schema_line(params: list[CliParam]) -> str:
    """`cli.args_schema — options (опции): SOURCE; --batch-size int (default 100) — Rows per transaction.; ...`."""
    return f"cli.args_schema — options (опции): {'; '.join(p.text() for p in params)}" if params else ""
