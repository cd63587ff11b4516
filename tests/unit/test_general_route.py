"""Issue 41 item 4: a question asking what runs on a schedule or in the background is answered by the C3
entrypoint rows, which lead whatever the route (seed 002's GENERAL_QA fallback included); a Celery task's row
says it is a background task. The general plan stays seed 000's.

The question-decided landing lane (no README rows for a practical GENERAL_QA question) was measured and not
kept: dev MRR 0.736 -> 0.734 with the shipped ranker, trained with landing rows on every GENERAL_QA question
(docs/logic/retrieval_policy.md)."""

from __future__ import annotations

import pytest

from nodes.intent_routing.models import RouteAnchors, RouteResult
from nodes.retrieval_policy import RetrievalPlan, resolve_code_plan, resolve_plan
from nodes.retrieval_policy.code_plan import ENTRY_ONLY_LAYERS, entrypoint_words


def route(query: str, intent: str = "GENERAL_QA", aliases: tuple[str, ...] = ()) -> RouteResult:
    return RouteResult(
        routing_domain="GENERAL" if intent == "GENERAL_QA" else "DOCS", intent=intent, subintent="SUMMARY",
        user_query=query, normalized_query=query, target_terms=[], anchors=RouteAnchors(matched_aliases=list(aliases)),
        confidence=0.5, routing_mode="fallback", llm_router_used=False, reason_short="test")


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
    # a feature's docs, not the project's inventory: no run verb nor "this project", or an API named (review)
    ("Which background tasks can use yield dependencies?", False),
    ("Какие фоновые задачи поддерживает FastAPI?", False),
    ("Which tasks run in the background when I call add_task?", False),
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
