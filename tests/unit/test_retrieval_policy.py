"""Seed 000 `V2RetrievalPolicyResolver`, rule by rule (each test names the seed section it checks)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from nodes.intent_routing.models import RouteAnchors, RouteResult
from nodes.retrieval_policy import (
    AnchorSignal,
    RetrievalPlan,
    RetrievalProfile,
    anchor_signal_types,
    resolve_plan,
)
from nodes.retrieval_policy.policy import _AnchorTermCollector, _RouteFilterBuilder, like_pattern

GENERAL = ("GENERAL_QA", "SUMMARY")
SUMMARY = ("DOC_EXPLAIN", "SUMMARY")
FIND = ("DOC_EXPLAIN", "FIND_FILES")

API, ARCH, LOGIC, ENTITY, FILES = (
    AnchorSignal.API_ENDPOINT,
    AnchorSignal.ARCHITECTURE,
    AnchorSignal.LOGIC_FLOW,
    AnchorSignal.DOMAIN_ENTITY,
    AnchorSignal.FIND_FILES,
)


def route(
    kind: tuple[str, str] = SUMMARY, target_terms: list[str] | None = None, **anchors: Any
) -> RouteResult:
    intent, subintent = kind
    return RouteResult(
        routing_domain="GENERAL" if intent == "GENERAL_QA" else "DOCS",
        intent=intent,
        subintent=subintent,
        user_query="вопрос",
        normalized_query="вопрос",
        target_terms=target_terms or [],
        anchors=RouteAnchors(**anchors),
    )


# One route per single meaningful signal, each through a different kind of source.
SINGLE_SIGNAL_ANCHORS: dict[AnchorSignal, dict[str, Any]] = {
    API: {"endpoint_paths": ["/health"]},
    ARCH: {"target_doc_hints": ["docs/architecture/overview.md"]},
    LOGIC: {"matched_aliases": ["payment workflow"]},
    ENTITY: {"entity_names": ["RagSession"]},
}


# --- §4 top-level branching -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "anchors", "profile"),
    [
        pytest.param(GENERAL, {}, "general_qa_grounded_summary", id="seed000-§4-general"),
        pytest.param(
            GENERAL,
            {"endpoint_paths": ["/health"], "entity_names": ["RagSession"], "file_names": ["docs/api/x.md"]},
            "general_qa_grounded_summary",
            id="seed000-§4-general-stays-general-with-signals",
        ),
        pytest.param(
            ("GENERAL_QA", "FIND_FILES"),
            {},
            "general_qa_grounded_summary",
            id="seed000-§4-general-wins-over-find",
        ),
        # issue 41 item 4: our layer profiles (relation graph, policy rules) come after the seed's invariant
        pytest.param(
            GENERAL,
            {"relation_predicates": ["calls"], "entity_names": ["RagSession"]},
            "general_qa_grounded_summary",
            id="seed000-§4-general-wins-over-our-relation-profile",
        ),
        pytest.param(
            GENERAL,
            {"policy_markers": ["rules"]},
            "general_qa_grounded_summary",
            id="seed000-§4-general-wins-over-our-policy-profile",
        ),
        pytest.param(FIND, {}, "file_lookup", id="seed000-§4-find-files"),
        pytest.param(
            FIND,
            {"endpoint_paths": ["/health"], "matched_aliases": ["architecture"]},
            "file_lookup",
            id="seed000-§4-find-files-stays-file-lookup-with-signals",
        ),
        pytest.param(SUMMARY, {}, "docs_summary_generic", id="seed000-§4-summary-branch"),
    ],
)
def test_top_level_branch(kind: tuple[str, str], anchors: dict[str, Any], profile: str) -> None:
    assert resolve_plan(route(kind, **anchors)).profile == profile


# --- §6 signal detection ----------------------------------------------------------------------

MARKERS = [
    (API, "/api/"),
    (API, "api"),
    (API, "endpoint"),
    (ARCH, "/architecture/"),
    (ARCH, "architecture"),
    (ARCH, "arch"),
    (LOGIC, "/logic/"),
    (LOGIC, "logic"),
    (LOGIC, "workflow"),
    (LOGIC, "flow"),
    (LOGIC, "process"),
    (ENTITY, "/domains/"),
    (ENTITY, "domain"),
    (ENTITY, "entity"),
    (ENTITY, "component"),
]


@pytest.mark.parametrize("field", ["target_doc_hints", "file_names", "matched_aliases"])
@pytest.mark.parametrize(("signal", "marker"), [pytest.param(s, m, id=f"{s}-{m}") for s, m in MARKERS])
def test_seed000_s6_marker_in_marked_field_gives_signal(
    signal: AnchorSignal, marker: str, field: str
) -> None:
    """seed 000 §6: each marker found in hints, file names or aliases raises its signal."""
    assert anchor_signal_types(route(**{field: [f"x{marker.upper()}y"]})) == {signal}


@pytest.mark.parametrize(
    ("kind", "anchors", "signals"),
    [
        pytest.param(
            SUMMARY, {"endpoint_paths": ["/arch/flow"]}, {API}, id="seed000-§6-endpoint-path-is-api-only"
        ),
        pytest.param(
            SUMMARY, {"entity_names": ["ApiWorkflow"]}, {ENTITY}, id="seed000-§6-entity-name-is-entity-only"
        ),
        pytest.param(FIND, {}, {FILES}, id="seed000-§6-find-files-signal"),
        pytest.param(SUMMARY, {}, set(), id="seed000-§6-no-anchors-no-signals"),
        pytest.param(
            SUMMARY,
            {"process_domain": "api architecture", "process_subdomain": "workflow entity"},
            set(),
            id="seed000-§6-process-domain-takes-no-part",
        ),
        pytest.param(
            SUMMARY, {"matched_aliases": ["FastAPI"]}, {API}, id="seed000-§6-substring-marker-fastapi-is-api"
        ),
        pytest.param(
            FIND,
            {"endpoint_paths": ["/x"], "file_names": ["docs/architecture/a.md"], "entity_names": ["User"]},
            {FILES, API, ARCH, ENTITY},
            id="seed000-§6-signals-accumulate",
        ),
    ],
)
def test_signal_detection(kind: tuple[str, str], anchors: dict[str, Any], signals: set[AnchorSignal]) -> None:
    assert anchor_signal_types(route(kind, **anchors)) == signals


# --- §7 summary profile selection -------------------------------------------------------------

PROFILE_OF = {
    API: "docs_summary_api_endpoint",
    ARCH: "docs_summary_architecture",
    LOGIC: "docs_summary_logic_flow",
    ENTITY: "docs_summary_domain_entity",
}


@pytest.mark.parametrize("signal", list(SINGLE_SIGNAL_ANCHORS), ids=lambda s: f"seed000-§7-single-{s}")
def test_single_signal_picks_its_profile(signal: AnchorSignal) -> None:
    assert resolve_plan(route(**SINGLE_SIGNAL_ANCHORS[signal])).profile == PROFILE_OF[signal]


@pytest.mark.parametrize(
    "anchors",
    [
        pytest.param(
            {"endpoint_paths": ["/health"], "matched_aliases": ["architecture"]}, id="seed000-§7-api+arch"
        ),
        pytest.param(
            {"endpoint_paths": ["/health"], "entity_names": ["RagSession"]}, id="seed000-§7-api+entity"
        ),
        pytest.param(
            {"target_doc_hints": ["docs/logic/a.md"], "entity_names": ["User"]}, id="seed000-§7-logic+entity"
        ),
        pytest.param({"file_names": ["docs/api/architecture.md"]}, id="seed000-§7-one-value-two-signals"),
        pytest.param({}, id="seed000-§7-no-signals"),
        pytest.param(
            {"process_domain": "billing", "process_subdomain": "refunds"}, id="seed000-§7-weak-domain-only"
        ),
        pytest.param({"target_doc_hints": ["README.md"]}, id="seed000-§7-weak-hint-without-markers"),
    ],
)
def test_conflicting_weak_or_no_signals_fall_back_to_generic(anchors: dict[str, Any]) -> None:
    assert resolve_plan(route(**anchors)).profile == "docs_summary_generic"


# --- §8 profiles, layers, limits --------------------------------------------------------------

PROFILE_CASES = [
    (route(GENERAL), "general_qa_grounded_summary", ["D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"], 8),
    (route(FIND), "file_lookup", ["D1_DOCUMENT_CATALOG", "D3_ENTITY_CATALOG"], 12),
    (
        route(**SINGLE_SIGNAL_ANCHORS[API]),
        "docs_summary_api_endpoint",
        ["D1_DOCUMENT_CATALOG", "D2_FACT_INDEX", "D0_DOC_CHUNKS"],
        8,
    ),
    (
        route(**SINGLE_SIGNAL_ANCHORS[LOGIC]),
        "docs_summary_logic_flow",
        ["D4_WORKFLOW_INDEX", "D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"],
        8,
    ),
    (
        route(**SINGLE_SIGNAL_ANCHORS[ENTITY]),
        "docs_summary_domain_entity",
        ["D3_ENTITY_CATALOG", "D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"],
        8,
    ),
    (
        route(**SINGLE_SIGNAL_ANCHORS[ARCH]),
        "docs_summary_architecture",
        ["D1_DOCUMENT_CATALOG", "D5_RELATION_GRAPH", "D0_DOC_CHUNKS"],
        8,
    ),
    (route(SUMMARY), "docs_summary_generic", ["D1_DOCUMENT_CATALOG", "D0_DOC_CHUNKS"], 8),
]


@pytest.mark.parametrize(
    ("request_route", "profile", "layers", "limit"),
    PROFILE_CASES,
    ids=[f"seed000-§8-{case[1]}" for case in PROFILE_CASES],
)
def test_profile_layers_and_limit(
    request_route: RouteResult, profile: str, layers: list[str], limit: int
) -> None:
    plan = resolve_plan(request_route)
    assert (plan.profile, plan.layers, plan.limit) == (profile, layers, limit)


def test_seed000_s8_every_profile_is_covered() -> None:
    """seed 000 §8: the table above names all seven profiles."""
    assert {case[1] for case in PROFILE_CASES} == {profile.value for profile in RetrievalProfile}


# --- §9 general branch ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "anchors",
    [
        pytest.param({}, id="seed000-§9-general-no-anchors"),
        pytest.param(
            {
                "target_doc_hints": ["docs/api/users.md"],
                "endpoint_paths": ["/users"],
                "process_domain": "billing",
                "process_subdomain": "refunds",
            },
            id="seed000-§9-general-keeps-hints-ignores-domain",
        ),
        # our fallback routes "в общих чертах" / "in general" questions GENERAL_QA even with aliases and
        # entities (issue 41 item 4): the general plan stays the seed's, no anchor narrows it
        pytest.param(
            {"matched_aliases": ["logging", "processors"], "entity_names": ["TimeStamper"],
             "file_names": ["docs/api/x.md"], "relation_predicates": ["calls"], "policy_markers": ["rules"]},
            id="seed000-§9-general-ignores-aliases-entities-files",
        ),
    ],
)
def test_general_filters(anchors: dict[str, Any]) -> None:
    assert resolve_plan(route(GENERAL, **anchors)).filters.seed_dict() == {
        "prefer_path_prefixes": ["docs/architecture/", "docs/"],
        "prefer_like_patterns": ["%readme.md%", "%overview%"],
        "target_doc_hints": list(anchors.get("target_doc_hints", [])),
    }


# --- §9 summary branch ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("anchors", "prefixes"),
    [
        pytest.param(SINGLE_SIGNAL_ANCHORS[API], ["docs/api/", "docs/"], id="seed000-§9-summary-prefer-api"),
        pytest.param(
            SINGLE_SIGNAL_ANCHORS[ARCH],
            ["docs/architecture/", "docs/"],
            id="seed000-§9-summary-prefer-architecture",
        ),
        pytest.param(
            SINGLE_SIGNAL_ANCHORS[LOGIC],
            ["docs/logic/", "docs/architecture/", "docs/"],
            id="seed000-§9-summary-prefer-logic",
        ),
        pytest.param(
            SINGLE_SIGNAL_ANCHORS[ENTITY],
            ["docs/domains/", "docs/", "docs/api/"],
            id="seed000-§9-summary-prefer-entity",
        ),
        pytest.param({}, ["docs/"], id="seed000-§9-summary-prefer-no-signals"),
        pytest.param(
            {"endpoint_paths": ["/x"], "matched_aliases": ["architecture"]},
            ["docs/api/", "docs/", "docs/architecture/"],
            id="seed000-§9-summary-prefer-api+arch-merged",
        ),
        pytest.param(
            {"endpoint_paths": ["/x"], "entity_names": ["User"]},
            ["docs/api/", "docs/", "docs/domains/"],
            id="seed000-§9-summary-prefer-api+entity-merged",
        ),
        pytest.param(
            {"matched_aliases": ["workflow"], "entity_names": ["User"]},
            ["docs/logic/", "docs/architecture/", "docs/", "docs/domains/", "docs/api/"],
            id="seed000-§9-summary-prefer-logic+entity-merged",
        ),
    ],
)
def test_summary_prefer_path_prefixes(anchors: dict[str, Any], prefixes: list[str]) -> None:
    assert resolve_plan(route(**anchors)).filters.seed_dict()["prefer_path_prefixes"] == prefixes


@pytest.mark.parametrize(
    ("anchors", "path_prefixes"),
    [
        pytest.param(
            SINGLE_SIGNAL_ANCHORS[API], ["docs/api/", "docs/"], id="seed000-§9-api-adds-hard-prefixes"
        ),
        pytest.param(
            {"endpoint_paths": ["/x"], "matched_aliases": ["architecture"]},
            ["docs/api/", "docs/"],
            id="seed000-§12-api+arch-generic-keeps-hard-prefixes",
        ),
        pytest.param(
            {"endpoint_paths": ["/x"], "entity_names": ["User"]},
            ["docs/api/", "docs/"],
            id="seed000-§12-api+entity-generic-keeps-hard-prefixes",
        ),
        pytest.param(SINGLE_SIGNAL_ANCHORS[ARCH], None, id="seed000-§9-architecture-no-hard-prefixes"),
        pytest.param(SINGLE_SIGNAL_ANCHORS[LOGIC], None, id="seed000-§9-logic-no-hard-prefixes"),
        pytest.param(SINGLE_SIGNAL_ANCHORS[ENTITY], None, id="seed000-§9-entity-no-hard-prefixes"),
        pytest.param({}, None, id="seed000-§9-no-signals-no-hard-prefixes"),
    ],
)
def test_summary_hard_path_prefixes_only_with_api_signal(
    anchors: dict[str, Any], path_prefixes: list[str] | None
) -> None:
    assert resolve_plan(route(**anchors)).filters.seed_dict().get("path_prefixes") == path_prefixes


def test_seed000_s9_summary_filters_full_example() -> None:
    """seed 000 §9, §5: all summary keys together; terms lower-cased, `%term%`, deduped in source order."""
    plan = resolve_plan(
        route(
            target_doc_hints=["docs/api/Users.md", "docs/other/users.md"],
            endpoint_paths=["/Users"],
            file_names=["docs/api/Users.md"],
            entity_names=["RagSession"],
            matched_aliases=["ragsession", "Billing"],
            process_domain="Billing",
            process_subdomain="Refunds",
        )
    )
    assert plan.profile == "docs_summary_generic"  # API + DOMAIN_ENTITY conflict
    assert plan.filters.seed_dict() == {
        "target_doc_hints": ["docs/api/Users.md", "docs/other/users.md"],
        "metadata.domain": "billing",
        "metadata.subdomain": "refunds",
        "path_prefixes": ["docs/api/", "docs/"],
        "prefer_path_prefixes": ["docs/api/", "docs/", "docs/domains/"],
        "prefer_like_patterns": [
            "%users.md%",
            "%/users%",
            "%docs/api/users.md%",
            "%ragsession%",
            "%billing%",
            "%refunds%",
        ],
    }


# --- §9 domain / subdomain, both branches -----------------------------------------------------


@pytest.mark.parametrize("kind", [SUMMARY, FIND], ids=["summary", "find-files"])
@pytest.mark.parametrize(
    ("domain", "subdomain", "expected"),
    [
        pytest.param(
            "billing", "refunds", {"metadata.domain": "billing", "metadata.subdomain": "refunds"}, id="both"
        ),
        pytest.param("Billing", None, {"metadata.domain": "billing"}, id="domain-only"),
        pytest.param(None, "refunds", {"metadata.subdomain": "refunds"}, id="subdomain-only"),
        pytest.param(None, None, {}, id="absent"),
        pytest.param("  ", "", {}, id="blank-is-absent"),
    ],
)
def test_seed000_s9_metadata_filters(
    kind: tuple[str, str], domain: str | None, subdomain: str | None, expected: dict[str, str]
) -> None:
    """seed 000 §9-10: metadata.domain/subdomain only when the route has them (lower-cased for §11's SQL)."""
    filters = resolve_plan(route(kind, process_domain=domain, process_subdomain=subdomain)).filters.seed_dict()
    assert {key: value for key, value in filters.items() if key.startswith("metadata.")} == expected


# --- §9 FIND_FILES branch ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("anchors", "path_prefixes"),
    [
        pytest.param(
            {
                "target_doc_hints": ["docs/api/users.md", "docs/api/orders.md", "guides/setup.md"],
                "file_names": ["docs/logic/flow.md"],
                "endpoint_paths": ["/x"],
            },
            ["docs/api/", "guides/"],
            id="seed000-§9-priority1-hint-directories",
        ),
        pytest.param(
            {"target_doc_hints": ["docs/ru/docs/tutorial/body.md"]},
            ["docs/ru/docs/tutorial/"],
            id="seed000-§9-priority1-nested-corpus-hint",
        ),
        pytest.param(
            {"target_doc_hints": ["README.md"], "file_names": ["docs/logic/flow.md", "docs/index.md"]},
            ["docs/logic/", "docs/"],
            id="seed000-§9-priority2-docs-file-directories-when-hints-have-none",
        ),
        pytest.param(
            {"file_names": ["config/app.yaml", "docs/domains/user.md"]},
            ["docs/domains/"],
            id="seed000-§9-priority2-only-docs-file-names",
        ),
        pytest.param(
            {"file_names": ["config/app.yaml"], "endpoint_paths": ["/health"]},
            ["docs/api/", "docs/"],
            id="seed000-§9-priority3-api-fallback",
        ),
        pytest.param(
            {"matched_aliases": ["architecture"]},
            ["docs/architecture/", "docs/"],
            id="seed000-§9-priority3-arch-fallback",
        ),
        pytest.param(
            {"matched_aliases": ["workflow"]},
            ["docs/logic/", "docs/"],
            id="seed000-§9-priority3-logic-fallback",
        ),
        pytest.param(
            {"entity_names": ["User"]}, ["docs/domains/", "docs/"], id="seed000-§9-priority3-entity-fallback"
        ),
        pytest.param(
            {"endpoint_paths": ["/x"], "matched_aliases": ["architecture"]},
            ["docs/api/", "docs/", "docs/architecture/"],
            id="seed000-§9-priority3-several-signals-merged",
        ),
        pytest.param({}, ["docs/"], id="seed000-§9-priority4-default"),
        pytest.param({"process_domain": "billing"}, ["docs/"], id="seed000-§9-priority4-domain-is-no-signal"),
    ],
)
def test_find_files_path_prefix_priority(anchors: dict[str, Any], path_prefixes: list[str]) -> None:
    assert resolve_plan(route(FIND, **anchors)).filters.seed_dict()["path_prefixes"] == path_prefixes


