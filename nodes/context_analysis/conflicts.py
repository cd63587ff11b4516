"""Conflict notes for real conflicts only: two files that *state* different values for one named setting.

A statement sets a value (pure, table-tested in `tests/unit/test_conflicts.py`):
- a signature default at the top level of a `def`'s parameter list, `def f(timeout=30)`,
  `timeout: int = 30`, `x: Annotated[int, Doc("...")] = 30`;
- a line that is an assignment or a config entry on its own, outside a function's body, `TIMEOUT = 30`,
  `timeout: 30` (YAML), `TIMEOUT=30` (.env); in docs only when the name is in capitals (an environment
  variable or a constant: a lower-case variable in a docs example is an example value);
- prose that names the default, "`max_age` ... По умолчанию `600`" / "defaults to `False`" (the name is the
  first code span of that sentence, or of the one before).
Not statements: a keyword argument in a call (`FastAPI(debug=True)`, `Depends(dep, use_cache=False)` inside a
signature, an example in a docstring), a function's local variable, a value that is a name or an expression
(`opts.get`, `typer.Option`, `str`), a sentinel (`None`, `...`, `MISSING`, an empty string: "no value given",
which any real value "differs" from), and anything in a test file (a test's variables are fixtures).
Only names that are key terms of the request count. D2 facts (subject, predicate, object) are compared the
same way, under the same exclusions.

A conflict needs a file that is not code: code does not disagree with itself (two functions' defaults for a
parameter of one name are two settings, and the code is what runs), so a note says the docs or a config file
state another value than the code, or than other docs.

Precision, measured on two labelled samples:
- every note the first rule printed on the dev splits of five corpora: 0 of 19 were real conflicts;
- every setting name each corpus (fastapi-ru, atlas-pm, structlog, click, this repository) states with two
  values in two files, i.e. the note a question naming it would get (`python -m evals.conflict_sample`):
  109 names under the rule before this one, 32 sampled and read, 0 real; 0 under this rule. Planted
  conflicts (each setting the docs and the code state alike, the docs' value changed): 3 of 3 noted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from nodes.context_analysis.models import Span
from nodes.context_retrieval.merge import is_test_path
from nodes.evidence import EvidenceRow
from nodes.terms import stem

MAX_CONFLICTS = 3

_LITERAL = r"(?:\"[^\"\n]*\"|'[^'\n]*'|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|True|False|true|false)"
"""A value that is written out: a number, a quoted string, a boolean. Names and expressions are not."""
_TAIL = r"\s*,?\s*(?:#.*|//.*)?$"
# A line that is one assignment or config entry: `NAME = 30`, `name: int = 30`, `name: 30`, `NAME=30`.
_LINE_SETTING = re.compile(
    r"^\s*(?:export\s+|-\s+)?[`\"']?([A-Za-z_][\w.-]*)[`\"']?"
    rf"\s*(?::\s*[\w\[\]., |]+?\s*=|=(?!=)|:)\s*({_LITERAL}){_TAIL}"
)
# One parameter with a default inside a signature: `timeout=30`, `timeout: float = 30`.
_PARAM_DEFAULT = re.compile(
    rf"(?<![\w.])([A-Za-z_]\w*)\s*(?::\s*[\w\[\]., |]+?)?\s*=(?!=)\s*({_LITERAL})(?=\s*(?:[,)\n]|$))")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(")
# Prose: "`max_age` - ... По умолчанию `600`." / "`debug` ... defaults to `False`".
_DEFAULT_PHRASE = re.compile(r"(?:по умолчанию|by default|defaults? to|default(?: value)? is)\s*[:—-]?\s*`([^`\n]+)`",
                             re.I)
_CODE_NAME = re.compile(r"`([A-Za-z_][\w.-]*)`")
_CLAUSE_START = re.compile(r"[;|(]")
"""What the default phrase's name may not lie behind: a table cell, a parenthesis, another clause."""
_SENTENCE_END = re.compile(r"[.!?]\s+")
_DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt")
_SENTINELS = frozenset({"", "none", "null", "nil", "...", "missing", "_missing", "unset", "notset", "undefined",
                        "sentinel", "_sentinel", "nothing"})
