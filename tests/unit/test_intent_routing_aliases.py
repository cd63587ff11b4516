"""`InMemoryAliasIndex`: construction from plain data, matching rules, the endpoint map, speed."""

from __future__ import annotations

import time

import pytest

from nodes.intent_routing import AliasEntry, AliasIndex, InMemoryAliasIndex
from nodes.tokens import words_of


def terms(index: InMemoryAliasIndex, text: str) -> list[str]:
    return [m.entry.term for m in index.find_aliases(words_of(text))]


def test_constructor_takes_plain_lists_and_dicts() -> None:
    index = InMemoryAliasIndex(
        [AliasEntry("CORS", ["docs/cors.md"], forms=["Cross-Origin Resource Sharing"])],
        {"/health": ["docs/health.md"]},
    )

    assert isinstance(index, AliasIndex)
    assert list(index.entries) == ["cors"]
    assert index.entries["cors"].docs == ("docs/cors.md",)
    assert index.endpoint_docs("/health") == ["docs/health.md"]


def test_from_entries_accepts_dicts_like_db_rows() -> None:
    index = InMemoryAliasIndex.from_entries(
        [
            {"term": "apirouter", "docs": ["docs/bigger.md"], "domain": "routing"},
            AliasEntry("lifespan", ("docs/events.md",)),
        ],
        endpoints={"/token": ["docs/oauth2.md"]},
    )

    assert terms(index, "APIRouter и lifespan") == ["apirouter", "lifespan"]
    assert index.entries["apirouter"].domain == "routing"


def test_entries_with_one_term_are_merged() -> None:
    index = InMemoryAliasIndex(
        [
            AliasEntry("middleware", ["docs/a.md"], forms=["промежуточный слой"]),
            AliasEntry("Middleware", ["docs/b.md", "docs/a.md"], domain="http"),
        ]
    )

    entry = index.entries["middleware"]
    assert entry.docs == ("docs/a.md", "docs/b.md")
    assert entry.domain == "http"
    assert terms(index, "что такое промежуточный слой") == ["middleware"]


@pytest.mark.parametrize(
    "text",
    ["архитектура сессий", "об архитектуре сессии", "с архитектурой сессиями", "Архитектуры сессий"],
)
def test_russian_inflections_match(text: str) -> None:
    index = InMemoryAliasIndex([AliasEntry("архитектура сессий", ["docs/sessions.md"])])
    assert terms(index, text) == ["архитектура сессий"]


def test_multi_word_alias_wins_over_its_prefix() -> None:
    index = InMemoryAliasIndex(
        [AliasEntry("oauth2", ["docs/oauth2.md"]), AliasEntry("oauth2 scopes", ["docs/scopes.md"])]
    )

    matches = index.find_aliases(words_of("explain oauth2 scopes and oauth2"))
    assert [(m.entry.term, m.start, m.end) for m in matches] == [("oauth2 scopes", 1, 3), ("oauth2", 4, 5)]


def test_partial_multi_word_alias_does_not_match() -> None:
    index = InMemoryAliasIndex([AliasEntry("фоновые задачи", ["docs/bg.md"])])
    assert terms(index, "фоновые процессы") == []


@pytest.mark.parametrize("term", ["id", "ok", "ui", "python", "документация", "что", "the", "12345"])
def test_short_common_and_stop_aliases_never_match(term: str) -> None:
    index = InMemoryAliasIndex([AliasEntry(term, ["docs/x.md"])])
    assert terms(index, f"расскажи про {term} please") == []


def test_multi_word_alias_of_common_words_still_matches() -> None:
    index = InMemoryAliasIndex([AliasEntry("python types", ["docs/python-types.md"])])
    assert terms(index, "intro to python types") == ["python types"]


