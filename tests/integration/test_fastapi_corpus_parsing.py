"""The docs and code pipelines on the real fastapi-ru corpus (moved from tests/unit: they need the corpus,
which `tests/conftest.py` assembles with a pip download)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stores.indexing.code.chunks import MAX_CHUNK_LINES
from stores.indexing.code_pipeline import index_python
from stores.indexing.docs.chunking import MAX_CHUNK_CHARS
from stores.indexing.docs_pipeline import index_markdown
from stores.indexing.files import collect_files
from stores.indexing.records import ChunkRecord
from stores.layers import Layer


def rows(result: Any, layer: Layer) -> list[ChunkRecord]:
    return [r for r in result.records if r.layer == layer]


@pytest.mark.corpus
def test_fastapi_ru_docs_parse_into_sensible_rows(fastapi_corpus: Path) -> None:
    path = "docs/ru/docs/tutorial/bigger-applications.md"
    result = index_markdown(path, (fastapi_corpus / path).read_text(encoding="utf-8"))

    assert result.warnings == []
    chunks = rows(result, Layer.D0_DOC_CHUNKS)
    assert 10 <= len(chunks) <= 60
    assert all(len(c.content) <= MAX_CHUNK_CHARS * 5 // 4 for c in chunks)
    paths = {tuple(c.metadata["section_path"]) for c in chunks}
    assert ("Большие приложения — несколько файлов", "APIRouter") in paths
    card = rows(result, Layer.D1_DOCUMENT_CATALOG)[0]
    assert card.title == "Большие приложения — несколько файлов"
    assert "APIRouter" in card.metadata["entities"]
    links = {r.metadata["dst"] for r in rows(result, Layer.D5_RELATION_GRAPH)}
    assert "docs/ru/docs/tutorial/security/index.md" in links


@pytest.mark.corpus
def test_fastapi_routing_symbols_have_signatures(fastapi_corpus: Path) -> None:
    text = (fastapi_corpus / "fastapi/routing.py").read_text(encoding="utf-8")
    result = index_python("fastapi/routing.py", text)
    symbols = {r.metadata["qname"]: r for r in rows(result, Layer.C1_SYMBOL_CATALOG)}

    add = symbols["fastapi.routing.APIRouter.add_api_route"].metadata["signature"]
    assert add.startswith(
        "def add_api_route(self, path: str, endpoint: Callable[..., Any], *, response_model: Any="
    )
    assert "Doc(" not in add
    assert symbols["fastapi.routing.APIRouter"].metadata["signature"] == "class APIRouter(routing.Router)"
    get = symbols["fastapi.routing.APIRouter.get"]
    assert get.content.splitlines()[1] == "Add a *path operation* using an HTTP GET operation."
    # `self.add_api_route(path, ...)` has no literal path: FastAPI's own machinery is not a route.
    assert rows(result, Layer.C3_ENTRYPOINTS) == []
    assert all(c.span_end - c.span_start < MAX_CHUNK_LINES for c in rows(result, Layer.C0_SOURCE_CHUNKS))

    text = (fastapi_corpus / "fastapi/applications.py").read_text(encoding="utf-8")
    app_records = rows(index_python("fastapi/applications.py", text), Layer.C1_SYMBOL_CATALOG)
    app_symbols = {r.metadata["qname"]: r.metadata for r in app_records}
    assert app_symbols["fastapi.applications.FastAPI.get"]["signature"].startswith(
        "def get(self, path: str, *,"
    )
    assert app_symbols["fastapi.applications.FastAPI"]["signature"] == "class FastAPI(Starlette)"


@pytest.mark.corpus
def test_whole_fastapi_ru_corpus_smoke(fastapi_corpus: Path) -> None:
    started = time.perf_counter()
    collected = collect_files(fastapi_corpus)
    counts: Counter[str] = Counter()
    embedded: Counter[str] = Counter()
    for source in collected.files:
        pipeline = index_python if source.path.endswith(".py") else index_markdown
        result = pipeline(source.path, source.text)
        assert result.warnings == []
        for record in result.records:
            counts[record.layer] += 1
            embedded[record.layer] += record.embed
    elapsed = time.perf_counter() - started

    print(f"\n{len(collected.files)} files, {len(collected.skipped)} skipped, parsed in {elapsed:.2f}s")
    for layer in sorted(counts):
        print(f"  {layer:<22} {counts[layer]:>6}  embed={embedded[layer]}")
    print(f"  total {sum(counts.values())}, embed=True {sum(embedded.values())}")
    assert len(collected.files) >= 170
    assert {s.reason for s in collected.skipped} <= {"empty file"}  # the package's empty __init__.py files
    assert set(counts) == {layer.value for layer in Layer}
    assert sum(embedded.values()) <= 2500
    assert elapsed < 10
