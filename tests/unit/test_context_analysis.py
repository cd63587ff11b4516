"""context_analysis: passages that read the question, coherent leads, code definitions, sufficiency, language."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.context_analysis import (
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


def test_source_chunks_with_label_lines_stay_aligned() -> None:
    code = "    def include_router(self, router):\n        self.routes.extend(router.routes)"
    content = "# class APIRouter(routing.Router)  (fastapi.routing.APIRouter)\n" + code
    row = ev("c0", "fastapi/routing.py", content, 1200, layer="C0_SOURCE_CHUNKS", span_end=1201)
    assert [line.number for line in aligned_lines(row)] == [1200, 1201]
    span = run("What does include_router do?", [row]).spans[0]
    assert (span.start_line, span.code) == (1200, True) and "def include_router" in span.text


@pytest.mark.parametrize("layer", ["D1_DOCUMENT_CATALOG", "D2_FACT_INDEX", "D3_ENTITY_CATALOG"])
def test_synthesized_rows_are_cited_by_their_whole_span(layer: str) -> None:
    row = ev("s", "fastapi/routing.py", "APIRouter — class\n   groups path operations", 100, layer=layer,
             span_end=180)
    span = run("Что такое APIRouter?", [row]).spans[0]
    assert (span.start_line, span.end_line) == (100, 180)
    assert span.text == "APIRouter — class groups path operations"


@pytest.mark.parametrize("layer", ["C1_SYMBOL_CATALOG", "C3_ENTRYPOINTS"])
def test_a_card_is_a_scored_unit_citing_its_first_lines(layer: str) -> None:
    """A symbol or entrypoint card is a unit of the scorer (its text, its first lines), not its whole span."""
    row = ev("s", "fastapi/routing.py", "APIRouter — class\n   groups path operations", 100, layer=layer,
             span_end=180)
    span = run("Что такое APIRouter?", [row]).spans[0]
    assert (span.start_line, span.end_line, span.kind, span.code) == (100, 101, "card", False)
    assert span.text == "APIRouter — class\n   groups path operations"


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


def test_coverage_is_the_share_of_terms_in_the_spans_by_five_letter_stems() -> None:
    analysis = analyze("q", ["умолчанию", "max_age", "kafka", "allow_credentials"], [CORS_ROW], True)
    assert analysis.coverage == 0.75  # "умолчания" would match too: stems are the first 5 letters
    assert analyze("q", ["умолчания"], [CORS_ROW], True).coverage == 1.0


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
    stated = "* `max_age` - время кэширования ответов. По умолчанию `3600`."
    example = ev("e", "docs/ru/docs/advanced/proxy.md", "Пример: max_age=7200 для прокси.", 9)
    rows = [CORS_ROW, ev("m", "docs/ru/docs/advanced/middleware.md", stated, 9), example]
    conflicts = run("Какое значение max_age?", rows).conflicts
    assert conflicts == [
        "max_age: 600 (docs/ru/docs/tutorial/cors.md) ≠ 3600 (docs/ru/docs/advanced/middleware.md)"
    ]
    assert run("Какое значение max_age?", [CORS_ROW]).conflicts == []
    assert run("Какое значение max_age?", [CORS_ROW, example]).conflicts == []  # an example is not a statement


def test_analysis_round_trips_through_graph_state() -> None:
    analysis = run("max_age", [CORS_ROW])
    assert type(analysis).model_validate(analysis.model_dump()) == analysis


def test_catalog_cards_are_quoted_without_index_labels() -> None:
    card = "Настройка CORS\nPath: docs/cors.md\nType: doc\nSummary: CORSMiddleware и allow_origins\nSections: a; b"
    row = ev("d1", "docs/cors.md", card, 1, layer="D1_DOCUMENT_CATALOG", span_end=13)
    row = row.model_copy(update={"metadata": {"summary": "CORSMiddleware и allow_origins"}})
    spans = run("allow_origins CORSMiddleware", [row]).spans
    assert spans and all("Path:" not in s.text and "Type:" not in s.text for s in spans)



# --- passages that read the question ---------------------------------------------------------------------
FILE_MD = """## Ответы { #responses }

