"""Eval metrics (SPEC §7, issue 12) on hand-made results: every metric can fail, n/a is never 1.0."""

from __future__ import annotations

import pytest

from evals.metrics import (
    abstention_scores,
    citations_removed_share,
    fact_covered_legacy,
    gold_identifiers,
    key_fact_coverage,
    key_fact_coverage_legacy,
    latency_summary,
    lead_citation_in_gold,
    passage_precision,
    recall_at_k,
    reciprocal_rank,
)

# Today's extractive SUMMARY answer (nodes/answer_composition/extractive.py): lead line naming the main
# source, quoted bullets each closed by its citation, a code quote as an indented fence, the sources list.
SUMMARY = """Вот что сказано об этом в проиндексированных материалах (главный источник — `docs/tutorial/cors.md`):

- «Использование CORSMiddleware»: Вы можете настроить его в приложении FastAPI. [docs/tutorial/cors.md:40-44]
- [fastapi/middleware/cors.py:1-3]
  ```
  from starlette.middleware.cors import CORSMiddleware as CORSMiddleware
  ```

Источники:
- `docs/tutorial/cors.md` — CORS (Cross-Origin Resource Sharing)
- `fastapi/middleware/cors.py`"""

FIND_FILES = """Файлы, где это описано (сначала самые подходящие):
1. `docs/tutorial/cors.md` — CORS: Список разрешённых источников allow_origins. [docs/tutorial/cors.md:50-52]
2. `docs/advanced/middleware.md` — Продвинутое использование middleware [docs/advanced/middleware.md:1-4]"""

# A FIND_FILES list without line citations (a format answer_composition may adopt).
FIND_FILES_UNCITED = """Файлы по теме:
- `docs/tutorial/cors.md` — Expose headers: список заголовков для браузера
- `docs/advanced/middleware.md` — Middleware"""

NOT_FOUND = """В проиндексированных материалах нет ответа на этот вопрос.

Ближайшие по теме файлы (ответа в них не нашлось):
- `docs/tutorial/cors.md` — CORS (Cross-Origin Resource Sharing)"""

# A block-quote answer, as issue 12 asks answer_composition to produce: the metrics must read it too.
QUOTED = """Главное — в `docs/tutorial/cors.md`:

> Используйте `allow_origins=["*"]`, чтобы разрешить любые источники.
> — docs/tutorial/cors.md:50-52

> Заголовок `Access-Control-Max-Age` задаёт время кэширования.
[docs/tutorial/cors.md:60-61]

> Несвязанная строка о роутерах.
[docs/tutorial/bigger-applications.md:10-11]"""

KNOWN = ["docs/tutorial/cors.md", "fastapi/middleware/cors.py", "docs/advanced/middleware.md",
         "docs/tutorial/bigger-applications.md"]


# --- key-fact coverage ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("facts", "answer", "options", "expected"),
    [
        (["Вы можете настроить"], SUMMARY, {}, 1.0),  # in a quote: the answer's own text
        (["CORSMiddleware as CORSMiddleware"], SUMMARY, {}, 1.0),  # inside a fenced code quote
        (["Cross-Origin Resource Sharing"], SUMMARY, {}, 0.0),  # only in the sources list
        (["middleware/cors.py"], SUMMARY, {}, 0.0),  # only in a citation and the sources list
        (["tutorial/cors.md"], SUMMARY, {}, 0.0),  # only in the lead line's path, citations, sources
        (["CORS (Cross-Origin Resource Sharing)"], NOT_FOUND, {"abstained": True}, 0.0),  # nearest-files list
        (["нет ответа"], NOT_FOUND, {"abstained": True}, 0.0),  # abstained: 0 whatever it says
        (["allow_origins"], FIND_FILES, {"find_files": True}, 1.0),  # the one-line reason is own text
        (["tutorial/cors.md"], FIND_FILES, {"find_files": True}, 1.0),  # a path fact may match listed files
        (["docs/advanced/middleware.md"], FIND_FILES, {"find_files": True}, 1.0),
        (["tutorial/cors.md"], FIND_FILES, {}, 0.0),  # ... only in a FIND_FILES answer
        (["Expose headers"], FIND_FILES_UNCITED, {"find_files": True}, 1.0),  # a file's reason is the answer
        (["Expose headers"], FIND_FILES_UNCITED, {}, 0.0),  # ... a sources list elsewhere
        (["tutorial/cors.md"], FIND_FILES_UNCITED, {"find_files": True}, 1.0),
        (["tutorial/other.md"], FIND_FILES, {"find_files": True}, 0.0),
        (['allow_origins=["*"]'], QUOTED, {}, 1.0),  # punctuation folded
        (["Access-Control-Max-Age", "Vary"], QUOTED, {}, 0.5),
        (["docs/tutorial/cors.md"], QUOTED, {}, 0.0),  # a bare `path:a-b` under a quote is a citation
    ],
)
def test_key_fact_counts_only_the_answers_own_text(facts, answer, options, expected) -> None:
    assert key_fact_coverage(facts, answer, known_paths=KNOWN, **options) == expected


