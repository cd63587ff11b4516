"""Lexical match sets taken from the GIN index alone, the session's scope checked after (`scope_after_match`,
issue 13 at 1M rows): the same rows in the same order as the planner's own plan, for every statement that
uses it, and never a row of another session with the same text. Also the name look-up (`absent_terms`), which
keeps the planner's plan: a name only another session holds is absent from this one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.layers import Layer
from stores.repository import RagRepository
from stores.sessions import RagSession
from stores.statements import RetrieveFilters
from tests.integration.conftest import indexed_session
from tests.integration.test_lexical_code_cut import CODE_LAYERS, MODULE

DOC = """# {name} protocol

The {name} parser reads header lines of a message until the blank line, then the body.

## Headers

Each header of a {name} message is split at the first colon.
"""


def _write(root: Path) -> None:
    for name in ("http", "smtp", "imap", "mime"):
        (root / f"{name}_headers.py").write_text(MODULE.format(name=name, cls=name.capitalize()), encoding="utf-8")
        (root / f"{name}.md").write_text(DOC.format(name=name), encoding="utf-8")


@pytest.fixture(scope="module")
def sessions(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RagSession, RagSession]]:
    root: Path = tmp_path_factory.mktemp("scope")
    _write(root)
    twin: Path = tmp_path_factory.mktemp("scope-twin")
    _write(twin)  # the same text in a second session: only the scope tells their rows apart
    for a in indexed_session(db, root, "it-scope", FakeEmbeddings()):
        for b in indexed_session(db, twin, "it-scope-twin", FakeEmbeddings()):
            with db.connection() as conn:
                conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(a.table)))
            yield a, b


def _repos(db: Database, rank_cap: int | None) -> tuple[RagRepository, RagRepository]:
    plain, fenced = RagRepository(db), RagRepository(db)
    fenced.scope_after_match = True
    plain.lexical_rank_cap = fenced.lexical_rank_cap = rank_cap
    return plain, fenced


QUERIES = ["How are header lines of a message parsed?", "http header colon", "blank line body", "smtp"]


@pytest.mark.parametrize("rank_cap", [None, 3])
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("with_vector", [False, True])
def test_ranked_rows_are_the_same_with_the_scope_checked_after(
        db: Database, sessions: tuple[RagSession, RagSession], rank_cap: int | None, query: str,
        with_vector: bool) -> None:
    session, twin = sessions
    plain, fenced = _repos(db, rank_cap)
    vector = FakeEmbeddings().embed_query(query) if with_vector else None
    for filters in (RetrieveFilters(), RetrieveFilters(layers=[Layer.D0_DOC_CHUNKS.value]),
                    RetrieveFilters(path_prefixes=["smtp"])):
        want = plain.retrieve(session, query_embedding=vector, query_text=query, filters=filters, limit=50,
                              candidates=50, exact=True)
        got = fenced.retrieve(session, query_embedding=vector, query_text=query, filters=filters, limit=50,
                              candidates=50, exact=True)
        assert [r["id"] for r in got] == [r["id"] for r in want]
        assert got, (query, filters)
    own = {r["id"] for r in fenced.retrieve(session, query_embedding=None, query_text=query, limit=500,
                                            candidates=500)}
    other = {r["id"] for r in fenced.retrieve(twin, query_embedding=None, query_text=query, limit=500,
                                              candidates=500)}
    assert own and other and not own & other


@pytest.mark.parametrize(("query", "names", "layers"), [
    ("How are header lines of a message parsed?", [], CODE_LAYERS),
    ("parse_header of the http parser", ["parse_header"], CODE_LAYERS),
    ("header message", [], [Layer.C0_SOURCE_CHUNKS.value]),
])
def test_code_rows_are_the_same_with_the_scope_checked_after(
        db: Database, sessions: tuple[RagSession, RagSession], query: str, names: list[str],
        layers: list[str]) -> None:
    session, twin = sessions
    plain, fenced = _repos(db, None)
    for limit in (1, 5, 10_000):
        want = plain.retrieve_lexical_code(session, query, names=names, layers=layers, limit=limit)
        got = fenced.retrieve_lexical_code(session, query, names=names, layers=layers, limit=limit)
        assert [r["id"] for r in got] == [r["id"] for r in want], limit
    own = {r["id"] for r in fenced.retrieve_lexical_code(session, query, names=names, layers=layers, limit=500)}
    other = {r["id"] for r in fenced.retrieve_lexical_code(twin, query, names=names, layers=layers, limit=500)}
    assert own and other and not own & other


def test_estimated_rows_come_from_the_planner_statistics(db: Database,
                                                         sessions: tuple[RagSession, RagSession]) -> None:
    session, twin = sessions
    repo = RagRepository(db)
    (rows, total), (twin_rows, twin_total) = repo.estimated_rows(session), repo.estimated_rows(twin)
    assert total == twin_total > 0
    assert rows > 0 and twin_rows > 0 and rows + twin_rows <= total
    assert abs(rows - twin_rows) <= 0.05 * total  # the same files, the same number of rows


def test_absent_names_are_looked_up_in_the_session_alone(
        db: Database, sessions: tuple[RagSession, RagSession], tmp_path: Path) -> None:
    """`absent_terms`: a word only another session holds is still absent from this one (and the other way
    round); parts of a dotted or hyphenated name count when they occur together in one row."""
    session, _ = sessions
    (tmp_path / "gateway.md").write_text("# Pelican gateway\n\nThe pelican gateway forwards http headers.\n",
                                         encoding="utf-8")
    words = ["header", "parse_header", "http-headers", "pelican", "zzqxabsent", "the"]
    for other in indexed_session(db, tmp_path, "it-scope-other", FakeEmbeddings()):
        repo = RagRepository(db)
        assert repo.absent_terms(session, words) == ["pelican", "zzqxabsent"]
        assert repo.absent_terms(other, words) == ["parse_header", "zzqxabsent"]