/// tip | Подсказка

Смотрите также [HTML](html.md), [Потоки](stream.md) и [JSON](json.md).

///

### `FileResponse` { #fileresponse }

Асинхронно отправляет файл как ответ для скачивания.

Для создания экземпляра принимает иной набор аргументов:

- `path` — путь к файлу, который будет отправлен.
- `filename` — если задан, будет включён в заголовок `Content-Disposition`.

{* ../../docs_src/custom_response/tutorial009_py310.py hl[2,10] *}

### `RedirectResponse` { #redirectresponse }

Возвращает HTTP-редирект на другой адрес."""
FILE_ROW = ev("resp", "docs/ru/docs/advanced/custom-response.md", FILE_MD, 190)
LINKS_ROW = ev("links", "docs/ru/docs/index.md", "## См. также\n\n- [Скачивание файлов](a.md)\n- [Файлы](b.md)", 1)
TOC_ROW = ev("toc", "docs/README.md", "| page | about |\n|---|---|\n| [CORS](tutorial/cors.md) | CORS middleware |\n"
             "| [Files](advanced/files.md) | file responses |\n| [Redirects](advanced/redirect.md) | redirects |", 1)


def lead(question: str, rows: list[EvidenceRow], **kw: Any):
    analysis = analyze(question, key_terms(question), rows, True, **kw)
    assert analysis.spans, analysis
    return analysis.spans[0]


@pytest.mark.parametrize(
    ("question", "rows", "never"),
    [
        ("Где скачивание файлов описано?", [LINKS_ROW, FILE_ROW], "[Скачивание файлов](a.md)"),
        ("Подсказка про HTML потоки", [FILE_ROW], "Смотрите также"),
        ("tutorial009_py310 docs_src", [FILE_ROW], "{*"),
        ("FileResponse", [FILE_ROW], "### `FileResponse`"),
        ("tip Подсказка", [FILE_ROW], "///"),
        ("Where is CORS described?", [TOC_ROW, FILE_ROW], "[CORS](tutorial/cors.md)"),
    ],
    ids=["link-list", "see-also-links", "include-line", "heading", "admonition-marker", "toc-table"],
)
def test_headings_link_lists_and_boilerplate_are_never_quoted(question: str, rows: list[EvidenceRow],
                                                             never: str) -> None:
    analysis = analyze(question, key_terms(question), rows, True)
    assert all(never not in s.text for s in [*analysis.spans, *analysis.passages])


def test_passages_keep_exact_line_numbers() -> None:
    lines = source_lines(FILE_MD, 190)
    analysis = analyze("Какие аргументы принимает FileResponse?", ["аргументы", "fileresponse"], [FILE_ROW], True)
    for span in analysis.passages:
        shown = [line for line in span.text.split("\n") if line.strip()]
        assert shown[0] == lines[span.start_line] and shown[-1] == lines[span.end_line]
        assert all(line in lines.values() for line in shown)


GROUP_PY = '''def deep_update(a, b):
    for key, value in b.items():
        a[key] = value


def generate_unique_id(route: "APIRoute") -> str:
    """The default operationId of a route."""
    operation_id = f"{route.name}{route.path_format}"
    operation_id = re.sub(r"\\W", "_", operation_id)
    return f"{operation_id}_{list(route.methods)[0].lower()}"


def get_value_or_default(first, *extra):
    return first'''
LONG_PY = "\n".join([
    "def get_openapi(",
    "    *,",
    "    title: str,",
    "    routes: Sequence[BaseRoute],",
    ") -> dict[str, Any]:",
    '    """Build the OpenAPI schema of the app."""',
    *[f"    step_{i} = prepare({i})" for i in range(20)],
    "    operation_ids: set[str] = set()",
    *[f"    more_{i} = other({i})" for i in range(10)],
    "    output = {'openapi': version, 'info': info}",
    "    return output",
])
CONFIRM_PY = "\n".join([
    "def confirm(text: str, default: bool = False) -> bool:",
    '    """Prompts for confirmation (yes/no question)."""',
    *[f"    step_{i} = prepare({i})" for i in range(20)],
    "    while True:",
    "        value = visible_prompt_func(prompt).lower().strip()",
    "        if value in ('y', 'yes'):",
    "            return True",
    *[f"        more_{i} = other({i})" for i in range(10)],
    '        echo("Error: invalid input", err=err)',
])
RUNNER_PY = "\n".join([
    "class CliRunner:",
    '    """The CLI runner provides functionality to invoke a Click command line',
    "    script for unittesting purposes in a isolated environment.  This only",
    "    works in single-threaded systems without any concurrency as it changes the",
    "    global interpreter state.",
    "",
    "    :param charset: the character set for the input and output data.",
    '    """',
    *[f"    step_{i} = prepare({i})" for i in range(20)],
])
ONCE_PY = "\n".join([
    "def configure_once(processors=None):",
    '    """Configures if structlog is not configured yet."""',
    *[f"    configured_{i} = configure_part({i})" for i in range(15)],
    "    if _CONFIG.is_configured:",
    '        warnings.warn("Repeated configuration attempted.", RuntimeWarning, stacklevel=2)',
])
PROCESS_PY = "\n".join([
    "def _process_event(self, method_name, event, event_kw):",
    '    """Combines creates an event_dict and runs the chain."""',
    *[f"        event_dict_{i} = proc(event_dict)" for i in range(15)],
    "    if isinstance(event_dict, str):",
    "        return (event_dict,), {}",
    "    raise ValueError(",
    '        "Last processor didn\'t return an appropriate value.  "',
    '        "Valid return values are a dict, a tuple of (args, kwargs), bytes, or a str."',
    "    )",
    "    after = 1",
])
MODEL_PY = "class Operation(BaseModel):\n    tags: list[str] | None = None\n    operationId: str | None = None"


