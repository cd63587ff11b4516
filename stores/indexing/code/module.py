"""Module-level facts of a Python file: its dotted name, import table, name resolution and its calls."""

from __future__ import annotations

import ast
import builtins
from collections import deque
from dataclasses import dataclass, field

BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True, slots=True)
class ImportRef:
    """One imported name: `alias` in this module stands for `target`."""

    alias: str
    target: str
    line: int


@dataclass(slots=True)
class ModuleContext:
    """What the other code layers need to know about the module as a whole."""

    path: str
    module: str
    tree: ast.Module
    lines: list[str]
    imports: list[ImportRef] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    """Local name → fully qualified imported name."""
    top_level: dict[str, str] = field(default_factory=dict)
    """Top-level def/class name → its qname."""
    calls: list[ast.Call] = field(default_factory=list)
    """Every call of the module, in `ast.walk` order."""
    own_calls: dict[int, list[ast.Call]] = field(default_factory=dict)
    """`id(function node)` → the calls of its body outside nested defs, classes and lambdas, in walk order."""

    def resolve(self, dotted: str) -> tuple[str, str]:
        """Resolve a dotted reference used in this module to `(target, resolution)`.

        `resolution` is `import` (through an import alias), `name` (a def/class of this module) or
        `unresolved` (locals, attributes of unknown objects, ...).
        """
        head, _, rest = dotted.partition(".")
        if head in self.aliases:
            target = self.aliases[head]
            return (f"{target}.{rest}" if rest else target), "import"
        if head in self.top_level:
            target = self.top_level[head]
            return (f"{target}.{rest}" if rest else target), "name"
        return dotted, "unresolved"

    def uses(self, *packages: str) -> bool:
        """True when the module imports any of `packages` (or their submodules)."""
        return any(
            ref.target == pkg or ref.target.startswith(f"{pkg}.") for ref in self.imports for pkg in packages
        )


def module_name(path: str) -> str:
    """Dotted module name of a file path: `fastapi/routing.py` → `fastapi.routing`, `pkg/__init__.py` → `pkg`.

    A leading `src/` (the src layout) is not part of the import name.
    """
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    if len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    return ".".join(parts)


def build_context(path: str, text: str, tree: ast.Module) -> ModuleContext:
    """Collect imports (anywhere in the file) and top-level definitions of a parsed module."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # a final newline ends the last line, it does not start a new one
    context = ModuleContext(path=path, module=module_name(path), tree=tree, lines=lines)
    package = context.module if path.endswith("__init__.py") else context.module.rpartition(".")[0]
    for node in _scan(tree, context):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                target = alias.name if alias.asname else alias.name.split(".")[0]
                context.imports.append(ImportRef(local, alias.name, node.lineno))
                context.aliases.setdefault(local, target)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute_base(package, node.module, node.level)
            for alias in node.names:
                if alias.name == "*":
                    context.imports.append(ImportRef("*", base, node.lineno))
                    continue
                target = f"{base}.{alias.name}" if base else alias.name
                context.imports.append(ImportRef(alias.asname or alias.name, target, node.lineno))
                context.aliases.setdefault(alias.asname or alias.name, target)
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            context.top_level[statement.name] = f"{context.module}.{statement.name}"
    return context


_FUNCTIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef})
_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda})


def _scan(tree: ast.Module, context: ModuleContext) -> list[ast.Import | ast.ImportFrom]:
    """One breadth-first walk (the order of `ast.walk`) that fills `context.calls` and `context.own_calls`
    and returns the import statements.

    The layers used to walk the whole tree once each (imports, route registrations, argparse commands,
    then every function's own calls): on the standard library those walks were most of the parse.
    A node's owner is the function whose body holds it with no def, class or lambda in between (None
    elsewhere: module level, class bodies, decorators, defaults and annotations)."""
    imports: list[ast.Import | ast.ImportFrom] = []
    calls, own = context.calls, context.own_calls
    queue: deque[tuple[ast.AST, int | None]] = deque([(tree, None)])
    pop, push, node_type = queue.popleft, queue.append, ast.AST
    while queue:
        node, owner = pop()
        kind = type(node)
        if kind is ast.Call:
            calls.append(node)  # type: ignore[arg-type]
            if owner is not None:
                own.setdefault(owner, []).append(node)  # type: ignore[arg-type]
        elif kind is ast.Import or kind is ast.ImportFrom:
            imports.append(node)  # type: ignore[arg-type]
        body = None
        if kind in _SCOPES:
            owner = None
            if kind in _FUNCTIONS:
                body = node.body  # type: ignore[attr-defined]
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                child_owner = id(node) if value is body else owner
                for item in value:
                    if isinstance(item, node_type):
                        push((item, child_owner))
            elif isinstance(value, node_type):
                push((value, owner))
    return imports


def dotted_name(node: ast.expr) -> str | None:
    """`a.b.c` for a Name/Attribute chain, None for anything else (calls, subscripts...)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _absolute_base(package: str, module: str | None, level: int) -> str:
    """Resolve `from ..x import y` against the importing module's package."""
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if len(parts) >= level - 1 else []
    base = ".".join(parts)
    if module:
        return f"{base}.{module}" if base else module
    return base
