"""Conflict notes for real conflicts only: a file that is not code *states* a value for a named setting
that no code states, and another file states another value.

A statement sets a value (pure, table-tested in `tests/unit/test_conflicts.py`):
- in Python source: a default at the top level of a `def`'s parameter list (`def f(timeout=30)`,
  `timeout: int = 30`, `x: Annotated[int, Doc("...")] = 30`), and an assignment at module level or in a class
  body (`TIMEOUT = 30`);
- in docs: prose that names the default ("`max_age` ... По умолчанию `600`", "defaults to `False`"; the name is
  the nearest code span before the phrase that names no type, within its sentence and the two before), and a
  line outside fenced code setting a name in capitals (`DEBUG=true`);
- in other files (YAML, .env): every setting line.
Not statements: a keyword argument in a call (`FastAPI(debug=True)`, `Depends(dep, use_cache=False)` inside a
signature, `status_code=404,` inside `raise HTTPException(`), a function's local variable, anything inside a
string (a docstring's example), code in docs (an example: `message = "Hello World"`, `def read_items(skip:
int = 0)`), an indented line whose class or def the passage does not hold (a chunk cut inside a definition),
a value that is a name or an expression (`opts.get`, `typer.Option`, `str`), a sentinel (`None`, `...`,
`MISSING`, an empty string: "no value given", which any real value "differs" from), and anything in a test
file. Numbers compare in one form (`5` = `5.0`). Only names that are key terms of the request count. D2 facts
(subject, predicate, object) are compared the same way.

Code does not disagree with itself: two functions' defaults for a parameter of one name are two settings,
and the code is what runs; docs stating one definition's value agree with it. A conflict is docs (or a config
file) stating a value no code states, against the code or other docs.

Measured (`python -m evals.conflict_sample`, samples labelled by reading or by construction):
- the notes the first rule printed on the dev splits of five corpora: 0 of 19 were real conflicts;
- every setting name a corpus (fastapi-ru, atlas-pm, structlog, click) states with two values in two files,
  i.e. the note a question naming it would get: 109 names under the rule of session 12, 32 sampled and read,
  0 real; 0 such notes under this rule (also 0 in this repository, and 0 in what GigaChat reads for the dev
  questions of the five corpora). **Precision on real text is therefore n/a**: these corpora hold no real
  conflict and the rule notes nothing;
- planted docs lines (for each of the 359 settings the four corpora's code states, "`name` defaults to
  `v`" with the code's value and with a value no code states) check the parser and the rule's logic, not
  precision: a value some code states is never noted by construction. 358 of 359 disagreeing lines are
  noted (missed: a setting named `bool`, which the prose rule reads as a type), plus 1 of 1 planted into a
  real docs page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from nodes.context_analysis.models import Span
from nodes.context_retrieval.merge import is_test_path
from nodes.evidence import EvidenceRow
from nodes.terms import stem

MAX_CONFLICTS = 3

_NUMBER = r"-?(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
_LITERAL = rf"(?:\"[^\"\n]*\"|'[^'\n]*'|{_NUMBER}|True|False|true|false)"
"""A value that is written out: a number, a quoted string, a boolean. Names and expressions are not."""
_TAIL = r"[ \t]*,?(?:[ \t]*(?:#|//).*)?[ \t]*$"
# A line that is one assignment or config entry: `NAME = 30`, `name: int = 30`, `name: 30`, `NAME=30`. Each
# part of the separator is one quantifier (no two adjacent ones that both match spaces: a long run of spaces
# made the earlier pattern cubic).
_LINE_SETTING = re.compile(
    r"^\s*(?:export\s+|-\s+)?[`\"']?([A-Za-z_][\w.-]*)[`\"']?"
    rf"(?:\s*:[\w\[\]., |]*=(?!=)|\s*=(?!=)|\s*:)\s*({_LITERAL}){_TAIL}"
)
# One parameter with a default, at the top level of a signature: `timeout=30`, `timeout: float = 30`.
_PARAM_DEFAULT = re.compile(
    rf"(?<![\w.])([A-Za-z_]\w*)(?:\s*:[\w\[\]. |]*|\s*)=(?!=)\s*({_LITERAL})(?=\s*(?:[,)\n]|$))")
"""The annotation holds no comma: its nested parts are blanked (`list[str]` reads `list[   ]`), and a comma
would let `url: str, timeout=30` give `url` the next parameter's default."""
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(")
_CLASS = re.compile(r"^\s*class\s+\w+")
_FENCE = re.compile(r"^\s*(```|~~~)")
MAX_SETTING_LINE = 300
"""A line longer than this is not one setting (and is not searched for one)."""
# Prose: "`max_age` - ... По умолчанию `600`." / "`debug` ... defaults to `False`".
_DEFAULT_PHRASE = re.compile(r"(?:по умолчанию|by default|defaults? to|default(?: value)? is)\s*[:—-]?\s*`([^`\n]+)`",
                             re.I)
_CODE_NAME = re.compile(r"`([A-Za-z_][\w.-]*)`")
_SENTENCE_END = re.compile(r"[.!?]\s+")
PROSE_SENTENCES = 3
"""The default phrase's name is looked for in its own sentence and the two before it."""
_TYPE_NAMES = frozenset({"int", "str", "float", "bool", "bytes", "list", "dict", "tuple", "set", "frozenset",
                         "object", "any", "optional", "union", "none", "true", "false", "callable", "sequence",
                         "mapping", "iterable", "path", "pathlike"})
"""Code spans that name a type or a value, not a setting: "`skip`, представляющий собой `int`, по умолчанию `0`"
is about `skip`."""
_DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt")
_SENTINELS = frozenset({"", "none", "null", "nil", "...", "missing", "_missing", "unset", "notset", "undefined",
                        "sentinel", "_sentinel", "nothing"})


def normalized_value(raw: str) -> str | None:
    """The value as compared (quotes and trailing punctuation dropped, booleans in one case, numbers in one
    form: `5` = `5.0`, `1e6` = `1_000_000`), or None for a sentinel or something that is not a written-out
    value."""
    value = raw.strip().rstrip(".,;:")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    elif re.fullmatch(_NUMBER, value):
        try:
            return format(Decimal(value.replace("_", "")).normalize(), "f")
        except InvalidOperation:
            return None
    elif not re.fullmatch(_LITERAL, value):
        return None
    if value.lower() in _SENTINELS:
        return None
    return value.lower() if value.lower() in ("true", "false") else value


def _advance(text: str, depth: int, quote: str | None, *, keep_from: int = 0
             ) -> tuple[str, int, str | None]:
    """Read `text` (one line) from bracket `depth`, inside string `quote` or none: the line with what lies
    deeper than `keep_from` blanked out (when `keep_from` > 0, cut after the bracket that brings the depth
    back below it), and the depth and open string after it. A backslash escapes the next character inside a
    string; a one-quote string ends at the end of the line (a chunk may cut one open)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        keep = keep_from == 0 or depth == keep_from
        if quote is not None:
            if text[i] == "\\":
                step = 2  # the escaped character cannot close the string
            elif text.startswith(quote, i):
                step, quote = len(quote), None
            else:
                step = 1
            out.append(text[i:i + step] if keep else " " * len(text[i:i + step]))
            i += step
            continue
        ch, step = text[i], 1
        if text.startswith(('"""', "\'\'\'"), i):
            quote, step = text[i:i + 3], 3
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break  # a comment runs to the end of the line
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
            keep = keep_from == 0 or depth <= keep_from
        out.append(text[i:i + step] if keep else " " * step)
        i += step
        if keep_from and depth < keep_from:
            break
    if quote in ('"', "'"):
        quote = None
    return "".join(out), depth, quote


def _code_statements(text: str) -> list[tuple[str, str]]:
    """(name, raw value) that Python source states as settings: the defaults at the top level of each `def`'s
    parameter list, and assignments at module level or in a class body (when the class line is in `text`).

    Not statements: a function's local variable (a step of a computation), a call's keyword argument on its
    own line (`status_code=404,` inside `raise HTTPException(`) and anything inside a string (a docstring's
    example). An indented line whose class or def is not in `text` — a chunk that starts inside a long
    definition (`# mod.func (continued)`) — is not read: what encloses it is unknown.
    """
    found: list[tuple[str, str]] = []
    depth, quote = 0, None
    params: list[str] | None = None  # the parameter list being read, its top level only
    scopes: list[tuple[int, str]] = []  # (indentation, "def" | "class") enclosing the current line
    for line in text.splitlines():
        if params is not None:
            part, depth, quote = _advance(line, depth, quote, keep_from=1)
            params.append(part)
            if depth == 0:
                found += _param_defaults(" ".join(params))
                params = None
            continue
        if depth > 0 or quote is not None:  # inside a call's brackets or a multi-line string
            _, depth, quote = _advance(line, depth, quote)
            continue
        indent = len(line) - len(line.lstrip())
        if line.strip():
            while scopes and indent <= scopes[-1][0]:
                scopes.pop()  # dedented: that def or class ended
        if _DEF.match(line):
            scopes.append((indent, "def"))
            part, depth, quote = _advance(line[line.index("(") + 1:], 1, None, keep_from=1)
            if depth == 0:
                found += _param_defaults(part)
            else:
                params = [part]
            continue
        if _CLASS.match(line):
            scopes.append((indent, "class"))
        elif len(line) <= MAX_SETTING_LINE and (m := _LINE_SETTING.match(line)):
            at_module = indent == 0 and not scopes
            in_class = bool(scopes) and scopes[-1][1] == "class"
            if at_module or in_class:
                found.append((m.group(1), m.group(2)))
        _, depth, quote = _advance(line, depth, quote)
    if params is not None:
        found += _param_defaults(" ".join(params))  # a parameter list the text cuts off
    return found


def _param_defaults(params: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _PARAM_DEFAULT.finditer(params)]


def _prose_defaults(text: str) -> list[tuple[str, str]]:
    """(name, raw value) for each "… по умолчанию `600`" / "defaults to `False`" of `text` outside fenced
    code: the name is the nearest code span before the phrase that names neither a type nor a value (`skip`,
    not `int`, in "`skip`, представляющий собой `int`, по умолчанию `0`"), within the phrase's sentence and
    the two before it, after the previous default phrase of the line (a sentence with two defaults names two
    settings) and outside a parenthesis the phrase is in or a clause a semicolon ends."""
    out = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        start = 0
        for m in _DEFAULT_PHRASE.finditer(line):
            head = line[start:m.start()]
            start = m.end()
            head = head[head.rfind(";") + 1:]
            opened = head.rfind("(")
            if opened > head.rfind(")"):
                head = head[opened + 1:]  # the phrase is inside a parenthesis: its name is too
            head = " ".join(_SENTENCE_END.split(head)[-PROSE_SENTENCES:])
            names = [n for n in _CODE_NAME.findall(head) if n.lower() not in _TYPE_NAMES]
            if names:
                out.append((names[-1], m.group(1)))
    return out


def _doc_statements(text: str) -> list[tuple[str, str]]:
    """(name, raw value) that documentation states: prose defaults, and lines outside code blocks (fenced, or
    indented four spaces) that set a name written in capitals (`DEBUG=true`: an environment variable or a
    constant). Code in docs is an example — `message = "Hello World"`, `def read_items(skip: int = 0)`,
    `export DEBUG=1` in a fence — not a statement of the default."""
    found = _prose_defaults(text)
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif (not fenced and not line.startswith(("    ", "\t")) and len(line) <= MAX_SETTING_LINE
              and (m := _LINE_SETTING.match(line)) and not any(ch.islower() for ch in m.group(1))):
            found.append((m.group(1), m.group(2)))
    return found


def _config_statements(text: str) -> list[tuple[str, str]]:
    """Every line of a config file (YAML, TOML, .env) that sets a name."""
    return [(m.group(1), m.group(2)) for line in text.splitlines()
            if len(line) <= MAX_SETTING_LINE and (m := _LINE_SETTING.match(line))]


def _normalized(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for name, raw in pairs:
        value = normalized_value(raw)
        if value is not None and value != name:
            out.append((name, value))
    return out


def stated_values(text: str) -> list[tuple[str, str]]:
    """(name, value) pairs that Python source `text` states as settings (`_code_statements`), then the
    defaults its prose names, in order."""
    return _normalized([*_code_statements(text), *_prose_defaults(text)])


def is_code_path(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


def _is_doc_path(path: str) -> bool:
    return path.lower().endswith(_DOC_SUFFIXES)


def file_statements(text: str, path: str) -> list[tuple[str, str]]:
    """The statements of `text` that count for a file at `path`: Python source by `stated_values`, docs
    (`.md`, `.rst`, `.txt`) by `_doc_statements`, other files (YAML, TOML, .env; Lotsman indexes only `.md`
    and `.py`, so these arrive only from callers that read them) every setting line."""
    if is_code_path(path):
        return stated_values(text)
    if _is_doc_path(path):
        return _normalized(_doc_statements(text))
    return _normalized(_config_statements(text))


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
    """(value, file) of each value of one setting, when a value that no code states differs from a value
    stated in another file (empty otherwise); the unsupported value first.

    Code does not disagree with itself: two definitions with different defaults for a parameter of the same
    name (`show_default` of `Option` and of `prompt`) are two settings, and the code is what runs. Docs that
    state one definition's value agree with that definition, whatever the other one says. A conflict is docs
    (or a config file) stating a value no code states, against the code or other docs.
    """
    def unsupported(value: str) -> bool:
        return not any(is_code_path(p) for p in by_value[value])

    for value, paths in by_value.items():
        if not unsupported(value):
            continue
        others = [(v, next(q for q in ps if q not in paths))
                  for v, ps in by_value.items() if v != value and any(q not in paths for q in ps)]
        if others:
            return [(value, paths[0]), *others]
    return []
