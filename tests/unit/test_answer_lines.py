"""Issue 29, answer lines: the answer quotes the lines that answer, and a supporting passage must be about the
question's topic (a key term or an asked-about name), not merely share its generic words."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.answer_composition import compose_extractive
from nodes.context_analysis import analyze
from nodes.evidence import EvidenceRow
from nodes.terms import key_terms


def ev(rid: str, path: str, content: str, start: int = 1, layer: str = "D0_DOC_CHUNKS", **extra: Any) -> EvidenceRow:
    end = extra.pop("span_end", start + content.count("\n"))
    return EvidenceRow(id=rid, path=path, layer=layer, content=content, span_start=start, span_end=end, **extra)


CORS = ev("cors", "docs/cors.md", """## Использование `CORSMiddleware`

* `expose_headers` - Указывает заголовки ответа, доступные браузеру. По умолчанию `[]`.
* `max_age` - Устанавливает время в секундах, в течение которого браузер кэширует CORS-ответы. По умолчанию `600`.

`CORSMiddleware` отвечает на два типа HTTP-запросов.""", 60)
CORS_OTHER = ev("cors2", "docs/cors.md", """## Использование `CORSMiddleware`

`CORSMiddleware` использует запрещающие настройки, поэтому источники нужно разрешить явно.""", 48)
QUERY = ev("query", "docs/query.md", """## `Query` как значение по умолчанию

Вот как можно использовать `Query()` как значение по умолчанию, установив `max_length` равным 50:""", 94)
QUERY_TWO = ev("query2", "docs/query.md", """## Значение по умолчанию внутри `Annotated`

Непонятно, какое значение должно быть по умолчанию: `"rick"` или `"morty"`.""", 134)

DEFAULT_QUESTION = "Какое значение по умолчанию у max_age в CORSMiddleware?"


@pytest.mark.parametrize(("question", "rows", "quoted", "not_quoted"), [
    # another page about default values shares only the question's generic words: it is not support
    (DEFAULT_QUESTION, [CORS, QUERY, CORS_OTHER, QUERY_TWO], ["docs/cors.md"], ["docs/query.md"]),
], ids=["default-value-of-another-setting"])
def test_supporting_passages_are_about_the_topic(question: str, rows: list[EvidenceRow], quoted: list[str],
                                                 not_quoted: list[str]) -> None:
    analysis = analyze(question, key_terms(question), rows, True)
    paths = [s.path for s in analysis.spans]
    assert "По умолчанию `600`" in analysis.spans[0].text
    assert all(p in paths for p in quoted) and not any(p in paths for p in not_quoted), paths


def test_a_support_repeating_what_the_grown_lead_already_names_is_left_out() -> None:
    """The lead grew over its section and names `CORSMiddleware` in a block it took; a passage whose only topic
    word is that name adds nothing."""
    analysis = analyze(DEFAULT_QUESTION, key_terms(DEFAULT_QUESTION), [CORS, CORS_OTHER], True)
    answer = compose_extractive(DEFAULT_QUESTION, analysis, None)
    assert [s.citation for s in analysis.spans] == ["docs/cors.md:62-65"], answer.text
