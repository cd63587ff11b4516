"""Issue 30: relation and rule questions are routed (anchors), planned (our two profiles) and entrypoint
questions get a code plan over C3."""

from __future__ import annotations

import pytest

from nodes.intent_routing.anchors import policy_words, relation_predicates
from nodes.intent_routing.models import RouteAnchors, RouteResult
from nodes.intent_routing.router import IntentRouter
from nodes.retrieval_policy import LayerProfile, resolve_code_plan, resolve_plan
from nodes.retrieval_policy.code_plan import entry_model_question, entrypoint_words


@pytest.mark.parametrize(
    ("query", "predicates"),
    [
        ("кто вызывает /internal/rag/retrieve?", ["calls_api", "called_by"]),
        ("Who calls /internal/rag/retrieve?", ["calls_api", "called_by"]),
        ("какие модули пишут в таблицу rag_chunks?", ["writes_db"]),
        ("Which modules read the rag_chunks table?", ["reads_db"]),
        ("кто потребляет событие index.completed?", ["consumes_events"]),
        ("Which services publish index.completed?", ["emits_events"]),
        ("что использует rag.indexing?", ["uses_logic", "used_by"]),
        ("Who integrates with GigaChat?", ["integrates_with"]),
        # a property of a thing, not who acts
        ("Какой статус-код использует RedirectResponse по умолчанию?", []),
        ("How do I use Depends?", []),
        ("What does fastapi use for validation?", []),
    ],
)
def test_relation_predicates(query: str, predicates: list[str]) -> None:
    assert relation_predicates(query, has_target=True) == predicates


def test_relation_needs_a_named_target() -> None:
    assert relation_predicates("who calls it?", has_target=False) == []


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("Какие правила для миграций?", ["правила"]),
        ("What are the rules for table names?", ["rules"]),
        ("Какие соглашения об именовании?", ["соглашения"]),
        ("Нельзя ли менять схему без миграции?", ["нельзя ли"]),
        ("Must I write a migration?", ["must i"]),
        ("Как принять параметр, который нельзя записать как имя переменной?", []),  # a fact, not a rule question
        ("Что делает retrieval policy?", []),  # a component's name
    ],
)
def test_policy_words(query: str, words: list[str]) -> None:
    assert policy_words(query) == words


@pytest.mark.parametrize(
    ("query", "route_label", "profile"),
    [
        ("какие модули пишут в таблицу rag_chunks?", "DOC_EXPLAIN/SUMMARY", "docs_relation_graph"),
        ("кто вызывает /internal/rag/retrieve?", "DOC_EXPLAIN/SUMMARY", "docs_relation_graph"),
        ("Какие правила для миграций?", "DOC_EXPLAIN/SUMMARY", "docs_policy_rules"),
        ("What are the rules for table names?", "DOC_EXPLAIN/SUMMARY", "docs_policy_rules"),
        ("Where is CORS configured?", "DOC_EXPLAIN/FIND_FILES", "file_lookup"),
    ],
)
def test_fallback_route_and_plan(query: str, route_label: str, profile: str) -> None:
    route = IntentRouter().route(query)
    plan = resolve_plan(route)
    assert (route.route_label, plan.profile) == (route_label, profile)


def _route(intent: str = "DOC_EXPLAIN", subintent: str = "SUMMARY", **anchors: object) -> RouteResult:
    return RouteResult(user_query="q", intent=intent, subintent=subintent, routing_domain="DOCS",
                       anchors=RouteAnchors(**anchors))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("route", "profile", "layers", "limit"),
    [
        (_route(relation_predicates=["writes_db"]), "docs_relation_graph",
         ["D5_RELATION_GRAPH", "D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"], 8),
        (_route(subintent="FIND_FILES", relation_predicates=["writes_db"]), "docs_relation_graph",
         ["D5_RELATION_GRAPH", "D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"], 8),
        (_route(policy_markers=["rules"]), "docs_policy_rules",
         ["D6_POLICY_INDEX", "D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"], 8),
        # "which files hold the rules" stays a file lookup (seed 000: FIND_FILES is always file_lookup)
        (_route(subintent="FIND_FILES", policy_markers=["rules"]), "file_lookup",
         ["D1_DOCUMENT_CATALOG", "D3_ENTITY_CATALOG"], 12),
        # GENERAL_QA always stays the general profile (seed 000 §4)
        (_route(intent="GENERAL_QA", relation_predicates=["calls_api"], policy_markers=["rules"]),
         "general_qa_grounded_summary", ["D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"], 8),
    ],
)
def test_layer_profiles(route: RouteResult, profile: str, layers: list[str], limit: int) -> None:
    plan = resolve_plan(route)
    assert (plan.profile, plan.layers, plan.limit) == (profile, layers, limit)


def test_relation_plan_keeps_no_hard_filter_nor_hints() -> None:
    route = _route(relation_predicates=["calls_api", "called_by"], endpoint_paths=["/internal/rag/retrieve"],
                   target_doc_hints=["docs/modules/retrieval.md"], process_domain="rag")
    filters = resolve_plan(route).filters
    assert filters.path_prefixes is None and filters.metadata_domain is None and filters.target_doc_hints == []
    assert filters.prefer_like_patterns == ["%/internal/rag/retrieve%", "%rag%"]
    assert resolve_plan(route).profile == LayerProfile.DOCS_RELATION_GRAPH


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("Which routes need auth?", ["routes need auth"]),
        ("Какие маршруты требуют авторизации?", ["маршруты требуют авторизации"]),
        ("What runs on a schedule?", ["on a schedule"]),
        ("Что запускается по расписанию?", ["по расписанию"]),
        ("Когда роутер уходит в fallback?", []),  # a router is no route
        ("How do I set up Celery with structlog?", []),
        ("Why choose locking for a shared task queue?", []),
    ],
)
def test_entrypoint_words(query: str, words: list[str]) -> None:
    assert entrypoint_words(query) == words


@pytest.mark.parametrize(
    ("query", "entry"),
    [("Which endpoint takes HeroCreate?", True), ("Какой эндпоинт принимает HeroCreate?", True),
     ("which route returns HeroRead", True), ("What does HeroCreate contain?", False)],
)
def test_entry_model_question(query: str, entry: bool) -> None:
    assert entry_model_question(query) is entry


@pytest.mark.parametrize(
    ("query", "layers"),
    [
        ("Which endpoint takes HeroCreate?", ["C3_ENTRYPOINTS"]),
        ("Which routes need auth?", ["C3_ENTRYPOINTS"]),
        ("Where is HeroCreate defined in the code?",
         ["C3_ENTRYPOINTS", "C1_SYMBOL_CATALOG", "C2_DEPENDENCY_GRAPH", "C0_SOURCE_CHUNKS"]),
    ],
)
def test_entry_questions_search_c3_alone(query: str, layers: list[str]) -> None:
    plan = resolve_code_plan(IntentRouter().route(query), frozenset({"herocreate", "app.models.herocreate"}))
    assert plan is not None and plan.layers == layers


def test_relation_subject_nouns_do_not_call_for_code() -> None:
    """«какие модули» names who writes, it does not ask for the implementation."""
    route = IntentRouter().route("какие модули пишут в таблицу rag_chunks?")
    assert resolve_code_plan(route, frozenset()) is None
    assert resolve_code_plan(IntentRouter().route("какие модули есть в проекте?"), frozenset()) is not None
