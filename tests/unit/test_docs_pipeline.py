"""index_markdown: the six docs layers from frontmatter docs, plain mkdocs pages and broken input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.indexing.docs.chunking import MAX_CHUNK_CHARS
from stores.indexing.docs.profile import derive_doc_type, derive_domain
from stores.indexing.docs.relations import resolve_link
from stores.indexing.docs_pipeline import DocsResult, index_markdown
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "indexing"
SEED_DOC = (FIXTURES / "rag-retrieval.md").read_text(encoding="utf-8")
SEED_PATH = "docs/logic/rag/retrieval.md"


def rows(result: DocsResult, layer: Layer) -> list[ChunkRecord]:
    return [r for r in result.records if r.layer == layer]


def line_of(text: str, prefix: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), start=1) if line.startswith(prefix))


@pytest.fixture(scope="module")
def seed() -> DocsResult:
    return index_markdown(SEED_PATH, SEED_DOC)


# --- a frontmatter document (seed 001) -------------------------------------------------------------------


def test_catalog_row_comes_from_frontmatter(seed: DocsResult) -> None:
    [card] = rows(seed, Layer.D1_DOCUMENT_CATALOG)
    meta = card.metadata

    assert (meta["id"], meta["doc_type"], meta["domain"], meta["subdomain"], meta["status"]) == (
        "logic-rag-retrieval",
        "logic_block",
        "rag",
        None,
        "draft",
    )
    assert card.title == meta["title"] == "Retrieval и ранжирование RAG-документов"
    assert meta["entities"] == ["RagSession", "RagDocument"]
    assert meta["tags"] == ["rag", "retrieval", "ranking", "pgvector"]
    assert meta["related_docs"] == ["arch-rag-package", "entity-rag-session"]
    assert meta["related_code"][0] == "src/app/modules/rag/persistence/repository.py"
    assert meta["endpoints"] == ["POST /internal/rag/retrieve"]
    assert meta["frontmatter_extra"] == {"owner": "system-analyst", "source_of_truth": "code"}
    assert meta["summary"].startswith("Purpose: вернуть релевантные RAG-документы")
    assert len(meta["summary"]) <= 600
    assert (card.span_start, card.span_end) == (1, len(SEED_DOC.rstrip("\n").split("\n")))
    assert card.embed
    # The card names the file and its sections so "which file describes X" finds it.
    assert f"Path: {SEED_PATH}" in card.content
    assert "Основной сценарий" in card.content and "Observability" in card.content


def test_purpose_bullet_is_a_fact_with_its_exact_line(seed: DocsResult) -> None:
    purpose = next(r for r in rows(seed, Layer.D2_FACT_INDEX) if r.metadata["predicate"] == "Purpose")
    line = line_of(SEED_DOC, "- Purpose:")

    assert line == 30
    assert (purpose.span_start, purpose.span_end) == (line, line)
    assert (purpose.metadata["line_start"], purpose.metadata["line_end"]) == (line, line)
    assert purpose.metadata["subject"] == "logic-rag-retrieval"
    assert purpose.metadata["object"] == (
        "вернуть релевантные RAG-документы из `rag_chunks` для заданной сессии и набора фильтров."
    )
    assert not purpose.embed


def test_facts_cover_bullets_endpoints_and_tables(seed: DocsResult) -> None:
    facts = {(r.metadata["predicate"], r.metadata["object"]): r for r in rows(seed, Layer.D2_FACT_INDEX)}

    assert ("Logs", "отдельное логирование запросов retrieval не реализовано.") in facts
    endpoint = facts[("endpoint", "POST /internal/rag/retrieve")]
    assert endpoint.span_start == line_of(SEED_DOC, "- Deprecated endpoint")
    assert endpoint.metadata["method"] == "POST"
    table = facts[("Source", "code")]
    assert table.metadata["subject"] == "2026-03-13" and table.metadata["fact_kind"] == "table_row"


def test_numbered_scenario_is_a_workflow(seed: DocsResult) -> None:
    [workflow] = rows(seed, Layer.D4_WORKFLOW_INDEX)
    first = line_of(SEED_DOC, "1. Клиент runtime")

    assert workflow.title == "Основной сценарий"
    assert (workflow.span_start, workflow.span_end) == (first, first + 4)
    assert workflow.metadata["step_count"] == 5
    assert (
        workflow.metadata["steps"][1]
        == "RagQueryRepository строит SQL через RetrievalStatementBuilder.build_retrieve."
    )
    assert workflow.content.splitlines()[1].startswith("1. Клиент runtime вызывает RagRepository.retrieve")
    assert workflow.embed


def test_relations_include_related_code_docs_and_entities(seed: DocsResult) -> None:
    edges = {
        (r.metadata["edge_type"], r.metadata["src"], r.metadata["dst"]): r
        for r in rows(seed, Layer.D5_RELATION_GRAPH)
    }

    related_code = [key for key in edges if key[0] == "related_code"]
    assert len(related_code) == 4
    enums = edges[("related_code", SEED_PATH, "src/app/modules/rag/contracts/enums.py")]
    assert enums.span_start == line_of(SEED_DOC, "- src/app/modules/rag/contracts/enums.py")
    assert ("related_doc", SEED_PATH, "arch-rag-package") in edges
    assert ("entity_in_doc", "RagSession", SEED_PATH) in edges
    assert ("mentions_code", SEED_PATH, "src/app/modules/agent/runtime/steps/retrieval/adapter.py") in edges
    assert not any(r.embed for r in rows(seed, Layer.D5_RELATION_GRAPH))


def test_frontmatter_entities_lead_the_entity_catalog(seed: DocsResult) -> None:
    entities = rows(seed, Layer.D3_ENTITY_CATALOG)

    assert [e.title for e in entities[:2]] == ["RagSession", "RagDocument"]
    assert entities[0].metadata["kind"] == "entity"
    assert entities[0].metadata["defining_doc"] == SEED_PATH
    assert "RagQueryRepository" in {e.title for e in entities}
    assert not any(e.embed for e in entities)


def test_every_row_carries_document_metadata_and_is_json_safe(seed: DocsResult) -> None:
    assert {r.layer for r in seed.records} == set(Layer) - {
        layer for layer in Layer if layer.value.startswith("C")
    }
    for record in seed.records:
        assert record.path == SEED_PATH
        assert record.metadata["domain"] == "rag"
        assert record.metadata["doc_id"] == "logic-rag-retrieval"
        assert 1 <= record.span_start <= record.span_end
        json.dumps(record.metadata)
    assert seed.warnings == []


def test_chunks_follow_headings_with_section_paths(seed: DocsResult) -> None:
    chunks = rows(seed, Layer.D0_DOC_CHUNKS)
    lines = SEED_DOC.split("\n")

    for chunk in chunks:
        assert chunk.content == "\n".join(lines[chunk.span_start - 1 : chunk.span_end])
        assert chunk.embed and chunk.embed_text and len(chunk.embed_text) <= 2000
    context = next(c for c in chunks if c.metadata["heading"] == "Контекст")
    assert context.metadata["section_path"] == ["Retrieval и ранжирование RAG-документов", "Контекст"]
    assert context.embed_text.startswith("Retrieval и ранжирование RAG-документов / Контекст\n")
    # Chunks never overlap and appear in file order.
    spans = [(c.span_start, c.span_end) for c in chunks]
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_pipeline_is_deterministic() -> None:
    assert index_markdown(SEED_PATH, SEED_DOC) == index_markdown(SEED_PATH, SEED_DOC)


# --- plain mkdocs pages (fastapi docs style, no frontmatter) -----------------------------------------------

MKDOCS_PAGE = """\
# OAuth2 со scopes { #oauth2-and-scopes }

