"""Conflict notes for real conflicts only: two files that *state* different values for one named setting.

A statement sets a value (pure, table-tested in `tests/unit/test_conflicts.py`):
- a signature default, `def f(timeout=30)` or `timeout: int = 30` inside a `def (...)`;
- a line that is an assignment or a config entry on its own, `TIMEOUT = 30`, `timeout: 30` (YAML),
  `TIMEOUT=30` (.env);
- prose that names the default, "`max_age` ... По умолчанию `600`" / "defaults to `False`".
Not statements: a keyword argument in a call (`FastAPI(debug=True)` is an example of use), a value that is a
name or an expression (`opts.get`, `typer.Option`, `str`: an annotation or a computation, not a value),
a sentinel (`None`, `...`, `MISSING`, an empty string: "no value given", which any real value "differs"
from), and anything in a test file (a test's variables are fixtures). Only names that are key terms of the
request count. D2 facts (subject, predicate, object) are compared the same way, under the same exclusions.

Precision on a labelled sample (every note the earlier rule printed on the dev splits of five corpora, each
read and labelled): 0 of 19 notes were real conflicts before; see docs/logic/context_analysis_and_answer.md
for the measurement after.
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
_PARAM_DEFAULT = re.compile(rf"(?<![\w.])([A-Za-z_]\w*)\s*(?::\s*[\w\[\]., |]+?)?\s*=(?!=)\s*({_LITERAL})(?=\s*[,)\n])")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(")
# Prose: "`max_age` - ... По умолчанию `600`." / "`debug` ... defaults to `False`".
_PROSE_DEFAULT = re.compile(
    r"`([A-Za-z_][\w.-]*)`[^\n`]*?(?:по умолчанию|by default|defaults? to|default(?: value)? is)"
    r"\s*[:—-]?\s*`([^`\n]+)`",
    re.I,
)
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


def _signature_lines(text: str) -> Iterator[tuple[bool, str]]:
    """Each line of `text` with whether it lies inside a `def`'s parameter list."""
    depth = 0
    for line in text.splitlines():
        if depth == 0 and _DEF.match(line):
            depth = 1
            params = line[line.index("(") + 1:]
        else:
            params = line
        inside = depth > 0
        if inside:
            for ch in params:
                depth += (ch == "(") - (ch == ")")
                if depth <= 0:
                    depth = 0
                    break
        yield inside, params if inside else line


def stated_values(text: str) -> list[tuple[str, str]]:
    """(name, value) pairs that `text` states as settings (see the module docstring), in order."""
    found: list[tuple[str, str]] = []
    for inside_def, line in _signature_lines(text):
        if inside_def:
            pairs = [(m.group(1), m.group(2)) for m in _PARAM_DEFAULT.finditer(line)]
        else:
            m = _LINE_SETTING.match(line)
            pairs = [(m.group(1), m.group(2))] if m else []
        found += pairs
    found += [(m.group(1), m.group(2)) for m in _PROSE_DEFAULT.finditer(text)]
    out = []
    for name, raw in found:
        value = normalized_value(raw)
        if value is not None and value != name:
            out.append((name, value))
    return out


def find_conflicts(spans: Sequence[Span], rows: Sequence[EvidenceRow], terms: Sequence[str]) -> list[str]:
    """Values stated for the same key term in different files, e.g. two defaults for one parameter.

    Returns:
        Notes like `max_age: 600 (docs/a.md) ≠ 3600 (docs/b.md)`, at most MAX_CONFLICTS.
    """
    wanted = {t.lower() for t in terms}
    wanted_stems = {stem(t) for t in terms}
    values: dict[str, dict[str, str]] = {}
    shown_name: dict[str, str] = {}  # `retries` and `RETRIES` are one setting, shown as first written
    for span in spans:
        if span.layer == "D1_DOCUMENT_CATALOG" or is_test_path(span.path):
            continue  # catalog cards are index metadata; tests hold fixtures, not statements
        for name, value in stated_values(span.text):
            leaf = name.rsplit(".", 1)[-1]
            if name.lower() in wanted or leaf.lower() in wanted:
                shown_name.setdefault(leaf.lower(), leaf)
                values.setdefault(leaf.lower(), {}).setdefault(value, span.path)
    for row in rows:
        meta = row.metadata
        subject, predicate, obj = (str(meta.get(k) or "") for k in ("subject", "predicate", "object"))
        if row.layer != "D2_FACT_INDEX" or not (subject and predicate and obj) or is_test_path(row.path):
            continue
        fact = normalized_value(obj) if re.fullmatch(_LITERAL, obj.strip()) else obj.strip()
        if fact and fact.lower() not in _SENTINELS and (stem(subject) in wanted_stems
                                                        or stem(predicate) in wanted_stems):
            values.setdefault(f"{subject} — {predicate}", {}).setdefault(fact, row.path)
    notes = []
    for name, by_value in values.items():
        if len(by_value) >= 2 and len(set(by_value.values())) >= 2:
            shown = " ≠ ".join(f"{value} ({path})" for value, path in list(by_value.items())[:3])
            notes.append(f"{shown_name.get(name, name)}: {shown}")
    return notes[:MAX_CONFLICTS]
