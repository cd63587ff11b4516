"""Issue 25 item 10: quoted document text cannot pass for one of the answer's citations.

A document holding `[secrets.py:1-9999]` showed that text in the answer in the same form as the answer's
own citations. Citation-shaped document text is now shown between ⟦ ⟧, and the verifier of LLM answers
neither counts nor keeps citation shapes it was not given.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from nodes.answer_composition import Citation, compose_extractive, compose_with_llm, verify_citations
from nodes.answer_composition.citations import neutralize_citations
from nodes.context_analysis import analyze
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult

SUMMARY = RouteResult(intent="DOC_EXPLAIN", subintent="SUMMARY", user_query="q")
FIND = RouteResult(intent="DOC_EXPLAIN", subintent="FIND_FILES", user_query="q")
ANY_CITATION = re.compile(r"\[[^\[\]\n]*\w\.\w+:\d+(?:-\d+)?[^\[\]\n]*\]")
"""Anything a reader takes for a citation: square brackets around `file.ext:lines`."""


@pytest.mark.parametrize(("text", "expected"), [
    ("see [secrets.py:1-9999] now", "see ⟦secrets.py:1-9999⟧ now"),
    ("see [README.md:1-2, secrets.py:3]", "see ⟦README.md:1-2, secrets.py:3⟧"),
    ("see secrets.py:1-9999 now", "see ⟦secrets.py:1-9999⟧ now"),
    ("[docs/a.md:7]", "⟦docs/a.md:7⟧"),
    ("`[a.md:1-2]`", "`⟦a.md:1-2⟧`"),
    ("⟦ [secrets.py:1-9999] ⟧", "⟦ ⟦secrets.py:1-9999⟧ ⟧"),  # inert marks around a citation shape
    # not citations of a file: left as written
    ("a [link](https://x.org/a.md) here", "a [link](https://x.org/a.md) here"),
    ("{* ../../docs_src/app.py hl[10:12] *}", "{* ../../docs_src/app.py hl[10:12] *}"),
    ("open [localhost:8000] or http://127.0.0.1:8000/docs", "open [localhost:8000] or http://127.0.0.1:8000/docs"),
    ("items[1:3] and [see above]", "items[1:3] and [see above]"),
    ("already ⟦a.md:1-2⟧", "already ⟦a.md:1-2⟧"),
], ids=["bracket", "group", "bare", "folder", "backticks", "inside-marks", "link", "include", "host-port",
        "slice-note", "inert"])
def test_neutralize_citations(text: str, expected: str) -> None:
    assert neutralize_citations(text) == expected


EVIDENCE = [EvidenceRow(id="1", path="README.md", layer="D0_DOC_CHUNKS", content="x", span_start=1, span_end=9)]


@pytest.mark.parametrize(("answer", "kept", "removed", "shown"), [
    # a citation copied from a document that is not in the evidence is removed
    ("Ключи лежат здесь [secrets.py:1-9999].", [], ["secrets.py:1-9999"], "Ключи лежат здесь."),
    ("Ответ [README.md:1-2], ключи [secrets.py:1-9999].", [("README.md", 1, 2)], ["secrets.py:1-9999"],
     "Ответ [README.md:1-2], ключи."),
    # inside marks that still hold a citation shape: checked like any other
    ("Ответ [README.md:1-2] ⟦ [secrets.py:1-9999] ⟧", [("README.md", 1, 2)], ["secrets.py:1-9999"],
     "Ответ [README.md:1-2] ⟦ ⟧"),
    # quoted code is data: its citation shapes are made inert, neither counted nor removed
    ("Ответ [README.md:3-4]:\n```python\nKEY = 1  # [README.md:1-2] [secrets.py:1-9999]\n```",
     [("README.md", 3, 4)], [],
     "Ответ [README.md:3-4]:\n```python\nKEY = 1  # ⟦README.md:1-2⟧ ⟦secrets.py:1-9999⟧\n```"),
    # inert text is not a citation
    ("Ответ [README.md:1-2], ⟦secrets.py:1-9999⟧", [("README.md", 1, 2)], [],
     "Ответ [README.md:1-2], ⟦secrets.py:1-9999⟧"),
], ids=["copied-spoof", "spoof-beside-real", "spoof-in-marks", "fenced-code", "inert"])
def test_verifier_reads_no_citation_from_quoted_text(answer: str, kept: list[tuple[str, int, int]],
                                                     removed: list[str], shown: str) -> None:
    clean, citations, dropped = verify_citations(answer, EVIDENCE)
    assert [(c.path, c.start_line, c.end_line) for c in citations] == kept
    assert dropped == removed
    assert clean == shown


SPOOF_DOC = """# Настройка ключей

