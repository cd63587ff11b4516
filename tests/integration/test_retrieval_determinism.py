"""Every lane orders by a total key (score, then path, then span, then id): the same question on the same
index gives the same evidence in the same order whatever plan PostgreSQL picks (issue: with
`enable_indexscan=off` the demo question's first source used to change)."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph.deps import GraphDeps, SessionBundle
from graph.settings import Settings
from nodes.retrieval_policy import resolve_code_plan, resolve_plan
from stores.database import Database
from stores.embedders import make_embedder
from stores.indexing.service import index_repository

ROOT = Path(__file__).resolve().parents[2]
SESSION = f"it-determinism-{uuid.uuid4().hex[:8]}"
QUESTIONS = [
    "Как Lotsman выбирает профиль retrieval для вопроса про API?",
    "Что в файле docs/logic/retrieval_policy.md?",
    "Где описано, как работает relevance gate?",
    "How are prefer_like_patterns built?",
    "resolve_code_plan",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("determinism")
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copytree(ROOT / "nodes" / "retrieval_policy", root / "nodes" / "retrieval_policy")
    return root


@pytest.fixture(scope="module")
def bundles(db: Database, pg_url: str, corpus: Path) -> Iterator[tuple[SessionBundle, SessionBundle]]:
    index_repository(db, corpus, session_name=SESSION, embedder=make_embedder("use"))
    sep = "&" if "?" in pg_url else "?"
    no_index = Database(f"{pg_url}{sep}options=-c%20enable_indexscan%3Doff%20-c%20enable_bitmapscan%3Doff",
                        max_size=2)
    try:
        yield (GraphDeps(settings=Settings(), db=db).bundle(SESSION),
               GraphDeps(settings=Settings(), db=no_index).bundle(SESSION))
    finally:
        no_index.close()


def _lanes(bundle: SessionBundle, question: str) -> dict[str, list[str]]:
    route = bundle.router.route(question)
    plan, code_plan = resolve_plan(route), resolve_code_plan(route, bundle.symbols)
    gathered = bundle.adapter.gather_lanes(bundle.session, plan, code_plan, question,
                                           file_names=route.anchors.file_names)
    return {lane: [str(r["id"]) for r in rows] for lane, rows in gathered.lanes.items()}


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_lane_gives_the_same_order_under_both_plans(bundles: tuple[SessionBundle, SessionBundle],
                                                          question: str) -> None:
    with_index, without_index = bundles
    assert _lanes(with_index, question) == _lanes(without_index, question)


@pytest.mark.parametrize("question", QUESTIONS[:2])
def test_the_fused_evidence_is_the_same_under_both_plans(bundles: tuple[SessionBundle, SessionBundle],
                                                         question: str) -> None:
    results = []
    for bundle in bundles:
        route = bundle.router.route(question)
        result = bundle.adapter.fetch_rows(bundle.session, resolve_plan(route),
                                           resolve_code_plan(route, bundle.symbols), question,
                                           file_names=route.anchors.file_names, terms=route.target_terms)
        results.append([(r.path, r.span_start, r.layer) for r in result.rows])
    assert results[0] == results[1] and results[0]


def test_small_sessions_scan_their_vectors_exactly(db: Database, bundles: tuple[SessionBundle, SessionBundle]) -> None:
    """A small session does not search the HNSW index every session shares: its neighbours are exact and
    cannot depend on other sessions' rows."""
    from stores.statements import RetrievalStatementBuilder, RetrieveFilters

    bundle = bundles[0]
    assert bundle.adapter.exact_vectors, "a few hundred rows are far below EXACT_SCAN_MAX_ROWS"
    vector = bundle.adapter.embedder.embed_query("relevance gate")
    plans = {}
    for exact in (True, False):
        stmt, params = RetrievalStatementBuilder(bundle.session.table).build_retrieve(
            bundle.session.rag_session_id, vector, "", RetrieveFilters(), limit=8, exact=exact)
        with db.connection() as conn:  # sorts off: the planner takes HNSW wherever the index can serve the order
            conn.execute("SET LOCAL enable_sort = off")
            rows = conn.execute(b"EXPLAIN " + stmt.as_string(conn).encode(), params, prepare=False).fetchall()
        plans[exact] = "\n".join(r[0] for r in rows)
    assert "hnsw" not in plans[True].lower()
    assert "hnsw" in plans[False].lower(), plans[False]


def test_two_fresh_indexes_of_the_same_files_give_the_same_lanes(
        db: Database, corpus: Path, bundles: tuple[SessionBundle, SessionBundle]) -> None:
    """Row ids lead with a hash of the row (`writer.row_id`): the lexical lanes take their first matches in id
    order, and with random ids a second index of the same files gave the ranker other candidates, so `make
    ranker` could not reproduce its model from a fresh index (issue 41, item 5)."""
    from stores.sessions import delete_session

    second = f"{SESSION}-again"
    index_repository(db, corpus, session_name=second, embedder=make_embedder("use"))
    try:
        again = GraphDeps(settings=Settings(), db=db).bundle(second)
        with db.connection() as conn:
            table = bundles[0].session.table
            halves = [conn.execute(f'SELECT left(id::text, 18) FROM "{table}" WHERE rag_session_id = %s ORDER BY id',
                                   (b.session.rag_session_id,)).fetchall() for b in (bundles[0], again)]
        assert halves[0] == halves[1] and halves[0]
        for question in QUESTIONS:
            rows = [{lane: [i[:18] for i in ids] for lane, ids in _lanes(bundle, question).items()}
                    for bundle in (bundles[0], again)]
            assert rows[0] == rows[1], question
    finally:
        with db.connection() as conn:
            delete_session(conn, second)