README = ev("readme", "README.md", "# Click\n\nClick is a Python package for creating command line interfaces.", 1,
            lanes={"landing": 1})
CONTEXT = ev("ctx", "click/core.py", "class Context:\n    \"\"\"The context is a special internal object.\"\"\"", 200,
             layer="C0_SOURCE_CHUNKS")


@pytest.mark.parametrize(
    ("rows", "lead"),
    [
        ([README, CONTEXT], "README.md"),  # the front door is retrieval's best file: it leads the overview
        ([CONTEXT, README], "click/core.py"),  # a question about one part: that part's file keeps the lead
    ],
)
def test_an_overview_leads_with_the_landing_page_only_when_retrieval_ranked_it_first(
        rows: list[EvidenceRow], lead: str) -> None:
    question = "What is a context in Click?"
    got = analyze(question, ["context", "click"], rows, relevant=True, question=question, overview=True)
    assert got.sufficient and got.spans[0].path == lead


ENGLISH_CODE = ev("c0", "click/_termui_impl.py", '    def get_editor(self) -> str:\n'
                  '        for key in "VISUAL", "EDITOR":\n            rv = os.environ.get(key)', 694,
                  layer="C0_SOURCE_CHUNKS")


@pytest.mark.parametrize(
    ("cross_lingual", "sufficient"),
    [(True, True), (False, False)],
    ids=["cross-lingual-by-its-best-unit", "same-language-needs-a-key-term"],
)
def test_a_cross_lingual_request_is_answered_by_its_best_unit(cross_lingual: bool, sufficient: bool) -> None:
    question = "Какой редактор откроется, если я его не указал?"
    analysis = analyze(question, key_terms(question), [ENGLISH_CODE], True, cross_lingual=cross_lingual)
    assert analysis.sufficient is sufficient
    if sufficient:
        assert "VISUAL" in analysis.spans[0].text


EXC_PY = '''class HTTPException(StarletteHTTPException):
    """
    An HTTP exception you can raise in your own code to show errors to the client.

    ```python
    from fastapi import FastAPI, HTTPException
    ```
    """'''