def normalized_value(raw: str) -> str | None:
    """The value as compared (quotes and trailing punctuation dropped, booleans in one case), or None for a
    sentinel or something that is not a written-out value."""
    value = raw.strip().rstrip(".,;:")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    elif not re.fullmatch(_LITERAL, value):
        return None
    if value.lower() in _SENTINELS:
        return None
    return value.lower() if value.lower() in ("true", "false") else value


def _top_level(text: str, depth: int, quote: str | None) -> tuple[str, int, str | None]:
    """`text` (part of a parameter list at bracket `depth`, inside string `quote` or none) with everything
    nested deeper than the list itself blanked out — a call's keyword argument (`Depends(dep, use_cache=False)`)
    and a docstring's example (`Doc("app = FastAPI(openapi_url=...)")`) are not the function's defaults —
    cut after the bracket that closes the list; and the depth and open string after it."""
    out: list[str] = []
    i = 0
    while i < len(text) and depth > 0:
        keep = depth == 1
        if quote is not None:
            if text.startswith(quote, i):
                out.append(quote if keep else " " * len(quote))
                i += len(quote)
                quote = None
            else:
                out.append(text[i] if keep else " ")
                i += 1
            continue
        ch, step = text[i], 1
        if text.startswith(('"""', "'''"), i):
            quote, step = text[i:i + 3], 3
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break  # a comment runs to the end of the line
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            keep = depth <= 1
        out.append(text[i:i + step] if keep else " " * step)
        i += step
    return "".join(out), depth, quote


def _signature_lines(text: str) -> Iterator[tuple[str, str]]:
    """The lines of `text` by where they lie: `params` (one item per `def`: its whole parameter list, the
    nested parts blanked, `_top_level`), `body` (a line inside a function's body: a local variable is a
    step of a computation, not a setting) or `top` (any other line)."""
    depth, quote = 0, None
    params: list[str] = []
    defs: list[int] = []  # indentation of each def whose body the following lines may be in (nested defs)
    for line in text.splitlines():
        if depth > 0:
            part, depth, quote = _top_level(line, depth, quote)
            params.append(part)
            if depth == 0:
                yield "params", " ".join(params)
            continue
        indent = len(line) - len(line.lstrip())
        if line.strip():
            while defs and indent <= defs[-1]:
                defs.pop()  # dedented: that function ended
        if _DEF.match(line):
            defs.append(indent)
            part, depth, quote = _top_level(line[line.index("(") + 1:], 1, None)
            params = [part]
            if depth == 0:
                yield "params", part
            continue
        yield ("body" if defs else "top"), line
    if depth > 0:
        yield "params", " ".join(params)  # a parameter list the text cuts off


def _prose_defaults(text: str) -> list[tuple[str, str]]:
    """(name, value) for each "… по умолчанию `600`" / "defaults to `False`" in `text`: the name is the first
    code span of the phrase's sentence (`skip`, not the type `int` in "`skip`, представляющий собой `int`,
    по умолчанию `0`"), else of the sentence before it ("`max_age` - … браузерами. По умолчанию `600`."), never
    behind a table cell, a parenthesis or a semicolon."""
    out = []
    for line in text.splitlines():
        for m in _DEFAULT_PHRASE.finditer(line):
            head = line[:m.start()]
            head = head[max((c.end() for c in _CLAUSE_START.finditer(head)), default=0):]
            for sentence in _SENTENCE_END.split(head)[::-1][:2]:
                if name := _CODE_NAME.search(sentence):
                    out.append((name.group(1), m.group(1)))
                    break
    return out


def _statements(text: str) -> list[tuple[str, str, str]]:
    """(name, value, kind) for every value `text` writes out for a name: kind `param` (a signature default),
    `line` (an assignment or config entry on its own line), `local` (the same inside a function's body) or
    `prose` (docs naming the default)."""
    found: list[tuple[str, str, str]] = []
    for where, line in _signature_lines(text):
        if where == "params":
            found += [(m.group(1), m.group(2), "param") for m in _PARAM_DEFAULT.finditer(line)]
        elif m := _LINE_SETTING.match(line):
            found.append((m.group(1), m.group(2), "local" if where == "body" else "line"))
    found += [(name, value, "prose") for name, value in _prose_defaults(text)]
    out = []
    for name, raw, kind in found:
        value = normalized_value(raw)
        if value is not None and value != name:
            out.append((name, value, kind))
    return out


