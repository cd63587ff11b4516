"""D4_WORKFLOW_INDEX: ordered steps from numbered lists and mermaid `sequenceDiagram` blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stores.indexing.docs.markdown import MarkdownDoc, SectionIndex, clean_inline
from stores.indexing.docs.profile import DocProfile
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

MAX_STEPS = 40
MAX_STEP_CHARS = 300
MAX_EMBED_CHARS = 2000

_ITEM = re.compile(r"^(?P<indent> {0,3})(?P<number>\d{1,3})[.)]\s+(?P<text>\S.*)$")
_BLOCK_START = re.compile(r"^\s*(#|///|\||```|~~~|[-*+]\s|>|<)")
_PARTICIPANT = re.compile(r"^\s*(?:participant|actor)\s+(?P<id>[^\s]+)(?:\s+as\s+(?P<label>.+?))?\s*$")
_MESSAGE = re.compile(
    r"^\s*(?P<src>[^\s:>-][^:]*?)\s*(?P<arrow><<-{1,2}>>|-{1,2}>>|-{1,2}>|-{1,2}x|-{1,2}\))\s*[+-]?"
    r"(?P<dst>[^:]+?)\s*:\s*(?P<message>.*)$"
)
_NOTE = re.compile(r"^\s*Note\s+(?:over|left of|right of)\s+(?P<who>[^:]+?)\s*:\s*(?P<text>.*)$", re.I)
_BLOCK = re.compile(r"^\s*(?P<kind>loop|alt|opt|else|par|and|critical|break)\b\s*(?P<text>.*)$")


@dataclass(frozen=True, slots=True)
class Workflow:
    """Ordered steps found in one block of a document."""

    kind: str
    """`numbered_list` or `sequence_diagram`."""
    start: int
    end: int
    steps: list[str]


def find_workflows(doc: MarkdownDoc) -> list[Workflow]:
    """Find numbered lists of two or more steps and mermaid sequence diagrams, in file order."""
    workflows = _numbered_lists(doc) + _sequence_diagrams(doc)
    return sorted(workflows, key=lambda w: w.start)


def workflow_records(doc: MarkdownDoc, profile: DocProfile) -> list[ChunkRecord]:
    """Build the D4 rows of a document (embedded: "how does X happen" questions are semantic).

    Args:
        doc: The parsed markdown file.
        profile: Document attributes copied into every row.

    Returns:
        One row per workflow; content is the heading followed by the numbered steps.
    """
    records = []
    sections = SectionIndex(doc.headings)
    for workflow in find_workflows(doc):
        path = sections.titles_at(workflow.start)
        heading = path[-1] if path else profile.title
        steps_text = "\n".join(f"{index}. {step}" for index, step in enumerate(workflow.steps, start=1))
        content = f"{heading}\n{steps_text}"
        metadata = profile.base_metadata() | {
            "workflow_kind": workflow.kind,
            "steps": workflow.steps,
            "step_count": len(workflow.steps),
            "section_path": path,
            "heading": heading,
        }
        records.append(
            ChunkRecord(
                layer=Layer.D4_WORKFLOW_INDEX,
                path=doc.path,
                title=heading,
                content=content,
                span_start=workflow.start,
                span_end=workflow.end,
                metadata=metadata,
                embed=True,
                embed_text=f"{profile.title} / {' > '.join(path)}\n{steps_text}"[:MAX_EMBED_CHARS],
            )
        )
    return records


def _numbered_lists(doc: MarkdownDoc) -> list[Workflow]:
    workflows: list[Workflow] = []
    number = doc.body_start
    while number <= doc.last_line:
        match = None if doc.fenced[number - 1] else _ITEM.match(doc.line(number))
        if match is None:
            number += 1
            continue
        end, steps = _read_list(doc, number, len(match["indent"]))
        if len(steps) >= 2:
            workflows.append(Workflow("numbered_list", number, end, steps[:MAX_STEPS]))
        number = end + 1
    return workflows


def _read_list(doc: MarkdownDoc, first: int, indent: int) -> tuple[int, list[str]]:
    """Read one list: items at `indent`, indented continuation (blank lines allowed) and lazy lines."""
    steps = [_ITEM.match(doc.line(first))["text"]]  # type: ignore[index]
    end, blank_seen, lazy = first, False, True
    for number in range(first + 1, doc.last_line + 1):
        line = doc.line(number)
        if not line.strip():
            blank_seen = True
            continue
        item = None if doc.fenced[number - 1] else _ITEM.match(line)
        lead = len(line) - len(line.lstrip())
        if item and len(item["indent"]) == indent:
            steps.append(item["text"])
            end, blank_seen, lazy = number, False, True
        elif not blank_seen and lazy and not _BLOCK_START.match(line) and not doc.fenced[number - 1]:
            steps[-1] = f"{steps[-1]} {line.strip()}"  # the item's paragraph goes on
            end = number
        elif lead > indent + 1:
            end, lazy = number, False  # an indented paragraph or code belongs to the current item
        else:
            break
    return end, [_clip(clean_inline(step)) for step in steps]


def _sequence_diagrams(doc: MarkdownDoc) -> list[Workflow]:
    workflows = []
    for fence in doc.fences:
        if fence.info != "mermaid":
            continue
        body = [doc.line(n) for n in range(fence.start + 1, fence.end)]
        first = next((line.strip() for line in body if line.strip()), "")
        if not first.startswith("sequenceDiagram"):
            continue
        steps = _diagram_steps(body)
        if steps:
            workflows.append(Workflow("sequence_diagram", fence.start, fence.end, steps[:MAX_STEPS]))
    return workflows


def _diagram_steps(body: list[str]) -> list[str]:
    labels: dict[str, str] = {}
    steps: list[str] = []

    def name(raw: str) -> str:
        raw = raw.strip()
        return labels.get(raw, raw)

    for raw_line in body:
        line = raw_line.replace("<br/>", " ").replace("<br>", " ")
        participant = _PARTICIPANT.match(line)
        if participant:
            labels[participant["id"]] = (participant["label"] or participant["id"]).strip()
            continue
        note = _NOTE.match(line)
        if note:
            who = ", ".join(name(part) for part in note["who"].split(","))
            steps.append(_clip(f"Note ({who}): {note['text'].strip()}"))
            continue
        block = _BLOCK.match(line)
        if block:
            steps.append(_clip(f"[{block['kind']} {block['text'].strip()}]".replace(" ]", "]")))
            continue
        message = _MESSAGE.match(line)
        if message:
            arrow = "←" if message["arrow"].startswith("<") else "→"
            text = message["message"].strip()
            steps.append(_clip(f"{name(message['src'])} {arrow} {name(message['dst'])}: {text}".rstrip(": ")))
    return steps


def _clip(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= MAX_STEP_CHARS else text[: MAX_STEP_CHARS - 1].rstrip() + "…"
