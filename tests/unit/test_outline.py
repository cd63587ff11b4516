"""File summaries: a question that names one file and asks what is in it is answered by the file's outline."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.context_analysis import analyze
from nodes.context_analysis.outline import asks_for_summary, named_file, outline_text
from nodes.evidence import EvidenceRow
from nodes.terms import key_terms

CORS = "docs/ru/docs/tutorial/cors.md"
CARD = """CORS (Cross-Origin Resource Sharing)
Path: docs/ru/docs/tutorial/cors.md
Type: tutorial
Entities: CORSMiddleware
Summary: CORS относится к ситуациям, когда фронтенд в браузере обращается к бэкенду на другом источнике.
Sections: Источник; Шаги; Использование CORSMiddleware; Простые запросы"""


def ev(rid: str, path: str, content: str, layer: str = "D0_DOC_CHUNKS", start: int = 1, **extra: Any) -> EvidenceRow:
    end = extra.pop("span_end", start + content.count("\n"))
    return EvidenceRow(id=rid, path=path, layer=layer, content=content, span_start=start, span_end=end, **extra)


CARD_ROW = ev("card", CORS, CARD, "D1_DOCUMENT_CATALOG", span_end=88, lanes={"substring": 1})
OPENING = ev("open", CORS, "CORS относится к ситуациям, когда фронтенд в браузере обращается к бэкенду на другом "
             "источнике.", start=3, lanes={"substring": 2})
STEPS = ev("steps", CORS, "## Шаги\n\nБраузер отправляет запрос `OPTIONS` с заголовком `Origin`, и бэкенд "
           "отвечает списком `allow_origins`.", start=20)
OTHER = ev("other", "docs/ru/docs/tutorial/first-steps.md", "Запустите сервер командой `fastapi dev` и откройте "
           "файл в браузере.", start=40)


@pytest.mark.parametrize(
    ("question", "path", "summary"),
    [
        ("Что в файле tutorial/cors.md?", CORS, True),
        ("О чём файл deployment/versions.md?", "docs/ru/docs/deployment/versions.md", True),
        ("Кратко перескажи how-to/graphql.md", "docs/ru/docs/how-to/graphql.md", True),
        ("What does click/_utils.py contain?", "click/_utils.py", True),
        ("Summarize install/INSTALL.md.", "install/INSTALL.md", True),
        ("Что находится в fastapi/concurrency.py?", "fastapi/concurrency.py", True),
        # a topic beyond the file's name: a question about the file's content, not for a summary of it
        ("What does docs/thread-local.md say about whether structlog.threadlocal is going away?",
         "docs/thread-local.md", False),
        ("Какие аргументы принимает CORSMiddleware в tutorial/cors.md?", CORS, False),
        # no word asking for content: a how-to that names the file it expects the answer in
        ("Как настроить CORS в tutorial/cors.md?", CORS, False),
    ],
    ids=["ru-what-in-file", "ru-about-file", "ru-retell", "en-contain", "en-summarize", "ru-code-module",
         "en-specific-topic", "ru-specific-names", "ru-how-to"],
)
def test_a_summary_request_asks_for_content_and_names_nothing_beyond_the_file(question: str, path: str,
                                                                            summary: bool) -> None:
    assert asks_for_summary(question, key_terms(question), path) is summary


def test_the_named_file_is_the_one_file_a_path_lane_found() -> None:
    assert named_file([OTHER, CARD_ROW, OPENING]) == CORS
    assert named_file([OTHER]) is None
    assert named_file([CARD_ROW, OTHER.model_copy(update={"lanes": {"exact": 1}})]) is None  # two named files


def test_an_outline_is_the_cards_summary_sections_and_entities_without_index_labels() -> None:
    text = outline_text(CARD_ROW)
    assert text.split("\n") == [
        "CORS относится к ситуациям, когда фронтенд в браузере обращается к бэкенду на другом источнике.",
        "Sections: Источник; Шаги; Использование CORSMiddleware; Простые запросы",
        "Entities: CORSMiddleware",
    ]
    assert "Path:" not in text and "Type:" not in text


def test_what_is_in_a_file_leads_with_its_outline_and_quotes_only_that_file() -> None:
    question = "Что в файле tutorial/cors.md?"
    analysis = analyze(question, key_terms(question), [CARD_ROW, OTHER, OPENING, STEPS], True)
    lead, *rest = analysis.spans
    assert (lead.path, lead.start_line, lead.end_line) == (CORS, 1, 88)
    assert "Sections: Источник; Шаги" in lead.text
    assert all(s.path == CORS for s in rest)
    # the opening paragraph only repeats the card's summary: the passage beside the outline says more
    assert all("OPTIONS" in s.text for s in rest)


def test_a_question_about_one_topic_of_a_named_file_is_answered_by_its_passage() -> None:
    question = "Что в tutorial/cors.md сказано про allow_origins?"
    lead = analyze(question, key_terms(question), [CARD_ROW, OTHER, OPENING, STEPS], True).spans[0]
    assert lead.layer == "D0_DOC_CHUNKS" and "allow_origins" in lead.text


UTILS = "click/_utils.py"
MODULE_CARD = ev("mod", UTILS, "module click._utils Defines: Sentinel", "C1_SYMBOL_CATALOG", span_end=45,
                 lanes={"exact": 1}, metadata={"kind": "module"})
IMPORTS = ev("c0a", UTILS, "from __future__ import annotations\n\nimport enum\nimport typing as t", "C0_SOURCE_CHUNKS",
             lanes={"exact": 2})
SENTINEL = ev("c0b", UTILS, "class Sentinel(enum.Enum):\n    UNSET = object()\n    FLAG_NEEDS_VALUE = object()",
              "C0_SOURCE_CHUNKS", start=7)


def read(cards: Any) -> dict[str, list[EvidenceRow]]:
    return {card.id: [SENTINEL] for card in cards if card.id == "mod"}


def test_what_is_in_a_module_shows_its_card_then_how_it_opens_across_its_source_rows() -> None:
    question = "What does click/_utils.py contain?"
    analysis = analyze(question, key_terms(question), [MODULE_CARD, OTHER, IMPORTS], True, sources=read)
    card, opening = analysis.spans
    assert card.row_id == "mod" and opening.code
    # lines 5-6 lie in no row (blank lines between top-level chunks): marked, not invented
    assert opening.text.split("\n") == ["from __future__ import annotations", "", "import enum", "import typing as t",
                                        "...", "class Sentinel(enum.Enum):", "    UNSET = object()",
                                        "    FLAG_NEEDS_VALUE = object()"]
    assert (opening.start_line, opening.end_line) == (1, 9)  # inside the card's span, which the evidence holds
    assert "c0b" in analysis.expanded


def test_what_is_in_a_module_leads_with_its_card_not_with_one_of_its_definitions() -> None:
    question = "What does click/_utils.py contain?"
    method = ev("repr", UTILS, "def __repr__(self) -> str:\n    return f\"{self.__class__.__name__}.{self.name}\"",
                "C0_SOURCE_CHUNKS", start=18, lanes={"semantic": 1})
    analysis = analyze(question, key_terms(question), [method, OTHER, IMPORTS, MODULE_CARD], True)
    assert [s.row_id for s in analysis.spans][:1] == ["mod"]
    assert all(s.path == UTILS and s.row_id != "repr" for s in analysis.spans)


def test_rows_from_further_down_a_module_are_not_shown_as_its_opening() -> None:
    question = "What does click/_utils.py contain?"
    analysis = analyze(question, key_terms(question), [MODULE_CARD, OTHER, SENTINEL], True)
    assert [s.row_id for s in analysis.spans] == ["mod"]
