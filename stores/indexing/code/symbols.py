"""C1_SYMBOL_CATALOG: modules, classes, functions and methods with signatures, docstrings and spans."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from stores.indexing.code.module import ModuleContext
from stores.indexing.code.signatures import (
    class_signature,
    compact_signature,
    decorators,
    first_paragraph,
    function_signature,
)
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_DOCSTRING_CHARS = 400
MAX_EMBED_CHARS = 2000
MAX_MODULE_NAMES = 40

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
DefinitionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True, slots=True)
class Symbol:
    """One definition of the module (or the module itself)."""

    qname: str
    """Module dotted path + qualname, e.g. `fastapi.routing.APIRouter.add_api_route`."""
    name: str
    kind: str
    """`module`, `class`, `function` or `method`."""
    node: ast.AST
    parent: str | None
    start: int
    """First line, decorators and directly preceding comments included."""
    end: int
    signature: str
    compact_signature: str
    decorators: list[str]
    docstring: str | None
    in_function: bool
    """Defined inside a function body (a closure or local class)."""


def collect_symbols(context: ModuleContext) -> list[Symbol]:
    """List the module symbol followed by every class/def in source order (nested ones included)."""
    docstring = ast.get_docstring(context.tree)
    module_symbol = Symbol(
        qname=context.module,
        name=context.module.rpartition(".")[2],
        kind="module",
        node=context.tree,
        parent=None,
        start=1,
        end=len(context.lines),
        signature=f"module {context.module}",
        compact_signature=f"module {context.module}",
        decorators=[],
        docstring=docstring,
        in_function=False,
    )
    symbols = [module_symbol]
    _visit(context, context.tree.body, context.module, "module", False, symbols)
    return symbols


def definition_start(context: ModuleContext, node: DefinitionNode) -> int:
    """First line of a definition: its first decorator, or a comment block right above it."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    while start > 1 and context.lines[start - 2].lstrip().startswith("#"):
        start -= 1
    return start


def symbol_records(
    context: ModuleContext, symbols: list[Symbol], entry_handlers: set[str]
) -> list[ChunkRecord]:
    """Build the C1 rows.

    Only public, top-level-ish symbols are embedded (modules, classes, functions, methods not defined
    inside a function and not `_private`); the rest stay lexically searchable. Dunder methods other than
    `__init__`/`__call__` are not embedded either: their C0 chunk carries them.

    Args:
        context: The parsed module.
        symbols: Output of `collect_symbols`.
        entry_handlers: Qnames that are handlers of C3 entrypoints.

    Returns:
        One row per symbol; content = signature + docstring summary.
    """
    records = []
    for symbol in symbols:
        summary = first_paragraph(symbol.docstring, MAX_DOCSTRING_CHARS)
        docstring = (symbol.docstring or "")[:MAX_DOCSTRING_CHARS]
        is_entry = symbol.qname in entry_handlers or (
            symbol.kind == "function" and symbol.name in {"main", "cli"} and not symbol.in_function
        )
        metadata = {
            "qname": symbol.qname,
            "name": symbol.name,
            "kind": symbol.kind,
            "module": context.module,
            "signature": symbol.signature,
            "decorators": symbol.decorators,
            "docstring": docstring,
            "parent": symbol.parent,
            "is_entry_candidate": is_entry,
            "visibility": _visibility(symbol.name),
            "in_function": symbol.in_function,
            "line_start": symbol.start,
            "line_end": symbol.end,
        }
        if isinstance(symbol.node, ast.ClassDef):
            metadata["bases"] = [ast.unparse(base) for base in symbol.node.bases]
        content = f"{symbol.compact_signature}\n{summary}".strip()
        if symbol.kind == "module":
            # A module without a docstring would otherwise be a bare name: list what it defines.
            defined = [name for name in context.top_level if not name.startswith("_")][:MAX_MODULE_NAMES]
            content += f"\nDefines: {', '.join(defined)}" if defined else ""
        if symbol.decorators:
            content = "\n".join(f"@{d}" for d in symbol.decorators[:5]) + "\n" + content
        records.append(
            ChunkRecord(
                layer=Layer.C1_SYMBOL_CATALOG,
                path=context.path,
                title=symbol.qname,
                content=content,
                span_start=symbol.start,
                span_end=symbol.end,
                metadata=metadata,
                embed=_worth_embedding(symbol),
                embed_text=f"{symbol.qname}\n{content}"[:MAX_EMBED_CHARS],
            )
        )
    return records


def function_nodes(symbols: list[Symbol]) -> Iterator[tuple[Symbol, FunctionNode]]:
    """Yield functions and methods with their nodes."""
    for symbol in symbols:
        if isinstance(symbol.node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield symbol, symbol.node


def _visit(
    context: ModuleContext,
    body: list[ast.stmt],
    prefix: str,
    parent_kind: str,
    in_function: bool,
    out: list[Symbol],
) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            qname = f"{prefix}.{node.name}"
            out.append(_definition(context, node, qname, "class", prefix, in_function))
            _visit(context, node.body, qname, "class", in_function, out)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            qname = f"{prefix}.{node.name}"
            kind = "method" if parent_kind == "class" else "function"
            out.append(_definition(context, node, qname, kind, prefix, in_function))
            _visit(context, node.body, qname, "function", True, out)
        else:
            # Definitions under `if TYPE_CHECKING:`, `try:` and the like still belong to the same scope.
            for child in _statement_lists(node):
                _visit(context, child, prefix, parent_kind, in_function, out)


def _definition(
    context: ModuleContext, node: DefinitionNode, qname: str, kind: str, parent: str, in_function: bool
) -> Symbol:
    if isinstance(node, ast.ClassDef):
        signature = compact = class_signature(node)
    else:
        signature = function_signature(node)
        compact = compact_signature(node, signature)
    return Symbol(
        qname=qname,
        name=node.name,
        kind=kind,
        node=node,
        parent=parent,
        start=definition_start(context, node),
        end=node.end_lineno or node.lineno,
        signature=signature,
        compact_signature=compact,
        decorators=decorators(node),
        docstring=ast.get_docstring(node),
        in_function=in_function,
    )


def _statement_lists(node: ast.stmt) -> list[list[ast.stmt]]:
    lists = [getattr(node, name, None) for name in ("body", "orelse", "finalbody")]
    lists += [handler.body for handler in getattr(node, "handlers", [])]
    lists += [case.body for case in getattr(node, "cases", [])]
    return [items for items in lists if isinstance(items, list) and items and isinstance(items[0], ast.stmt)]


def _visibility(name: str) -> str:
    if name.startswith("__") and name.endswith("__"):
        return "dunder"
    return "private" if name.startswith("_") else "public"


def _worth_embedding(symbol: Symbol) -> bool:
    if symbol.kind == "module":
        return True
    if symbol.in_function:
        return False
    if symbol.name in ("__init__", "__call__"):
        return True
    return not symbol.name.startswith("_")
