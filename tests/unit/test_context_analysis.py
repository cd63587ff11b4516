"""context_analysis: exact span lines, sufficiency, coverage, grouping by file, caps, language, conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.context_analysis import (
    MAX_SPAN_CHARS,
    MAX_SPANS,
    MAX_SPANS_PER_FILE,
    aligned_lines,
    analyze,
    detect_language,
)
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult
from nodes.terms import key_terms

CORS_MD = """## Использование `CORSMiddleware`

Вы можете настроить его в приложении **FastAPI** с помощью `CORSMiddleware`.

```Python
app.add_middleware(
    CORSMiddleware,
    allow_origins=origins,
    max_age=600,
)
```

Поддерживаются следующие аргументы:

* `allow_credentials` - Указывает, что куки разрешены. По умолчанию `False`.
* `max_age` - Устанавливает максимальное время в секундах для кэширования CORS-ответов. По умолчанию `600`."""
CORS_START = 40


def source_lines(content: str, start: int) -> dict[int, str]:
    """The source file as the index saw it: line number → text."""
    return {start + i: line for i, line in enumerate(content.split("\n"))}


def ev(rid: str, path: str, content: str, start: int = 1, layer: str = "D0_DOC_CHUNKS",
       **extra: Any) -> EvidenceRow:
    end = extra.pop("span_end", start + content.count("\n"))
    return EvidenceRow(id=rid, path=path, layer=layer, content=content, span_start=start, span_end=end,
                       **extra)


CORS_ROW = ev("cors", "docs/ru/docs/tutorial/cors.md", CORS_MD, CORS_START, metadata={"title": "CORS"})


def run(question: str, rows: list[EvidenceRow], relevant: bool = True, route: RouteResult | None = None):
    return analyze(question, key_terms(question), rows, relevant, route)


def test_spans_of_multiline_doc_chunks_have_exact_line_numbers() -> None:
    analysis = run("Какое значение по умолчанию у max_age?", [CORS_ROW])
    lines = source_lines(CORS_MD, CORS_START)
    assert analysis.spans
    for span in analysis.spans:
        assert span.text == "\n".join(lines[n] for n in range(span.start_line, span.end_line + 1))
        assert span.end_line - span.start_line < 4 and len(span.text) <= MAX_SPAN_CHARS
    best = max(analysis.spans, key=lambda s: s.score)
    assert (best.start_line, best.end_line) == (CORS_START + 15, CORS_START + 15)
    assert "По умолчанию `600`" in best.text and best.terms


def test_a_code_line_comes_with_its_call_and_is_marked_as_code() -> None:
    analysis = run("allow_origins", [CORS_ROW])
    span = max(analysis.spans, key=lambda s: s.score)
    assert span.code and span.start_line == CORS_START + 6 and "allow_origins=origins," in span.text
    assert span.text.startswith("    CORSMiddleware,")


def test_source_chunks_with_label_lines_stay_aligned() -> None:
    code = "    def include_router(self, router):\n        self.routes.extend(router.routes)"
    content = "# class APIRouter(routing.Router)  (fastapi.routing.APIRouter)\n" + code
    row = ev("c0", "fastapi/routing.py", content, 1200, layer="C0_SOURCE_CHUNKS", span_end=1201)
    assert [line.number for line in aligned_lines(row)] == [1200, 1201]
    span = run("What does include_router do?", [row]).spans[0]
    assert (span.start_line, span.code) == (1200, True) and "def include_router" in span.text


def test_content_cut_by_the_token_cap_stays_aligned() -> None:
    row = ev("cut", "docs/a.md", "first\nsecond max_age here", 10, span_end=30)
    span = run("max_age", [row]).spans[0]
    assert (span.start_line, span.end_line, span.text) == (11, 11, "second max_age here")


@pytest.mark.parametrize("layer", ["D1_DOCUMENT_CATALOG", "D2_FACT_INDEX", "D3_ENTITY_CATALOG",
                                   "C1_SYMBOL_CATALOG", "C3_ENTRYPOINTS"])
def test_synthesized_rows_are_cited_by_their_whole_span(layer: str) -> None:
    row = ev("s", "fastapi/routing.py", "APIRouter — class\n   groups path operations", 100, layer=layer,
             span_end=180)
    span = run("Что такое APIRouter?", [row]).spans[0]
    assert (span.start_line, span.end_line) == (100, 180)
    assert span.text == "APIRouter — class groups path operations"


def test_a_long_line_is_cut_around_the_hit() -> None:
    long_line = "слово " * 150 + "параметр root_path задаёт префикс " + "слово " * 150
    span = run("root_path", [ev("l", "docs/proxy.md", long_line, 7)]).spans[0]
    assert span.start_line == span.end_line == 7
    assert "root_path" in span.text and len(span.text) <= MAX_SPAN_CHARS + 2 and span.text.startswith("…")


@pytest.mark.parametrize(
    ("question", "rows", "relevant", "sufficient"),
    [
        ("Какое значение по умолчанию у max_age?", [CORS_ROW], True, True),
        ("Какое значение по умолчанию у max_age?", [CORS_ROW], False, False),
        ("Как настроить Kafka consumer groups?", [CORS_ROW], True, False),
        ("Что в файле cors.md?", [ev("x", "docs/ru/docs/tutorial/cors.md", "# Заголовок\n\nтекст", 1,
                                     lanes={"exact": 1})], True, True),
        ("Что в файле cors.md?", [], True, False),
    ],
    ids=["hit", "gate-failed", "no-hit", "exact-file", "no-rows"],
)
def test_sufficiency(question: str, rows: list[EvidenceRow], relevant: bool, sufficient: bool) -> None:
    assert run(question, rows, relevant).sufficient is sufficient


def test_an_exact_file_without_a_hit_shows_its_opening() -> None:
    row = ev("x", "docs/guide.md", "\n# Руководство\nПервый абзац.\n\nДальше.", 3, lanes={"exact": 1})
    analysis = run("Что в этом файле?", [row])
    spans = [(s.start_line, s.end_line, s.text) for s in analysis.spans]
    assert spans == [(4, 5, "# Руководство\nПервый абзац.")]


def test_coverage_is_the_share_of_terms_in_the_spans_by_five_letter_stems() -> None:
    analysis = analyze("q", ["умолчанию", "max_age", "kafka", "allow_credentials"], [CORS_ROW], True)
    assert analysis.coverage == 0.75  # "умолчания" would match too: stems are the first 5 letters
    assert analyze("q", ["умолчания"], [CORS_ROW], True).coverage == 1.0


def test_files_are_grouped_in_rank_order_with_a_reason() -> None:
    rows = [
        ev("a1", "docs/a.md", "Про middleware и max_age.", 5),
        ev("b1", "docs/b.md", "Ничего по теме.", 1, metadata={"title": "Документ B"}),
        ev("a2", "docs/a.md", "Ещё про max_age тут.", 20),
        ev("b0", "docs/b.md", "Каталог", 1, layer="D1_DOCUMENT_CATALOG", title="B: каталог", span_end=50),
    ]
    files = run("max_age", rows).files
    assert [(f.path, f.rows, f.best_rank) for f in files] == [("docs/a.md", ["a1", "a2"], 1),
                                                              ("docs/b.md", ["b1", "b0"], 2)]
    assert files[1].title == "B: каталог"
    assert "max_age" in files[0].reason and files[0].start_line in (5, 20)
    assert files[1].reason == "Ничего по теме." and (files[1].start_line, files[1].end_line) == (1, 1)


def test_spans_are_capped_per_file_and_overall_and_come_in_rank_order() -> None:
    rows = [ev(f"r{i}", f"docs/f{i // 2}.md", "\n".join(f"max_age строка {j}" for j in range(6)), 10 * i + 1)
            for i in range(12)]
    spans = run("max_age", rows).spans
    assert len(spans) <= MAX_SPANS
    per_file: dict[str, int] = {}
    for span in spans:
        per_file[span.path] = per_file.get(span.path, 0) + 1
    assert max(per_file.values()) <= MAX_SPANS_PER_FILE
    ranks = [int(s.row_id[1:]) for s in spans]
    assert ranks == sorted(ranks)


def test_rarer_terms_and_distinctive_lines_win() -> None:
    text = "FastAPI это фреймворк.\nFastAPI: параметр `openapi_url` по умолчанию `/openapi.json`."
    rows = [ev("a", "docs/a.md", text, 1),
            ev("b", "docs/b.md", "FastAPI быстрый.", 1)]
    best = max(run("FastAPI openapi_url", rows).spans, key=lambda s: s.score)
    assert best.start_line == 2


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Как настроить CORS в FastAPI?", "ru"),
        ("Что делает jsonable_encoder в fastapi.encoders?", "ru"),
        ("How do I enable CORS in FastAPI?", "en"),
        ("What does OAuth2PasswordRequestForm contain?", "en"),
        ("Where is that documented? (прокси доверял)", "en"),
        ("А как это отключить? (CORS FastAPI)", "ru"),
        ("", "en"),
    ],
)
def test_language_of_the_request(text: str, language: str) -> None:
    assert run(text, [CORS_ROW]).language == language
    assert detect_language(text.split(" (")[0]) == language


def test_route_terms_are_used_when_no_terms_are_given() -> None:
    route = RouteResult(user_query="?", target_terms=["max_age"])
    assert analyze("А это?", [], [CORS_ROW], True, route).terms == ["max_age"]


def test_conflicting_values_across_files_are_noted() -> None:
    rows = [CORS_ROW, ev("m", "docs/ru/docs/advanced/middleware.md", "Пример: max_age=3600 для прокси.", 9)]
    conflicts = run("Какое значение max_age?", rows).conflicts
    assert conflicts == [
        "max_age: 600 (docs/ru/docs/tutorial/cors.md) ≠ 3600 (docs/ru/docs/advanced/middleware.md)"
    ]
    assert run("Какое значение max_age?", [CORS_ROW]).conflicts == []


def test_analysis_round_trips_through_graph_state() -> None:
    analysis = run("max_age", [CORS_ROW])
    assert type(analysis).model_validate(analysis.model_dump()) == analysis


def test_top_rows_add_identifier_lines_without_a_term_hit_as_low_scored_fillers() -> None:
    analysis = run("allow_origins", [CORS_ROW])
    fillers = [s for s in analysis.spans if not s.terms]
    assert fillers and all(f.score < max(s.score for s in analysis.spans) for f in fillers)


def test_catalog_cards_are_quoted_without_index_labels() -> None:
    card = "Настройка CORS\nPath: docs/cors.md\nType: doc\nSummary: CORSMiddleware и allow_origins\nSections: a; b"
    row = ev("d1", "docs/cors.md", card, 1, layer="D1_DOCUMENT_CATALOG", span_end=13)
    row = row.model_copy(update={"metadata": {"summary": "CORSMiddleware и allow_origins"}})
    spans = run("allow_origins CORSMiddleware", [row]).spans
    assert spans and all("Path:" not in s.text and "Type:" not in s.text for s in spans)