@pytest.mark.parametrize(
    ("fact", "answer", "new", "legacy"),
    [
        ("HTTP 422", "returns HTTP 4220", 0.0, 1.0),  # whole words now, a substring before
        ("Значение по умолчанию", "значения по-умолчанию!", 0.0, 1.0),  # no 5-letter stem match
        ("ошибка валидации запроса", "ошибку валидации", 0.0, 1.0),  # no "60% of the words" fallback
        ("по умолчанию", "значение ПО-УМОЛЧАНИЮ.", 1.0, 1.0),  # case and punctuation still folded
        ("allow_origins", "see [docs/allow_origins.md:1-2]", 0.0, 1.0),  # citations give no credit
    ],
)
def test_new_rule_beside_the_legacy_one(fact: str, answer: str, new: float, legacy: float) -> None:
    assert key_fact_coverage([fact], answer) == new
    assert key_fact_coverage_legacy([fact], answer) == legacy
    assert fact_covered_legacy(fact, answer) is bool(legacy)


def test_key_fact_coverage_without_facts_is_na() -> None:
    assert key_fact_coverage([], SUMMARY) is None
    assert key_fact_coverage_legacy([], SUMMARY) == 1.0  # the legacy rule's flattering default, kept as was


# --- citations --------------------------------------------------------------------------------------
def cite(path: str) -> dict:
    return {"path": path, "start_line": 1, "end_line": 2}


@pytest.mark.parametrize(
    ("citations", "answer", "gold", "expected"),
    [
        ([cite("docs/a.md"), cite("docs/b.md")], "", ["docs/a.md"], 1.0),
        ([cite("docs/b.md"), cite("docs/a.md")], "", ["docs/a.md"], 0.0),  # gold, but not first
        ([], "no citation at all", ["docs/a.md"], None),
        ([], "see [docs/b.md:1-2] and [docs/a.md:3-4]", ["docs/a.md"], 0.0),  # read from the text
        ([], "`fastapi/routing.py:10-20` is where", ["fastapi/routing.py"], 1.0),
    ],
)
def test_lead_citation_in_gold(citations, answer, gold, expected) -> None:
    assert lead_citation_in_gold(citations, answer, gold) == expected


@pytest.mark.parametrize(("removed", "kept", "expected"), [(None, 3, None), (0, 0, None), (1, 3, 0.25), (0, 2, 0.0)])
def test_citations_removed_share(removed, kept, expected) -> None:
    assert citations_removed_share(removed, kept) == expected


# --- passages ---------------------------------------------------------------------------------------
def test_gold_identifiers_are_the_identifier_shaped_tokens_of_key_facts() -> None:
    assert gold_identifiers(['allow_origins=["*"]', "get_openapi()", "APIRouter", "по умолчанию",
                             "--forwarded-allow-ips", "fastapi.routing"]) == [
        "allow_origins", "get_openapi", "APIRouter", "--forwarded-allow-ips", "fastapi.routing"]


@pytest.mark.parametrize(
    ("answer", "facts", "expected"),
    [
        (QUOTED, ["Access-Control-Max-Age"], 1 / 3),
        (QUOTED, ['allow_origins=["*"]', "Max-Age"], 2 / 3),  # `allow_origins` matched as a gold identifier
        (SUMMARY, ["CORSMiddleware"], 1.0),  # both bullets name it ("Использование CORSMiddleware")
        (SUMMARY, ["Cross-Origin Resource Sharing"], 0.0),  # in the sources list, which quotes nothing
        (NOT_FOUND, ["CORS"], None),  # nothing quoted
        ("Просто текст без цитат.", ["текст"], None),
    ],
)
def test_passage_precision(answer, facts, expected) -> None:
    assert passage_precision(answer, facts, KNOWN) == pytest.approx(expected) if expected is not None else (
        passage_precision(answer, facts, KNOWN) is None)


# --- retrieval --------------------------------------------------------------------------------------
def test_empty_retrieval_scores_zero() -> None:
    assert recall_at_k([], ["a.md"], 5) == 0.0
    assert reciprocal_rank([], ["a.md"]) == 0.0


@pytest.mark.parametrize(
    ("retrieved", "gold", "k", "expected"),
    [
        (["a", "a", "b", "c"], ["c"], 3, 1.0),  # distinct files: a, b, c
        (["a", "b", "c", "d", "e", "f"], ["f"], 5, 0.0),
        (["x", "g1", "y", "g2"], ["g1", "g2"], 2, 0.5),
    ],
)
def test_recall_counts_distinct_files_in_rank_order(retrieved, gold, k, expected) -> None:
    assert recall_at_k(retrieved, gold, k) == expected


def test_mrr_is_inverse_rank_of_first_gold_distinct_file() -> None:
    assert reciprocal_rank(["a", "a", "b", "g"], ["g"]) == pytest.approx(1 / 3)


# --- set level --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([(False, True), (False, False), (True, True), (True, False)], (0.5, 0.5)),  # (answerable, abstained)
        ([(True, False), (True, False)], (None, None)),  # nothing abstained, nothing unanswerable: n/a, not 1.0
        ([(True, True), (True, False)], (0.0, None)),
        ([(False, False), (True, False)], (None, 0.0)),
    ],
)
def test_abstention_precision_and_recall(flags, expected) -> None:
    assert abstention_scores([{"answerable": a, "abstained": b} for a, b in flags]) == expected


def test_latency_summary_has_nodes_and_total() -> None:
    lat = latency_summary([{"a": 10.0, "b": 20.0}, {"a": 30.0, "b": 40.0}])
    assert lat["a"]["p50"] == 20.0 and lat["total"]["p95"] == pytest.approx(68.0)
