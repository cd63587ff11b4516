"""The docs↔code bridge (SPEC §10): what the first ranking found points at more evidence.

- docs → code: identifiers that the top prose passages mention (`APIRouter`, `jsonable_encoder`) and that
  the session's symbol catalog defines pull their definitions in as candidates;
- code → docs: the names of the top definitions pull the prose passages that mention them.

Both are pure choices here; the adapter runs the look-ups and the fusion weighs them like any lane.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence

from nodes.evidence import EvidenceRow
from nodes.tokens import is_identifier

BRIDGE_TOP_ROWS = 6
"""How many of the first-ranked rows are read for identifiers / names."""
MAX_BRIDGE_NAMES = 4
MIN_NAME_CHARS = 4

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def doc_identifiers(rows: Sequence[EvidenceRow], symbols: Collection[str], *, exclude: Collection[str] = ()
                    ) -> list[str]:
    """Catalogued identifiers mentioned by the top prose rows, most mentioned first (lower-cased)."""
    seen = {e.lower() for e in exclude}
    counts: Counter[str] = Counter()
    for rank, row in enumerate(rows[:BRIDGE_TOP_ROWS]):
        if not row.layer.startswith("D"):
            continue
        for token in _IDENT.findall(row.content):
            name = token.rsplit(".", 1)[-1].lower()
            if len(name) >= MIN_NAME_CHARS and is_identifier(token) and name in symbols and name not in seen:
                counts[name] += BRIDGE_TOP_ROWS - rank
    return [name for name, _ in counts.most_common(MAX_BRIDGE_NAMES)]


def code_names(rows: Sequence[EvidenceRow]) -> list[str]:
    """Names of the definitions among the top rows (their `name` metadata), in rank order."""
    out: dict[str, None] = {}
    for row in rows[:BRIDGE_TOP_ROWS]:
        name = str(row.metadata.get("name") or str(row.metadata.get("qname") or "").rsplit(".", 1)[-1])
        if row.layer.startswith("C") and len(name) >= MIN_NAME_CHARS and is_identifier(name):
            out.setdefault(name, None)
    return list(out)[:MAX_BRIDGE_NAMES]
