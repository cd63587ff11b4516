"""Extractive answers (no LLM): quoted spans with citations, FIND_FILES lists, honest "not found"."""

from __future__ import annotations

import re

from nodes.answer_composition.models import Answer, Citation
from nodes.context_analysis import Analysis, FileEvidence, Span, strip_markup
from nodes.intent_routing.models import RouteResult, Subintent

MAX_QUOTES = 8
MAX_FILES = 5
MAX_NEAREST = 5
FIND_FILES_EXTRA_QUOTES = 2
"""Further quotes under each of the first files of a FIND_FILES list: they show *why* the file fits."""
FIND_FILES_QUOTED_FILES = 3

# Heading anchors of translated docs (`## Заголовок { #heading-id }`): ids, not words for a reader.
_ANCHOR = re.compile(r"\s*\{\s*#[\w-]+\s*\}")

TEMPLATES = {
    "ru": {
        "lead": "Вот что сказано об этом в проиндексированных материалах (главный источник — `{path}`):",
        "sources": "Источники:",
        "find_lead": "Файлы, где это описано (сначала самые подходящие):",
        "not_found": "В проиндексированных материалах нет ответа на этот вопрос.",
        "nearest": "Ближайшие по теме файлы (ответа в них не нашлось):",
        "conflicts": "Обратите внимание: источники расходятся — {notes}.",
    },
    "en": {
        "lead": "Here is what the indexed material says about it (main source: `{path}`):",
        "sources": "Sources:",
        "find_lead": "Files that cover this, most relevant first:",
        "not_found": "The indexed material does not answer this question.",
        "nearest": "Nearest files (they do not contain the answer):",
        "conflicts": "Note: the sources disagree — {notes}.",
    },
}


def _cite(item: Span | FileEvidence) -> Citation:
    return Citation(path=item.path, start_line=item.start_line, end_line=item.end_line)


def _quote(span: Span) -> str:
    """One bullet: prose on one line, code as an indented fenced block; the citation closes it."""
    cite = f"[{_cite(span)}]"
    if span.code and "\n" in span.text.strip():
        lines = span.text.strip("\n").split("\n")
        indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
        body = "\n".join(f"  {line[indent:]}".rstrip() for line in lines)
        return f"- {cite}\n  ```\n{body}\n  ```"
    text = " ".join(span.text.split()) if span.code else _prose(span.text)
    if span.code and "`" not in text:
        text = f"`{text}`"
    section = _prose(span.section)
    if section and section.lower() not in text.lower():
        # The section a line sits in often names the thing the line describes ("GZipMiddleware").
        text = f"«{section}»: {text}"
    return f"- {text} {cite}"


def _prose(text: str) -> str:
    return _ANCHOR.sub("", strip_markup(" ".join(text.split())))


def _title_line(file: FileEvidence) -> str:
    return f"- `{file.path}` — {file.title}" if file.title else f"- `{file.path}`"


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
        about = f"{file.title}: {reason}" if file.title and file.title != reason else reason
        lines.append(f"{i}. `{file.path}` — {about} [{cite}]")
        cites.append(cite)
        if i > FIND_FILES_QUOTED_FILES:
            continue
        extra = [s for s in analysis.spans if s.path == file.path and _cite(s) != cite and s.terms
                 and not (s.text.startswith("#") and not s.code)]  # a heading proves little
        for span in sorted(extra, key=lambda s: -s.score)[:FIND_FILES_EXTRA_QUOTES]:
            lines.append("   " + _quote(span).replace("\n", "\n   "))
            cites.append(_cite(span))
    text = words["find_lead"] + "\n" + "\n".join(lines)
    return Answer(text=text, citations=list(dict.fromkeys(cites)), mode="find_files")


def _summary(analysis: Analysis) -> Answer:
    words = TEMPLATES[analysis.language]
    best = sorted(analysis.spans, key=lambda s: -s.score)[:MAX_QUOTES]
    quotes = [s for s in analysis.spans if s in best]  # the best quotes, shown in rank order
    top = quotes[0].path if quotes else analysis.files[0].path
    parts = [words["lead"].format(path=top), "\n".join(_quote(s) for s in quotes)]
    if analysis.conflicts:
        parts.append(words["conflicts"].format(notes="; ".join(analysis.conflicts)))
    titles = {f.path: f for f in analysis.files}
    paths = list(dict.fromkeys(s.path for s in quotes))
    sources = "\n".join(_title_line(titles[p]) if p in titles else f"- `{p}`" for p in paths)
    parts.append(f"{words['sources']}\n{sources}")
    cites = list(dict.fromkeys(_cite(s) for s in quotes))
    return Answer(text="\n\n".join(parts), citations=cites, mode="extractive")


def compose_extractive(request: str, analysis: Analysis, route: RouteResult | None) -> Answer:
    """Compose an answer from the analysis alone, in the request's language.

    Args:
        request: The standalone request (unused: its language and terms are already in `analysis`;
            kept so both composers share one call shape).
        analysis: Output of `context_analysis.analyze`.
        route: The router's result; `subintent == "FIND_FILES"` gives a ranked file list.

    Returns:
        Not enough evidence: a plain "not found" plus the nearest files, `abstained=True`, no citations.
        FIND_FILES: a ranked list of files, each with a one-line reason and a citation. Otherwise a lead
        sentence, up to MAX_QUOTES quoted spans each followed by its citation, and the sources.
        Every citation is a span or file reason of the analysis, so it lies inside the evidence.
    """
    if not analysis.sufficient or not (analysis.spans or analysis.files):
        return _not_found(analysis)
    if route is not None and route.subintent == Subintent.FIND_FILES.value:
        return _find_files(analysis)
    if not analysis.spans:
        return _find_files(analysis)
    return _summary(analysis)