@pytest.mark.parametrize(
    ("path", "docs"),
    [
        ("/items/{item_id}", ["docs/path.md"]),
        ("/items/42", ["docs/path.md"]),
        ("/ITEMS/42/", ["docs/path.md"]),
        ("/items/42?q=1", ["docs/path.md"]),
        ("/items", ["docs/items.md"]),
        ("/items/42/extra", []),
        ("/nope", []),
    ],
)
def test_endpoint_map_with_templates(path: str, docs: list[str]) -> None:
    index = InMemoryAliasIndex(endpoints={"/items/{item_id}": ["docs/path.md"], "/items/": ["docs/items.md"]})
    assert index.endpoint_docs(path) == docs


def test_two_thousand_aliases_match_fast() -> None:
    entries = [
        AliasEntry(f"term{i} topic{i % 50}", [f"docs/{i}.md"], forms=[f"Entity{i}"]) for i in range(2000)
    ]
    entries.append(AliasEntry("зависимости", ["docs/deps.md"]))
    start = time.perf_counter()
    index = InMemoryAliasIndex(entries)
    built = time.perf_counter() - start
    words = words_of("Как entity1999 связан с term7 topic7 и зависимостями в term8 topic9? " * 3)

    start = time.perf_counter()
    for _ in range(200):
        found = index.find_aliases(words)
    per_query = (time.perf_counter() - start) / 200

    assert [m.entry.term for m in found] == ["term1999 topic49", "term7 topic7", "зависимости"]
    assert built < 1.0
    assert per_query < 0.005


def test_package_names_stay_aliases_but_pin_no_document() -> None:
    from nodes.intent_routing.alias_index import alias_entries

    rows = [{"path": "skills/tool/SKILL.md", "layer": "D1_DOCUMENT_CATALOG", "title": "tool",
             "metadata": {"has_frontmatter": True, "domain": "tool"}},
            {"path": "docs/cors.md", "layer": "D1_DOCUMENT_CATALOG", "title": "CORS", "metadata": {}}]
    entries = {e.term: e for e in alias_entries(rows, unpinned=["tool"])[0]}
    assert entries["tool"].docs == () and entries["tool"].domain is None
    assert entries["cors"].docs == ("docs/cors.md",)
    pinned = {e.term: e for e in alias_entries(rows)[0]}
    assert pinned["tool"].docs == ("skills/tool/SKILL.md",) and pinned["tool"].domain == "tool"


@pytest.mark.parametrize(("domains", "expected"), [
    (["rag", "rag"], "rag"),
    (["rag", "qa"], None),     # the first document's domain became a hard filter that hid the other page
    (["rag", None], None),     # a page without a declared domain would be filtered away just the same
    ([None, None], None),
])
def test_a_term_takes_a_domain_only_when_all_its_documents_declare_it(domains: list[str | None],
                                                                      expected: str | None) -> None:
    from nodes.intent_routing.alias_index import alias_entries

    rows = [{"path": f"docs/{i}.md", "layer": "D1_DOCUMENT_CATALOG", "title": "Retrieval",
             "metadata": {"has_frontmatter": domain is not None, "domain": domain, "tags": ["retrieval"]}}
            for i, domain in enumerate(domains)]
    entries = {e.term: e for e in alias_entries(rows)[0]}
    assert len(entries["retrieval"].docs) == 2 and entries["retrieval"].domain == expected


@pytest.mark.parametrize(("domains", "expected"), [
    (["rag", "rag"], "rag"),
    ([None, "rag"], "rag"),    # a matched term without a domain says nothing about it
    (["rag", "qa"], None),     # two matched terms of different domains: no hard filter
    ([None], None),
])
def test_the_route_takes_a_process_domain_only_when_the_matched_terms_agree(domains: list[str | None],
                                                                           expected: str | None) -> None:
    from nodes.intent_routing.anchors import process_domain_entry

    entry = process_domain_entry([AliasEntry(term=f"t{i}", domain=d) for i, d in enumerate(domains)])
    assert (entry.domain if entry is not None else None) == expected