def stated_values(text: str) -> list[tuple[str, str]]:
    """(name, value) pairs that `text` states as settings (see the module docstring), in order: a function's
    local variables are not settings."""
    return [(name, value) for name, value, kind in _statements(text) if kind != "local"]


def is_code_path(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


def _is_doc_path(path: str) -> bool:
    return path.lower().endswith(_DOC_SUFFIXES)


def file_statements(text: str, path: str) -> list[tuple[str, str]]:
    """The statements of `text` that count for a file at `path`.

    Code (`.py`): signature defaults and assignments outside function bodies. Docs (`.md`, `.rst`, `.txt`):
    prose defaults, signature defaults, and assignments whose name is written in capitals (`DEBUG=true`, an
    environment variable or a constant): a lower-case variable in a docs example (`message = "Hello World"`,
    `cache_logger_on_first_use=False,` inside a call) is an example value. Other files (YAML, TOML, .env):
    every assignment or entry.
    """
    out = []
    for name, value, kind in _statements(text):
        if kind == "local":
            continue
        if _is_doc_path(path) and kind == "line" and any(ch.islower() for ch in name):
            continue
        out.append((name, value))
    return out


def find_conflicts(spans: Sequence[Span], rows: Sequence[EvidenceRow], terms: Sequence[str]) -> list[str]:
    """Values stated for the same key term in different files, e.g. two defaults for one parameter.

    Returns:
        Notes like `max_age: 600 (docs/a.md) ≠ 3600 (docs/b.md)`, at most MAX_CONFLICTS.
    """
    wanted = {t.lower() for t in terms}
    wanted_stems = {stem(t) for t in terms}
    values: dict[str, dict[str, list[str]]] = {}  # name -> value -> the files stating it, in order
    shown_name: dict[str, str] = {}  # `retries` and `RETRIES` are one setting, shown as first written
    for span in spans:
        if span.layer == "D1_DOCUMENT_CATALOG" or is_test_path(span.path):
            continue  # catalog cards are index metadata; tests hold fixtures, not statements
        for name, value in file_statements(span.text, span.path):
            leaf = name.rsplit(".", 1)[-1]
            if name.lower() in wanted or leaf.lower() in wanted:
                shown_name.setdefault(leaf.lower(), leaf)
                paths = values.setdefault(leaf.lower(), {}).setdefault(value, [])
                if span.path not in paths:
                    paths.append(span.path)
    for row in rows:
        meta = row.metadata
        subject, predicate, obj = (str(meta.get(k) or "") for k in ("subject", "predicate", "object"))
        if row.layer != "D2_FACT_INDEX" or not (subject and predicate and obj) or is_test_path(row.path):
            continue
        fact = normalized_value(obj) if re.fullmatch(_LITERAL, obj.strip()) else obj.strip()
        if fact and fact.lower() not in _SENTINELS and (stem(subject) in wanted_stems
                                                        or stem(predicate) in wanted_stems):
            paths = values.setdefault(f"{subject} — {predicate}", {}).setdefault(fact, [])
            if row.path not in paths:
                paths.append(row.path)
    notes = []
    for name, by_value in values.items():
        shown = disagreement(by_value)
        if shown:
            notes.append(f"{shown_name.get(name, name)}: " + " ≠ ".join(f"{v} ({p})" for v, p in shown[:3]))
    return notes[:MAX_CONFLICTS]


def disagreement(by_value: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(value, file) of each value of one setting, when two files state different values and at least one of
    those files is not code (empty otherwise).

    Code does not disagree with itself: two definitions with different defaults for a parameter of the same
    name (`show_default` of `Option` and of `prompt`) are two settings, and the code is what runs. A conflict
    is docs or a config file stating another value than the code, or than other docs.
    """
    def pick(value: str, other: str) -> str | None:
        """A file stating `value` that differs from some file stating `other`, docs/config first."""
        for path in sorted(by_value[value], key=is_code_path):
            if any(q != path and not (is_code_path(q) and is_code_path(path)) for q in by_value[other]):
                return path
        return None

    values = list(by_value)
    for i, first in enumerate(values):
        for second in values[i + 1:]:
            if pick(first, second) is None:
                continue
            shown = [(first, pick(first, second) or "")]
            shown += [(v, pick(v, first) or by_value[v][0]) for v in values if v != first and pick(v, first)]
            return shown
    return []
