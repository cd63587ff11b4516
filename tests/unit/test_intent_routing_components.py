"""Each pure component of the router on its own: normalizer, tokens, target terms, anchors, catalog,
validator, confidence, fallback."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodes.intent_routing import AliasEntry, InMemoryAliasIndex, IntentRouter, RouteAnchors, RoutingMode
from nodes.intent_routing.anchors import MarkerSignals, detect_markers, extract_anchors
from nodes.intent_routing.confidence import adjust_confidence
from nodes.intent_routing.fallback import (
    DOCS_MARKERS_ONLY_CONFIDENCE,
    DOCS_WITH_ANCHORS_CONFIDENCE,
    FIND_FILES_CONFIDENCE,
    GENERAL_CONFIDENCE,
    choose_fallback_route,
    fallback_route,
)
from nodes.intent_routing.features import QueryFeatures, build_features
from nodes.intent_routing.normalizer import normalize_query
from nodes.intent_routing.route_catalog import (
    ALLOWED_ROUTES,
    DOC_FIND_FILES,
    DOC_SUMMARY,
    GENERAL_QA,
    allowed_routes,
    is_allowed,
)
from nodes.intent_routing.target_terms import extract_target_terms
from nodes.intent_routing.validator import coerce_confidence, validate_candidate
from nodes.tokens import (
    clean_token,
    is_endpoint_path,
    is_entity_name,
    is_file_name,
    is_identifier,
    stem,
)

INDEX = InMemoryAliasIndex(
    [
        AliasEntry("cors", ["docs/cors.md"], "middleware", "cors"),
        AliasEntry("фоновые задачи", ["docs/background.md"], forms=["background tasks"]),
    ],
    {"/health": ["docs/health.md"]},
)


def features_for(query: str, index: InMemoryAliasIndex | None = INDEX) -> QueryFeatures:
    normalized = normalize_query(query)
    terms = extract_target_terms(normalized, index)
    return build_features(normalized, terms, extract_anchors(normalized, terms, index))


# --- normalizer ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("  Как   работает\tCORS?\n", "Как работает CORS?"),
        ("a\r\n\r\nb", "a b"),
        ("   ", ""),
        ("", ""),
        ("уже нормально", "уже нормально"),
    ],
)
def test_normalizer_collapses_whitespace(raw: str, normalized: str) -> None:
    assert normalize_query(raw) == normalized


# --- tokens -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("forms", "shared"),
    [
        (["архитектура", "архитектуре", "архитектурой", "архитектуры"], "архитектур"),
        (["зависимость", "зависимости", "зависимостях", "зависимостью", "зависимостями"], "зависимост"),
        (["сессия", "сессии", "сессий", "сессиями"], "сесс"),
        (["scope", "scopes"], "scope"),
        (["dependency", "dependencies"], "dependenci"),
        (["cookie", "cookies"], "cooki"),
    ],
)
def test_stem_maps_inflected_forms_to_one_key(forms: list[str], shared: str) -> None:
    assert {stem(f) for f in forms} == {shared}


def test_stem_keeps_short_and_code_words() -> None:
    assert [stem(w) for w in ("cors", "status", "class", "oauth2", "get_db")] == [
        "cors",
        "status",
        "class",
        "oauth2",
        "get_db",
    ]


@pytest.mark.parametrize(
    ("token", "endpoint", "file"),
    [
        ("/health", True, False),
        ("/items/{item_id}", True, False),
        ("/users/me/", True, False),
        ("/docs", True, False),
        ("docs/api/x.md", False, True),
        ("config.yaml", False, True),
        ("settings.yml", False, True),
        ("fastapi/routing.py", False, True),
        ("/etc/app/config.json", False, True),
        ("docs/tutorial", False, True),
        ("/", False, False),
        ("//x", False, False),
        ("/../etc", False, False),
        ("и/или", False, False),
        ("https://example.com/a.md", False, False),
        (".md", False, False),
    ],
)
def test_endpoint_and_file_rules(token: str, endpoint: bool, file: bool) -> None:
    assert (is_endpoint_path(token), is_file_name(token)) == (endpoint, file)


@pytest.mark.parametrize(
    ("token", "identifier", "entity"),
    [
        ("APIRouter", True, True),
        ("RagSession", True, True),
        ("OAuth2", True, True),
        ("get_db", True, False),
        ("get_db()", True, False),
        ("fastapi.routing", True, False),
        ("__init__", True, False),
        ("oauth2", True, False),
        ("Depends", False, False),
        ("CORS", False, False),
        ("архитектура", False, False),
        ("routing.py", False, False),
    ],
)
def test_identifier_and_entity_rules(token: str, identifier: bool, entity: bool) -> None:
    assert (is_identifier(token), is_entity_name(token)) == (identifier, entity)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("«CORS»,", "CORS"),
        ("/items/{id}?", "/items/{id}"),
        ("(get_db)", "get_db"),
        ("./docs/a.md.", "docs/a.md"),
    ],
)
def test_clean_token_trims_edge_punctuation(raw: str, clean: str) -> None:
    assert clean_token(raw) == clean


# --- target terms ------------------------------------------------------------------------------------
def test_target_terms_positive_selection() -> None:
    analysis = extract_target_terms(
        "Объясни, пожалуйста, как в архитектуре работают фоновые задачи, get_db() и /health в docs/a.md",
        INDEX,
    )

    assert analysis.target_terms == ("/health", "get_db", "фоновые задачи")
    assert analysis.endpoint_paths == ("/health",)
    assert analysis.identifiers == ("get_db",)
    assert analysis.matched_aliases == ("фоновые задачи",)
    assert analysis.alias_docs == ("docs/background.md",)


def test_target_terms_drop_short_broken_and_marker_tokens() -> None:
    analysis = extract_target_terms("где в файле и/или ui // ok документация про кеш", None)

    assert analysis.target_terms == ("кеш",)


def test_target_terms_without_alias_index() -> None:
    analysis = extract_target_terms("Как работают фоновые задачи?", None)

    assert analysis.target_terms == ("фоновые", "задачи")
    assert analysis.matched_aliases == ()


def test_target_terms_dedupe_and_lowercase() -> None:
    analysis = extract_target_terms("CORS cors Cors /Health", INDEX)

    assert analysis.target_terms == ("/health", "cors")
    assert analysis.endpoint_paths == ("/Health",)


# --- anchors and markers -----------------------------------------------------------------------------
def test_anchors_collect_each_kind_and_doc_hints() -> None:
    normalized = "Где RagSession и CORS для /health описаны в docs/ops.md?"
    terms = extract_target_terms(normalized, INDEX)
    analysis = extract_anchors(normalized, terms, INDEX)

    assert analysis.anchors == RouteAnchors(
        entity_names=["RagSession"],
        file_names=["docs/ops.md"],
        endpoint_paths=["/health"],
        target_doc_hints=["docs/cors.md", "docs/health.md", "docs/ops.md"],
        matched_aliases=["cors"],
        process_domain="middleware",
        process_subdomain="cors",
    )
    assert analysis.markers.file_markers


@pytest.mark.parametrize(
    ("query", "groups"),
    [
        ("В каком файле описана архитектура?", ("file_markers", "architecture_markers")),
        ("Where is the login flow documented?", ("file_markers", "logic_markers")),
        ("Опиши логику маршрутизации", ("logic_markers", "endpoint_markers")),
        ("Что есть в документации проекта?", ("domain_markers",)),
        ("Какой URL у эндпоинта?", ("endpoint_markers",)),
        ("Что делает DELETE?", ("endpoint_markers",)),
        ("Документация по CORS", ("domain_markers",)),
        ("привет, как дела?", ()),
    ],
)
def test_marker_groups(query: str, groups: tuple[str, ...]) -> None:
    assert detect_markers(query).groups() == groups


@pytest.mark.parametrize(
    "query",
    [
        "где описан CORS",
        "В каком документе про это сказано?",
        "какие файлы отвечают за роутинг",
        "покажи страницы про middleware",
        "путь до конфига",
        "файлы про безопасность",
        "which doc covers scopes",
        "find the page for CORS",
        "docs about middleware",
        "where can I read about lifespan",
    ],
)
def test_file_markers_detect_locate_requests(query: str) -> None:
    assert detect_markers(query.lower()).file_markers


@pytest.mark.parametrize(
    "query", ["Документация по CORS", "Summarize the docs on dependencies", "Что такое файловая система?"]
)
def test_file_markers_ignore_explain_requests(query: str) -> None:
    assert detect_markers(query).file_markers == ()


# --- route catalog ------------------------------------------------------------------------------------
def test_route_catalog_is_the_three_seed_routes() -> None:
    assert allowed_routes() == [
        {"routing_domain": "GENERAL", "intent": "GENERAL_QA", "subintent": "SUMMARY"},
        {"routing_domain": "DOCS", "intent": "DOC_EXPLAIN", "subintent": "SUMMARY"},
        {"routing_domain": "DOCS", "intent": "DOC_EXPLAIN", "subintent": "FIND_FILES"},
    ]
    assert all(is_allowed(r.routing_domain, r.intent, r.subintent) for r in ALLOWED_ROUTES)
    assert not is_allowed("GENERAL", "GENERAL_QA", "FIND_FILES")
    assert not is_allowed("DOCS", "GENERAL_QA", "SUMMARY")
    assert not is_allowed("docs", "doc_explain", "summary")


# --- validator ----------------------------------------------------------------------------------------
GOOD = {"routing_domain": "DOCS", "intent": "DOC_EXPLAIN", "subintent": "FIND_FILES", "confidence": 0.8}


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (GOOD, {**GOOD, "reason_short": ""}),
        (
            {**GOOD, "routing_domain": " docs ", "intent": "doc_explain", "reason_short": "  ищет  файл "},
            {**GOOD, "reason_short": "ищет файл"},
        ),
        ({**GOOD, "confidence": "0.8"}, {**GOOD, "reason_short": ""}),
        ({**GOOD, "confidence": 80}, {**GOOD, "reason_short": ""}),
        ({**GOOD, "confidence": 1.7}, {**GOOD, "confidence": 0.017, "reason_short": ""}),
        ({**GOOD, "confidence": -3}, {**GOOD, "confidence": 0.0, "reason_short": ""}),
    ],
)
def test_validator_accepts_and_normalizes(candidate: dict, expected: dict) -> None:
    result = validate_candidate(candidate)
    assert result is not None
    assert result == pytest.approx(expected)


@pytest.mark.parametrize(
    "candidate",
    [
        None,
        "DOCS",
        {},
        {**GOOD, "routing_domain": ""},
        {**GOOD, "subintent": None},
        {**GOOD, "subintent": "EXPLAIN_CODE"},
        {**GOOD, "routing_domain": "GENERAL"},
        {k: v for k, v in GOOD.items() if k != "confidence"},
        {**GOOD, "confidence": "high"},
        {**GOOD, "confidence": float("nan")},
        {**GOOD, "confidence": True},
        {**GOOD, "confidence": [0.5]},
    ],
)
def test_validator_rejects(candidate: object) -> None:
    assert validate_candidate(candidate) is None  # type: ignore[arg-type]


def test_validator_truncates_reason() -> None:
    result = validate_candidate({**GOOD, "reason_short": "x" * 1000})
    assert result is not None and len(result["reason_short"]) == 200


def test_coerce_confidence_percent_string() -> None:
    assert coerce_confidence("75%") == 0.75


# --- confidence ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "llm_confidence", "expected"),
    [
        ("Как настроить CORS в проекте?", 0.8, 0.8),  # strong anchor, not vague, no explicit signal
        ("В каком файле описан CORS?", 0.8, 0.85),  # + file markers
        ("Что возвращает /health сейчас?", 0.9, 0.95),  # + endpoint path
        ("Как работает кеширование ответов?", 0.8, 0.7),  # no strong anchors
        ("CORS?", 0.8, 0.7),  # short
        ("привет", 0.5, 0.3),  # no anchors and short
        ("В каком файле описан /health?", 0.99, 1.0),  # clamped
        ("ну", 0.1, 0.0),  # clamped
    ],
)
def test_adjust_confidence(query: str, llm_confidence: float, expected: float) -> None:
    assert adjust_confidence(llm_confidence, features_for(query)) == pytest.approx(expected)


# --- fallback -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "route", "confidence"),
    [
        ("Где описан CORS?", DOC_FIND_FILES, FIND_FILES_CONFIDENCE),
        ("Как настроить CORS?", DOC_SUMMARY, DOCS_WITH_ANCHORS_CONFIDENCE),
        ("Объясни /health", DOC_SUMMARY, DOCS_WITH_ANCHORS_CONFIDENCE),
        ("Опиши архитектуру", DOC_SUMMARY, DOCS_MARKERS_ONLY_CONFIDENCE),
        ("Как дела?", GENERAL_QA, GENERAL_CONFIDENCE),
        ("", GENERAL_QA, 0.0),
    ],
)
def test_choose_fallback_route(query: str, route: object, confidence: float) -> None:
    chosen, chosen_confidence, reason = choose_fallback_route(features_for(query))
    assert (chosen, chosen_confidence) == (route, confidence)
    assert reason


def test_fallback_route_result_fields() -> None:
    features = features_for("  Где   описан CORS? ")
    result = fallback_route(
        "  Где   описан CORS? ", features, features.anchors, llm_attempted=True, note="LLM x"
    )

    assert result.user_query == "  Где   описан CORS? "
    assert result.normalized_query == "Где описан CORS?"
    assert (result.routing_domain, result.intent, result.subintent) == ("DOCS", "DOC_EXPLAIN", "FIND_FILES")
    assert result.routing_mode == RoutingMode.FALLBACK_LLM_INVALID
    assert result.llm_router_used is False
    assert result.reason_short.startswith("LLM x; fallback: file markers")
    assert result.target_terms == ["cors"]


def test_fallback_without_llm_says_so() -> None:
    result = IntentRouter().route("Как дела?")
    assert result.routing_mode == "fallback"
    assert result.llm_router_used is False
    assert result.route_label == "GENERAL_QA"


def test_marker_signals_groups_order() -> None:
    signals = MarkerSignals(file_markers=("где",), endpoint_markers=("url",))
    assert signals.groups() == ("file_markers", "endpoint_markers")


# --- properties ---------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300))
def test_any_text_routes_to_an_allowed_route(text: str) -> None:
    result = IntentRouter(aliases=INDEX).route(text)

    assert is_allowed(result.routing_domain, result.intent, result.subintent)
    assert len(result.target_terms) <= 7
    assert all(t == t.lower() for t in result.target_terms)
    assert 0.0 <= result.confidence <= 1.0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Что такое CORS простыми словами?", "GENERAL_QA"),
        ("What is an environment variable, in general?", "GENERAL_QA"),
        ("Объясни в общих чертах, как работает HTTPS", "GENERAL_QA"),
        ("Что такое внедрение зависимостей в программировании?", "GENERAL_QA"),
        ("Где в docs/api/cors.md в общих чертах описан CORS?", "DOC_EXPLAIN/FIND_FILES"),
        ("Как настроить CORS?", "DOC_EXPLAIN/SUMMARY"),
    ],
)
def test_general_markers_route_to_general_qa(query: str, expected: str) -> None:
    """Our addition to seed 002 §5 fallback: an explicit request for the general idea → GENERAL_QA."""
    from nodes.intent_routing import AliasEntry, InMemoryAliasIndex, IntentRouter

    aliases = InMemoryAliasIndex([AliasEntry("cors", docs=("docs/cors.md",)), AliasEntry("https", docs=())])
    assert IntentRouter(aliases=aliases).route(query).route_label == expected
