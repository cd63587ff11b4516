"""Context retrieval on the fastapi-ru corpus (SPEC §7) through the real router, policy and adapter.

The corpus is indexed once per module with the real offline `use` embedder. Each question runs exactly
as `lotsman retrieve` runs it: `bundle.router.route(q)` → `resolve_plan` / `resolve_code_plan` →
`bundle.adapter.fetch_rows(...)`. Observed ranks are recorded in `OBSERVED` and printed at the end
(`pytest -s`) to help tune lane weights.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from graph.deps import GraphDeps, SessionBundle
from graph.settings import Settings
from nodes.context_retrieval.adapter import RetrievalResult
from nodes.context_retrieval.fusion import distinct_files
from nodes.intent_routing import RouteResult
from nodes.retrieval_policy import resolve_code_plan, resolve_plan
from stores.embedders import make_embedder
from stores.indexing.service import index_repository
from stores.layers import Layer

pytestmark = pytest.mark.corpus

SESSION = f"it-retrieval-fastapi-{uuid.uuid4().hex[:8]}"
DOCS = "docs/ru/docs/"
OBSERVED: dict[str, Any] = {}

# Regression guard: build_lexical_code once ordered by `(lower(name) = ANY(names)) DESC`, which is NULL for
# rows without a metadata name, and Postgres sorts NULLs first under DESC: the exact symbol match fell out
# of the code lane (get_openapi and APIRouter were not in the top 12 at all).


@dataclass
class Retrieved:
    route: RouteResult
    result: RetrievalResult

    @property
    def files(self) -> list[str]:
        return distinct_files(self.result.rows)

    def rank(self, path: str) -> int | None:
        return self.files.index(path) + 1 if path in self.files else None


@pytest.fixture(scope="module")
def bundle(db, fastapi_corpus) -> SessionBundle:
    t0 = time.perf_counter()
    report = index_repository(db, fastapi_corpus, session_name=SESSION, embedder=make_embedder("use"))
    OBSERVED["index_seconds"] = round(time.perf_counter() - t0, 1)
    OBSERVED["rows_written"] = report.rows_written
    assert report.files_indexed > 100, report.counts()
    return GraphDeps(settings=Settings(), db=db).bundle(SESSION)


@pytest.fixture(scope="module", autouse=True)
def _print_observed() -> Iterator[None]:
    yield
    print("\nobserved (fastapi-ru):")
    for key, value in OBSERVED.items():
        print(f"  {key}: {value}")


def retrieve(bundle: SessionBundle, question: str) -> Retrieved:
    route = bundle.router.route(question)
    plan, code_plan = resolve_plan(route), resolve_code_plan(route, bundle.symbols)
    result = bundle.adapter.fetch_rows(
        bundle.session,
        plan,
        code_plan,
        question,
        file_names=route.anchors.file_names,
        terms=route.target_terms,
    )
    got = Retrieved(route, result)
    assert_provenance(got.result)
    return got


def assert_provenance(result: RetrievalResult) -> None:
    """Every row says which lanes found it (1-based ranks) and carries a positive fused score."""
    for row in result.rows:
        assert row.lanes, row.citation
        assert all(isinstance(rank, int) and rank >= 1 for rank in row.lanes.values()), row.lanes
        assert row.fused_score > 0, row.citation
        assert 1 <= row.span_start <= row.span_end, row.citation


def observe(label: str, got: Retrieved, gold: str) -> int | None:
    rank = got.rank(gold)
    first = next((r for r in got.result.rows if r.path == gold), None)
    OBSERVED[label] = {
        "gold": gold,
        "rank": rank,
        "lanes": first.lanes if first else None,
        "top3": got.files[:3],
        "relevant": got.result.relevant,
    }
    return rank


# -- path hints --------------------------------------------------------------------------------------------


def test_exact_path_hint_comes_first(bundle: SessionBundle) -> None:
    gold = DOCS + "tutorial/cors.md"
    got = retrieve(bundle, f"Что написано в {gold}?")
    observe("exact path", got, gold)
    assert gold in got.route.anchors.target_doc_hints
    first = got.result.rows[0]
    assert first.path == gold
    assert "exact" in first.lanes
    assert got.result.relevant


@pytest.mark.parametrize(
    ("question", "gold"),
    [
        ("Что описано в cors.md?", DOCS + "tutorial/cors.md"),
        ("Что описано в файле body-multiple-params.md?", DOCS + "tutorial/body-multiple-params.md"),
    ],
)
def test_basename_hint_is_found_by_substring_lane(bundle: SessionBundle, question: str, gold: str) -> None:
    got = retrieve(bundle, question)
    rank = observe(f"basename {gold.rsplit('/', 1)[-1]}", got, gold)
    assert got.result.lane_sizes.get("exact", 0) == 0  # a bare basename is no indexed path
    assert got.result.lane_sizes.get("substring", 0) > 0
    substring_paths = {r.path for r in got.result.rows if "substring" in r.lanes}
    assert gold in substring_paths
    assert rank == 1, got.files[:5]


# -- semantic: paraphrases and cross-language --------------------------------------------------------------

RU_PARAPHRASES = [
    (
        "Как отправить письмо пользователю уже после того, как клиент получил ответ, не заставляя его ждать?",
        "tutorial/background-tasks.md",
    ),
    ("Как вернуть клиенту 404, если запрошенный элемент не найден?", "tutorial/handling-errors.md"),
    ("Как принять загруженную пользователем картинку в обработчике?", "tutorial/request-files.md"),
    (
        "Как проверить работу приложения без запуска сервера, вызывая его прямо из pytest?",
        "tutorial/testing.md",
    ),
]


@pytest.mark.parametrize(("question", "gold"), RU_PARAPHRASES)
def test_russian_paraphrase_finds_its_page(bundle: SessionBundle, question: str, gold: str) -> None:
    got = retrieve(bundle, question)
    rank = observe(f"ru paraphrase {gold}", got, DOCS + gold)
    assert rank is not None and rank <= 5, got.files[:5]


EN_QUESTIONS = [
    ("How do I return a 404 error to the client when something is not found?", "tutorial/handling-errors.md"),
    ("How do I upload a file to my API?", "tutorial/request-files.md"),
    ("How do I write tests for my application?", "tutorial/testing.md"),
]


@pytest.mark.parametrize(("question", "gold"), EN_QUESTIONS)
def test_english_question_finds_russian_page(bundle: SessionBundle, question: str, gold: str) -> None:
    got = retrieve(bundle, question)
    rank = observe(f"en {gold}", got, DOCS + gold)
    assert rank is not None and rank <= 5, got.files[:5]


# -- code identifiers --------------------------------------------------------------------------------------

CODE_QUESTIONS = [
    pytest.param(
        "Where is jsonable_encoder implemented?",
        "fastapi/encoders.py",
        "jsonable_encoder",
        id="jsonable_encoder",
    ),
    pytest.param(
        "Что делает функция get_swagger_ui_html?",
        "fastapi/openapi/docs.py",
        "get_swagger_ui_html",
        id="get_swagger_ui_html",
    ),
    pytest.param("Что делает get_openapi?", "fastapi/openapi/utils.py", "get_openapi", id="get_openapi"),
    pytest.param("Где реализован класс APIRouter?", "fastapi/routing.py", "apirouter", id="APIRouter"),
]


@pytest.mark.parametrize(("question", "gold", "symbol"), CODE_QUESTIONS)
def test_code_identifier_finds_its_definition(
    bundle: SessionBundle, question: str, gold: str, symbol: str
) -> None:
    got = retrieve(bundle, question)
    rank = observe(f"code {symbol}", got, gold)
    assert symbol in bundle.symbols
    assert got.result.lane_sizes.get("code", 0) > 0, "the identifier should trigger the code plan"
    assert rank is not None and rank <= 5, got.files[:8]
    assert any(r.path == gold and r.layer.startswith("C") for r in got.result.rows)


@pytest.mark.parametrize("name", ["get_openapi", "apirouter"])
def test_lexical_code_ranks_exact_symbol_name_first(bundle: SessionBundle, name: str) -> None:
    """Seed 001 lexical code lane with an exact symbol name: the named symbol's catalog row comes first."""
    rows = bundle.adapter.repository.retrieve_lexical_code(
        bundle.session,
        f"Что делает {name}?",
        names=[name],
        limit=24,
        layers=[Layer.C1_SYMBOL_CATALOG.value, Layer.C2_DEPENDENCY_GRAPH.value, Layer.C0_SOURCE_CHUNKS.value],
    )
    assert rows
    assert (rows[0]["metadata"].get("name") or "").lower() == name, [r["title"] for r in rows[:3]]


