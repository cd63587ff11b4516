"""C3_ENTRYPOINTS: HTTP routes, CLI commands and `__main__` blocks (plus endpoint facts for D2)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

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
    """`http`, `cli` or `main`."""
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


def find_entrypoints(context: ModuleContext, symbols: list[Symbol]) -> list[Entrypoint]:
    """Routes need a literal path: machinery such as `def get(self, path, ...)` yields no route."""
    prefixes = router_prefixes(context.tree)
    web = next((name for name in WEB_FRAMEWORKS if context.uses(name)), "unknown")
    cli = "typer" if context.uses("typer") else "click" if context.uses("click") else None
    entries: list[Entrypoint] = []
    for symbol, node in function_nodes(symbols):
        for decorator in node.decorator_list:
            route = decorator_route(decorator, prefixes)
            if route is not None:
                entries.append(_http_entry(route, decorator, symbol.qname, web, (symbol.start, symbol.end)))
            elif cli and (command := _cli_command(decorator, node.name)):
                start, end = _lines(decorator)
                entries.append(
                    Entrypoint("cli", command, symbol.qname, cli, symbol.start, symbol.end, start, end)
                )
    for call in context.calls:
        if (route := registration_route(call, prefixes)) is not None:
            handler = context.resolve(route.handler_ref)[0] if route.handler_ref else None
            route.extra["declared_in"] = _enclosing(symbols, call.lineno) or context.module
            entries.append(_http_entry(route, call, handler, web, _lines(call)))
    entries += _main_entries(context)
    return sorted(entries, key=lambda e: (e.evidence_start, e.route_or_command))


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
        content = "\n".join(part for part in (f"{title} → {entry.handler or '?'}", handler_doc) if part)
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
        records.append(
            ChunkRecord(
                Layer.C3_ENTRYPOINTS, context.path, title, content, entry.start, entry.end, metadata, False
            )
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
    for call in context.calls:
        if (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "add_parser"
            and (command := literal(call.args[0] if call.args else None))
        ):
            start, end = _lines(call)
            entries.append(Entrypoint("cli", command, None, "argparse", start, end, start, end))
    return entries


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