@pytest.mark.parametrize(
    ("anchors", "prefer"),
    [
        pytest.param(
            {"endpoint_paths": ["/x"]}, ["docs/api/", "docs/"], id="seed000-§9-prefer-equals-path-prefixes"
        ),
        pytest.param(
            {"endpoint_paths": ["/x"], "process_domain": "billing"},
            ["docs/api/", "docs/", "docs/domains/", "docs/logic/"],
            id="seed000-§9-prefer-domain-extras",
        ),
        pytest.param(
            {"process_subdomain": "refunds"},
            ["docs/", "docs/domains/", "docs/logic/"],
            id="seed000-§9-prefer-subdomain-extras",
        ),
        pytest.param(
            {"entity_names": ["User"], "process_domain": "billing"},
            ["docs/domains/", "docs/", "docs/logic/"],
            id="seed000-§9-prefer-extras-deduped",
        ),
    ],
)
def test_find_files_prefer_path_prefixes(anchors: dict[str, Any], prefer: list[str]) -> None:
    assert resolve_plan(route(FIND, **anchors)).filters.seed_dict()["prefer_path_prefixes"] == prefer


@pytest.mark.parametrize(
    ("anchors", "patterns"),
    [
        pytest.param(
            {
                "target_doc_hints": ["docs/api/Users.md", "docs/v2/users.md", "docs/api/"],
                "endpoint_paths": ["/users"],
                "entity_names": ["User"],
            },
            ["%users.md%", "%api%"],
            id="seed000-§5-find-files-hints-basenames-only",
        ),
        pytest.param(
            {
                "endpoint_paths": ["/Users"],
                "file_names": ["docs/a.md"],
                "entity_names": ["User"],
                "process_domain": "B",
            },
            ["%/users%", "%docs/a.md%", "%user%", "%b%"],
            id="seed000-§5-find-files-without-hints-uses-all-terms",
        ),
    ],
)
def test_find_files_prefer_like_patterns(anchors: dict[str, Any], patterns: list[str]) -> None:
    assert resolve_plan(route(FIND, **anchors)).filters.seed_dict()["prefer_like_patterns"] == patterns


