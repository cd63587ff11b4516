"""Issue 41 item 4: the general route reads the project. The question decides whether the repository's front
doors (landing pages) compete and whether it is an overview, never its route: GENERAL_QA is seed 002's fallback
for any question without a docs anchor, mostly a practical one. A question asking what runs on a schedule or
in the background is answered by the C3 entrypoint rows, which lead whatever the route."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.context_retrieval.adapter import RetrievalAdapter, landing_request
from nodes.intent_routing.models import RouteAnchors, RouteResult
from nodes.layout import discover_layout
from nodes.retrieval_policy import RetrievalPlan, resolve_code_plan, resolve_plan
from nodes.retrieval_policy.code_plan import ENTRY_ONLY_LAYERS, entrypoint_words
from stores.embedders import FakeEmbeddings
from stores.sessions import RagSession

LAYOUT = discover_layout(["README.md", "docs/index.md", "docs/options.md", "src/click/__init__.py",
                          "src/click/core.py", "app/tasks.py"])
SESSION = RagSession(rag_session_id="s", name="s", embedder="fake", embedding_dim=64, active_generation=1)


class Repository:
    """Nothing but the landing pages: records which exact look-ups were made."""

    def __init__(self) -> None:
        self.exact: list[list[str]] = []

    def retrieve(self, session: RagSession, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def retrieve_lexical_code(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def retrieve_exact_files(self, session: RagSession, paths: list[str], **kwargs: Any) -> list[dict[str, Any]]:
        self.exact.append(list(paths))
        return [{"id": p, "path": p, "layer": "D0_DOC_CHUNKS", "title": "", "content": "", "metadata": {},
                 "span_start": 1, "span_end": 2} for p in paths]

    def retrieve_chunks_by_path_substrings(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def absent_terms(self, session: RagSession, words: list[str]) -> list[str]:
        return []


def route(query: str, intent: str = "GENERAL_QA", aliases: tuple[str, ...] = ()) -> RouteResult:
    return RouteResult(
        routing_domain="GENERAL" if intent == "GENERAL_QA" else "DOCS", intent=intent, subintent="SUMMARY",
        user_query=query, normalized_query=query, target_terms=[], anchors=RouteAnchors(matched_aliases=list(aliases)),
        confidence=0.5, routing_mode="fallback", llm_router_used=False, reason_short="test")


# (question, lands on the front doors, an overview): the same on the general route and on the docs route
CASES = [
    # practical "how do I" questions without a docs anchor: seed 002 routes them GENERAL_QA
    ("How do I grab one keystroke without waiting for Enter?", False, False),
    ("Как сделать, чтобы программа сама спрашивала значение, если его не передали в командной строке?", False,
     False),
    ("What exit status does a Click program return for a usage error, compared with other Click errors?", False,
     False),
    ("Как Click скрывает введённое значение в сообщении об ошибке, если поле ввода было скрытым?", False, False),
    # about the repository itself
    ("What is click and who is it meant for?", True, True),
    ("Что это за библиотека?", True, True),
    ("How is this project organised?", True, True),
    ("Как устроен этот проект: на чём он написан и где хранит данные?", True, False),
    ("What runs as a background task in this project?", True, False),
]


@pytest.mark.parametrize("intent", ["GENERAL_QA", "DOC_EXPLAIN"])
@pytest.mark.parametrize(("question", "landing", "overview"), CASES, ids=[c[0][:40] for c in CASES])
def test_the_question_decides_the_landing_pages_not_the_route(question: str, landing: bool, overview: bool,
                                                               intent: str) -> None:
    repository = Repository()
    adapter = RetrievalAdapter(repository, FakeEmbeddings(), layout=LAYOUT)  # type: ignore[arg-type]
    plan = resolve_plan(route(question, intent))
    gathered = adapter.gather_lanes(SESSION, plan, None, question)
    assert ("landing" in gathered.lanes) is landing, gathered.lanes.keys()
    assert gathered.overview is overview
    assert landing_request(question, LAYOUT) is landing


def test_the_general_plan_is_still_seed_000s() -> None:
    plan = resolve_plan(route("How do I grab one keystroke without waiting for Enter?"))
    assert plan == RetrievalPlan(profile="general_qa_grounded_summary", layers=["D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"],
                                 limit=8, filters=plan.filters)
    assert plan.filters.path_prefixes in (None, [])


# (question, an entrypoint inventory: C3 rows alone, the best one leads)
ENTRY_CASES = [
    ("What runs on a schedule?", True),
    ("Что запускается по расписанию?", True),
    ("What runs as a background task in this project?", True),
    ("What runs as a background task / on a schedule in this project?", True),
    ("Which background jobs does this project run?", True),
    ("Какие фоновые задачи есть в проекте?", True),
    ("Что выполняется в фоне?", True),
    # docs questions about background work: the feature, a parameter, a behaviour (fastapi-ru, atlas-pm dev)
    ("Why, since 0.106.0, can't a background task use the object a yield dependency handed out?", False),
    ("Как сделать, чтобы письмо пользователю уходило уже после того, как клиент получил ответ?", False),
    ("Если держать фоновый sync watch для двух профилей, не затрут ли их задачи планировщика друг друга?", False),
    ("How do I run a task in the background after returning a response?", False),
]


@pytest.mark.parametrize(("question", "inventory"), ENTRY_CASES, ids=[c[0][:40] for c in ENTRY_CASES])
@pytest.mark.parametrize("intent", ["GENERAL_QA", "DOC_EXPLAIN"])
def test_what_runs_in_the_background_is_read_from_the_entrypoints(question: str, inventory: bool,
                                                                  intent: str) -> None:
    plan = resolve_code_plan(route(question, intent), frozenset({"add_task", "backgroundtasks"}))
    if inventory:
        assert plan is not None and plan.layers == [layer.value for layer in ENTRY_ONLY_LAYERS], plan
        assert plan.explicit, plan  # the best entrypoint row leads the answer (merge.code_slot)
        assert entrypoint_words(question)
    else:
        assert plan is None or plan.layers != [layer.value for layer in ENTRY_ONLY_LAYERS], plan


def test_a_schedule_detail_question_keeps_its_docs_first() -> None:
    # atlas-pm dev aph2-030: when a scheduled backup starts is documented; the code plan stays, unforced
    plan = resolve_code_plan(route("Во сколько по умолчанию запускается ежедневный бэкап, поставленный по расписанию?"),
                             frozenset())
    assert plan is not None and not plan.explicit


def test_a_celery_task_row_says_it_runs_in_the_background() -> None:
    # the words "what runs as a background task?" asks in: the gate's key-term coverage counts them
    from stores.indexing.code.entry_details import TaskInfo

    lines = TaskInfo("celery", None, queue="reindex").lines()
    assert any("background task" in line and "фонов" in line for line in lines), lines
    assert not any("background" in line for line in TaskInfo("apscheduler", None, cron="interval minutes=15").lines())
