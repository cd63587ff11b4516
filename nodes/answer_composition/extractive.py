"""Extractive answers (no LLM): one quoted lead passage, ≤ 2 supporting ones, FIND_FILES lists, "not found"."""

from __future__ import annotations

import re

from nodes.answer_composition.citations import neutralize_citations
from nodes.answer_composition.models import Answer, Citation
from nodes.context_analysis import Analysis, FileEvidence, Span, strip_markup
from nodes.intent_routing.models import RouteResult, Subintent

MAX_FILES = 5
MAX_NEAREST = 5
SUPPORT_CHARS = 700
"""A supporting passage is cut (at a line) to this length: it adds a fact, it does not retell a page.
At 400 the cut often fell before the value the passage was chosen for (dev, five corpora: key-fact coverage
0.327 → 0.334 at 700, passage precision 0.268 → 0.271, answer p50 1,055 → 1,074 characters)."""
ANSWER_CHARS = 1000
"""The quoted passages of a summary answer (lead and supports) stop near this many characters: a support is
cut to what is left, and left out when less than SUPPORT_MIN_CHARS is (a definition quoted in a symbol
card's place is longer than the card). Issue 38: quoting every unit within a wide margin and cutting them to
this budget states more key facts per character than a narrow margin with a looser budget (train_units'
out-of-fold quotes, eight dev corpora, macro key-fact recall of the answer / median chars: 1,350 with the
margin at 0.75 → 0.327 / 1,206, at 1.0 → 0.368 / 1,404; 1,000 with the margin at 2.0 → 0.366 / 1,245, at
4.0 → 0.379 / 1,249; 900 at 4.0 → 0.362 / 1,142)."""
SUPPORT_MIN_CHARS = 160
RELATION_LAYER = "D5_RELATION_GRAPH"

# Heading anchors of translated docs (`## Заголовок { #heading-id }`): ids, not words for a reader.
_ANCHOR = re.compile(r"\s*\{\s*#[\w-]+\s*\}")

TEMPLATES = {
    "ru": {
        "lead": "Ответ — в `{path}`{where}:",
        "section": ", раздел «{section}»",
        "definition": ", определение `{name}`",
        "support": "Дополняют:",
        "find_lead": "Файлы, где это описано (сначала самые подходящие):",
        "not_found": "В проиндексированных материалах нет ответа на этот вопрос.",
        "nearest": "Ближайшие по теме файлы (ответа в них не нашлось):",
        "conflicts": "Обратите внимание: источники расходятся — {notes}.",
    },
    "en": {
        "lead": "The answer is in `{path}`{where}:",
        "section": ", section “{section}”",
        "definition": ", definition `{name}`",
        "support": "See also:",
        "find_lead": "Files that cover this, most relevant first:",
        "not_found": "The indexed material does not answer this question.",
        "nearest": "Nearest files (they do not contain the answer):",
        "conflicts": "Note: the sources disagree — {notes}.",
    },
}


def _cite(item: Span | FileEvidence) -> Citation:
    return Citation(path=item.path, start_line=item.start_line, end_line=item.end_line)


def _prose(text: str) -> str:
    """Document text on one line, citation-shaped parts made inert (only the answer's own citations read as
    citations)."""
    return neutralize_citations(_ANCHOR.sub("", strip_markup(" ".join(text.split()))))


def _title(file: FileEvidence) -> str:
    return neutralize_citations(file.title)


def _clip(span: Span, limit: int) -> tuple[str, Citation]:
    """The span's text cut after the last whole line within `limit` characters, with its citation."""
    lines = span.text.split("\n")
    aligned = span.end_line - span.start_line + 1 == len(lines)
    if len(span.text) <= limit or not aligned or len(lines) == 1:
        return span.text.strip("\n"), _cite(span)
    kept: list[str] = []
    for line in lines:
        if kept and sum(len(k) + 1 for k in kept) + len(line) > limit:
            break
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    end = span.start_line + len(kept) - 1
    return "\n".join(kept), Citation(path=span.path, start_line=span.start_line, end_line=end)


def _block(span: Span, limit: int | None = None) -> tuple[str, Citation]:
    """A passage as a reader sees it: code fenced, prose as a quote, the citation on the last line."""
    text, cite = _clip(span, limit) if limit else (span.text.strip("\n"), _cite(span))
    lines = neutralize_citations(text).split("\n")
    if span.code:
        indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
        body = "\n".join(line[indent:].rstrip() for line in lines if not line.strip().startswith("```"))
        lang = "python" if span.path.endswith((".py", ".pyi")) else ""
        return f"```{lang}\n{body}\n```\n[{cite}]", cite
    if "\n" not in text.strip():
        return f"> {_prose(text)} [{cite}]", cite  # _prose makes its citation-shaped parts inert
    quoted = "\n".join(f"> {_ANCHOR.sub('', line.rstrip())}".rstrip() for line in unindent_paragraphs(lines))
    return f"{quoted}\n[{cite}]", cite