Вы можете использовать `OAuth2PasswordBearer` напрямую с **FastAPI**. Этот раздел показывает, как
объявить scopes, как их проверять в зависимостях и как они попадают в документацию OpenAPI.

<!-- a comment that must not reach the embedder -->

{* ../../docs_src/security/tutorial005_an_py310.py hl[5,9] *}

/// tip | Подсказка

Scopes — это строки без пробелов.

///

## Глобальный обзор { #global-view }

```python
# this is a comment, not a heading
app = FastAPI()
```

Каждая *операция пути* объявляет нужные ей scopes, а зависимости собирают их вместе. Так приложение
знает, какие права нужны для запроса, и может вернуть понятную ошибку, если их не хватает.

## `Security` и `SecurityScopes` { #security-and-securityscopes }

`SecurityScopes` — класс, который хранит все scopes, требуемые зависимостями.

Его атрибут `scopes` содержит список всех scopes, а `scope_str` — ту же информацию одной строкой через
пробел. Это удобно, чтобы вернуть заголовок `WWW-Authenticate` с нужными scopes.

Подробнее см. [зависимости](../dependencies/index.md#scopes) и [сайт](https://example.com/page.md).
"""
MKDOCS_PATH = "docs/ru/docs/tutorial/security/oauth2-scopes.md"


@pytest.fixture(scope="module")
def page() -> DocsResult:
    return index_markdown(MKDOCS_PATH, MKDOCS_PAGE)


def test_profile_is_derived_from_path_and_headings(page: DocsResult) -> None:
    [card] = rows(page, Layer.D1_DOCUMENT_CATALOG)

    assert card.title == "OAuth2 со scopes"
    assert (card.metadata["doc_type"], card.metadata["domain"], card.metadata["subdomain"]) == (
        "tutorial",
        "security",
        None,
    )
    assert card.metadata["id"] == "docs/ru/docs/tutorial/security/oauth2-scopes"
    assert card.metadata["lang"] == "ru"
    assert card.metadata["summary"].startswith("Вы можете использовать OAuth2PasswordBearer напрямую")
    assert len(rows(page, Layer.D0_DOC_CHUNKS)) == 3
    assert card.metadata["headings"] == ["Глобальный обзор", "Security и SecurityScopes"]
    assert card.metadata["has_frontmatter"] is False


def test_mkdocs_markup_is_cleaned_for_embedding_but_kept_as_evidence(page: DocsResult) -> None:
    chunks = rows(page, Layer.D0_DOC_CHUNKS)
    everything = "\n".join(c.embed_text or "" for c in chunks)

    assert "{*" not in everything and "docs_src" not in everything
    assert "a comment that must not" not in everything
    assert "{ #" not in everything and "///" not in everything
    assert "Подсказка:\n\nScopes — это строки без пробелов." in everything
    assert any("{* ../../docs_src/security" in c.content for c in chunks)  # evidence stays verbatim


def test_headings_keep_anchor_and_code_comments_are_not_headings(page: DocsResult) -> None:
    chunks = rows(page, Layer.D0_DOC_CHUNKS)
    headings = {h for c in chunks for h in c.metadata["headings"]}

    assert "this is a comment, not a heading" not in headings
    last = chunks[-1]
    assert last.metadata["section_path"] == ["OAuth2 со scopes", "Security и SecurityScopes"]
    assert last.metadata["anchor"] == "security-and-securityscopes"


def test_entities_links_and_definitions_of_a_plain_page(page: DocsResult) -> None:
    entities = {r.title: r for r in rows(page, Layer.D3_ENTITY_CATALOG)}
    assert {"Security", "SecurityScopes"} <= entities.keys()
    assert entities["SecurityScopes"].metadata["kind"] == "code_symbol"
    assert entities["SecurityScopes"].metadata["description"].startswith("SecurityScopes — класс")

    links = [
        r.metadata["dst"]
        for r in rows(page, Layer.D5_RELATION_GRAPH)
        if r.metadata["edge_type"] == "links_to"
    ]
    assert links == ["docs/ru/docs/tutorial/dependencies/index.md"]

    facts = {r.metadata["subject"]: r.metadata for r in rows(page, Layer.D2_FACT_INDEX)}
    assert facts["SecurityScopes"]["object"].startswith("класс, который хранит")


def test_document_without_headings_uses_file_stem() -> None:
    result = index_markdown("README.md", "Just some words about the project.\n")
    [card] = rows(result, Layer.D1_DOCUMENT_CATALOG)

    assert card.title == "README"
    assert (card.metadata["doc_type"], card.metadata["domain"]) == ("doc", None)
    assert [c.content for c in rows(result, Layer.D0_DOC_CHUNKS)] == ["Just some words about the project."]


@pytest.mark.parametrize(
    ("path", "doc_type", "domain", "subdomain"),
    [
        ("docs/architecture/overview.md", "architecture", None, None),
        ("docs/domains/billing/invoices/flow.md", "domains", "billing", "invoices"),
        ("docs/logic/rag/retrieval.md", "logic", "rag", None),
        ("docs/ru/docs/how-to/general.md", "how-to", None, None),
        ("docs/ru/docs/deployment/docker.md", "doc", "deployment", None),
        ("docs/api/orders/create.md", "api", "orders", None),
        ("guide/intro.md", "doc", "guide", None),
        ("agent/app/modules/rag/README.md", "doc", "rag", None),
        ("README.md", "doc", None, None),
    ],
)
def test_path_derivations(path: str, doc_type: str, domain: str | None, subdomain: str | None) -> None:
    assert derive_doc_type(path) == doc_type
    assert derive_domain(path) == (domain, subdomain)


@pytest.mark.parametrize(
    ("target", "resolved"),
    [
        ("../advanced/index.md#x", "docs/ru/docs/advanced/index.md"),
        ("security/first-steps.md", "docs/ru/docs/tutorial/security/first-steps.md"),
        ("/docs/api/x.md", "docs/api/x.md"),
        ("https://example.com/a.md", None),
        ("#local-anchor", None),
        ("mailto:me@example.com", None),
    ],
)
def test_link_resolution(target: str, resolved: str | None) -> None:
    assert resolve_link("docs/ru/docs/tutorial/body.md", target) == resolved


# --- chunk sizes -------------------------------------------------------------------------------------------


def test_long_sections_split_by_paragraphs_with_exact_spans() -> None:
    paragraphs = [f"Абзац {n}. " + "слово " * 60 for n in range(12)]
    text = "# Заголовок\n\n## Длинный раздел\n\n" + "\n\n".join(paragraphs) + "\n"
    chunks = rows(index_markdown("docs/long.md", text), Layer.D0_DOC_CHUNKS)
    lines = text.split("\n")

    assert len(chunks) > 3
    for chunk in chunks:
        assert len(chunk.content) <= MAX_CHUNK_CHARS * 5 // 4
        assert chunk.content == "\n".join(lines[chunk.span_start - 1 : chunk.span_end])
        assert chunk.metadata["section_path"][-1] in ("Длинный раздел", "Заголовок")
    covered = "\n".join(c.content for c in chunks)
    assert all(p.strip() in covered for p in paragraphs)
    # The tiny title section was merged into the next one rather than becoming a chunk of its own.
    assert chunks[0].content.startswith("# Заголовок\n\n## Длинный раздел")


def test_fenced_code_is_never_cut_by_paragraph_splitting() -> None:
    code = "\n".join(f"line_{n} = {n}" for n in range(30)) + "\n\nafter_blank = 1"
    text = "# T\n\n" + "Текст. " * 150 + f"\n\n```python\n{code}\n```\n\nКонец.\n"
    chunks = rows(index_markdown("docs/code.md", text), Layer.D0_DOC_CHUNKS)

    holder = next(c for c in chunks if "```python" in c.content)
    assert "after_blank = 1\n```" in holder.content


# --- broken and odd input ----------------------------------------------------------------------------------


def test_broken_yaml_frontmatter_is_reported_and_the_doc_still_indexed() -> None:
    text = "---\nid: x\ntitle: [unclosed\ntags: a\n---\n# Настоящий заголовок\n\nТекст документа.\n"
    result = index_markdown("docs/broken.md", text)

    assert len(result.warnings) == 1 and result.warnings[0].startswith("broken frontmatter: ")
    assert "line" in result.warnings[0]
    [card] = rows(result, Layer.D1_DOCUMENT_CATALOG)
    assert card.title == "Настоящий заголовок" and card.metadata["id"] == "docs/broken"
    [chunk] = rows(result, Layer.D0_DOC_CHUNKS)
    assert chunk.span_start == 6 and "id: x" not in chunk.content


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        ("---\n- just\n- a list\n---\n# T\n", "broken frontmatter: expected a mapping, got list"),
        ("---\ntitle: never closed\n# T\n", "broken frontmatter: no closing '---' line; indexed without it"),
    ],
)
def test_other_broken_frontmatter(text: str, warning: str) -> None:
    result = index_markdown("docs/odd.md", text)

    assert result.warnings == [warning]
    assert rows(result, Layer.D1_DOCUMENT_CATALOG)[0].title == "T"


def test_thematic_break_at_top_is_not_frontmatter() -> None:
    result = index_markdown("docs/rule.md", "---\n\n# Title\n\nText.\n")

    assert result.warnings == []
    assert rows(result, Layer.D1_DOCUMENT_CATALOG)[0].title == "Title"


def test_frontmatter_dates_and_odd_values_become_json_safe() -> None:
    frontmatter = "---\ntitle: T\nupdated: 2026-03-13\ntags: a, b\nentities:\n  - name: Order\n---\n"
    text = frontmatter + "# T\n\nOrder text.\n"
    result = index_markdown("docs/dated.md", text)
    card = rows(result, Layer.D1_DOCUMENT_CATALOG)[0]

    assert card.metadata["frontmatter_extra"] == {"updated": "2026-03-13"}
    assert card.metadata["tags"] == ["a", "b"]
    assert card.metadata["entities"] == ["Order"]
    json.dumps([r.metadata for r in result.records])


def test_crlf_and_bom_are_handled() -> None:
    result = index_markdown("docs/win.md", "\ufeff# Заголовок\r\n\r\nТекст.\r\n")

    assert rows(result, Layer.D1_DOCUMENT_CATALOG)[0].title == "Заголовок"
    assert rows(result, Layer.D0_DOC_CHUNKS)[0].content == "# Заголовок\n\nТекст."


def test_empty_body_gives_only_a_catalog_row() -> None:
    result = index_markdown("docs/empty.md", "---\ntitle: Only metadata\n---\n")

    assert [r.layer for r in result.records] == [Layer.D1_DOCUMENT_CATALOG]


def test_a_giant_single_line_is_cut_into_bounded_pieces() -> None:
    line = "слово " * 2_000
    chunks = rows(index_markdown("docs/minified.md", f"# T\n\n{line}\n"), Layer.D0_DOC_CHUNKS)

    assert len(chunks) > 5
    assert all(len(c.content) <= MAX_CHUNK_CHARS * 4 for c in chunks)
    assert "".join(c.content for c in chunks[1:]) in f"# T\n\n{line}"


MARKDOWN_BITS = st.sampled_from(
    ["# ", "## ", "#### ", "```", "~~~", "---", "\n", "\n\n", "1. ", "2) ", "    ", "- ", "* ", "| a | b |"]
    + ["|---|---|", "`FooBar`", "[a](../b.md)", "/// tip | T", "///", "{* x *}", "<!--", "-->", "Слово"]
    + ["FooBar", " — это ", "GET /x", "Key: value", "```mermaid\nsequenceDiagram\n", "A->>B: m", "graph TB\n"]
    + ["a --> b", "classDiagram\n", "<dfn title='t'>d</dfn>", "{ #anchor }", "\r\n", "\ufeff", "..."]
)


@given(st.lists(MARKDOWN_BITS, max_size=80).map("".join))
@settings(max_examples=300, deadline=None)
def test_any_markdown_is_indexed_with_spans_inside_the_file(text: str) -> None:
    result = index_markdown("docs/any.md", text)
    line_count = max(1, len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")))

    assert result.records and result.records[0].layer == Layer.D1_DOCUMENT_CATALOG
    for record in result.records:
        assert 1 <= record.span_start <= record.span_end <= line_count
        assert record.path == "docs/any.md"
    json.dumps([r.metadata for r in result.records])


# --- workflows and diagrams --------------------------------------------------------------------------------

DIAGRAMS = """\
# Потоки

1. Первый шаг.

2. Второй шаг,
   с продолжением.

    Пояснение к шагу.

3. Третий шаг.

Обычный текст.

1. Одинокий пункт не является сценарием.

```mermaid
sequenceDiagram
    participant C as Клиент
    participant S as Сервер
    C->>S: POST /orders
    Note over S: Проверка
    S-->>C: 201 Created
```

```mermaid
classDiagram
    class RagService
    RagService --> RagRepository
    RagRepository <|-- PgRepository : implements
```

```mermaid
graph TB
read_items["/items/{item_id}"]
common(["common_parameters"])
common -->|uses| read_items
a --> b --> c
```
"""


@pytest.fixture(scope="module")
def diagrams() -> DocsResult:
    return index_markdown("docs/architecture/flows.md", DIAGRAMS)


def test_numbered_list_with_blank_lines_and_continuations(diagrams: DocsResult) -> None:
    numbered = [
        w for w in rows(diagrams, Layer.D4_WORKFLOW_INDEX) if w.metadata["workflow_kind"] == "numbered_list"
    ]

    assert len(numbered) == 1
    assert numbered[0].metadata["steps"] == ["Первый шаг.", "Второй шаг, с продолжением.", "Третий шаг."]
    assert (numbered[0].span_start, numbered[0].span_end) == (3, 10)


def test_sequence_diagram_steps_use_participant_names(diagrams: DocsResult) -> None:
    [sequence] = [
        w
        for w in rows(diagrams, Layer.D4_WORKFLOW_INDEX)
        if w.metadata["workflow_kind"] == "sequence_diagram"
    ]

    assert sequence.metadata["steps"] == [
        "Клиент → Сервер: POST /orders",
        "Note (Сервер): Проверка",
        "Сервер → Клиент: 201 Created",
    ]
    assert DIAGRAMS.split("\n")[sequence.span_start - 1] == "```mermaid"


def test_diagram_edges_become_relations(diagrams: DocsResult) -> None:
    edges = {
        (r.metadata["src"], r.metadata["dst"]): r.metadata
        for r in rows(diagrams, Layer.D5_RELATION_GRAPH)
        if r.metadata["edge_type"] == "diagram_edge"
    }

    assert ("RagService", "RagRepository") in edges
    assert edges[("PgRepository", "RagRepository")]["label"] == "implements"
    assert edges[("common_parameters", "/items/{item_id}")]["label"] == "uses"
    assert {("a", "b"), ("b", "c")} <= edges.keys()
