"""Layout discovery, prefix translation and plan relaxation (SPEC §10): pure, no database."""

from __future__ import annotations

import pytest

from nodes.context_retrieval.relax import can_find, next_step, relax_plan
from nodes.layout import about_the_project, discover_layout, overview_request, says_this_project, translate_prefixes
from nodes.retrieval_policy import PlanFilters, RetrievalPlan

DOCS_TREE = ["docs/ru/docs/index.md", "docs/ru/docs/tutorial/cors.md", "pkg/__init__.py", "pkg/core.py",
             "pkg/sub/__init__.py", "README.md"]
ROOT_DOCS = ["README.md", "CHANGELOG.md", "specs/a/spec.md", "src/lib/__init__.py", "src/lib/x.py"]
CODE_ONLY = ["click/__init__.py", "click/core.py", "LICENSE.txt"]


@pytest.mark.parametrize(("paths", "roots", "landing"), [
    (DOCS_TREE, ("", "docs/"), ("README.md", "docs/ru/docs/index.md", "pkg/__init__.py")),
    (ROOT_DOCS, ("", "specs/"), ("README.md", "src/lib/__init__.py")),
    (CODE_ONLY, (), ("click/__init__.py",)),
    ([], (), ()),
])
def test_discover_layout(paths: list[str], roots: tuple[str, ...], landing: tuple[str, ...]) -> None:
    layout = discover_layout(paths)
    assert layout.doc_roots == roots and layout.landing == landing


def test_packages_are_the_top_level_ones() -> None:
    assert discover_layout(DOCS_TREE).packages == ("pkg",)
    assert discover_layout(ROOT_DOCS).packages == ("lib",)


@pytest.mark.parametrize(("paths", "prefixes", "expected"), [
    (DOCS_TREE, ["docs/api/", "docs/"], ["docs/"]),           # what exists is kept
    (ROOT_DOCS, ["docs/api/", "docs/"], []),                  # markdown at the root: no prefix filter
    (["guide/a.md", "guide/b.md", "x.py"], ["docs/"], ["guide/"]),  # the discovered root instead
    (CODE_ONLY, ["docs/"], []),                               # no markdown at all: nothing to narrow to
    (DOCS_TREE, [], []),
])
def test_translate_prefixes(paths: list[str], prefixes: list[str], expected: list[str]) -> None:
    assert translate_prefixes(prefixes, discover_layout(paths)) == expected


def test_translate_without_a_layout_keeps_the_seed_prefixes() -> None:
    assert translate_prefixes(["docs/"], None) == ["docs/"]


FIND = RetrievalPlan(profile="file_lookup", layers=["D1_DOCUMENT_CATALOG", "D3_ENTITY_CATALOG"], limit=12,
                     filters=PlanFilters(path_prefixes=["docs/"], prefer_path_prefixes=["docs/api/"],
                                         prefer_like_patterns=["%cors%"], target_doc_hints=["docs/cors.md"],
                                         metadata_domain="api"))


def test_hard_step_is_the_plan() -> None:
    assert relax_plan(FIND, "hard") == FIND


def test_preference_step_turns_hard_filters_into_preferences() -> None:
    plan = relax_plan(FIND, "preference")
    assert plan.filters.path_prefixes is None and plan.filters.metadata_domain is None
    assert plan.filters.prefer_path_prefixes == ["docs/", "docs/api/"]
    assert plan.filters.prefer_like_patterns == ["%cors%"] and plan.filters.target_doc_hints == ["docs/cors.md"]
    assert plan.layers == ["D1_DOCUMENT_CATALOG", "D3_ENTITY_CATALOG", "D0_DOC_CHUNKS"]


def test_none_step_drops_every_filter_and_opens_every_layer() -> None:
    plan = relax_plan(FIND, "none")
    assert plan.filters.path_prefixes is None and plan.filters.prefer_path_prefixes is None
    assert plan.filters.metadata_domain is None and plan.filters.target_doc_hints == ["docs/cors.md"]
    assert {"D0_DOC_CHUNKS", "D2_FACT_INDEX", "C0_SOURCE_CHUNKS", "C1_SYMBOL_CATALOG"} <= set(plan.layers)
    assert plan.profile == FIND.profile and plan.limit == FIND.limit


