"""Readable signatures rebuilt from `ast` (without `Annotated[...]` metadata, which can be pages long)."""

from __future__ import annotations

import ast
import copy

MAX_SIGNATURE_CHARS = 4000
COMPACT_THRESHOLD = 600
"""Signatures longer than this get a compact form (names only) for content and embeddings."""
MAX_DECORATOR_CHARS = 200


def _strip_annotated(node: ast.AST) -> ast.AST:
    """`Annotated[T, Doc("...")]` → `T`: keeps the type, drops the (often huge) metadata.

    Never changes `node`: an unchanged subtree is returned as it is, a changed one as a shallow copy (the
    tree is shared with the other layers; a deep copy of every signature was a tenth of the parse)."""
    if isinstance(node, ast.Subscript):
        value = node.value
        name = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", "")
        if name == "Annotated":
            first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
            return _strip_annotated(first)
    changed: dict[str, object] = {}
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            new = _strip_annotated(value)
            if new is not value:
                changed[name] = new
        elif isinstance(value, list):
            items = [_strip_annotated(item) if isinstance(item, ast.AST) else item for item in value]
            if any(new is not old for new, old in zip(items, value, strict=True)):
                changed[name] = items
    if not changed:
        return node
    stripped = copy.copy(node)
    for name, replaced in changed.items():
        setattr(stripped, name, replaced)
    return stripped


def function_signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """`def name(args) -> ret` (with `async` when needed), annotations without `Annotated` metadata."""
    args = _strip_annotated(node.args)
    text = f"def {node.name}({ast.unparse(args)})"
    if node.returns is not None:
        text += f" -> {ast.unparse(_strip_annotated(node.returns))}"
    if isinstance(node, ast.AsyncFunctionDef):
        text = f"async {text}"
    return _cap(text, MAX_SIGNATURE_CHARS)


def compact_signature(node: ast.FunctionDef | ast.AsyncFunctionDef, full: str) -> str:
    """The full signature when short, else parameter names only: `def get(self, path, *, tags, ...)`."""
    if len(full) <= COMPACT_THRESHOLD:
        return full
    args = node.args
    names = [a.arg for a in [*args.posonlyargs, *args.args]]
    if args.vararg:
        names.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        names.append("*")
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(f"**{args.kwarg.arg}")
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    text = f"{prefix} {node.name}({', '.join(names)})"
    if node.returns is not None:
        text += f" -> {_cap(ast.unparse(_strip_annotated(node.returns)), 120)}"
    return _cap(text, COMPACT_THRESHOLD * 2)


def class_signature(node: ast.ClassDef) -> str:
    """`class Name(Base, metaclass=M)` or `class Name`."""
    parts = [ast.unparse(base) for base in node.bases]
    parts += [ast.unparse(keyword) for keyword in node.keywords]
    return _cap(f"class {node.name}({', '.join(parts)})" if parts else f"class {node.name}", 600)


def decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[str]:
    """Decorators as source text (`app.get('/x')`), each capped."""
    return [_cap(ast.unparse(decorator), MAX_DECORATOR_CHARS) for decorator in node.decorator_list]


def first_paragraph(docstring: str | None, limit: int = 400) -> str:
    """The first paragraph of a docstring on one line, capped at `limit` characters."""
    if not docstring:
        return ""
    paragraph = docstring.strip().split("\n\n", 1)[0]
    return _cap(" ".join(paragraph.split()), limit)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
