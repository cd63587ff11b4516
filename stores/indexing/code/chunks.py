"""C0_SOURCE_CHUNKS: def/class-level source chunks with exact spans, capped at MAX_CHUNK_LINES."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from stores.indexing.code.module import ModuleContext
from stores.indexing.code.signatures import class_signature, first_paragraph
from stores.indexing.code.symbols import DefinitionNode, Symbol, definition_start
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_CHUNK_LINES = 150
SMALL_CHUNK_LINES = 12
"""Neighbouring functions/methods shorter than this are grouped (one embedding instead of several)."""
MAX_GROUP_LINES = 40
MERGEABLE_KINDS = frozenset({"module_code", "function", "class", "method", "class_body", "group"})
MAX_EMBED_CODE_CHARS = 1500
MAX_EMBED_CHARS = 2000


@dataclass(slots=True)
class Chunk:
    """A span of source before it becomes a row."""

    start: int
    end: int
    qname: str
    kind: str
    """`module_code`, `function`, `class`, `class_header` (of a split class), `method`, `class_body`,
    or `group` (small neighbours)."""
    prefix: str = ""
    """Comment line(s) prepended to the content (e.g. `# class APIRouter(routing.Router)`)."""
    symbols: list[str] = field(default_factory=list)
    standalone: bool = False
    """Never grouped with neighbours (a def with a call decorator: a route, a CLI command...)."""


def split_chunks(context: ModuleContext) -> list[Chunk]:
    """Cut the module into chunks: one per top-level def/class, module code between them grouped.

    Classes longer than MAX_CHUNK_LINES are split per member (each prefixed by a comment naming the
    class); any piece still longer is cut at statement boundaries, then by lines.
    """
    chunks: list[Chunk] = []
    pending: list[tuple[int, int]] = []
    for node in context.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            chunks += _module_code(context, pending)
            pending = []
            chunks += _definition_chunks(context, node, context.module, "")
        else:
            pending.append((node.lineno, node.end_lineno or node.lineno))
    chunks += _module_code(context, pending)
    return _group_small(chunks)


def chunk_records(context: ModuleContext, symbols: list[Symbol]) -> list[ChunkRecord]:
    """Build the C0 rows.

    Args:
        context: The parsed module.
        symbols: Symbols of the module (for signatures and docstrings in the embedding text).

    Returns:
        Rows in file order; `embed_text` is `"{path} {qname}\\n{signature}\\n{docstring}\\n{code}"`.
    """
    by_qname = {symbol.qname: symbol for symbol in symbols}
    chunks = split_chunks(context)
    records = []
    for index, chunk in enumerate(chunks):
        code = "\n".join(context.lines[chunk.start - 1 : chunk.end])
        content = f"{chunk.prefix}\n{code}" if chunk.prefix else code
        symbol = by_qname.get(chunk.qname)
        signature = symbol.compact_signature if symbol and symbol.kind != "module" else ""
        summary = first_paragraph(symbol.docstring if symbol else None)
        header = "\n".join(part for part in (f"{context.path} {chunk.qname}", signature, summary) if part)
        title = chunk.qname
        if chunk.kind == "group":
            names = [name.rpartition(".")[2] for name in chunk.symbols if name != context.module]
            title += f" ({', '.join(names)})"
        records.append(
            ChunkRecord(
                layer=Layer.C0_SOURCE_CHUNKS,
                path=context.path,
                title=title,
                content=content,
                span_start=chunk.start,
                span_end=chunk.end,
                metadata={
                    "qname": chunk.qname,
                    "kind": chunk.kind,
                    "module": context.module,
                    "symbols": chunk.symbols or [chunk.qname],
                    "chunk_index": index,
                },
                embed=True,
                embed_text=f"{header}\n{content[:MAX_EMBED_CODE_CHARS]}"[:MAX_EMBED_CHARS],
            )
        )
    return records


def _group_small(chunks: list[Chunk]) -> list[Chunk]:
    """Merge runs of small siblings (defs, classes, module code) into `group` chunks of ≤ MAX_GROUP_LINES."""
    result: list[Chunk] = []
    for chunk in chunks:
        last = result[-1] if result else None
        if (
            last is not None
            and chunk.kind in MERGEABLE_KINDS
            and last.kind in MERGEABLE_KINDS
            and not (chunk.standalone or last.standalone)
            and chunk.prefix == last.prefix
            and _parent(chunk) == _parent(last)
            and chunk.end - chunk.start + 1 < SMALL_CHUNK_LINES
            and (last.kind == "group" or last.end - last.start + 1 < SMALL_CHUNK_LINES)
            and chunk.end - last.start + 1 <= MAX_GROUP_LINES
        ):
            symbols = last.symbols + chunk.symbols
            result[-1] = Chunk(last.start, chunk.end, _parent(last), "group", last.prefix, symbols)
        else:
            result.append(chunk)
    return result


def _parent(chunk: Chunk) -> str:
    return chunk.qname if chunk.kind in ("group", "module_code") else chunk.qname.rpartition(".")[0]


def _module_code(context: ModuleContext, spans: list[tuple[int, int]]) -> list[Chunk]:
    """Group consecutive module-level statements into chunks of at most MAX_CHUNK_LINES."""
    chunks: list[Chunk] = []
    for start, end in _pack(spans):
        for piece_start, piece_end in _by_lines(start, end):
            chunks.append(
                Chunk(piece_start, piece_end, context.module, "module_code", symbols=[context.module])
            )
    return chunks


def _definition_chunks(context: ModuleContext, node: DefinitionNode, parent: str, prefix: str) -> list[Chunk]:
    qname = f"{parent}.{node.name}"
    start, end = definition_start(context, node), node.end_lineno or node.lineno
    is_class = isinstance(node, ast.ClassDef)
    kind = "class" if is_class else ("method" if prefix else "function")
    if end - start + 1 <= MAX_CHUNK_LINES:
        standalone = any(isinstance(decorator, ast.Call) for decorator in node.decorator_list)
        return [Chunk(start, end, qname, kind, prefix, [qname], standalone)]
    if not isinstance(node, ast.ClassDef):
        return _split_long(start, end, node.body, qname, kind, prefix)
    return _class_members(context, node, qname, start)


def _class_members(context: ModuleContext, node: ast.ClassDef, qname: str, start: int) -> list[Chunk]:
    """Split a long class: its header (up to the first member), then each member, body code grouped."""
    label = f"# class {class_signature(node).removeprefix('class ')}  ({qname})"
    chunks: list[Chunk] = []
    header_end: int | None = None
    pending: list[tuple[int, int]] = []
    for member in node.body:
        if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if header_end is None:
                header_end = definition_start(context, member) - 1
                chunks.append(Chunk(start, max(start, header_end), qname, "class_header", "", [qname]))
                pending = []
            chunks += _grouped_body(pending, qname, label)
            pending = []
            chunks += _definition_chunks(context, member, qname, label)
        elif header_end is not None:
            pending.append((member.lineno, member.end_lineno or member.lineno))
    if header_end is None:  # a huge class without methods (constants, fields)
        return _split_long(start, node.end_lineno or start, node.body, qname, "class", "")
    chunks += _grouped_body(pending, qname, label)
    return chunks


def _grouped_body(spans: list[tuple[int, int]], qname: str, label: str) -> list[Chunk]:
    return [
        Chunk(s, e, qname, "class_body", label, [qname])
        for start, end in _pack(spans)
        for s, e in _by_lines(start, end)
    ]


def _split_long(
    start: int, end: int, body: list[ast.stmt], qname: str, kind: str, prefix: str
) -> list[Chunk]:
    """Cut a long definition at body statement boundaries; later parts say what they continue."""
    first_body = body[0].lineno if body else end
    spans = [(start, first_body - 1)] if first_body > start else []
    spans += [(stmt.lineno, stmt.end_lineno or stmt.lineno) for stmt in body]
    spans[-1] = (spans[-1][0], end)
    chunks = []
    for part, (piece_start, piece_end) in enumerate(
        span for packed in _pack(_contiguous(spans)) for span in _by_lines(*packed)
    ):
        continued = f"# {qname} (continued)" if part else ""
        label = "\n".join(line for line in (prefix, continued) if line)
        chunks.append(Chunk(piece_start, piece_end, qname, kind, label, [qname]))
    return chunks


def _contiguous(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Make each span start right after the previous one, so comments between statements are kept."""
    result: list[tuple[int, int]] = []
    for index, (start, end) in enumerate(spans):
        result.append((result[-1][1] + 1 if index else start, max(end, start)))
    return result


def _pack(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Greedily merge consecutive statement spans while the merged span stays within MAX_CHUNK_LINES."""
    packed: list[tuple[int, int]] = []
    for start, end in spans:
        if packed and end - packed[-1][0] + 1 <= MAX_CHUNK_LINES:
            packed[-1] = (packed[-1][0], end)
        else:
            packed.append((start, end))
    return packed


def _by_lines(start: int, end: int) -> list[tuple[int, int]]:
    """Hard split of a single over-long statement."""
    return [(s, min(s + MAX_CHUNK_LINES - 1, end)) for s in range(start, end + 1, MAX_CHUNK_LINES)]