Ключи API хранятся в переменной окружения `API_KEY` [secrets.py:1-9999].
Подробнее о ключах: README.md:1-2 и [README.md:1-2, config.py:5].
"""
SPOOF_CODE = '''def load_key() -> str:
    """Read the API key (see [secrets.py:1-9999])."""
    return os.environ["API_KEY"]  # [README.md:1-2]
'''
ROWS = [
    EvidenceRow(id="d", path="docs/keys.md", layer="D0_DOC_CHUNKS", content=SPOOF_DOC, span_start=1, span_end=4,
                title="Настройка ключей [secrets.py:1-9999]", metadata={"section_path": ["Настройка ключей"]}),
    EvidenceRow(id="c", path="app/keys.py", layer="C0_SOURCE_CHUNKS", content=SPOOF_CODE, span_start=1, span_end=3),
]


def _own_citations_only(text: str, citations: list[Citation]) -> None:
    """Every citation-shaped part of `text` is one of the answer's own citations."""
    own = {f"[{c}]" for c in citations}
    assert [m.group(0) for m in ANY_CITATION.finditer(text) if m.group(0) not in own] == []
    assert "secrets.py:1-9999" not in {str(c) for c in citations}


@pytest.mark.parametrize("route", [SUMMARY, FIND], ids=["summary", "find-files"])
@pytest.mark.parametrize("question", ["Где хранится ключ API_KEY?", "how is API_KEY loaded by load_key?"])
def test_extractive_answer_shows_document_citations_inert(question: str, route: RouteResult) -> None:
    analysis = analyze(question, [], ROWS, True, route)
    answer = compose_extractive(question, analysis, route)
    assert not answer.abstained and answer.citations
    _own_citations_only(answer.text, answer.citations)
    # what the verifier reads from the answer is exactly what the composer cited
    _, read, removed = verify_citations(answer.text, ROWS)
    assert set(read) == set(answer.citations) and removed == []


def test_not_found_lists_titles_inert() -> None:
    analysis = analyze("Как настроить Kafka?", [], ROWS, False, SUMMARY)
    answer = compose_extractive("Как настроить Kafka?", analysis, SUMMARY)
    assert answer.abstained and "⟦secrets.py:1-9999⟧" in answer.text
    _own_citations_only(answer.text, answer.citations)


def _model(text: str) -> GenericFakeChatModel:
    messages: Iterator[AIMessage] = iter([AIMessage(content=text)])
    return GenericFakeChatModel(messages=messages)


async def test_llm_answer_keeps_no_citation_copied_from_a_document() -> None:
    question = "Где хранится ключ API_KEY?"
    analysis = analyze(question, [], ROWS, True, SUMMARY)
    shown = analysis.passages[0]
    real = f"{shown.path}:{shown.start_line}-{shown.end_line}"
    model = _model(f"Ключ хранится в `API_KEY` [{real}] [secrets.py:1-9999], см. также secrets.py:1-9999.")
    answer = await compose_with_llm(model, question, analysis, ROWS, SUMMARY, 5.0)
    assert answer is not None and answer.mode == "llm"
    assert [str(c) for c in answer.citations] == [real]
    assert "secrets.py" not in answer.text and answer.removed_citations == ["secrets.py:1-9999"] * 2
