"""D6_POLICY_INDEX (seed 003's `D4_POLICY_INDEX`, «глобальные правила и конвенции проекта»): one row per rule.

Seed 000 gave the D4 slot to workflows, so the policy layer takes the next free number. A rule is a
normative statement ("must", "never", «нельзя», «обязательно», «должны») anywhere in the docs, or any list
item of a policy document (`doc_type` policy / convention / ADR...) or of a section titled as rules
(«Правила», "Conventions"). Rows are not embedded: they repeat D0 lines and are found lexically, only by
plans that ask for rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stores.indexing.docs.frontmatter import string_list
from stores.indexing.docs.markdown import MarkdownDoc, SectionIndex, clean_inline, is_directive_line
from stores.indexing.docs.profile import DocProfile
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

POLICY_DOC_TYPES = frozenset(
    {"policy", "policies", "convention", "conventions", "adr", "decision", "guideline", "guidelines", "rules",
     "standard", "standards", "правила", "регламент", "соглашения"}
)
"""`doc_type` values whose every list item is a rule."""

_RULE_HEADING = re.compile(
    r"\b(?:rules?|conventions?|polic(?:y|ies)|guidelines?|requirements?|constraints?|decision|defaults?"
    r"|правил\w*|соглашени\w*|конвенци\w*|политик\w*|регламент\w*|требовани\w*|ограничени\w*|решени\w*"
    r"|по\s+умолчанию)\b",
    re.IGNORECASE,
)
"""Section titles whose list items are rules."""

_NORMATIVE = re.compile(
    r"\b(?:must(?:\s+not|n't)?|shall(?:\s+not)?|never|is\s+required|are\s+required|forbidden|prohibited"
    r"|нельзя|обязательн\w*|обязан\w*|должн\w*|запрещ\w*|не\s+допуска\w*)\b",
    re.IGNORECASE,
)
"""Words that make a sentence a rule wherever it stands."""

_DEFAULT = re.compile(r"\b(?:by\s+default|defaults?\b|по\s+умолчанию)", re.IGNORECASE)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁ`])")
MAX_RULE_CHARS = 400
RULE_GLOSS = "rules правила policy convention"
"""In every rule's title, so "what are the rules for X" / «какие правила для X» find the rows lexically."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule statement before it becomes a row."""

    text: str
    start: int
    end: int
    section: list[str]
    kind: str
    """`rule`, or `default_behavior` (seed 003's `default_behaviors`)."""
    marker: str | None
    """The normative word that made it a rule, None for a list item of a rule section or policy document."""


def is_policy_doc(doc_type: str | None) -> bool:
    """Whether a document is itself a policy (its every list item is a rule)."""
    return (doc_type or "").strip().lower() in POLICY_DOC_TYPES


def is_rule_heading(title: str) -> bool:
    """Whether a section's title says its items are rules («Правила для миграций», "Conventions")."""
    return bool(_RULE_HEADING.search(title))


def normative_marker(text: str) -> str | None:
    """The normative word of a sentence (`must`, «нельзя»), lower-cased, else None."""
    match = _NORMATIVE.search(text)
    return match.group(0).lower() if match else None


def rule_kind(text: str, section: list[str]) -> str:
    """`default_behavior` for "by default" statements and items of a Defaults section, else `rule`."""
    return "default_behavior" if _DEFAULT.search(text) or any(_DEFAULT.search(s) for s in section[-1:]) else "rule"


def find_rules(doc: MarkdownDoc, doc_type: str | None) -> list[Rule]:
    """Rule statements of a document: list items (with their continuation lines) and prose sentences.

    Args:
        doc: The parsed markdown file.
        doc_type: The document's type (a policy document makes every list item a rule).

    Returns:
        Rules in line order: every list item of a policy document, every item and paragraph of a rule
        section, and elsewhere the normative sentences.
    """
    sections = SectionIndex(doc.headings)
    whole_doc = is_policy_doc(doc_type)
    rules: list[Rule] = []
    for start, end, text, is_item in _blocks(doc):
        section = sections.titles_at(start)
        in_rule_section = any(is_rule_heading(title) for title in section[1:] or section)
        marker = normative_marker(text)
        if (is_item and whole_doc) or in_rule_section:
            rules.append(Rule(text, start, end, section, rule_kind(text, section), marker))
        elif marker:
            sentences = [s for s in _SENTENCE_END.split(text) if normative_marker(s)] if not is_item else [text]
            rules.append(Rule(" ".join(sentences), start, end, section, rule_kind(text, section), marker))
    return rules


def policy_records(doc: MarkdownDoc, profile: DocProfile, frontmatter: dict[str, Any]) -> list[ChunkRecord]:
    """Build the D6 rows of a document (seed 003 attributes: policy_id, applies_to, rules, source_path).

    Args:
        doc: The parsed markdown file.
        profile: Document attributes copied into every row.
        frontmatter: Parsed frontmatter (`applies_to`, when set, names what the rules govern).

    Returns:
        One row per rule, spanning its lines.
    """
    applies = string_list(frontmatter.get("applies_to"))
    records = []
    for number, rule in enumerate(find_rules(doc, profile.doc_type), 1):
        section = rule.section[-1] if rule.section else profile.title
        title = f"{profile.title} › {section} ({RULE_GLOSS})" if section != profile.title else \
            f"{profile.title} ({RULE_GLOSS})"
        records.append(
            ChunkRecord(
                layer=Layer.D6_POLICY_INDEX,
                path=doc.path,
                title=title,
                content=rule.text[:MAX_RULE_CHARS],
                span_start=rule.start,
                span_end=rule.end,
                metadata=profile.base_metadata() | {
                    "policy_id": f"{profile.doc_id}#{number}",
                    "applies_to": applies or [t for t in (profile.domain, section) if t],
                    "rule_kind": rule.kind,
                    "marker": rule.marker,
                    "section_path": rule.section,
                },
                embed=False,
            )
        )
    return records


def _blocks(doc: MarkdownDoc) -> list[tuple[int, int, str, bool]]:
    """(start, end, text, is_list_item) of list items and prose paragraphs outside code and headings."""
    blocks: list[tuple[int, int, str, bool]] = []
    current: list[tuple[int, str]] = []
    item = False

    def close() -> None:
        if current:
            text = clean_inline(" ".join(line.strip() for _, line in current))
            text = _ITEM.sub("", text) if item else text
            if text:
                blocks.append((current[0][0], current[-1][0], text, item))
        current.clear()

    for number, line in doc.text_lines():
        stripped = line.strip()
        if (not stripped or number in doc.heading_lines or is_directive_line(line)
                or stripped.startswith(("|", "![", ">"))):
            close()
            continue
        if _ITEM.match(line):
            close()
            item = True
        elif not current:
            item = False
        current.append((number, line))
    close()
    return blocks
