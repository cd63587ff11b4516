"""Table-driven routing of Russian and English queries through the deterministic path (seed 002 §4–§6)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from nodes.intent_routing import AliasEntry, InMemoryAliasIndex, IntentRouter, RouteResult
from nodes.intent_routing.lexicon import MARKER_WORD_SETS, STOP_WORDS
from nodes.intent_routing.target_terms import MAX_TARGET_TERMS
from nodes.tokens import is_endpoint_path, is_entity_name, is_file_name

D = "docs/ru/docs/"
SUMMARY, FIND, GENERAL = "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/FIND_FILES", "GENERAL_QA"

# What a session's index over the fastapi-ru corpus yields: catalog titles, ids, entities, endpoints.
INDEX = InMemoryAliasIndex(
    [
        AliasEntry(
            "зависимости", (D + "tutorial/dependencies/index.md",), "dependencies", forms=("dependencies",)
        ),
        AliasEntry("depends", (D + "tutorial/dependencies/index.md",), "dependencies"),
        AliasEntry(
            "зависимости с yield",
            (D + "tutorial/dependencies/dependencies-with-yield.md",),
            "dependencies",
            forms=("dependencies with yield",),
        ),
        AliasEntry("apirouter", (D + "tutorial/bigger-applications.md",), "routing"),
        AliasEntry("cors", (D + "tutorial/cors.md",), "middleware", forms=("Cross-Origin Resource Sharing",)),
        AliasEntry("middleware", (D + "tutorial/middleware.md", D + "advanced/middleware.md"), "middleware"),
        AliasEntry("oauth2", (D + "tutorial/security/simple-oauth2.md",), "security", "oauth2"),
        AliasEntry("oauth2 scopes", (D + "advanced/security/oauth2-scopes.md",), "security", "oauth2"),
        AliasEntry("безопасность", (D + "tutorial/security/index.md",), "security", forms=("security",)),
        AliasEntry("jwt", (D + "tutorial/security/oauth2-jwt.md",), "security", "jwt"),
        AliasEntry("фоновые задачи", (D + "tutorial/background-tasks.md",), forms=("background tasks",)),
        AliasEntry(
            "query-параметры", (D + "tutorial/query-params.md",), "parameters", forms=("query parameters",)
        ),
        AliasEntry(
            "path-параметры", (D + "tutorial/path-params.md",), "parameters", forms=("path parameters",)
        ),
        AliasEntry("тело запроса", (D + "tutorial/body.md",), "parameters", forms=("request body",)),
        AliasEntry("httpexception", (D + "tutorial/handling-errors.md",), "errors"),
        AliasEntry(
            "обработка ошибок", (D + "tutorial/handling-errors.md",), "errors", forms=("error handling",)
        ),
        AliasEntry("lifespan", (D + "advanced/events.md",), "lifecycle"),
        AliasEntry("websocket", (D + "advanced/websockets.md",), forms=("websockets", "веб-сокеты")),
        AliasEntry("testclient", (D + "tutorial/testing.md",), "testing"),
        AliasEntry("тестирование", (D + "tutorial/testing.md",), "testing", forms=("testing",)),
        AliasEntry("uvicorn", (D + "deployment/manually.md",), "deployment"),
        AliasEntry("docker", (D + "deployment/docker.md",), "deployment"),
        AliasEntry("response_model", (D + "tutorial/response-model.md",)),
        AliasEntry("статус-код", (D + "tutorial/response-status-code.md",), forms=("status code",)),
        AliasEntry("openapi", (D + "how-to/extending-openapi.md",)),
        AliasEntry("swagger ui", (D + "how-to/configure-swagger-ui.md",)),
        AliasEntry("sse", (D + "tutorial/server-sent-events.md",), forms=("server-sent events",)),
        AliasEntry("настройки", (D + "advanced/settings.md",), "settings", forms=("BaseSettings",)),
        AliasEntry("fastapi", (D + "index.md",)),
        AliasEntry("id", (D + "tutorial/path-params.md",)),  # too short: never matched
        AliasEntry("ok", (D + "tutorial/response-status-code.md",)),  # too short
        AliasEntry("python", (D + "python-types.md",)),  # too common
        AliasEntry("документация", (D + "index.md",)),  # too common
    ],
    endpoints={
        "/health": ["docs/api/health.md"],
        "/items/{item_id}": [D + "tutorial/path-params.md"],
        "/users/me": [D + "tutorial/security/get-current-user.md"],
        "/token": [D + "tutorial/security/simple-oauth2.md"],
    },
)


@dataclass(frozen=True)
class Case:
    query: str
    route: str
    terms: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    endpoints: tuple[str, ...] = ()
    domain: str | None = None
    subdomain: str | None = None
    hints: tuple[str, ...] | None = None  # None: not checked in this row


C = Case
CASES = [
    # --- explain / summarize with project anchors (Russian) ---
    C(
        "Как работает зависимость Depends?",
        SUMMARY,
        ("зависимости", "depends"),
        ("зависимости", "depends"),
        domain="dependencies",
        hints=(D + "tutorial/dependencies/index.md",),
    ),
    C(
        "Что такое APIRouter?",
        SUMMARY,
        ("apirouter",),
        ("apirouter",),
        ("APIRouter",),
        domain="routing",
        hints=(D + "tutorial/bigger-applications.md",),
    ),
    C(
        "Как настроить CORS?",
        SUMMARY,
        ("cors",),
        ("cors",),
        domain="middleware",
        hints=(D + "tutorial/cors.md",),
    ),
    C(
        "Как обрабатывать ошибки через HTTPException?",
        SUMMARY,
        ("httpexception", "обрабатывать", "ошибки"),
        ("httpexception",),
        ("HTTPException",),
        domain="errors",
    ),
    C(
        "Как сделать зависимости с yield?",
        SUMMARY,
        ("зависимости с yield",),
        ("зависимости с yield",),
        domain="dependencies",
        hints=(D + "tutorial/dependencies/dependencies-with-yield.md",),
    ),
    C("Что делает response_model?", SUMMARY, ("response_model",), ("response_model",)),
    C(
        "Как объявить query-параметры?",
        SUMMARY,
        ("query-параметры", "объявить"),
        ("query-параметры",),
        domain="parameters",
    ),
    C(
        "Как передать тело запроса?",
        SUMMARY,
        ("тело запроса", "передать"),
        ("тело запроса",),
        domain="parameters",
    ),
    C(
        "Чем отличаются path-параметры от query-параметров?",
        SUMMARY,
        ("path-параметры", "query-параметры", "отличаются"),
        ("path-параметры", "query-параметры"),
        domain="parameters",
        hints=(D + "tutorial/path-params.md", D + "tutorial/query-params.md"),
    ),
    C("Как работает lifespan?", SUMMARY, ("lifespan",), ("lifespan",), domain="lifecycle"),
    C(
        "Как протестировать приложение с TestClient?",
        SUMMARY,
        ("testclient", "протестировать", "приложение"),
        ("testclient",),
        ("TestClient",),
        domain="testing",
    ),
    C(
        "Как хранить настройки через BaseSettings?",
        SUMMARY,
        ("basesettings", "настройки", "хранить"),
        ("настройки",),
        ("BaseSettings",),
        domain="settings",
    ),
    C(
        "Как выглядит логика обработки запроса в middleware?",
        SUMMARY,
        ("middleware", "обработки", "запроса"),
        ("middleware",),
        domain="middleware",
        hints=(D + "tutorial/middleware.md", D + "advanced/middleware.md"),
    ),
    C("Что такое JWT?", SUMMARY, ("jwt",), ("jwt",), domain="security", subdomain="jwt"),
    C(
        "Что такое OpenAPI и Swagger UI?",
        SUMMARY,
        ("openapi", "swagger ui"),
        ("openapi", "swagger ui"),
        ("OpenAPI",),
    ),
    C("Как работают server-sent events?", SUMMARY, ("sse",), ("sse",)),
    C("Как подключить веб-сокеты?", SUMMARY, ("websocket", "подключить"), ("websocket",)),
    C(
        "Расскажи о зависимостях в архитектуре",
        SUMMARY,
        ("зависимости",),
        ("зависимости",),
        domain="dependencies",
    ),
    C(
        "Как настроить безопасность с OAuth2 и JWT токенами в FastAPI?",
        SUMMARY,
        ("oauth2", "fastapi", "безопасность", "jwt", "токенами"),
        ("безопасность", "oauth2", "jwt", "fastapi"),
        ("OAuth2", "FastAPI"),
        domain="security",
    ),
    # --- explain / summarize (English) ---
    C(
        "Explain OAuth2 scopes",
        SUMMARY,
        ("oauth2", "oauth2 scopes"),
        ("oauth2 scopes",),
        ("OAuth2",),
        domain="security",
        subdomain="oauth2",
        hints=(D + "advanced/security/oauth2-scopes.md",),
    ),
    C(
        "How do dependencies with yield work?",
        SUMMARY,
        ("зависимости с yield",),
        ("зависимости с yield",),
        domain="dependencies",
    ),
    C("How do I return a custom status code?", SUMMARY, ("статус-код", "return", "custom"), ("статус-код",)),
    C(
        "How to run the app with uvicorn in Docker?",
        SUMMARY,
        ("uvicorn", "docker", "run", "app"),
        ("uvicorn", "docker"),
        domain="deployment",
    ),
    C(
        "What does Cross-Origin Resource Sharing mean here?",
        SUMMARY,
        ("cors",),
        ("cors",),
        domain="middleware",
    ),
    C(
        "Summarize the error handling chapter",
        SUMMARY,
        ("обработка ошибок", "chapter"),
        ("обработка ошибок",),
        domain="errors",
    ),
    C("Explain the request lifecycle flow", SUMMARY, ("request",)),
    C(
        "How does the dependency injection system work internally?",
        SUMMARY,
        ("зависимости", "injection", "system"),
        ("зависимости",),
        domain="dependencies",
    ),
    # --- identifiers and entities without aliases ---
    C("Объясни fastapi.routing.APIRoute", SUMMARY, ("fastapi.routing.apiroute",)),
    C("Что делает функция get_openapi()?", SUMMARY, ("get_openapi", "функция")),
    C("Как работает oauth2_scheme?", SUMMARY, ("oauth2_scheme",)),
    C("Как устроен модуль fastapi.dependencies?", SUMMARY, ("fastapi.dependencies",)),
    C("What is RagSession used for?", SUMMARY, ("ragsession",), entities=("RagSession",)),
    # --- endpoints (never file names) ---
    C(
        "Что возвращает GET /items/{item_id}?",
        SUMMARY,
        ("/items/{item_id}", "возвращает"),
        endpoints=("/items/{item_id}",),
        hints=(D + "tutorial/path-params.md",),
    ),
    C(
        "Что возвращает /users/me?",
        SUMMARY,
        ("/users/me", "возвращает"),
        endpoints=("/users/me",),
        hints=(D + "tutorial/security/get-current-user.md",),
    ),
    C(
        "Как получить токен через POST /token?",
        SUMMARY,
        ("/token", "получить", "токен"),
        endpoints=("/token",),
    ),
    C(
        "Расскажи про /health и /items/{item_id}",
        SUMMARY,
        ("/health", "/items/{item_id}"),
        endpoints=("/health", "/items/{item_id}"),
        hints=("docs/api/health.md", D + "tutorial/path-params.md"),
    ),
    C(
        "What does /items/42 return?",
        SUMMARY,
        ("/items/42", "return"),
        endpoints=("/items/42",),
        hints=(D + "tutorial/path-params.md",),
    ),
    C(
        "What does the /metrics endpoint expose?",
        SUMMARY,
        ("/metrics", "expose"),
        endpoints=("/metrics",),
        hints=(),
    ),
    # --- file names: only real file/doc paths ---
    C("Объясни docs/api/x.md", SUMMARY, files=("docs/api/x.md",), hints=("docs/api/x.md",)),
    C("Что лежит в config.yaml?", SUMMARY, files=("config.yaml",), hints=("config.yaml",)),
    C("Что написано в docs/tutorial/security/index.md?", SUMMARY, files=("docs/tutorial/security/index.md",)),
    C("Summarize docs/ru/docs/tutorial/cors.md", SUMMARY, files=("docs/ru/docs/tutorial/cors.md",)),
    C("Что в README.md?", SUMMARY, files=("README.md",)),
    C("Опиши схему settings.yml", SUMMARY, ("схему",), files=("settings.yml",)),
    C("Explain the keys of package.json", SUMMARY, ("keys",), files=("package.json",)),
    # --- markers alone are docs signals ---
    C("Как устроена архитектура сессий?", SUMMARY, ("сессий",)),
    C("Расскажи об архитектуре проекта", SUMMARY),
    C("Какие компоненты у архитектуры и как они взаимодействуют?", SUMMARY),
    C("Опиши алгоритм ранжирования", SUMMARY, ("ранжирования",)),
    C("Что говорит документация об авторизации?", SUMMARY, ("говорит", "авторизации")),
    # --- find files ---
    C(
        "Где описано, как работают фоновые задачи?",
        FIND,
        ("фоновые задачи",),
        ("фоновые задачи",),
        hints=(D + "tutorial/background-tasks.md",),
    ),
    C(
        "В каком файле описан эндпоинт /health?",
        FIND,
        ("/health",),
        endpoints=("/health",),
        hints=("docs/api/health.md",),
    ),
    C("Где используется get_db()?", FIND, ("get_db",)),
    C("Покажи файлы про безопасность", FIND, ("безопасность",), ("безопасность",), domain="security"),
    C("Какие документы описывают middleware?", FIND, ("middleware",), ("middleware",), domain="middleware"),
    C("Документы про тестирование", FIND, ("тестирование",), ("тестирование",), domain="testing"),
    C("Где в документации про CORS?", FIND, ("cors",), ("cors",), domain="middleware"),
    C("Дай ссылку на раздел про middleware", FIND, ("middleware",), ("middleware",), domain="middleware"),
    C("В каком разделе документации описаны фоновые задачи?", FIND, ("фоновые задачи",), ("фоновые задачи",)),
    C("Путь к файлу с настройками", FIND, ("настройки",), ("настройки",), domain="settings"),
    C(
        "Найди примеры использования Depends",
        FIND,
        ("depends", "примеры", "использования"),
        ("depends",),
        domain="dependencies",
    ),
    C("Find the docs about background tasks", FIND, ("фоновые задачи",), ("фоновые задачи",)),
    C(
        "Which file defines APIRouter?",
        FIND,
        ("apirouter",),
        ("apirouter",),
        ("APIRouter",),
        domain="routing",
    ),
    C(
        "Where is CORS middleware configured?",
        FIND,
        ("cors", "middleware"),
        ("cors", "middleware"),
        domain="middleware",
    ),
    C("List the pages that mention WebSocket", FIND, ("websocket",), ("websocket",), ("WebSocket",)),
    C("Where is the /users/me endpoint documented?", FIND, ("/users/me",), endpoints=("/users/me",)),
    C(
        "Which module implements OAuth2PasswordBearer?",
        FIND,
        ("oauth2passwordbearer", "implements"),
        entities=("OAuth2PasswordBearer",),
    ),
    C("В каком файле лежит config.yaml?", FIND, files=("config.yaml",)),
    # --- general: no project anchors ---
    C("привет", GENERAL),
    C("спасибо!", GENERAL),
    C("Кто ты?", GENERAL),
    C("what can you do", GENERAL),
    C("how are you today?", GENERAL, ("today",)),
    C("что такое Python вообще", GENERAL, ("python",)),
    C("Какая погода в Москве?", GENERAL, ("погода", "москве")),
    C("Напиши стихотворение про осень", GENERAL, ("напиши", "стихотворение", "осень")),
    C("What's the difference between a list and a tuple?", GENERAL, ("difference", "tuple")),
    C("Как работает сборщик мусора?", GENERAL, ("сборщик", "мусора")),
    C("Что такое id?", GENERAL),
    C("Что значит ok?", GENERAL),
    C("Where is Moscow?", GENERAL, ("moscow",)),
]

ROUTER = IntentRouter(llm=None, aliases=INDEX)


def _route(case: Case) -> RouteResult:
    return ROUTER.route(case.query)


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 60
    assert {c.route for c in CASES} == {SUMMARY, FIND, GENERAL}


@pytest.mark.parametrize("case", CASES, ids=[c.query for c in CASES])
def test_route_terms_and_anchors(case: Case) -> None:
    result = _route(case)
    anchors = result.anchors

    assert result.route_label == case.route
    assert result.target_terms == list(case.terms)
    assert anchors.matched_aliases == list(case.aliases)
    assert anchors.entity_names == list(case.entities)
    assert anchors.file_names == list(case.files)
    assert anchors.endpoint_paths == list(case.endpoints)
    assert (anchors.process_domain, anchors.process_subdomain) == (case.domain, case.subdomain)
    if case.hints is not None:
        assert anchors.target_doc_hints == list(case.hints)
    assert result.routing_mode == "fallback"
    assert result.llm_router_used is False


@pytest.mark.parametrize("case", CASES, ids=[c.query for c in CASES])
def test_invariants_hold_for_every_query(case: Case) -> None:
    result = _route(case)
    anchors = result.anchors
    known_docs = {d for e in INDEX.entries.values() for d in e.docs} | {
        d for docs in INDEX.endpoints.values() for d in docs
    }

    assert len(result.target_terms) <= MAX_TARGET_TERMS
    for term in result.target_terms:
        assert term == term.lower()
        if term in anchors.matched_aliases:
            continue  # an alias the index knows wins even when it is also a marker word («настройки»)
        assert not any(term in ws for ws in STOP_WORDS), term
        assert not any(term in ws for ws in MARKER_WORD_SETS), term
        assert len(term) >= 3 or term.startswith("/")
    # Anchors hold no terms: each field holds only its own kind of thing.
    assert all(is_entity_name(e) for e in anchors.entity_names)
    assert all(is_file_name(f) and not is_endpoint_path(f) for f in anchors.file_names)
    assert all(is_endpoint_path(p) and not is_file_name(p) for p in anchors.endpoint_paths)
    assert all(a in INDEX.entries for a in anchors.matched_aliases)
    assert all(h in known_docs or h in anchors.file_names for h in anchors.target_doc_hints)
    assert result.normalized_query == " ".join(case.query.split())


def test_health_is_an_endpoint_and_doc_paths_are_files() -> None:
    result = ROUTER.route("Сравни /health, docs/api/x.md и config.yaml")

    assert result.anchors.endpoint_paths == ["/health"]
    assert result.anchors.file_names == ["docs/api/x.md", "config.yaml"]
    assert "/health" in result.target_terms
    assert not any(t.endswith((".md", ".yaml")) for t in result.target_terms)


def test_target_terms_are_capped_and_ordered_by_kind() -> None:
    query = (
        "Как связаны безопасность, cors, middleware, jwt, сессии, кеширование, очереди "
        "и get_current_user с /users/me и /token?"
    )
    result = ROUTER.route(query)

    # endpoints → identifiers → aliases → domain terms, then the cap of 7
    assert result.target_terms == [
        "/users/me",
        "/token",
        "get_current_user",
        "безопасность",
        "cors",
        "middleware",
        "jwt",
    ]
