"""The docs↔code bridge's choices (pure): which identifiers a passage names, which names a definition has."""

from __future__ import annotations

from nodes.context_retrieval.bridge import code_names, doc_identifiers
from nodes.evidence import EvidenceRow

SYMBOLS = frozenset({"apirouter", "jsonable_encoder", "include_router", "depends", "fastapi"})


def doc(rid: str, content: str, layer: str = "D0_DOC_CHUNKS") -> EvidenceRow:
    return EvidenceRow(id=rid, path=f"docs/{rid}.md", layer=layer, content=content)


def code(rid: str, name: str, layer: str = "C1_SYMBOL_CATALOG", key: str = "name") -> EvidenceRow:
    return EvidenceRow(id=rid, path=f"pkg/{rid}.py", layer=layer, content="...", metadata={key: name})


def test_catalogued_code_shaped_identifiers_of_prose_rows_are_bridged_most_mentioned_first() -> None:
    rows = [doc("a", "Используйте `APIRouter` и app.include_router(router). Depends тоже."),
            doc("b", "Вызовите jsonable_encoder(item); APIRouter снова.")]
    assert doc_identifiers(rows, SYMBOLS) == ["apirouter", "include_router", "jsonable_encoder"]


def test_plain_words_unknown_names_code_rows_and_excluded_names_are_not_bridged() -> None:
    rows = [doc("a", "FastAPI Depends routing MyOwnThing"),  # no inner capital / underscore, or not catalogued
            code("k", "include_router")]                      # a code row is not prose
    assert doc_identifiers(rows, SYMBOLS, exclude=["fastapi"]) == []  # the adapter excludes package names
    assert doc_identifiers(rows, SYMBOLS) == ["fastapi"]
    assert doc_identifiers([doc("a", "APIRouter and jsonable_encoder")], SYMBOLS, exclude=["APIRouter"]) == [
        "jsonable_encoder"]


def test_code_names_come_from_definitions_and_chunks_in_rank_order() -> None:
    rows = [doc("a", "prose"), code("k1", "include_router"), code("k2", "pkg.routing.APIRouter", "C0_SOURCE_CHUNKS",
                                                                  key="qname"), code("k3", "run")]
    assert code_names(rows) == ["include_router", "APIRouter"]