# -- abstention --------------------------------------------------------------------------------------------


def test_absent_topic_is_not_relevant(bundle: SessionBundle) -> None:
    got = retrieve(bundle, "Как настроить Kafka consumer group rebalancing?")
    OBSERVED["absent topic (Kafka)"] = {
        "relevant": got.result.relevant,
        "gate": got.result.gate.reason,
        "top3": got.files[:3],
    }
    assert got.result.relevant is False
    assert "kafka" not in " ".join(r.content.lower() for r in got.result.rows[:3])


def test_every_row_has_provenance_across_questions(bundle: SessionBundle) -> None:
    questions = [q for q, _ in RU_PARAPHRASES + EN_QUESTIONS] + ["Что делает get_openapi?", "cors.md"]
    for question in questions:
        result = retrieve(bundle, question).result
        assert result.rows, question
        assert len({r.id for r in result.rows}) == len(result.rows), question  # deduped


# -- a paraphrase sharing no word with its page (issue 29) ------------------------------------------------

PARAPHRASE = "allow requests from a frontend on another domain"
"""The CORS page is Russian and says none of these words; pages that share them (frontend.md, using the
request directly) rank above it."""


@pytest.mark.parametrize("ranker", [
    # first after the retrain on the rewritten dev splits (session 14), 3rd before; the retrain over eight corpora
    # (3416a7a: LOCO macro MRR 0.584 -> 0.669, fastapi-ru held out 0.721 -> 0.809) ranks "using the request
    # directly" above it again
    pytest.param("learned", marks=pytest.mark.xfail(
        strict=True, reason="the ranker trained on eight corpora ranks a page sharing the question's words first")),
    pytest.param("rrf", marks=pytest.mark.xfail(
        strict=True, reason="RRF alone ranks the CORS page behind pages that share the question's words; strict, "
                            "so the day it ranks first this is noticed")),
])
def test_a_paraphrase_finds_its_page_first(bundle: SessionBundle, ranker: str) -> None:
    route = bundle.router.route(PARAPHRASE)
    plan, code_plan = resolve_plan(route), resolve_code_plan(route, bundle.symbols)
    result = bundle.adapter.fetch_rows(bundle.session, plan, code_plan, PARAPHRASE, file_names=route.anchors.file_names,
                                       terms=route.target_terms, ranker=ranker)  # type: ignore[arg-type]
    assert distinct_files(result.rows)[0] == "docs/ru/docs/tutorial/cors.md"
