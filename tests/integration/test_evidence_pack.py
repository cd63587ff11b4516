"""The evidence pack on a real index: a symbol card in the core brings the source chunk that states the answer
(`pack.index_source_reader` over `RagRepository.retrieve_overlapping`), and the pack stays within the cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodes.context_retrieval.gate import row_tokens
from nodes.context_retrieval.merge import GatheredLanes, MergeSpec, merge_lanes
from nodes.context_retrieval.pack import FILL_MARK, index_source_reader
from stores.database import Database
from stores.embedders import make_embedder
from stores.repository import RagRepository
from stores.sessions import RagSession
from tests.integration.conftest import indexed_session

BODY = "\n".join(f"    step_{i} = prepare(host, {i})  # a step of the handshake" for i in range(60))
NET = f'''"""Connections to the harbour."""


def connect(host, retries=3):
    """Open a connection to the harbour host."""
{BODY}
    if not step_59:
        raise ConnectionError("harbour unreachable after retries")
    return step_59


def close(conn):
    """Close a connection."""
    conn.shutdown()
'''


@pytest.fixture(scope="module")
def harbour(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RagSession]:
    root: Path = tmp_path_factory.mktemp("harbour")
    (root / "pkg").mkdir()
    (root / "pkg" / "net.py").write_text(NET, encoding="utf-8")
    yield from indexed_session(db, root, "it-pack", make_embedder("fake"))


def card_of(repo: RagRepository, session: RagSession, name: str) -> dict:
    rows = repo.retrieve_exact_files(session, ["pkg/net.py"], layers=["C1_SYMBOL_CATALOG"])
    return next(r for r in rows if str(r.get("title") or "").endswith(name))


def test_the_source_of_a_core_card_fills_the_pack(db: Database, harbour: RagSession) -> None:
    repo = RagRepository(db)
    card = card_of(repo, harbour, "connect")
    assert "harbour unreachable" not in card["content"]  # the card is the signature and the docstring
    spec = MergeSpec(query="what error when the harbour is unreachable", key_terms=["harbour", "unreachable"],
                     top_k=1, plan_limit=1, read_sources=index_source_reader(repo, harbour))
    result = merge_lanes(GatheredLanes(lanes={"exact": [card]}), spec)
    assert result.core == 1 and result.rows[0].id == str(card["id"])
    filled = result.rows[1:]
    assert any("harbour unreachable after retries" in r.content for r in filled), [r.content for r in filled]
    assert all(r.metadata[FILL_MARK] and r.layer == "C0_SOURCE_CHUNKS" for r in filled)
    assert sum(row_tokens(r) for r in result.rows) <= spec.token_cap


def test_without_a_reader_the_pack_is_the_candidates_only(db: Database, harbour: RagSession) -> None:
    repo = RagRepository(db)
    card = card_of(repo, harbour, "connect")
    result = merge_lanes(GatheredLanes(lanes={"exact": [card]}),
                         MergeSpec(query="harbour unreachable", key_terms=["harbour"], top_k=1, plan_limit=1))
    assert [r.id for r in result.rows] == [str(card["id"])]