def test_seed000_s9_find_files_filters_full_example() -> None:
    """seed 000 §9: every FIND_FILES key is present even with no anchors at all."""
    assert resolve_plan(route(FIND)).filters.seed_dict() == {
        "target_doc_hints": [],
        "path_prefixes": ["docs/"],
        "prefer_path_prefixes": ["docs/"],
        "prefer_like_patterns": [],
    }


@pytest.mark.parametrize("kind", [GENERAL, SUMMARY, FIND], ids=["general", "summary", "find-files"])
def test_seed000_s10_target_doc_hints_are_kept_verbatim(kind: tuple[str, str]) -> None:
    """seed 000 §10: target_doc_hints always travel in the plan, untouched."""
    hints = ["docs/API/Users.md", "README.md", "docs/api/Users.md"]
    assert resolve_plan(route(kind, target_doc_hints=hints)).filters.seed_dict()["target_doc_hints"] == hints


# --- §5 _AnchorTermCollector and LIKE patterns ------------------------------------------------


def test_seed000_s5_collector_source_order_lowercase_and_dedupe() -> None:
    """seed 000 §5: hint basenames, endpoints, files, entities, aliases, domain, subdomain; lower-cased."""
    anchors = {
        "target_doc_hints": ["docs/Alpha.md"],
        "endpoint_paths": ["/beta"],
        "file_names": ["Gamma.yaml"],
        "entity_names": ["Delta", "ALPHA.MD"],
        "matched_aliases": ["epsilon", "  "],
        "process_domain": "Zeta",
        "process_subdomain": "eta",
    }
    assert _AnchorTermCollector().terms(route(**anchors)) == [
        "alpha.md",
        "/beta",
        "gamma.yaml",
        "delta",
        "epsilon",
        "zeta",
        "eta",
    ]


