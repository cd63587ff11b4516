"""Best-effort conflict notes: one subject, different values, different files."""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodes.context_analysis.models import Span
from nodes.evidence import EvidenceRow
from nodes.terms import stem

MAX_CONFLICTS = 3

# `name=value`, `name: type = value`, `name: value` (YAML/prose); `==` is a comparison, not a value.
_ASSIGN = re.compile(
    r"\b([A-Za-z_]\w*)`?\s*(?::\s*[\w\[\]., |]+?\s*=|=(?!=)|:)\s*`?(\"[^\"\n]*\"|'[^'\n]*'|[\w.+/-]+)"
)
# Prose: "`max_age` - ... По умолчанию `600`." / "`debug` ... defaults to `False`".
_PROSE_DEFAULT = re.compile(
    r"`([A-Za-z_]\w*)`[^\n`]*?(?:по умолчанию|by default|defaults? to|default(?: value)? is)"
    r"\s*[:—-]?\s*`([^`\n]+)`",
    re.I,
)


def find_conflicts(spans: Sequence[Span], rows: Sequence[EvidenceRow], terms: Sequence[str]) -> list[str]:
    """Values given to the same key term in different files, e.g. two defaults for one parameter.

    Only names that are key terms of the request count, so unrelated `x = 1` lines never raise a note.
    D2 facts (subject, predicate, object) are compared the same way.

    Returns:
        Notes like `max_age: 600 (docs/a.md) ≠ 3600 (docs/b.md)`, at most MAX_CONFLICTS.
    """
    wanted = {t.lower() for t in terms}
    wanted_stems = {stem(t) for t in terms}
    values: dict[str, dict[str, str]] = {}
    for span in spans:
        if span.layer == "D1_DOCUMENT_CATALOG":
            continue  # catalog cards are index metadata, not statements that can contradict each other
        for match in [*_ASSIGN.finditer(span.text), *_PROSE_DEFAULT.finditer(span.text)]:
            name, value = match.group(1), match.group(2).strip("\"'").rstrip(".,;:")
            if name.lower() in wanted and value and value != name:
                values.setdefault(name, {}).setdefault(value, span.path)
    for row in rows:
        meta = row.metadata
        subject, predicate, obj = (str(meta.get(k) or "") for k in ("subject", "predicate", "object"))
        if row.layer != "D2_FACT_INDEX" or not (subject and predicate and obj):
            continue
        if stem(subject) in wanted_stems or stem(predicate) in wanted_stems:
            values.setdefault(f"{subject} — {predicate}", {}).setdefault(obj, row.path)
    notes = []
    for name, by_value in values.items():
        if len(by_value) >= 2 and len(set(by_value.values())) >= 2:
            shown = " ≠ ".join(f"{value} ({path})" for value, path in list(by_value.items())[:3])
            notes.append(f"{name}: {shown}")
    return notes[:MAX_CONFLICTS]