@pytest.mark.parametrize(("step", "found", "limit", "expected"), [
    ("hard", 12, 12, None), ("hard", 3, 12, "preference"), ("preference", 0, 8, "none"), ("none", 0, 8, None),
    ("preference", 9, 8, None),
])
def test_next_step(step: str, found: int, limit: int, expected: str | None) -> None:
    assert next_step(step, found, limit) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("query", "about", "says", "overview"), [
    ("What is lib and who is it for?", True, False, True),
    ("What is lib-pm, and where does it keep my data?", True, False, True),  # a distribution name
    ("Как устроен этот проект: на чём он написан и где хранит данные?", True, True, False),
    ("How does this library retry failed requests to the remote server?", True, True, False),
    ("What exit code does a lib program return on a usage error?", True, False, False),
    ("How do I configure CORS headers for a single route?", False, False, False),
])
def test_questions_about_the_repository_itself(query: str, about: bool, says: bool, overview: bool) -> None:
    from nodes.conversation_understanding import is_generic_term
    from nodes.terms import key_terms

    layout = discover_layout(ROOT_DOCS)
    topics = [t for t in key_terms(query) if not is_generic_term(t)]
    assert (about_the_project(query, layout), says_this_project(query)) == (about, says)
    assert overview_request(query, topics, layout) is overview


CODE_ONLY = frozenset({"C0_SOURCE_CHUNKS", "C1_SYMBOL_CATALOG"})


@pytest.mark.parametrize(("layers", "present", "expected"), [
    (["D1_DOCUMENT_CATALOG", "D3_ENTITY_CATALOG"], CODE_ONLY, False),   # a code-only repository: no cards
    (["D1_DOCUMENT_CATALOG", "C1_SYMBOL_CATALOG"], CODE_ONLY, True),    # one layer that holds rows is enough
    ([], CODE_ONLY, True),                                              # no layer filter: every row
    (["D1_DOCUMENT_CATALOG"], None, True),                              # not known: query
    (["D0_DOC_CHUNKS"], frozenset(), False),                            # an empty session
])
def test_can_find(layers: list[str], present: frozenset[str] | None, expected: bool) -> None:
    assert can_find(layers, present) is expected


def test_a_code_only_repository_skips_to_the_step_that_opens_the_code_layers() -> None:
    """Hard and preference steps over docs layers are not queried; the rows and the step are the same."""
    from nodes.context_retrieval.adapter import RetrievalAdapter
    from stores.embedders import FakeEmbeddings
    from stores.sessions import RagSession

    class Repository:
        def __init__(self) -> None:
            self.asked: list[tuple[str, ...]] = []

        def retrieve(self, session, **kwargs):
            layers = tuple(kwargs["filters"].layers)
            self.asked.append(layers)
            return [{"id": f"c{i}", "path": "pkg/mod.py", "layer": "C0_SOURCE_CHUNKS", "title": "",
                     "content": "x", "metadata": {}, "span_start": i, "span_end": i, "distance": 0.3,
                     "lexical_score": 0.0} for i in range(3)] if "C0_SOURCE_CHUNKS" in layers else []

    session = RagSession(rag_session_id="s", name="s", embedder="fake", embedding_dim=64, active_generation=1)
    results = {}
    for present in (None, CODE_ONLY):
        repo = Repository()
        adapter = RetrievalAdapter(repo, FakeEmbeddings(), present_layers=present)  # type: ignore[arg-type]
        rows, step = adapter._ranked(session, FIND, "cors settings", [0.0] * 64, lambda lane: True)
        results[present] = ([r["id"] for r in rows], step, len(repo.asked))
    assert results[None][:2] == results[CODE_ONLY][:2] == (["c0", "c1", "c2"], "none")
    assert (results[None][2], results[CODE_ONLY][2]) == (3, 1)