@pytest.mark.parametrize(
    ("term", "pattern"),
    [
        ("Users.md", "%users.md%"),
        ("add_api_route", "%add\\_api\\_route%"),
        ("100%", "%100\\%%"),
        ("a\\b", "%a\\\\b%"),
    ],
)
def test_seed000_s5_like_pattern_is_lowercase_and_escaped(term: str, pattern: str) -> None:
    """seed 000 §5 `%term%`; SPEC §8: LIKE metacharacters from user input are escaped."""
    assert like_pattern(term) == pattern


def test_seed000_s5_filter_builder_exposes_the_three_branches() -> None:
    """seed 000 §5: `_RouteFilterBuilder` has one method per branch; resolve_plan uses them.

    Expectations are written out from seed 000 §9 (general: architecture/README preferences, no hard
    prefixes; summary with an API signal: hard and preferred `docs/api/`, `docs/`) and §10 (FIND_FILES
    with an API signal: `docs/api/`, `docs/`) instead of comparing the builder with resolve_plan only.
    """
    builder = _RouteFilterBuilder(_AnchorTermCollector())
    general = {
        "prefer_path_prefixes": ["docs/architecture/", "docs/"],
        "prefer_like_patterns": ["%readme.md%", "%overview%"],
        "target_doc_hints": [],
    }
    api_summary = {
        "target_doc_hints": [],
        "path_prefixes": ["docs/api/", "docs/"],
        "prefer_path_prefixes": ["docs/api/", "docs/"],
        "prefer_like_patterns": ["%/x%"],
    }
    summary_route = route(SUMMARY, endpoint_paths=["/x"])

    assert builder.general_filters(summary_route) == general
    assert builder.summary_filters(summary_route) == api_summary
    assert builder.find_files_filters(summary_route)["path_prefixes"] == ["docs/api/", "docs/"]
    assert resolve_plan(route(GENERAL, endpoint_paths=["/x"])).filters.seed_dict() == general
    assert resolve_plan(summary_route).filters.seed_dict() == api_summary