_LIST_ITEM = re.compile(r"^\s*(?:[*+-]|\d+[.)])\s")


def unindent_paragraphs(lines: list[str]) -> list[str]:
    """Prose lines with the indentation of an admonition body (`/// note` contents) removed where it starts a
    paragraph: quoted as it is, a line indented by four spaces after a blank line reads as code. Lists and
    fenced blocks keep theirs."""
    out: list[str] = []
    fenced = False
    paragraph_start = True
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and paragraph_start and line[:1].isspace() and not _LIST_ITEM.match(line):
            line = line.lstrip()
        if not fenced and stripped and not stripped.startswith(("```", "~~~")):
            paragraph_start = False
        elif not stripped:
            paragraph_start = True
        out.append(line)
    return out


def _where(span: Span, words: dict[str, str]) -> str:
    section = _prose(span.section)
    if not section:
        return ""
    if span.kind in ("source", "card"):
        return words["definition"].format(name=section)
    return words["section"].format(section=section)


def _title_line(file: FileEvidence) -> str:
    return f"- `{file.path}` — {_title(file)}" if file.title else f"- `{file.path}`"


def _not_found(analysis: Analysis) -> Answer:
    words = TEMPLATES[analysis.language]
    parts = [words["not_found"]]
    if analysis.files:
        # No line citations here: listing a file is not a claim that it answers anything.
        nearest = "\n".join(_title_line(f) for f in analysis.files[:MAX_NEAREST])
        parts.append(f"{words['nearest']}\n{nearest}")
    return Answer(text="\n\n".join(parts), citations=[], abstained=True, mode="not_found")


def _find_files(analysis: Analysis) -> Answer:
    words = TEMPLATES[analysis.language]
    lines, cites = [], []
    for i, file in enumerate(analysis.files[:MAX_FILES], start=1):
        cite = _cite(file)
        reason = _prose(file.reason)
        title = _title(file)
        about = f"{title}: {reason}" if title and title != reason else reason
        lines.append(f"{i}. `{file.path}` — {about} [{cite}]")
        cites.append(cite)
    text = words["find_lead"] + "\n" + "\n".join(lines)
    return Answer(text=text, citations=list(dict.fromkeys(cites)), mode="find_files")


def _summary(analysis: Analysis) -> Answer:
    words = TEMPLATES[analysis.language]
    lead, *support = analysis.spans
    block, cite = _block(lead)
    parts = [words["lead"].format(path=lead.path, where=_where(lead, words)), block]
    cites = [cite]
    left = ANSWER_CHARS - len(block)
    if support:
        items = []
        for span in support:
            if left < SUPPORT_MIN_CHARS:
                break
            text, cite = _block(span, min(SUPPORT_CHARS, left))
            left -= len(text)
            if span.layer == RELATION_LAYER:  # one edge of a relation list: its line and citation say it all
                items.append(text)
                cites.append(cite)
                continue
            section = _prose(span.section)
            label = f"`{span.path}`" + (f" — «{section}»" if section and analysis.language == "ru" else
                                        f" — “{section}”" if section else "")
            items.append(f"{label}:\n{text}")
            cites.append(cite)
        if items:
            parts.append(words["support"] + "\n\n" + "\n\n".join(items))
    if analysis.conflicts:
        parts.append(words["conflicts"].format(notes=neutralize_citations("; ".join(analysis.conflicts))))
    return Answer(text="\n\n".join(parts), citations=list(dict.fromkeys(cites)), mode="extractive")


def compose_extractive(request: str, analysis: Analysis, route: RouteResult | None) -> Answer:
    """Compose an answer from the analysis alone, in the request's language.

    Args:
        request: The standalone request (unused: its language and terms are already in `analysis`;
            kept so both composers share one call shape).
        analysis: Output of `context_analysis.analyze` (or `analyze_with_llm`).
        route: The router's result; `subintent == "FIND_FILES"` gives a ranked file list.

    Returns:
        Not enough evidence: a plain "not found" plus the nearest files, `abstained=True`, no citations.
        FIND_FILES: a ranked list of files, each with the one line that justifies it and its citation.
        Otherwise the lead passage quoted as a block (code fenced) under a line naming its file and
        section, then up to two supporting passages. Every citation is a passage or file reason of the
        analysis, so it lies inside the evidence.
    """
    if not analysis.sufficient or not (analysis.spans or analysis.files):
        return _not_found(analysis)
    if route is not None and route.subintent == Subintent.FIND_FILES.value:
        return _find_files(analysis)
    if not analysis.spans:
        return _find_files(analysis)
    return _summary(analysis)
