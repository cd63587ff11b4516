"""D3_ENTITY_CATALOG: named things a document defines (frontmatter entities, PascalCase/CamelCase terms)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from stores.indexing.docs.markdown import MarkdownDoc, clean_inline, is_directive_line
from stores.indexing.docs.profile import DocProfile, detect_language
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_ENTITIES_PER_DOC = 30
MAX_DESCRIPTION_CHARS = 300

_BACKTICKED = re.compile(r"`([A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*)`")
"""A backticked identifier starting with a capital and holding a lower-case letter (not `GET`, `JSON`)."""
_CAMEL = re.compile(r"(?<![\w.])([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?![\w])")
_LATIN_WORD = re.compile(r"(?<![\w.])([A-Z][a-z]{3,}[A-Za-z0-9]*)(?![\w])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁ`*«\"(])")
_DEFINING = re.compile(
    r"\s[—–]\s|\bэто\b|\bназывае|\bпредставляет\b|\bis an?\b|\bis the\b|\brepresents\b", re.I
)
_WORD = re.compile(r"\w+")
_NOT_ENTITIES = frozenset({"True", "False", "None", "Ellipsis", "NotImplemented", "TODO", "Note", "Summary"})


@dataclass(slots=True)
class Entity:
    """A candidate entity while a document is scanned."""

    name: str
    kind: str
    origins: set[str] = field(default_factory=set)
    in_heading: bool = False
    mentions: int = 0
    line: int | None = None
    description: str = ""


def find_entities(doc: MarkdownDoc, profile: DocProfile) -> list[Entity]:
    """Collect a document's entities, most defining first, capped at MAX_ENTITIES_PER_DOC.

    Frontmatter entities always stay; other terms must appear in a heading or be mentioned at least
    twice, which keeps one-off identifiers in passing out of the catalog.
    """
    found: dict[str, Entity] = {}
    for name in profile.entities:
        found[name] = Entity(name, "entity", {"frontmatter"})
    _scan_headings(doc, profile, found)
    _scan_text(doc, found)
    kept = [e for e in found.values() if _is_defined_here(e)]
    kept.sort(key=lambda e: ("frontmatter" not in e.origins, not e.in_heading, -e.mentions, e.line or 0))
    return kept[:MAX_ENTITIES_PER_DOC]


def entity_records(doc: MarkdownDoc, profile: DocProfile, entities: list[Entity]) -> list[ChunkRecord]:
    """Build the D3 rows (not embedded; names are matched lexically and through the catalog).

    Args:
        doc: The parsed markdown file.
        profile: Document attributes copied into every row.
        entities: Output of `find_entities`.

    Returns:
        One row per entity, spanning its defining (or first) mention.
    """
    records = []
    for entity in entities:
        line = entity.line or doc.body_start
        description = entity.description or profile.title
        metadata = profile.base_metadata() | {
            "name": entity.name,
            "kind": entity.kind,
            "description": description,
            "defining_doc": doc.path,
            "mentions": entity.mentions,
            "origins": sorted(entity.origins),
            "in_heading": entity.in_heading,
        }
        records.append(
            ChunkRecord(
                layer=Layer.D3_ENTITY_CATALOG,
                path=doc.path,
                title=entity.name,
                content=f"{entity.name} ({entity.kind}): {description}\n"
                f"Defined in: {profile.title} ({doc.path})",
                span_start=line,
                span_end=line,
                metadata=metadata,
                embed=False,
            )
        )
    return records


def _scan_headings(doc: MarkdownDoc, profile: DocProfile, found: dict[str, Entity]) -> None:
    for heading in doc.headings:
        raw = doc.line(heading.line)
        names = [(name, "code_symbol") for name in _BACKTICKED.findall(raw)]
        names += [(name, "term") for name in _CAMEL.findall(heading.text) if _is_camel(name)]
        # In a Russian heading a capitalised Latin word is almost always a name (Docker, Pydantic).
        if detect_language(heading.text) == "ru":
            names += [(name, "term") for name in _LATIN_WORD.findall(heading.text)]
        for name, kind in names:
            if name in _NOT_ENTITIES:
                continue
            entity = found.setdefault(name, Entity(name, kind))
            entity.in_heading = True
            entity.origins.add("heading")
            if kind == "code_symbol" and entity.kind == "term":
                entity.kind = kind
            if entity.line is None:
                entity.line = heading.line
                entity.description = _first_sentence_after(doc, heading.line)


def _scan_text(doc: MarkdownDoc, found: dict[str, Entity]) -> None:
    phrases = [name for name in found if not _WORD.fullmatch(name)]  # multi-word frontmatter names
    for number, line in doc.text_lines():
        if number in doc.heading_lines or is_directive_line(line) or line.lstrip().startswith("|"):
            continue
        for name in _BACKTICKED.findall(line):
            if name not in _NOT_ENTITIES:
                entity = found.setdefault(name, Entity(name, "code_symbol"))
                entity.origins.add("backticks")
        for name in _CAMEL.findall(line):
            if _is_camel(name) and name not in _NOT_ENTITIES:
                found.setdefault(name, Entity(name, "term")).origins.add("text")
        # Count mentions through the line's words (not a loop over every entity: docs can hold thousands).
        counts = Counter(word for word in _WORD.findall(line) if word in found)
        for name in phrases:
            if name in line:
                counts[name] += len(re.findall(rf"(?<![\w]){re.escape(name)}(?![\w])", line))
        for name, count in counts.items():
            if count:
                _mention(found[name], line, number, count)


def _mention(entity: Entity, line: str, number: int, count: int) -> None:
    entity.mentions += count
    sentence = _sentence_with(line, entity.name)
    # Keep the first mention, but upgrade to the first sentence that reads like a definition.
    upgrade = not entity.in_heading and not _DEFINING.search(entity.description)
    if entity.line is None or (upgrade and _DEFINING.search(sentence)):
        entity.line = number
        entity.description = sentence


def _is_defined_here(entity: Entity) -> bool:
    mentioned_enough = entity.mentions >= 2 and entity.line is not None
    return "frontmatter" in entity.origins or entity.in_heading or mentioned_enough


def _is_camel(name: str) -> bool:
    """PascalCase/CamelCase: two or more capitals and at least one lower-case letter (APIRouter, OAuth2)."""
    return sum(char.isupper() for char in name) >= 2 and any(char.islower() for char in name)


def _sentence_with(line: str, name: str) -> str:
    text = line.strip().lstrip("-*+ ").strip()
    for sentence in _SENTENCE_END.split(text):
        if name in sentence:
            return _clip(clean_inline(sentence))
    return _clip(clean_inline(text))


def _first_sentence_after(doc: MarkdownDoc, heading_line: int) -> str:
    for _number, line in doc.text_lines(heading_line + 1):
        stripped = line.strip()
        if not stripped or is_directive_line(line):
            continue
        if stripped.startswith("#"):
            break
        return _clip(clean_inline(_SENTENCE_END.split(stripped)[0]))
    return ""


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION_CHARS else text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