# --- §12 invariants ---------------------------------------------------------------------------


def test_seed000_s12_process_domain_does_not_change_the_profile() -> None:
    """seed 000 §6, §12: process_domain/subdomain never take part in profile selection."""
    for signal, anchors in SINGLE_SIGNAL_ANCHORS.items():
        with_domain = route(**anchors, process_domain="billing", process_subdomain="refunds")
        assert resolve_plan(with_domain).profile == PROFILE_OF[signal]


def test_seed000_s1_plan_is_frozen() -> None:
    """seed 000 §1: one frozen RetrievalPlan(profile, layers, limit, filters)."""
    plan = resolve_plan(route())
    assert isinstance(plan, RetrievalPlan)
    with pytest.raises(ValidationError):
        plan.limit = 100  # type: ignore[misc]


_anchor_values = st.lists(
    st.sampled_from(
        [
            "docs/api/users.md",
            "docs/architecture/a.md",
            "workflow",
            "User",
            "README.md",
            "/health",
            "FastAPI",
            "x",
        ]
    ),
    max_size=3,
)
_anchors = st.builds(
    RouteAnchors,
    entity_names=_anchor_values,
    file_names=_anchor_values,
    endpoint_paths=st.lists(st.sampled_from(["/health", "/users/{id}"]), max_size=2),
    target_doc_hints=_anchor_values,
    matched_aliases=_anchor_values,
    process_domain=st.sampled_from([None, "billing"]),
    process_subdomain=st.sampled_from([None, "refunds"]),
)
_routes = st.builds(
    RouteResult,
    intent=st.sampled_from(["GENERAL_QA", "DOC_EXPLAIN"]),
    subintent=st.sampled_from(["SUMMARY", "FIND_FILES"]),
    user_query=st.just("q"),
    anchors=_anchors,
)


@settings(database=None, max_examples=200)
@given(routed=_routes, terms=st.lists(st.text(max_size=20), max_size=7), query=st.text(max_size=40))
def test_seed000_s3_s12_target_terms_and_query_text_never_change_the_plan(
    routed: RouteResult, terms: list[str], query: str
) -> None:
    """seed 000 §3, §12: target_terms (and the raw text) take no part in branching or filters."""
    changed = routed.model_copy(
        update={"target_terms": terms, "normalized_query": query, "user_query": query}
    )
    assert resolve_plan(changed) == resolve_plan(routed)


@settings(database=None, max_examples=200)
@given(routed=_routes)
def test_seed000_s4_always_one_valid_deterministic_plan(routed: RouteResult) -> None:
    """seed 000 §4: every route yields one valid plan, the same one every time."""
    plan = resolve_plan(routed)
    assert plan == resolve_plan(routed)
    assert plan.profile in {profile.value for profile in RetrievalProfile}
    assert plan.layers and plan.limit > 0
    assert "target_doc_hints" in plan.filters.seed_dict()
