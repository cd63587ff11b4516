"""The lexical code lane ranks (`ts_rank_cd`) only the (name match, layer) groups up to the one holding its
`limit`-th candidate (issue 13): for every limit, its rows are the first rows of the whole ranking."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.layers import Layer
from stores.repository import RagRepository
from stores.sessions import RagSession
from tests.integration.conftest import indexed_session

MODULE = '''"""Header parsing for the {name} protocol."""


class {cls}Parser:
    """Parses {name} headers and messages."""

    def parse_header(self, line: str) -> tuple[str, str]:
        """Split one header line of a {name} message."""
        key, _, value = line.partition(":")
        return key.strip(), value.strip()

    def parse_message(self, text: str) -> dict[str, str]:
        """Parse every header of a {name} message."""
        return dict(self.parse_header(line) for line in text.splitlines() if ":" in line)


def read_headers(stream) -> list[str]:
    """Read header lines of a {name} message until the blank line."""
    out = []
    for line in stream:
        if not line.strip():
            break
        out.append(line)
    return out
'''

CODE_LAYERS = [Layer.C3_ENTRYPOINTS.value, Layer.C1_SYMBOL_CATALOG.value, Layer.C2_DEPENDENCY_GRAPH.value,
               Layer.C0_SOURCE_CHUNKS.value]


@pytest.fixture(scope="module")
def session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RagSession]:
    root: Path = tmp_path_factory.mktemp("codecut")
    for name in ("http", "smtp", "imap", "mime", "email", "news"):
        (root / f"{name}_headers.py").write_text(MODULE.format(name=name, cls=name.capitalize()), encoding="utf-8")
    yield from indexed_session(db, root, "it-codecut", FakeEmbeddings())


@pytest.mark.parametrize(("query", "names", "layers"), [
    ("How are header lines of a message parsed?", [], CODE_LAYERS),
    ("parse_header of the http parser", ["parse_header"], CODE_LAYERS),
    ("read headers message", ["read_headers", "httpparser"], CODE_LAYERS),
    ("header message", [], [Layer.C0_SOURCE_CHUNKS.value]),
    ("", ["parse_message"], CODE_LAYERS),
])
def test_every_limit_gives_the_first_rows_of_the_whole_ranking(
        db: Database, session: RagSession, query: str, names: list[str], layers: list[str]) -> None:
    repo = RagRepository(db)
    whole = [r["id"] for r in repo.retrieve_lexical_code(session, query, names=names, layers=layers, limit=10_000)]
    assert len(whole) > 3
    assert {row["layer"] for row in repo.retrieve_lexical_code(
        session, query, names=names, layers=layers, limit=10_000)} <= set(layers)
    for limit in range(1, len(whole) + 2):
        got = [r["id"] for r in repo.retrieve_lexical_code(session, query, names=names, layers=layers, limit=limit)]
        assert got == whole[:limit], limit
