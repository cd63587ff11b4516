"""C3_ENTRYPOINTS: HTTP routes, CLI commands, background tasks, scheduled jobs and `__main__` blocks (plus
endpoint facts for D2); seed 003 §5.2 attributes from `entry_details`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from stores.indexing.code.entry_details import (
    CliParam,
    TaskInfo,
    args_schema_line,
    decorator_task,
    function_cli_params,
    http_details,
    option_param,
    registered_job,
    security_objects,
)
from stores.indexing.code.module import ModuleContext, dotted_name
from stores.indexing.code.routes import (
    Route,
    decorator_route,
    keyword,
    literal,
    registration_route,
    router_prefixes,
)
from stores.indexing.code.signatures import first_paragraph
from stores.indexing.code.symbols import Symbol, function_nodes
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

_WRAPPER_CALLS = frozenset({"sys.exit", "exit", "quit", "SystemExit", "print"})
WEB_FRAMEWORKS = ("fastapi", "starlette", "flask", "quart", "aiohttp", "sanic", "litestar", "django")


@dataclass(slots=True)
class Entrypoint:
    """One way into the program."""

    entry_type: str
    """`http`, `cli`, `task` (Celery tasks and scheduled jobs) or `main`."""
    route_or_command: str
    handler: str | None
    framework: str
    start: int
    end: int
    evidence_start: int
    """First line of the declaration itself (decorator or registration call)."""
    evidence_end: int
    methods: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)
    """Searchable lines of the seed 003 attributes (`request_model: HeroCreate`, `task.cron: ...`)."""


def find_entrypoints(context: ModuleContext, symbols: list[Symbol]) -> list[Entrypoint]:
    """Routes need a literal path: machinery such as `def get(self, path, ...)` yields no route."""
    prefixes = router_prefixes(context.tree)
    web = next((name for name in WEB_FRAMEWORKS if context.uses(name)), "unknown")
    cli = "typer" if context.uses("typer") else "click" if context.uses("click") else None
    security = security_objects(context.tree)
    celery = context.uses("celery")
    entries: list[Entrypoint] = []
    for symbol, node in function_nodes(symbols):
        for decorator in node.decorator_list:
            route = decorator_route(decorator, prefixes)
            if route is not None:
                entry = _http_entry(route, decorator, symbol.qname, web, (symbol.start, symbol.end))
                _add_http_details(entry, http_details(decorator if isinstance(decorator, ast.Call) else None,
                                                      node, security))
                entries.append(entry)
            elif cli and (command := _cli_command(decorator, node.name)):
                start, end = _lines(decorator)
                entry = Entrypoint("cli", command, symbol.qname, cli, symbol.start, symbol.end, start, end)
                _add_cli_params(entry, function_cli_params(node, typer=cli == "typer"))
                entries.append(entry)
            elif task := decorator_task(decorator, celery=celery):
                start, end = _lines(decorator)
                entries.append(_task_entry(task, symbol.qname, (symbol.start, symbol.end), (start, end)))
    for call in context.calls:
        if (route := registration_route(call, prefixes)) is not None:
            handler = context.resolve(route.handler_ref)[0] if route.handler_ref else None
            route.extra["declared_in"] = _enclosing(symbols, call.lineno) or context.module
            entry = _http_entry(route, call, handler, web, _lines(call))
            _add_http_details(entry, http_details(call, None, security))
            entries.append(entry)
        elif (job := registered_job(call)) is not None:
            handler = context.resolve(job[0])[0]
            entries.append(_task_entry(job[1], handler, _lines(call), _lines(call)))
    entries += _main_entries(context)
    return sorted(entries, key=lambda e: (e.evidence_start, e.route_or_command))


def _add_http_details(entry: Entrypoint, details: Any) -> None:
    entry.extra |= details.metadata()
    entry.details += details.lines()


def _add_cli_params(entry: Entrypoint, params: list[CliParam]) -> None:
    if params:
        entry.extra["cli.args_schema"] = [p.as_dict() for p in params]
    if line := args_schema_line(params):
        entry.details.append(line)


def _task_entry(task: TaskInfo, handler: str | None, span: tuple[int, int], evidence: tuple[int, int]) -> Entrypoint:
    name = task.name or (handler or "?")
    entry = Entrypoint("task", name, handler, task.framework, span[0], span[1], evidence[0], evidence[1])
    entry.extra |= {key: value for key, value in (("task.queue", task.queue), ("task.cron", task.cron)) if value}
    entry.details += task.lines()
    return entry


def entrypoint_records(
    context: ModuleContext, symbols: list[Symbol], entries: list[Entrypoint]
) -> list[ChunkRecord]:
    """Build C3 rows plus one D2 endpoint fact per HTTP method of each route.

    Args:
        context: The parsed module.
        symbols: Symbols of the module (for handler docstrings).
        entries: Output of `find_entrypoints`.

    Returns:
        C3 rows (not embedded: short and matched lexically) followed by D2 `http_route` facts.
    """
    docs = {symbol.qname: first_paragraph(symbol.docstring, 200) for symbol in symbols}
    records: list[ChunkRecord] = []
    facts: list[ChunkRecord] = []
    for entry in entries:
        title = _title(entry)
        handler_doc = docs.get(entry.handler or "", "")
        head = f"{title} → {entry.handler or '?'}"
        content = "\n".join(part for part in (head, *entry.details, handler_doc) if part)
        metadata = {
            "entry_type": entry.entry_type,
            "methods": entry.methods,
            "route_or_command": entry.route_or_command,
            "handler": entry.handler,
            "framework": entry.framework,
            "module": context.module,
            "line_start": entry.evidence_start,
            "line_end": entry.evidence_end,
        } | entry.extra
        # A row with seed 003 attributes spans its declaration (`evidence.start_line/end_line`): its own text
        # (models, auth, schedule, options) is the answer, and a one-line row is quoted as it is, where a
        # definition-wide row is quoted through the handler's code, which names none of them.
        span = (entry.evidence_start, entry.evidence_end) if entry.details else (entry.start, entry.end)
        records.append(
            ChunkRecord(Layer.C3_ENTRYPOINTS, context.path, title, content, *span, metadata, False)
        )
        if entry.entry_type == "http":
            facts += [_endpoint_fact(context, entry, method) for method in entry.methods]
    return records + facts


def _endpoint_fact(context: ModuleContext, entry: Entrypoint, method: str) -> ChunkRecord:
    endpoint = f"{method} {entry.route_or_command}"
    subject = entry.handler or context.module
    return ChunkRecord(
        layer=Layer.D2_FACT_INDEX,
        path=context.path,
        title=f"{subject} — http_route",
        content=f"{subject} — http_route: {endpoint}",
        span_start=entry.evidence_start,
        span_end=entry.evidence_end,
        metadata={
            "subject": subject,
            "predicate": "http_route",
            "object": endpoint,
            "fact_kind": "endpoint",
            "method": method,
            "endpoint_path": entry.route_or_command,
            "line_start": entry.evidence_start,
            "line_end": entry.evidence_end,
            "source": "code",
            "module": context.module,
        },
        embed=False,
    )


def _title(entry: Entrypoint) -> str:
    if entry.entry_type == "http":
        return f"{' '.join(entry.methods)} {entry.route_or_command}"
    if entry.entry_type == "task" and entry.extra.get("task.cron"):
        return f"scheduled task {entry.route_or_command} ({entry.extra['task.cron']})"
    return f"{entry.entry_type} {entry.route_or_command}"


def _http_entry(
    route: Route, declaration: ast.AST, handler: str | None, framework: str, span: tuple[int, int]
) -> Entrypoint:
    start, end = _lines(declaration)
    return Entrypoint(
        entry_type="http",
        route_or_command=route.route,
        handler=handler,
        framework=framework,
        start=span[0],
        end=span[1],
        evidence_start=start,
        evidence_end=end,
        methods=route.methods,
        extra=route.metadata(),
    )


def _cli_command(decorator: ast.expr, function_name: str) -> str | None:
    """`@click.command()`, `@cli.command("name")`, `@app.command()` (typer), `@click.group()`."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("command", "group"):
        return None
    if isinstance(decorator, ast.Call):
        named = literal(decorator.args[0]) if decorator.args else literal(keyword(decorator, ("name",)))
        if named:
            return named
    return function_name.replace("_", "-")


