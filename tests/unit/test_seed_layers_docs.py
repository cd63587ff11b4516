"""Issue 30 items 1–2: seed 003 §5.1 relation fields (typed card fields, D5 edges on their own lines) and
the policy layer (D6_POLICY_INDEX, seed 003's D4_POLICY_INDEX)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.indexing.docs.markdown import parse_markdown
from stores.indexing.docs.module_fields import (
    card_values,
    edge_content,
    edge_embed_text,
    edge_title,
    relation_values,
    value_line,
)
from stores.indexing.docs.policies import find_rules, is_policy_doc, is_rule_heading, normative_marker, rule_kind
from stores.indexing.docs_pipeline import index_markdown
from stores.layers import Layer

SEED_REPO = Path(__file__).resolve().parents[1] / "fixtures" / "seed_repo"


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ({"writes_db": ["rag_chunks", "rag_index_jobs"]}, {"writes_db": ["rag_chunks", "rag_index_jobs"]}),
        ({"calls_api": "/a, /b"}, {"calls_api": ["/a", "/b"]}),
        ({"consumes_events": [{"name": "index.completed"}]}, {"consumes_events": ["index.completed"]}),
        ({"reads_db": None, "title": "x"}, {}),
        ({"used_by": []}, {}),
    ],
)
def test_relation_values_typed(frontmatter: dict, expected: dict) -> None:
    assert relation_values(frontmatter) == expected


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ({"version": 2.1, "owners": "a, b"}, {"version": "2.1", "owners": ["a", "b"]}),
        ({"links": ["https://x"]}, {"links": ["https://x"]}),
        ({"version": ""}, {}),
    ],
)
def test_card_values(frontmatter: dict, expected: dict) -> None:
    assert card_values(frontmatter) == expected


HEAD = ["---", "id: m", "writes_db:", "  - rag_chunks", "  - rag_jobs", "reads_db: [rag_chunks]", "calls_api:", "---"]


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("writes_db", "rag_chunks", 4),  # a list item under its own key, not the other key's inline list
        ("writes_db", "rag_jobs", 5),
        ("reads_db", "rag_chunks", 6),
        ("calls_api", "/x", 7),  # value not written out: the key's line
        ("missing", "x", 1),
    ],
)
def test_value_line(key: str, value: str, line: int) -> None:
    assert value_line(HEAD, key, value) == line


def test_edge_text_names_both_ends_and_the_relation() -> None:
    assert edge_content("agent.chat", "Чат агента", "calls_api", "/internal/rag/retrieve") == (
        "agent.chat (Чат агента) calls (вызывает) /internal/rag/retrieve")
    assert edge_title("agent.chat", "calls_api", "/x").startswith("agent.chat calls_api /x (call calls вызывает")
    assert "пишут" in edge_title("m", "writes_db", "t")
    assert "пишут" in edge_embed_text("m", "M", "writes_db", "t")
    assert "потребляет" in edge_embed_text("m", "M", "consumes_events", "e")


def _rows(path: str, layer: Layer) -> list:
    result = index_markdown(path, (SEED_REPO / path).read_text())
    return [r for r in result.records if r.layer == layer]


def test_card_has_typed_relation_fields_and_searchable_lines() -> None:
    [card] = _rows("docs/modules/indexing.md", Layer.D1_DOCUMENT_CATALOG)
    assert card.metadata["writes_db"] == ["rag_chunks", "rag_index_jobs"]
    assert card.metadata["calls_api"] == [] and card.metadata["emits_events"] == ["index.completed"]
    assert card.metadata["version"] == "2.1" and card.metadata["owners"] == ["team-search"]
    assert card.metadata["links"] == ["https://wiki.example.org/rag/indexing"]
    assert "writes_db" not in card.metadata["frontmatter_extra"]
    assert "Writes DB: rag_chunks, rag_index_jobs" in card.content
    assert "Emits events: index.completed" in card.content


def test_one_edge_per_relation_value_on_its_frontmatter_line() -> None:
    text = (SEED_REPO / "docs/modules/indexing.md").read_text().split("\n")
    edges = [r for r in _rows("docs/modules/indexing.md", Layer.D5_RELATION_GRAPH) if r.metadata.get("relation")]
    assert {(r.metadata["src"], r.metadata["edge_type"], r.metadata["dst"]) for r in edges} == {
        ("rag.indexing", "writes_db", "rag_chunks"), ("rag.indexing", "writes_db", "rag_index_jobs"),
        ("rag.indexing", "emits_events", "index.completed"), ("rag.indexing", "used_by", "rag.retrieval")}
    for edge in edges:
        assert edge.span_start == edge.span_end and edge.metadata["dst"] in text[edge.span_start - 1]
    used_by = next(e for e in edges if e.metadata["relation"] == "used_by")
    assert used_by.metadata["inverse"] == "uses_logic"


def test_no_frontmatter_no_relation_edges() -> None:
    result = index_markdown("docs/x.md", "# X\n\nwrites_db: rag_chunks in the text is not a field.\n")
    assert not [r for r in result.records if r.metadata.get("relation")]


@pytest.mark.parametrize(
    ("text", "marker"),
    [
        ("Every table name must start with rag_.", "must"),
        ("You must not drop columns.", "must not"),
        ("Нельзя менять схему.", "нельзя"),
        ("Миграция обязательно идемпотентна.", "обязательно"),
        ("Имена должны быть в snake_case.", "должны"),
        ("You should probably read this.", None),
        ("The musty room.", None),
    ],
)
def test_normative_marker(text: str, marker: str | None) -> None:
    assert normative_marker(text) == marker


@pytest.mark.parametrize(
    ("title", "rule"),
    [("Rules", True), ("Правила для миграций", True), ("Code conventions", True), ("Defaults", True),
     ("Summary", False), ("Installation", False)],
)
def test_rule_heading(title: str, rule: bool) -> None:
    assert is_rule_heading(title) is rule


@pytest.mark.parametrize(("doc_type", "policy"), [("ADR", True), ("convention", True), ("policy", True),
                                                   ("module", False), (None, False), ("tutorial", False)])
def test_policy_doc_types(doc_type: str | None, policy: bool) -> None:
    assert is_policy_doc(doc_type) is policy


def test_rule_kind_default_behaviour() -> None:
    assert rule_kind("By default new tables get created_at.", ["Conventions"]) == "default_behavior"
    assert rule_kind("Tables are snake_case.", ["Conventions", "Defaults"]) == "default_behavior"
    assert rule_kind("Tables must be snake_case.", ["Conventions", "Rules"]) == "rule"


def test_rules_outside_rule_sections_need_a_normative_word() -> None:
    doc = parse_markdown("docs/a.md", "# Guide\n\n## Setup\n\n- install it\n- the key must be set\n\nPlain text. "
                         "Tokens must never be logged.\n")
    rules = find_rules(doc, "tutorial")
    assert [(r.text, r.start) for r in rules] == [("the key must be set", 6), ("Tokens must never be logged.", 8)]


def test_policy_rows_of_a_convention_document() -> None:
    rows = _rows("docs/conventions/naming.md", Layer.D6_POLICY_INDEX)
    texts = [r.content for r in rows]
    assert "Every table name must start with the rag_ prefix." in texts
    assert "Нельзя менять схему без записи в журнале версий." in texts
    assert "Column names are written in snake_case." in texts  # an item of a Rules section, no marker needed
    defaults = [r for r in rows if r.metadata["rule_kind"] == "default_behavior"]
    assert [r.content for r in defaults] == ["By default new tables are created with a created_at column."]
    assert all(r.metadata["applies_to"] == ["database", "code"] and not r.embed for r in rows)
    assert all("правила" in r.title for r in rows)
