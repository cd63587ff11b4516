"""Seed 003 §5.1 `D1_MODULE_CATALOG` relation fields: typed values, the frontmatter line of each, their gloss.

A module card's frontmatter says what the module calls, reads, writes, emits... (`writes_db: [rag_chunks]`).
Each value becomes a typed catalog field, a line of the card's searchable text, and one D5 edge whose span
is the frontmatter line that states it, so an answer cites that line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stores.indexing.docs.frontmatter import string_list


@dataclass(frozen=True, slots=True)
class RelationField:
    """One relation field of seed 003 §5.1 and how it reads."""

    name: str
    """The frontmatter key and the edge type (`writes_db`)."""
    target_kind: str
    """What the values name: `api`, `module`, `table`, `system`, `event`."""
    label: str
    """The card line's label (`Writes DB`)."""
    phrase: str
    """How the edge's line reads the relation, English and Russian (`writes to (пишет в)`)."""
    gloss: str
    """More words a question about this relation uses (in the edge's title and vector)."""


RELATION_FIELDS: tuple[RelationField, ...] = (
    RelationField("calls_api", "api", "Calls API", "calls (вызывает)", "call calls вызывает вызывают вызов"),
    RelationField("called_by", "module", "Called by", "is called by (вызывается из)",
                  "call calls called by вызывается вызывает вызывают"),
    RelationField("uses_logic", "module", "Uses logic", "uses (использует)", "use uses использует используют"),
    RelationField("used_by", "module", "Used by", "is used by (используется в)",
                  "use uses used by используется использует используют"),
    RelationField("reads_db", "table", "Reads DB", "reads (читает)", "read reads table читает читают чтение таблица"),
    RelationField("writes_db", "table", "Writes DB", "writes to (пишет в)",
                  "write writes table пишет пишут записывает записывают запись таблица"),
    RelationField("integrates_with", "system", "Integrates with", "integrates with (интегрируется с)",
                  "integrate integrates интегрируется интеграция"),
    RelationField("emits_events", "event", "Emits events", "emits (публикует)",
                  "emit emits publish publishes event публикует отправляет событие"),
    RelationField("consumes_events", "event", "Consumes events", "consumes (потребляет)",
                  "consume consumes subscribe subscribes event потребляет потребляют слушает событие"),
)
"""Seed 003 §5.1's relation fields in the seed's order."""

RELATION_NAMES: tuple[str, ...] = tuple(f.name for f in RELATION_FIELDS)
_BY_NAME = {f.name: f for f in RELATION_FIELDS}

INVERSE_RELATIONS: dict[str, str] = {
    "calls_api": "called_by", "called_by": "calls_api", "uses_logic": "used_by", "used_by": "uses_logic",
}
"""Pairs the seed states from both ends: `A calls_api X` and `X called_by A` answer the same question."""

CARD_FIELDS: tuple[str, ...] = ("version", "owners", "links")
"""Seed 003 §5.1's other fields kept on the card (`version` as text, `owners` and `links` as lists)."""


def relation_field(name: str) -> RelationField:
    """The field named `name` (KeyError for an unknown one)."""
    return _BY_NAME[name]


def relation_values(frontmatter: dict[str, Any]) -> dict[str, list[str]]:
    """The relation fields a frontmatter sets, each as a list of names (YAML list or comma-separated)."""
    found = {name: string_list(frontmatter.get(name)) for name in RELATION_NAMES}
    return {name: values for name, values in found.items() if values}


def card_values(frontmatter: dict[str, Any]) -> dict[str, Any]:
    """`version` (text), `owners` and `links` (lists) when the frontmatter sets them."""
    out: dict[str, Any] = {}
    if frontmatter.get("version") not in (None, ""):
        out["version"] = str(frontmatter["version"]).strip()
    for name in ("owners", "links"):
        if values := string_list(frontmatter.get(name)):
            out[name] = values
    return out


_TOP_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:")


def value_line(frontmatter_lines: list[str], key: str, value: str) -> int:
    """The 1-based file line stating `value` under `key` (`  - rag_chunks` or `key: [a, rag_chunks]`).

    Args:
        frontmatter_lines: The file's lines from line 1 through the closing `---`.
        key: A top-level frontmatter key.
        value: One of its values.

    Returns:
        The line of the value inside the key's block, else the key's own line, else 1.
    """
    start = next((i for i, line in enumerate(frontmatter_lines) if (m := _TOP_KEY.match(line)) and m["key"] == key),
                 None)
    if start is None:
        return 1
    end = next((i for i in range(start + 1, len(frontmatter_lines)) if _TOP_KEY.match(frontmatter_lines[i])
                or frontmatter_lines[i].rstrip() in ("---", "...")), len(frontmatter_lines))
    for i in range(start, end):
        if value in frontmatter_lines[i]:
            return i + 1
    return start + 1


def card_lines(relations: dict[str, list[str]], extra: dict[str, Any]) -> list[str]:
    """The card's text lines for relations and the other module fields (`Writes DB: rag_chunks`)."""
    lines = [f"{_BY_NAME[name].label}: {', '.join(values)}" for name, values in relations.items()]
    if extra.get("version"):
        lines.append(f"Version: {extra['version']}")
    if extra.get("owners"):
        lines.append(f"Owners: {', '.join(extra['owners'])}")
    return lines


def edge_content(src: str, src_title: str, relation: str, dst: str) -> str:
    """An edge as a line the answer can quote: `agent.chat (Чат агента) calls (вызывает) /internal/rag/retrieve`."""
    who = f"{src} ({src_title})" if src_title and src_title != src else src
    return f"{who} {_BY_NAME[relation].phrase} {dst}"


def edge_title(src: str, relation: str, dst: str) -> str:
    """The edge's title: both ends, the seed's field name and the words questions about it use (a title is
    weighted highest in the lexical index, so «кто пишут», "who emit" find the edge in their own words)."""
    return f"{src} {relation} {dst} ({_BY_NAME[relation].gloss})"


def edge_embed_text(src: str, src_title: str, relation: str, dst: str) -> str:
    """What the edge's vector stands for: its line plus the words questions about the relation use."""
    return f"{edge_content(src, src_title, relation, dst)}\n{relation}: {_BY_NAME[relation].gloss}"
