"""Answers on the fastapi-ru corpus (SPEC §7): passage selection with the real `use` embedder, the readable
extractive answer, and the GigaChat analysis path through the real SDK against the fake GigaChat server.

Each question runs as the graph runs it (router → plans → `adapter.fetch_rows` → `analyze` →
composer), called directly so the passage stage can be checked before the graph wiring passes `embed`.
Observed leads and timings are printed at the end (`pytest -s`).
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from graph.deps import GraphDeps, SessionBundle
from graph.settings import Settings
from nodes.answer_composition import Answer, compose_extractive, compose_with_llm
from nodes.context_analysis import MAX_PASSAGES, MAX_SUPPORTING, Analysis, analyze, analyze_with_llm
from nodes.evidence import EvidenceRow
from nodes.intent_routing import RouteResult
from nodes.retrieval_policy import resolve_code_plan, resolve_plan
from nodes.terms import key_terms
from stores.embedders import make_embedder
from stores.indexing.service import index_repository
from tests.fakes.gigachat_server import FakeGigaChatServer, FunctionCall, Text, make_fake_gigachat_chat

pytestmark = pytest.mark.corpus

SESSION = f"it-answers-fastapi-{uuid.uuid4().hex[:8]}"
DOCS = "docs/ru/docs/"
OBSERVED: dict[str, Any] = {}
MAX_ANSWER_CHARS = 1200


@dataclass
class Asked:
    route: RouteResult
    rows: list[EvidenceRow]
    analysis: Analysis
    answer: Answer
    analysis_ms: float


@pytest.fixture(scope="module")
def bundle(db, fastapi_corpus) -> SessionBundle:
    # The chunk cache is keyed by blob and embedder: after test_retrieval_fastapi this is mostly cache hits.
    report = index_repository(db, fastapi_corpus, session_name=SESSION, embedder=make_embedder("use"))
    assert report.files_indexed > 100, report.counts()
    return GraphDeps(settings=Settings(), db=db).bundle(SESSION)


@pytest.fixture(scope="module", autouse=True)
def _print_observed() -> Iterator[None]:
    yield
    print("\nobserved (answers, fastapi-ru):")
    for key, value in OBSERVED.items():
        print(f"  {key}: {json.dumps(value, ensure_ascii=False)}")


def ask(bundle: SessionBundle, question: str) -> Asked:
    route = bundle.router.route(question)
    result = bundle.adapter.fetch_rows(
        bundle.session, resolve_plan(route), resolve_code_plan(route, bundle.symbols), question,
        file_names=route.anchors.file_names, terms=route.target_terms)
    rows = list(result.rows)
    t0 = time.perf_counter()
    analysis = analyze(question, key_terms(question, route.target_terms), rows, result.relevant, route)
    ms = (time.perf_counter() - t0) * 1000
    answer = compose_extractive(question, analysis, route)
    lead = analysis.spans[0].citation if analysis.spans else None
    OBSERVED[question] = {"lead": lead, "chars": len(answer.text), "analysis_ms": round(ms, 1)}
    return Asked(route, rows, analysis, answer, ms)


def inside(answer: Answer, rows: list[EvidenceRow]) -> bool:
    return all(any(r.path == c.path and r.span_start <= c.start_line <= c.end_line <= r.span_end for r in rows)
               for c in answer.citations)


# -- the readable offline answer ---------------------------------------------------------------------------
DEFAULT_VALUE_QUESTION = "Какое значение по умолчанию у max_age в CORSMiddleware?"


def test_a_default_value_question_leads_with_the_line_that_states_it(bundle: SessionBundle) -> None:
    got = ask(bundle, DEFAULT_VALUE_QUESTION)
    lead = got.analysis.spans[0]
    assert lead.path == DOCS + "tutorial/cors.md" and "По умолчанию `600`" in lead.text
    assert got.answer.text.startswith(f"Ответ — в `{DOCS}tutorial/cors.md`")
    assert inside(got.answer, got.rows)


def test_a_default_value_answer_stays_short(bundle: SessionBundle) -> None:
    assert len(ask(bundle, DEFAULT_VALUE_QUESTION).answer.text) <= MAX_ANSWER_CHARS


QUESTIONS = [
    "Как подключить статические файлы?",
    "Что делает функция jsonable_encoder?",
    "How do I run background tasks after returning a response?",
    "Как ограничить длину строкового query-параметра?",
    "Как настроить CORS в приложении?",
    "Как объявить зависимость с yield?",
]


def test_answers_are_short(bundle: SessionBundle) -> None:
    lengths = [len(ask(bundle, q).answer.text) for q in QUESTIONS]
    assert statistics.median(lengths) <= MAX_ANSWER_CHARS, lengths


def test_answers_are_quotes_of_the_evidence(bundle: SessionBundle) -> None:
    """Every answer cites its quotes inside the evidence (the analysis no longer embeds: the units were scored
    by retrieval; headings are units the scorer may rank, no longer a rule's exclusion)."""
    asked = [ask(bundle, q) for q in QUESTIONS]
    for got in asked:
        assert got.answer.citations and len(got.answer.citations) <= 1 + MAX_SUPPORTING and inside(got.answer, got.rows)
        assert len(got.analysis.passages) <= MAX_PASSAGES + 1 + MAX_SUPPORTING
    OBSERVED["analysis_ms_p50_with_use"] = round(statistics.median(a.analysis_ms for a in asked), 1)


def test_an_english_question_gets_english_words_around_russian_quotes(bundle: SessionBundle) -> None:
    got = ask(bundle, "How do I run background tasks after returning a response?")
    assert got.answer.text.startswith("The answer is in `") and "BackgroundTasks" in got.answer.text


def test_where_in_code_lists_files_with_one_line_each(bundle: SessionBundle) -> None:
    got = ask(bundle, "Где в коде объявлен класс APIRouter?")
    assert got.route.subintent == "FIND_FILES", got.route  # a misroute is a failure, not a skip
    items = [line for line in got.answer.text.split("\n")[1:] if line.strip()]
    assert all(line[0].isdigit() for line in items) and len(items) <= 5
    assert any("fastapi/routing.py" in line for line in items)


# -- the two fastapi-ru questions: they depend on retrieval too ----------------------------------
@pytest.mark.xfail(strict=True, reason=(
    "retrieval: the FileResponse section (custom-response.md:197-215) is not in the fused evidence (only "
    "custom-response.md:80-92 is, checked again on 2026-11-30 with the eval index); an answer can only quote "
    "what retrieval returns. Given the whole file, USE also ranks the XML passage of response-directly.md "
    "closer to the question (0.47) than the FileResponse paragraph (0.22)"))
def test_file_download_quotes_the_file_response_section(bundle: SessionBundle) -> None:
    got = ask(bundle, "Как вернуть файл пользователю для скачивания?")
    assert any("FileResponse" in s.section for s in got.analysis.spans), got.answer.text


@pytest.mark.xfail(strict=True, reason=(
    "retrieval: fastapi/utils.py (generate_unique_id) is not in the evidence; on 2026-11-30 the code lane "
    "returned the deprecated fastapi/openapi/utils.py generate_operation_id and the Operation model card "
    "instead. Given both chunks, the passage stage prefers the function, also when retrieval ranks the "
    "model first (tests/unit/test_context_analysis.py)"))
def test_operation_id_quotes_the_function_that_generates_it(bundle: SessionBundle) -> None:
    got = ask(bundle, "Где в коде вычисляется operationId по умолчанию?")
    assert "generate_unique_id" in got.answer.text, got.answer.text


# -- the GigaChat analysis path, through the real SDK ------------------------------------------------------
QUESTION = "Какое значение по умолчанию у max_age в CORSMiddleware?"


@pytest.fixture
def server() -> Iterator[FakeGigaChatServer]:
    with FakeGigaChatServer() as srv:
        yield srv


def test_gigachat_chooses_and_orders_the_passages_then_answers_from_them(
        bundle: SessionBundle, server: FakeGigaChatServer) -> None:
    import asyncio

    got = ask(bundle, QUESTION)
    pool = got.analysis.passages
    assert len(pool) >= 2
    second = pool[1]

    def handler(request: dict[str, Any]) -> Any:
        if request.get("functions"):
            return FunctionCall({"passages": [2, 1], "sufficient": True})
        return Text(f"По умолчанию `max_age` равен `600` [{pool[0].citation}]; см. также [{second.citation}] "
                    "и [docs/ru/docs/secret.md:1-9].")

    server.chat_handler = handler
    model = make_fake_gigachat_chat(server, timeout=5.0)

    async def run() -> tuple[Analysis | None, Answer | None]:
        chosen = await analyze_with_llm(model, QUESTION, got.analysis, got.rows, got.route, 5.0)
        assert chosen is not None
        return chosen, await compose_with_llm(model, QUESTION, chosen, got.rows, got.route, 5.0)

    chosen, answer = asyncio.run(run())
    assert chosen is not None and chosen.analysed_by == "llm" and chosen.spans == [pool[1], pool[0]]
    assert answer is not None and answer.mode == "llm" and "secret.md" not in answer.text
    assert {str(c) for c in answer.citations} == {pool[0].citation, second.citation}

    analysis_req, answer_req = (r.json for r in server.chat_requests)
    assert analysis_req["functions"][0]["name"] == "choose_passages"
    sent = analysis_req["messages"][-1]["content"]
    assert sent.count("<passage ") == len(pool) and f'lines="{pool[0].start_line}-{pool[0].end_line}" n="1"' in sent
    assert answer_req["stream"] is True and "Most relevant documents: n=2, n=1" in answer_req["messages"][-1]["content"]


@pytest.mark.parametrize("reply", ["not json at all", {"passages": [99], "sufficient": True}],
                         ids=["prose", "unknown-passage"])
def test_gigachat_garbage_or_outage_keeps_the_deterministic_analysis(
        bundle: SessionBundle, server: FakeGigaChatServer, reply: Any) -> None:
    import asyncio

    got = ask(bundle, QUESTION)
    server.chat_handler = lambda request: Text(reply) if isinstance(reply, str) else FunctionCall(reply)
    model = make_fake_gigachat_chat(server, timeout=5.0)
    assert asyncio.run(analyze_with_llm(model, QUESTION, got.analysis, got.rows, got.route, 5.0)) is None
    server.stop()
    assert asyncio.run(analyze_with_llm(model, QUESTION, got.analysis, got.rows, got.route, 2.0)) is None