def _main_entries(context: ModuleContext) -> list[Entrypoint]:
    entries = []
    package = context.module.removesuffix(".__main__")
    if context.path.endswith("__main__.py"):
        handler = _first_call(context, context.tree.body)
        last = len(context.lines)
        entries.append(Entrypoint("main", f"python -m {package}", handler, "python", 1, last, 1, last))
    for node in context.tree.body:
        if isinstance(node, ast.If) and _is_main_test(node.test):
            handler = _first_call(context, node.body)
            start, end = _lines(node)
            entries.append(
                Entrypoint("main", f"python -m {package}", handler, "python", start, end, start, end)
            )
    commands: dict[str, Entrypoint] = {}
    for walked in ast.walk(context.tree):
        if isinstance(walked, ast.Assign | ast.Expr):
            call: ast.expr = walked.value
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "add_parser"
                    and (command := literal(call.args[0] if call.args else None))):
                start, end = _lines(call)
                entry = Entrypoint("cli", command, None, "argparse", start, end, start, end)
                entries.append(entry)
                for target in walked.targets if isinstance(walked, ast.Assign) else []:
                    if name := dotted_name(target):
                        commands[name] = entry
    _argparse_schemas(context, entries, commands)
    return entries


def _argparse_schemas(context: ModuleContext, entries: list[Entrypoint], commands: dict[str, Entrypoint]) -> None:
    """`cli.args_schema` from `add_argument` calls: a sub-command's own parser's, else the program's (its
    `__main__` entry, or an entry of its own at the `ArgumentParser(...)` call)."""
    own: dict[int, list[CliParam]] = {}
    program: list[CliParam] = []
    parser_line: tuple[int, int] | None = None
    for call in sorted(context.calls, key=lambda c: (c.lineno, c.col_offset)):
        written = dotted_name(call.func) or ""
        if written.rsplit(".", 1)[-1] == "ArgumentParser" and parser_line is None:
            parser_line = _lines(call)
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        param = option_param(call)
        if param is None:
            continue
        receiver = commands.get(dotted_name(call.func.value) or "")
        if receiver is not None:
            own.setdefault(id(receiver), []).append(param)
        else:
            program.append(param)
    for entry in entries:
        if id(entry) in own:
            _add_cli_params(entry, own[id(entry)])
    if not program:
        return
    mains = [e for e in entries if e.entry_type == "main"]
    if not mains and parser_line is not None:
        mains = [Entrypoint("cli", f"python -m {context.module}", None, "argparse", *parser_line, *parser_line)]
        entries += mains
    for entry in mains:
        _add_cli_params(entry, program)


def _is_main_test(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    values = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and values == ["__main__"]


def _first_call(context: ModuleContext, body: list[ast.stmt]) -> str | None:
    """The first real call of a block: `sys.exit(main())` is handled by `main`, not by `sys.exit`."""
    for statement in body:
        for node in ast.walk(statement):
            written = dotted_name(node.func) if isinstance(node, ast.Call) else None
            if written and written not in _WRAPPER_CALLS:
                return context.resolve(written)[0]
    return None


def _lines(node: ast.AST) -> tuple[int, int]:
    start = getattr(node, "lineno", 1)
    return start, getattr(node, "end_lineno", None) or start


def _enclosing(symbols: list[Symbol], line: int) -> str | None:
    inside = [s for s in symbols if s.kind != "module" and s.start <= line <= s.end]
    return max(inside, key=lambda s: s.start).qname if inside else None
