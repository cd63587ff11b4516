"""C2_DEPENDENCY_GRAPH: import, inheritance and (best-effort) call edges of one module."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from stores.indexing.code.module import BUILTIN_NAMES, ModuleContext, dotted_name
from stores.indexing.code.symbols import FunctionNode, Symbol, function_nodes
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_CALLS_PER_FUNCTION = 20


@dataclass(frozen=True, slots=True)
class DependencyEdge:
    """One edge before it becomes a row."""

    edge_type: str
    """`imports`, `inherits` or `calls`."""
    src: str
    dst: str
    resolution: str
    """`import`, `name` or `unresolved`."""
    dst_ref: str
    """The reference as written in the source."""
    line: int
    end_line: int


def find_edges(context: ModuleContext, symbols: list[Symbol]) -> list[DependencyEdge]:
    """Imports (module → imported name), inheritance (class → base) and calls (function → callee)."""
    edges = [
        DependencyEdge("imports", context.module, ref.target, "import", ref.alias, ref.line, ref.line)
        for ref in context.imports
    ]
    methods_of = _methods_by_class(symbols)
    for symbol in symbols:
        if isinstance(symbol.node, ast.ClassDef):
            for base in symbol.node.bases:
                written = dotted_name(base) or ast.unparse(base)
                target, resolution = context.resolve(written)
                line = base.lineno
                edges.append(
                    DependencyEdge("inherits", symbol.qname, target, resolution, written, line, line)
                )
    for symbol, node in function_nodes(symbols):
        edges += _call_edges(context, symbol, node, methods_of)
    return edges


def dependency_records(context: ModuleContext, symbols: list[Symbol]) -> list[ChunkRecord]:
    """Build the C2 rows (not embedded: the graph is walked and matched by name).

    Args:
        context: The parsed module.
        symbols: Symbols of the module.

    Returns:
        One row per edge, spanning the line(s) that evidence it.
    """
    return [
        ChunkRecord(
            layer=Layer.C2_DEPENDENCY_GRAPH,
            path=context.path,
            title=f"{edge.src} {edge.edge_type} {edge.dst}",
            content=f"{edge.src} {edge.edge_type} {edge.dst}",
            span_start=edge.line,
            span_end=edge.end_line,
            metadata={
                "edge_type": edge.edge_type,
                "src": edge.src,
                "dst": edge.dst,
                "dst_ref": edge.dst_ref,
                "resolution": edge.resolution,
                "module": context.module,
            },
            embed=False,
        )
        for edge in find_edges(context, symbols)
    ]


def _call_edges(
    context: ModuleContext, symbol: Symbol, node: FunctionNode, methods_of: dict[str, set[str]]
) -> list[DependencyEdge]:
    edges: list[DependencyEdge] = []
    seen: set[str] = set()
    class_qname = symbol.parent if symbol.kind == "method" else None
    for call in _own_calls(context, node):
        written = dotted_name(call.func)
        if written is None or written in BUILTIN_NAMES:
            continue
        head, _, rest = written.partition(".")
        if (
            head in ("self", "cls")
            and class_qname
            and rest.split(".")[0] in methods_of.get(class_qname, set())
        ):
            target, resolution = f"{class_qname}.{rest}", "name"
        else:
            target, resolution = context.resolve(written)
        if target in seen:
            continue
        seen.add(target)
        end = call.end_lineno or call.lineno
        edges.append(DependencyEdge("calls", symbol.qname, target, resolution, written, call.lineno, end))
        if len(edges) >= MAX_CALLS_PER_FUNCTION:
            break
    return edges


def _own_calls(context: ModuleContext, node: FunctionNode) -> list[ast.Call]:
    """Calls in a function's body (decorators and nested defs excluded), in source order."""
    return sorted(context.own_calls.get(id(node), ()), key=lambda call: (call.lineno, call.col_offset))


def _methods_by_class(symbols: list[Symbol]) -> dict[str, set[str]]:
    methods: dict[str, set[str]] = {}
    for symbol in symbols:
        if symbol.kind == "method" and symbol.parent:
            methods.setdefault(symbol.parent, set()).add(symbol.name)
    return methods
