"""Code plan: our addition beside seed 000's docs plan (SPEC §5 retrieval_policy), table-driven."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nodes.intent_routing.models import RouteAnchors, RouteResult
from nodes.retrieval_policy import CodePlan, resolve_code_plan, resolve_plan
from nodes.retrieval_policy.code_plan import (
    MAX_CODE_TERMS,
    implementation_words,
    python_file_names,
    query_identifiers,
)

SYMBOLS = frozenset(
    {
        "fastapi",
        "fastapi.applications.fastapi",
        "apirouter",
        "fastapi.routing.apirouter",
        "add_api_route",
        "get_db",
        "fastapi.routing.apirouter.add_api_route",
        "include_router",
        "depends",
        "fastapi.param_functions.depends",
        "httpexception",
        "oauth2passwordbearer",
        "jsonable_encoder",
        "fastapi.encoders.jsonable_encoder",
        "solve_dependencies",
        "request",
        "get",
    }
)


def route(
    query: str, target_terms: list[str] | None = None, entity_names: list[str] | None = None
) -> RouteResult:
    return RouteResult(
        routing_domain="DOCS",
        intent="DOC_EXPLAIN",
        subintent="SUMMARY",
        user_query=query,
        normalized_query=query,
        target_terms=target_terms or [],
        anchors=RouteAnchors(entity_names=entity_names or []),
    )


TRIGGERS = [
    # (id, query, target_terms, entity_names, expected terms, reason fragment)
    ("ru-code-words+camel", "Где в коде реализован APIRouter?", [], [], ["apirouter"], "symbols: apirouter"),
    ("ru-pascal-mid-sentence", "Как работает Depends?", [], [], ["depends"], "symbols: depends"),
    ("ru-snake", "Что делает jsonable_encoder?", [], [], ["jsonable_encoder"], "symbols: jsonable_encoder"),
    (
        "ru-dotted-qualified",
        "Как устроен fastapi.encoders.jsonable_encoder?",
        [],
        [],
        ["fastapi.encoders.jsonable_encoder", "jsonable_encoder", "fastapi"],
        "symbols: fastapi.encoders.jsonable_encoder, jsonable_encoder",
    ),
    (
        "ru-call-on-object",
        "Что возвращает app.include_router()?",
        [],
        [],
        ["include_router", "app.include_router"],
        "symbols: include_router",
    ),
    ("en-short-call", "What does get() return?", [], [], ["get"], "symbols: get"),
    ("ru-target-term-code-shaped", "Как использовать зависимость?", ["get_db"], [], ["get_db"], "symbols: get_db"),
    (
        "ru-entity-name",
        "Как вернуть ошибку",
        [],
        ["HTTPException"],
        ["httpexception"],
        "symbols: httpexception",
    ),
    (
        "ru-sources+camel",
        "Покажи исходники OAuth2PasswordBearer",
        [],
        [],
        ["oauth2passwordbearer"],
        "words: исходники",
    ),
    ("ru-words-only", "Где реализация валидации тела запроса?", ["валидация"], [], [], "words: реализация"),
    (
        "ru-class-of-package-root",
        "Где определён класс FastAPI?",
        [],
        ["FastAPI"],
        ["fastapi"],
        "words: класс",
    ),
    ("ru-py-file", "Что лежит в routing.py?", [], [], ["routing.py"], "files: routing.py"),
    (
        "ru-py-path+words",
        "Как реализовано в fastapi/dependencies/utils.py?",
        [],
        [],
        ["fastapi/dependencies/utils.py", "utils.py"],
        "files: fastapi/dependencies/utils.py; words: реализовано",
    ),
    (
        "ru-signature",
        "Какая сигнатура у add_api_route?",
        [],
        [],
        ["add_api_route"],
        "symbols: add_api_route; words: сигнатура",
    ),
    (
        "ru-function-params",
        "Какие параметры функции solve_dependencies?",
        [],
        [],
        ["solve_dependencies"],
        "words: функции",
    ),
    (
        "en-implemented",
        "Where is dependency caching implemented?",
        ["caching"],
        [],
        [],
        "words: implemented",
    ),
    ("en-source-code", "Show me the source code of the router", [], [], [], "words: source code"),
    (
        "en-signature+symbol",
        "What is the signature of add_api_route?",
        [],
        [],
        ["add_api_route"],
        "words: signature",
    ),
    (
        "en-uncatalogued-identifier-kept-as-term",
        "Which class handles response_model?",
        [],
        [],
        ["response_model"],
        "",
    ),
]


@pytest.mark.parametrize(
    ("query", "target_terms", "entity_names", "terms", "reason"),
    [pytest.param(*case[1:], id=f"code-plan-trigger-{case[0]}") for case in TRIGGERS],
)
def test_code_plan_triggers(
    query: str, target_terms: list[str], entity_names: list[str], terms: list[str], reason: str
) -> None:
    """SPEC §5 code plan: catalogued identifiers, `.py` names and implementation words trigger it."""
    plan = resolve_code_plan(route(query, target_terms, entity_names), SYMBOLS)
    assert plan is not None
    assert plan.terms == terms
    assert reason in plan.reason


NON_TRIGGERS = [
    ("ru-package-root-alone", "Как в FastAPI объявить параметры пути?", [], ["FastAPI"]),
    ("ru-status-code", "Какой код ответа возвращает эндпоинт?", [], []),
    ("ru-status-code-hyphen", "Как задать статус-код?", [], []),
    ("ru-code-example", "Покажи пример кода для загрузки файлов", [], []),
    ("ru-encoding-is-not-code", "Какая кодировка используется в ответах?", [], []),
    ("ru-how-to-implement", "Как реализовать пагинацию?", [], []),
    ("ru-classic-is-not-class", "Что такое классический подход?", [], []),
    ("ru-http-methods", "Какие HTTP методы поддерживаются?", [], []),
    ("ru-http-method-hyphen", "Как работают HTTP-методы?", [], []),
    ("ru-uncatalogued-snake", "Что делает foo_bar?", ["foo_bar"], []),
    ("ru-plain-prose", "Как настроить CORS?", ["cors"], []),
    ("en-sentence-initial-word", "Request bodies in FastAPI", [], []),
    ("en-short-bare-word", "how to get the current user", ["get"], []),
    ("en-status-code", "What status code does it return?", [], []),
    ("en-http-method", "Which HTTP method should I use?", [], []),
    ("en-how-to-implement", "How do I implement OAuth2 login?", [], []),
    ("en-plain-prose", "Where is the documentation for deployment?", ["deployment"], []),
]


@pytest.mark.parametrize(
    ("query", "target_terms", "entity_names"),
    [pytest.param(*case[1:], id=f"code-plan-no-trigger-{case[0]}") for case in NON_TRIGGERS],
)
def test_code_plan_non_triggers(query: str, target_terms: list[str], entity_names: list[str]) -> None:
    """SPEC §5 code plan: documented-behaviour questions get no code plan."""
    assert resolve_code_plan(route(query, target_terms, entity_names), SYMBOLS) is None


@pytest.mark.parametrize(
    "query",
    [
        "в коде",
        "код",
        "в каком модуле",
        "какая константа",
        "в конструкторе",
        "in which source file",
        "кода",
        "исходник",
        "исходнике",
        "реализация",
        "реализации",
        "реализацию",
        "реализован",
        "реализована",
        "реализовано",
        "реализуется",
        "функция",
        "функцию",
        "функцией",
        "класс",
        "классе",
        "классы",
        "метод",
        "методом",
        "сигнатура",
        "сигнатуру",
        "параметры функции",
        "implementation",
        "implemented",
        "source code",
        "in the code",
        "function",
        "functions",
        "class",
        "classes",
        "method",
        "signature",
    ],
)
def test_implementation_words_match_by_stem(query: str) -> None:
    """SPEC §5 code plan: implementation words in Russian (with inflections) and English."""
    assert implementation_words(f"Вопрос: {query.upper()} здесь?")


@pytest.mark.parametrize(
    ("query", "identifiers"),
    [
        ("jsonable_encoder", ["jsonable_encoder"]),
        ("Как работает APIRouter", ["APIRouter"]),
        ("про fastApi и HTTPException", ["fastApi", "HTTPException"]),
        ("вызов router.get(", ["router.get()"]),
        ("вызов run()", ["run()"]),
        ("Что такое Depends", ["Depends"]),
        ("Depends. Request bodies", []),
        ("Depends. Потом Request", ["Request"]),
        ("Request bodies", []),
        ("plain english words", []),
        ("модуль fastapi.routing", ["fastapi.routing"]),
    ],
)
def test_query_identifiers_by_shape(query: str, identifiers: list[str]) -> None:
    """SPEC §5 code plan: raw query tokens count when they look like code."""
    assert query_identifiers(query) == identifiers


@pytest.mark.parametrize(
    ("query", "files"),
    [
        ("routing.py", ["routing.py"]),
        ("В Fastapi/Routing.py и utils.py", ["fastapi/routing.py", "utils.py"]),
        ("routing.pyc или routing.pyi", []),
        ("модуль routing", []),
    ],
)
def test_python_file_names(query: str, files: list[str]) -> None:
    """SPEC §5 code plan: `.py` names are a trigger of their own."""
    assert python_file_names(query) == files


def test_code_plan_shape_and_layers() -> None:
    """SPEC §5 code plan: layers C3 → C1 → C2 → C0, frozen."""
    plan = resolve_code_plan(route("Где в коде APIRouter?"), SYMBOLS)
    assert isinstance(plan, CodePlan)
    assert plan.layers == ["C3_ENTRYPOINTS", "C1_SYMBOL_CATALOG", "C2_DEPENDENCY_GRAPH", "C0_SOURCE_CHUNKS"]
    assert plan.limit > 0
    with pytest.raises(ValidationError):
        plan.limit = 1  # type: ignore[misc]


def test_code_plan_terms_are_capped() -> None:
    """SPEC §5 code plan: at most MAX_CODE_TERMS lexical terms."""
    many = [f"name_{index}" for index in range(MAX_CODE_TERMS + 5)]
    plan = resolve_code_plan(route("реализация", target_terms=many), set(many))
    assert plan is not None
    assert len(plan.terms) == MAX_CODE_TERMS


def test_code_plan_accepts_any_container_of_symbols() -> None:
    """SPEC §5 code plan: `symbols` is any set-like container (a dict's keys here)."""
    symbols = dict.fromkeys(SYMBOLS, 1).keys()
    plan = resolve_code_plan(route("Как работает Depends?"), symbols)
    assert plan is not None and plan.terms == ["depends"]


def test_code_plan_with_empty_catalog_still_honours_words() -> None:
    """SPEC §5 code plan: identifiers need the catalog, implementation words do not."""
    assert resolve_code_plan(route("Как работает Depends?"), frozenset()) is None
    plan = resolve_code_plan(route("Где реализован Depends?"), frozenset())
    assert plan is not None and (plan.terms, plan.reason, plan.explicit) == (["depends"], "words: реализован", True)


def test_code_plan_never_changes_the_docs_plan() -> None:
    """SPEC §5: the code plan is separate; seed 000's docs plan ignores every code cue."""
    anchors = RouteAnchors(endpoint_paths=["/items"], matched_aliases=["router"])
    code_route = RouteResult(
        intent="DOC_EXPLAIN",
        user_query="Где в коде реализован APIRouter в routing.py?",
        normalized_query="Где в коде реализован APIRouter в routing.py?",
        target_terms=["apirouter", "routing.py"],
        anchors=anchors,
    )
    prose_route = code_route.model_copy(
        update={"user_query": "Про роутер", "normalized_query": "Про роутер", "target_terms": []}
    )
    plan = resolve_code_plan(code_route, SYMBOLS)
    assert plan is not None and plan.terms == ["apirouter", "routing.py"]
    assert plan.reason == "symbols: apirouter; files: routing.py; words: коде, реализован"
    assert resolve_code_plan(prose_route, SYMBOLS) is None
    assert resolve_plan(code_route) == resolve_plan(prose_route)


def test_called_class_named_like_the_package_triggers_code_plan() -> None:
    """SPEC §5 code plan: `FastAPI()` is the class; bare `FastAPI` alone is the package everyone names."""
    symbols = {"fastapi", "fastapi.applications.fastapi", "fastapi.routing.apirouter"}
    plan = resolve_code_plan(route("Что по умолчанию в FastAPI()?", [], []), symbols)
    assert plan is not None and (plan.terms, plan.reason, plan.explicit) == (["fastapi"], "symbols: fastapi", False)
    assert resolve_code_plan(route("Как настроить CORS в FastAPI?", [], []), symbols) is None


@pytest.mark.parametrize("term", ["request", "responses", "serialize"])
def test_plain_english_target_terms_are_not_identifiers(term: str) -> None:
    """SPEC §5 code plan: a lower-case word that happens to name a module is not a code request."""
    symbols = {term, f"fastapi.{term}"}
    assert resolve_code_plan(route(f"How is a timedelta shown in {term}?", [term], []), symbols) is None


@pytest.mark.parametrize(
    ("query", "explicit"),
    [
        ("Как в исходниках реализована функция?", True),
        ("Where is it implemented?", True),
        ("Что в файле routing.py?", True),
        ("Как использовать класс как зависимость вместо функции?", False),
        ("Как вызывать асинхронные функции в тестах?", False),
    ],
)
def test_explicit_code_requests(query: str, explicit: bool) -> None:
    """SPEC §5 code plan: only words asking for the code itself make the plan explicit."""
    plan = resolve_code_plan(route(query, [], []), SYMBOLS)
    assert plan is not None and plan.explicit is explicit
