"""C7_CODE_FACTS: one row per fact a reader asks of code (issue 38), read from the `ast` of one module.

A question for a default, a limit, an exception, an environment variable, an option or a message is answered
by one source line deep inside a definition; the symbol's docstring (C1) and its whole body (C0) rarely put
that line first. Each fact cites its exact lines and carries a generated sentence in English and Russian
(`title` and `embed_text`), so it is found by the words of a question as well as by the identifier:

- parameters with defaults (functions, `__init__`, keyword-only flags);
- class fields (annotated class attributes: dataclasses, attrs, pydantic, TypedDict, NamedTuple), with the
  `default=` of `field(...)` / `Field(...)` / `attr.ib(...)`;
- command-line options: a call that declares `--flags` (click / typer / argparse), with default and help;
- module and class constants (UPPER_CASE names);
- exceptions raised, with their message and the condition line of the `if` above the `raise`;
- environment variables read (`os.environ[...]`, `.get(..., default)`, `getenv`), with their defaults;
- log, warning and deprecation messages.

Nothing is imported or run, and no rule names a project's identifiers: the shapes are Python's and its
standard library's (and the common field/option call names of the ecosystem).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from stores.indexing.code.module import ModuleContext, dotted_name
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_FACTS_PER_FILE = 400
"""A generated module with thousands of constants adds noise, not answers; the first ones in line order stay."""
MAX_VALUE_CHARS = 80
"""A default or message longer than this is cut (with `…`) in the sentence; the cited line holds it whole."""
MAX_CONDITION_GAP = 6
"""A `raise` at most this many lines below its `if` cites the condition line too; a longer branch cites only
the `raise` (the condition is still named in the sentence)."""

CONSTANT_NAME = re.compile(r"^_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal"})
WARN_CALLS = frozenset({"warnings.warn", "warn", "warnings.warn_explicit"})
DEPRECATION_CATEGORIES = frozenset({"DeprecationWarning", "PendingDeprecationWarning", "FutureWarning"})
FIELD_CALLS = frozenset({"field", "Field", "ib", "attrib", "attr.ib", "attrs.field", "dataclasses.field",
                         "pydantic.Field", "PrivateAttr", "Option", "Argument"})
"""Calls whose `default=` is a field's default (dataclasses, pydantic, attrs) — or a typer parameter's."""
OPTION_CALLS = frozenset({"option", "argument", "add_argument", "Option", "Argument", "add_option"})
"""Calls (by their last name) that declare command-line options: click, typer, argparse, optparse."""
ENV_GETTERS = frozenset({"getenv", "getenvb"})
DECLARATIVE_NAMES = frozenset({"dataclass", "define", "frozen", "mutable", "attrs", "s", "BaseModel", "BaseSettings",
                               "TypedDict", "NamedTuple", "Struct", "SQLModel", "Schema"})
"""Decorators and bases (by their last name) of classes whose annotated attributes declare fields: dataclasses,
attrs (`@define`, `@attr.s`), pydantic, TypedDict, NamedTuple, msgspec. In any other class an annotation only
types an attribute that `__init__` sets."""
NOT_CONSTANT_CALLS = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple", "NewType"})
"""Module-level names that look like constants but declare types."""

FACT_KINDS = ("parameter", "field", "option", "constant", "raise", "env", "message")


@dataclass(frozen=True, slots=True)
class CodeFact:
    """One fact of a module, with the lines that state it."""

    kind: str
    """One of `FACT_KINDS`."""
    name: str
    """The parameter, field, option flags, constant, exception class, variable or message level."""
    owner: str
    """Qualified name of the function or class it belongs to (the module's name at module level)."""
    start: int
    end: int
    value: str | None = None
    """Default, constant value or message, as source text (None: no default)."""
    detail: str | None = None
    """The `if` condition above a `raise`, an option's help, a parameter's `keyword-only`, a message's level."""

    def sentences(self) -> tuple[str, str]:
        """The fact in English and in Russian, as a question about it would be answered."""
        name, owner, value, detail = f"`{self.name}`", f"`{self.owner}`", _short(self.value), self.detail
        if self.kind == "parameter":
            kw = " (keyword-only)" if detail == "keyword-only" else ""
            kw_ru = " (только по имени)" if detail == "keyword-only" else ""
            return (f"parameter {name}{kw} of {owner} defaults to `{value}`",
                    f"параметр {name}{kw_ru} в {owner} по умолчанию равен `{value}`")
        if self.kind == "field":
            if value is None:
                return (f"field {name} of {owner} has no default (required)",
                        f"поле {name} класса {owner} без значения по умолчанию (обязательное)")
            return (f"field {name} of {owner} defaults to `{value}`",
                    f"поле {name} класса {owner} по умолчанию равно `{value}`")
        if self.kind == "option":
            default = f" defaults to `{value}`" if value is not None else ""
            default_ru = f" по умолчанию `{value}`" if value is not None else ""
            help_text = f": {_short(detail)}" if detail else ""
            return (f"command-line option {name} of {owner}{default}{help_text}",
                    f"опция командной строки {name} в {owner}{default_ru}{help_text}")
        if self.kind == "constant":
            return (f"constant {name} in {owner} is `{value}` (limit, setting)",
                    f"константа {name} в {owner} равна `{value}` (лимит, настройка)")
        if self.kind == "raise":
            message = f' "{value}"' if value else ""
            message_ru = f" «{value}»" if value else ""
            when = f" when `{_short(detail)}`" if detail else ""
            when_ru = f", если `{_short(detail)}`" if detail else ""
            return (f"{owner} raises exception {name}{message}{when} (error)",
                    f"{owner} выбрасывает исключение {name}{message_ru}{when_ru} (ошибка)")
        if self.kind == "env":
            default = f", default `{value}`" if value is not None else ""
            default_ru = f", по умолчанию `{value}`" if value is not None else ""
            return (f"environment variable {name} is read in {owner}{default}",
                    f"переменная окружения {name} читается в {owner}{default_ru}")
        level = detail or "log"
        level_ru = {"deprecation": "предупреждение об устаревании", "warning": "предупреждение",
                    "error": "ошибку", "exception": "ошибку", "critical": "критическую ошибку"}.get(level, "сообщение")
        return (f"{owner} emits a {level} message: \"{value}\"", f"{owner} выводит {level_ru}: «{value}»")


def _short(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _segment(context: ModuleContext, node: ast.AST) -> str:
    """The source text of `node` (one line of whitespace-joined text), from the module's lines."""
    start, end = node.lineno, getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
    col, end_col = node.col_offset, getattr(node, "end_col_offset", None)  # type: ignore[attr-defined]
    lines = context.lines[start - 1: end]
    if not lines:
        return ""
    if end_col is not None:
        lines[-1] = lines[-1].encode()[:end_col].decode(errors="ignore")
    lines[0] = lines[0].encode()[col:].decode(errors="ignore")
    return " ".join(line.strip() for line in lines)


def _message(context: ModuleContext, node: ast.expr | None) -> str | None:
    """A message argument as written: a string's value, an f-string or `%`-format as its source text."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant)
                                            and isinstance(node.left.value, str)):
        return _segment(context, node)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and _is_str(node.args[0]):
        return node.args[0].value  # type: ignore[attr-defined]  # a translated message: `_("...")`
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        return node.func.value.value
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _call_name(call: ast.Call) -> str:
    return dotted_name(call.func) or ""


class _Collector(ast.NodeVisitor):
    """Walks the module once, keeping the qualified name of the enclosing class or function."""

    def __init__(self, context: ModuleContext) -> None:
        self.context = context
        self.scope: list[str] = [context.module]
        self.class_depth: list[bool] = [False]
        """Whether each scope is a class body (fields and class constants live there)."""
        self.declarative: list[bool] = [False]
        """Whether each scope is a class with a decorator or a base (dataclass, attrs, pydantic, TypedDict...):
        there an annotation without a value declares a required field; in a plain class it only types an
        attribute that `__init__` sets."""
        self.branches: list[ast.If] = []
        self.facts: list[CodeFact] = []

    @property
    def owner(self) -> str:
        return ".".join(self.scope)

    def add(self, kind: str, name: str, node: ast.AST, value: str | None = None, detail: str | None = None,
            start: int | None = None) -> None:
        end = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        self.facts.append(CodeFact(kind, name, self.owner, start or node.lineno,  # type: ignore[attr-defined]
                                   end, value, detail))

    # scopes ---------------------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.declarative.append(_declarative(node))
        self._enter(node.name, True, node.body)
        self.declarative.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)  # its decorators' facts are its own (`@click.option` of a command)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._parameters(node.args)
        self.scope.pop()
        for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
            if not _is_option_call(default):  # an option default is its parameter's fact already
                self.visit(default)
        self._enter(node.name, False, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _enter(self, name: str, is_class: bool, body: list[ast.stmt]) -> None:
        self.scope.append(name)
        self.class_depth.append(is_class)
        saved, self.branches = self.branches, []
        for statement in body:
            self.visit(statement)
        self.branches = saved
        self.class_depth.pop()
        self.scope.pop()

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self.branches.append(node)
        for statement in node.body:
            self.visit(statement)
        self.branches.pop()
        for statement in node.orelse:
            self.visit(statement)

    # facts ----------------------------------------------------------------------------------------------
    def _parameters(self, args: ast.arguments) -> None:
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True):
            self._parameter(arg, default, None)
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if kw_default is not None:
                self._parameter(arg, kw_default, "keyword-only")

    def _parameter(self, arg: ast.arg, default: ast.expr, detail: str | None) -> None:
        if isinstance(default, ast.Call) and _is_option_call(default):
            flags = _flags(default)
            value = _keyword(default, "default") or (
                default.args[0] if default.args and not _is_str(default.args[0], "-") else None)
            help_node = _keyword(default, "help")
            self.facts.append(CodeFact(
                "option", " ".join(flags) or arg.arg, self.owner, arg.lineno,
                default.end_lineno or default.lineno,
                _segment(self.context, value) if value is not None and not _is_ellipsis(value) else None,
                _message(self.context, help_node)))
            return
        self.facts.append(CodeFact("parameter", arg.arg, self.owner, arg.lineno,
                                   default.end_lineno or default.lineno, _segment(self.context, default), detail))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name):
            name = node.target.id
            if self.class_depth[-1]:
                self._field(node, name)
            elif len(self.scope) == 1 and _constant(name, node.value):
                self.add("constant", name, node, _segment(self.context, node.value))  # type: ignore[arg-type]
        self.generic_visit(node)

    def _field(self, node: ast.AnnAssign, name: str) -> None:
        value: str | None = None
        if node.value is not None:
            value_node: ast.expr | None = node.value
            if isinstance(node.value, ast.Call) and _call_name(node.value) in FIELD_CALLS:
                value_node = _keyword(node.value, "default") or _keyword(node.value, "default_factory") or (
                    node.value.args[0] if node.value.args else None)
            value = None if value_node is None or _is_ellipsis(value_node) else _segment(self.context, value_node)
        elif not self.declarative[-1] or _is_classvar(node.annotation):
            return
        kind = "constant" if _constant(name, node.value) and value is not None else "field"
        self.add(kind, name, node, value)

    def visit_Assign(self, node: ast.Assign) -> None:
        at_module, in_class = len(self.scope) == 1, self.class_depth[-1]
        if at_module or in_class:
            for target in node.targets:
                if isinstance(target, ast.Name) and _constant(target.id, node.value):
                    self.add("constant", target.id, node, _segment(self.context, node.value))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is not None:
            call = exc if isinstance(exc, ast.Call) else None
            name = dotted_name(call.func if call else exc)
            if name:
                message = _message(self.context, call.args[0]) if call and call.args else None
                branch = self.branches[-1] if self.branches else None
                condition = _segment(self.context, branch.test) if branch else None
                start = branch.lineno if branch and node.lineno - branch.lineno <= MAX_CONDITION_GAP else None
                self.add("raise", name, node, message, condition, start)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        target = dotted_name(node.value) or ""
        if target.rsplit(".", 1)[-1] == "environ" and _is_str(node.slice) and isinstance(node.ctx, ast.Load):
            self.add("env", node.slice.value, node)  # type: ignore[attr-defined]
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node)
        last = name.rsplit(".", 1)[-1]
        receiver = name.rsplit(".", 1)[0] if "." in name else ""
        if node.args and _is_str(node.args[0]) and (
                (last in {"get", "setdefault"} and receiver.rsplit(".", 1)[-1] == "environ")
                or last in ENV_GETTERS):
            default = node.args[1] if len(node.args) > 1 else _keyword(node, "default")
            self.add("env", node.args[0].value, node,  # type: ignore[attr-defined]
                     _segment(self.context, default) if default is not None else None)
        elif name in WARN_CALLS and node.args:
            category = dotted_name(node.args[1]) if len(node.args) > 1 else dotted_name(
                _keyword(node, "category") or ast.Constant(None))
            level = "deprecation" if (category or "").rsplit(".", 1)[-1] in DEPRECATION_CATEGORIES else "warning"
            message = _message(self.context, node.args[0])
            if message:
                self.add("message", level, node, message, level)
        elif last in LOG_METHODS and receiver and node.args:
            message = _message(self.context, node.args[0])
            if message:
                self.add("message", last, node, message, "warning" if last == "warn" else last)
        elif last in OPTION_CALLS and (flags := _flags(node)):
            default = _keyword(node, "default")
            self.add("option", " ".join(flags), node,
                     _segment(self.context, default) if default is not None else None,
                     _message(self.context, _keyword(node, "help")))
        self.generic_visit(node)


def _declarative(node: ast.ClassDef) -> bool:
    names = [dotted_name(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list]
    names += [dotted_name(b.value if isinstance(b, ast.Subscript) else b) or "" for b in node.bases]
    return any(n.rsplit(".", 1)[-1] in DECLARATIVE_NAMES for n in names)


def _is_classvar(annotation: ast.expr) -> bool:
    target = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return (dotted_name(target) or "").rsplit(".", 1)[-1] == "ClassVar"


def _constant(name: str, value: ast.expr | None) -> bool:
    """An UPPER_CASE name of two or more characters bound to a value that is not a type declaration."""
    if len(name.strip("_")) < 2 or not CONSTANT_NAME.match(name) or value is None:
        return False
    return not (isinstance(value, ast.Call) and _call_name(value).rsplit(".", 1)[-1] in NOT_CONSTANT_CALLS)


def _is_option_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _call_name(node).rsplit(".", 1)[-1] in OPTION_CALLS


def _is_str(node: ast.AST, prefix: str = "") -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(prefix)


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _flags(call: ast.Call) -> list[str]:
    """The `--flag` / `-f` names a call declares (click, typer, argparse), in order."""
    return [arg.value for arg in call.args if _is_str(arg, "-") and len(arg.value) > 1]  # type: ignore[attr-defined]


def collect_facts(context: ModuleContext) -> list[CodeFact]:
    """Every fact of the module in line order (at most `MAX_FACTS_PER_FILE`)."""
    collector = _Collector(context)
    try:
        for statement in context.tree.body:
            collector.visit(statement)
    except RecursionError:  # an absurdly nested expression: the file keeps its C0–C3 rows, without facts
        return []
    facts = sorted(collector.facts, key=lambda f: (f.start, f.end, f.kind, f.name))
    return facts[:MAX_FACTS_PER_FILE]


def fact_records(context: ModuleContext, facts: list[CodeFact] | None = None) -> Iterator[ChunkRecord]:
    """One C7 row per fact: the cited lines as content, the sentences as title and embedded text."""
    for fact in collect_facts(context) if facts is None else facts:
        english, russian = fact.sentences()
        lines = "\n".join(context.lines[fact.start - 1: fact.end])
        yield ChunkRecord(
            layer=Layer.C7_CODE_FACTS,
            path=context.path,
            title=english,
            content=lines,
            span_start=fact.start,
            span_end=fact.end,
            metadata={"fact_kind": fact.kind, "name": fact.name, "qname": fact.owner, "value": fact.value,
                      "detail": fact.detail, "sentence_ru": russian},
            embed=False,
            embed_text=f"{english}\n{russian}\n{lines.strip()}",
        )
