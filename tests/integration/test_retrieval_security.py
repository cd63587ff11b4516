"""Retrieval security and robustness (SPEC §8, issue 6 "Must show"), against the embedded Postgres.

- session isolation, property-based: random session contents and random filters/queries never return a
  row of another session, through every repository read and the adapter;
- `%`, `_` and `\\` in user-supplied paths and substrings match literally;
- SQL-injection strings in every filter change nothing (clean results, tables intact);
- empty, whitespace-only and 100 kB queries;
- seed 001 validation rules (no SQL without paths / terms).

Everything is indexed with the fast `FakeEmbeddings` (dim 64) into sessions named after this module.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.context_retrieval.gate import estimate_tokens
from nodes.context_retrieval.retriever import LotsmanRetriever
from nodes.evidence import EvidenceRow
from nodes.retrieval_policy import CodePlan, RetrievalPlan
from stores.database import Database
from stores.embedders import FakeEmbeddings, make_embedder
from stores.indexing.service import index_repository
from stores.layers import CODE_LAYERS, DOCS_LAYERS, Layer
from stores.repository import RagRepository
from stores.sessions import RagSession, delete_session, get_session
from stores.statements import RetrieveFilters, normalize_path

PREFIX = f"it-sec-{uuid.uuid4().hex[:6]}"
EMBEDDER = FakeEmbeddings()
ALL_LAYERS = [layer.value for layer in Layer]
DOC_LAYERS = [layer.value for layer in DOCS_LAYERS]
CODE_LAYER_VALUES = [layer.value for layer in CODE_LAYERS]

# One distinctive word per pool session; no other text of the corpus contains any of them.
TOKENS = ["zorblaxium", "quintrelle", "vexmoorant", "plimbertox"]
VOCAB = [
    "payment",
    "refund",
    "order",
    "invoice",
    "customer",
    "limit",
    "status",
    "webhook",
    "retry",
    "timeout",
    "cache",
    "token",
    "session",
    "платёж",
    "возврат",
    "заказ",
    "счёт",
    "клиент",
    "лимит",
    "статус",
    "повтор",
    "таймаут",
    "кэш",
    "сессия",
    "настройка",
]
DOMAINS = ["payments", "orders", "billing"]

INJECTIONS = [
    "'; DROP TABLE rag_sessions; --",
    "' OR '1'='1",
    "$$",
    "\\",
    "%",
    "_",
    "%%",
    "\\%",
    "') OR TRUE; --",
    "'||(SELECT pg_sleep(2))||'",
    "%(sid)s",
    "{sid}",
    "$1",
    '" OR ""="',
    "ёжик 🙂 ‮ 𝔘 ﷽ \u200b",
    "docs/../../etc/passwd",
]

LIKE_PATTERN_BUG = (
    "stores/statements.py `_user_like_patterns` passes exclude_like_patterns / prefer_like_patterns to "
    "LIKE verbatim: a pattern ending in an unpaired backslash (`\\`, `%\\`) makes Postgres raise "
    "InvalidEscapeSequence ('LIKE pattern must not end with escape character'). Fix: drop such patterns "
    "or complete the escape, e.g. `if (len(pat) - len(pat.rstrip('\\\\'))) % 2: pat += '\\\\'`."
)


# -- corpus ------------------------------------------------------------------------------------------------


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def random_words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def pool_files(i: int, token: str) -> dict[str, str]:
    """Random small docs and code for pool session `i`; every file carries the session's token."""
    rng = random.Random(1000 + i)
    domain, subdomain = rng.choice(DOMAINS), rng.choice(["refunds", "limits", "history"])
    files = {
        "docs/guide.md": (
            f"---\nid: guide-{token}\ntitle: Guide {token}\ndomain: {domain}\nsubdomain: {subdomain}\n"
            f"tags:\n  - {token}\n---\n# Guide {token}\n\n{random_words(rng, 25)} {token}.\n\n"
            f"## Setup {token}\n\n- Purpose: {random_words(rng, 6)} {token}\n\n"
            f"1. {random_words(rng, 4)} {token}\n2. {random_words(rng, 4)}\n\n"
            f"## Limits\n\n{random_words(rng, 30)} {token}\n"
        ),
        "docs/api/endpoints.md": (
            f"# API {token}\n\n`POST /refunds` {random_words(rng, 10)} {token}.\n\n"
            f"## GET /orders\n\n{random_words(rng, 15)} {token}\n"
        ),
        f"docs/only_{i}/notes.md": f"# Notes {token}\n\n{random_words(rng, 40)} {token}\n",
        "src/app/service.py": (
            f'"""Service {token}."""\n\n\nclass Service_{token}:\n'
            f'    """{random_words(rng, 8)} {token}."""\n\n'
            f"    def refund_{token}(self, payment_id: str) -> dict:\n"
            f'        """Refund {token}."""\n        return {{"id": payment_id, "t": "{token}"}}\n\n\n'
            f'def limit_{token}(amount: int) -> bool:\n    """{random_words(rng, 6)} {token}."""\n'
            "    return amount < 100\n"
        ),
        "tests/test_service.py": (
            f'def test_refund_{token}():\n    """{token}"""\n    assert {rng.randint(1, 9)} > 0\n'
        ),
        f"src/mod_{i}.py": (
            f'def helper_{token}():\n    """{random_words(rng, 6)} {token}."""\n    return 1\n'
        ),
    }
    return files


@dataclass
class Indexed:
    """A session with the ids and paths of all its rows (any generation)."""

    session: RagSession
    token: str
    ids: set[str] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    count: int = 0


def load_indexed(db: Database, name: str, token: str) -> Indexed:
    with db.connection() as conn:
        session = get_session(conn, name)
        rows = conn.execute(
            f'SELECT id::text, path FROM "{session.table}" WHERE rag_session_id = %s',
            (session.rag_session_id,),
        ).fetchall()
    assert rows, f"session {name} has no rows"
    return Indexed(session, token, {r[0] for r in rows}, {r[1] for r in rows}, len(rows))


def index_tree(db: Database, root: Path, name: str, files: dict[str, str], token: str) -> Indexed:
    write_tree(root, files)
    index_repository(db, root, session_name=name, embedder=EMBEDDER)
    return load_indexed(db, name, token)


@dataclass
class Pool:
    db: Database
    repo: RagRepository
    adapter: RetrievalAdapter
    sessions: list[Indexed]

    def other_tokens(self, i: int) -> list[str]:
        return [s.token for j, s in enumerate(self.sessions) if j != i]


@pytest.fixture(scope="module")
def pool(db, tmp_path_factory: pytest.TempPathFactory) -> Pool:
    sessions = []
    for i, token in enumerate(TOKENS):
        root = tmp_path_factory.mktemp(f"pool{i}")
        sessions.append(index_tree(db, root, f"{PREFIX}-pool-{i}", pool_files(i, token), token))
    repo = RagRepository(db)
    return Pool(db, repo, RetrievalAdapter(repo, EMBEDDER), sessions)


# -- checks ------------------------------------------------------------------------------------------------


def row_fields(row: Any) -> tuple[str, str, str]:
    if isinstance(row, EvidenceRow):
        return row.id, row.path, row.content
    return str(row["id"]), row["path"], row.get("content") or ""


def assert_own_rows(rows: Iterable[Any], own: Indexed, foreign_tokens: Sequence[str]) -> None:
    """Every row belongs to `own`: its id and path are the session's, no other session's token inside."""
    for row in rows:
        rid, path, content = row_fields(row)
        # a unit of the evidence pack (issue 38) is `<id of the row it was cut from>#<first>-<last line>`
        assert rid.split("#", 1)[0] in own.ids, f"row {rid} ({path}) is not in session {own.session.name}"
        assert path in own.paths, path
        lowered = content.lower()
        for token in foreign_tokens:
            assert token not in lowered, f"{token} leaked into {own.session.name}: {path}"


RANK_FIELDS = ("prefer_bonus", "test_penalty", "layer_rank", "lexical_rank", "structural_rank", "distance")


def assert_seed001_rows(rows: Sequence[dict[str, Any]], limit: int) -> None:
    """Seed 001 output rules: ranking fields on every row, decoded metadata, SQL order, limit."""
    assert len(rows) <= limit
    for row in rows:
        assert all(key in row for key in RANK_FIELDS), sorted(row)
        assert isinstance(row["metadata"], dict)

    def key(r: dict[str, Any]) -> tuple:
        dist = r["distance"] if r["distance"] is not None else float("inf")
        return (
            -r["prefer_bonus"],
            r["test_penalty"],
            r["layer_rank"],
            r["lexical_rank"],
            r["structural_rank"],
            dist,
        )

    keys = [key(r) for r in rows]
    assert keys == sorted(keys), "rows are not in seed 001 order"


def assert_db_intact(pool: Pool) -> None:
    with pool.db.connection() as conn:
        for table in ("rag_sessions", "rag_index_jobs", pool.sessions[0].session.table):
            assert conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None, table
        for s in pool.sessions:
            n = conn.execute(
                f'SELECT count(*) FROM "{s.session.table}" WHERE rag_session_id = %s',
                (s.session.rag_session_id,),
            ).fetchone()[0]
            assert n == s.count, s.session.name
            assert get_session(conn, s.session.name).rag_session_id == s.session.rag_session_id


def plan_for(f: RetrieveFilters, hints: Sequence[str] = (), limit: int = 8) -> RetrievalPlan:
    filters: dict[str, Any] = {
        "path_prefixes": list(f.path_prefixes),
        "exclude_path_prefixes": list(f.exclude_path_prefixes),
        "exclude_like_patterns": list(f.exclude_like_patterns),
        "prefer_path_prefixes": list(f.prefer_path_prefixes),
        "prefer_like_patterns": list(f.prefer_like_patterns),
        "prefer_non_tests": f.prefer_non_tests,
        "target_doc_hints": list(hints),
    }
    if f.metadata_domain is not None:
        filters["metadata.domain"] = f.metadata_domain
    if f.metadata_subdomain is not None:
        filters["metadata.subdomain"] = f.metadata_subdomain
    return RetrievalPlan(
        profile="docs_summary_generic", layers=list(f.layers) or DOC_LAYERS, limit=limit, filters=filters
    )


# -- strategies --------------------------------------------------------------------------------------------

SAFE_TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=24)
ALL_POOL_PATHS = sorted({p for i, t in enumerate(TOKENS) for p in pool_files(i, t)})
PATH_BITS = ALL_POOL_PATHS + [
    "docs/",
    "src/",
    "tests/",
    "docs/only_",
    "src/mod_",
    "./docs/",
    "/src/",
    "docs\\",
    "guide",
    ".md",
    ".py",
]


def path_fragments() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(PATH_BITS), st.sampled_from(INJECTIONS), SAFE_TEXT)


def like_patterns() -> st.SearchStrategy[str]:
    # Policy-built patterns are `%term%` with the term escaped; exercise those plus raw wildcard shapes.
    escaped = path_fragments().map(
        lambda t: "%" + t.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    )
    return st.one_of(escaped, st.sampled_from(["%guide%", "%.py", "docs/%", "%test%", "%%", "%"]))


def maybe(strategy: st.SearchStrategy[Any], empty: Any = ()) -> st.SearchStrategy[Any]:
    """Mostly no such filter, so the narrowing filters do not empty most examples."""
    return st.integers(0, 4).flatmap(lambda n: strategy if n == 0 else st.just(empty))


def filters_strategy() -> st.SearchStrategy[RetrieveFilters]:
    return st.builds(
        RetrieveFilters,
        layers=maybe(
            st.lists(
                st.sampled_from([*ALL_LAYERS, *ALL_LAYERS, "BOGUS", "'; DROP TABLE rag_sessions; --"]),
                min_size=1,
                max_size=5,
            ).map(tuple)
        ),
        path_prefixes=maybe(
            st.lists(
                st.one_of(st.sampled_from(["docs/", "src/", "tests/", "docs/api"]), path_fragments()),
                min_size=1,
                max_size=2,
            ).map(tuple)
        ),
        exclude_path_prefixes=maybe(st.lists(path_fragments(), min_size=1, max_size=2).map(tuple)),
        exclude_like_patterns=maybe(st.lists(like_patterns(), min_size=1, max_size=2).map(tuple)),
        prefer_path_prefixes=st.lists(path_fragments(), max_size=3).map(tuple),
        prefer_like_patterns=st.lists(like_patterns(), max_size=3).map(tuple),
        prefer_non_tests=st.booleans(),
        metadata_domain=maybe(
            st.one_of(st.sampled_from(DOMAINS + ["PAYMENTS", "nope"]), st.sampled_from(INJECTIONS)), None
        ),
        metadata_subdomain=maybe(
            st.one_of(st.sampled_from(["refunds", "limits", "history"]), st.sampled_from(INJECTIONS)), None
        ),
    )


def query_strategy() -> st.SearchStrategy[str]:
    word = st.sampled_from([*TOKENS, *VOCAB, *INJECTIONS, "refund_zorblaxium", "Service_quintrelle"])
    return st.one_of(
        st.lists(word, min_size=1, max_size=6).map(" ".join),
        SAFE_TEXT,
        st.sampled_from(["", "   ", "\n\t"]),
    )


HYPO = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# -- isolation ---------------------------------------------------------------------------------------------


@HYPO
@given(data=st.data())
def test_sessions_never_see_each_others_rows(pool: Pool, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(pool.sessions) - 1), label="session")
    own, foreign = pool.sessions[i], pool.other_tokens(i)
    session = own.session
    f = data.draw(filters_strategy(), label="filters")
    query = data.draw(query_strategy(), label="query")
    limit = data.draw(st.integers(1, 40), label="limit")
    use_vector = data.draw(st.integers(0, 3), label="vector") > 0
    # Other sessions' own paths are the most tempting targets for the path lanes.
    other_paths = [p for j, s in enumerate(pool.sessions) if j != i for p in s.paths]
    hints = data.draw(
        st.lists(st.one_of(path_fragments(), st.sampled_from(other_paths)), max_size=4), label="hints"
    )
    names = data.draw(
        st.lists(st.sampled_from([f"refund_{t}" for t in TOKENS] + INJECTIONS), max_size=3), label="names"
    )

    rows = pool.repo.retrieve(
        session,
        query_embedding=EMBEDDER.embed_query(query) if use_vector else None,
        query_text=query,
        filters=f,
        limit=limit,
    )
    event(f"retrieve rows: {'some' if rows else 'none'}")
    assert_own_rows(rows, own, foreign)
    assert_seed001_rows(rows, limit)

    exact = pool.repo.retrieve_exact_files(session, hints, layers=list(f.layers))
    assert_own_rows(exact, own, foreign)
    assert {r["path"] for r in exact} <= {normalize_path(h) for h in hints}

    subs = pool.repo.retrieve_chunks_by_path_substrings(session, hints, layers=list(f.layers))
    assert_own_rows(subs, own, foreign)
    keys = [normalize_path(h).lower() for h in hints if normalize_path(h)]
    assert all(any(k in r["path"].lower() for k in keys) for r in subs)

    code = pool.repo.retrieve_lexical_code(
        session,
        query,
        names=names,
        layers=data.draw(st.sampled_from([CODE_LAYER_VALUES, [Layer.C0_SOURCE_CHUNKS.value]])),
    )
    assert_own_rows(code, own, foreign)

    code_plan = data.draw(
        st.one_of(st.none(), st.builds(CodePlan, terms=st.just(names), reason=st.just("test"))),
        label="code_plan",
    )
    result = pool.adapter.fetch_rows(
        session, plan_for(f, hints), code_plan, query, file_names=hints[:2], terms=names
    )
    event(f"fetch_rows rows: {'some' if result.rows else 'none'}")
    assert_own_rows(result.rows, own, foreign)
    for row in result.rows:
        assert row.lanes and all(rank >= 1 for rank in row.lanes.values()) and row.fused_score > 0


@HYPO
@given(
    names=st.lists(
        st.from_regex(r"[a-z][a-z0-9_%-]{0,8}", fullmatch=True), min_size=1, max_size=3, unique=True
    ),
    words=st.lists(st.sampled_from(VOCAB), min_size=3, max_size=30),
    token=st.from_regex(r"fresh[a-z]{6}", fullmatch=True),
    peer=st.integers(0, len(TOKENS) - 1),
)
def test_fresh_random_sessions_stay_isolated(
    pool: Pool,
    tmp_path_factory: pytest.TempPathFactory,
    names: list[str],
    words: list[str],
    token: str,
    peer: int,
) -> None:
    """A new session with random files (names may hold `%`/`_`) shares its table with the pool."""
    files = {f"docs/{n}.md": f"# {n} {token}\n\n{' '.join(words)} {token}\n" for n in names}
    files["docs/guide.md"] = f"# Shared name {token}\n\n{' '.join(words)} {token}\n"  # a pool path too
    name = f"{PREFIX}-fresh-{uuid.uuid4().hex[:8]}"
    fresh = index_tree(pool.db, tmp_path_factory.mktemp("fresh"), name, files, token)
    try:
        neighbour = pool.sessions[peer]
        # The fresh session finds its own token, and nothing of the neighbour's, and vice versa.
        mine = pool.repo.retrieve(
            fresh.session, query_embedding=EMBEDDER.embed_query(token), query_text=token, limit=50
        )
        assert mine, "the fresh session should find its own token"
        assert_own_rows(mine, fresh, [neighbour.token])
        theirs = pool.repo.retrieve(
            neighbour.session,
            query_embedding=EMBEDDER.embed_query(token),
            query_text=f"{token} {' '.join(words)}",
            limit=50,
        )
        assert_own_rows(theirs, neighbour, [token, *pool.other_tokens(peer)])
        # `docs/guide.md` exists in both sessions: the neighbour's own rows only.
        assert_own_rows(pool.repo.retrieve_exact_files(neighbour.session, list(files)), neighbour, [token])
        subs = pool.repo.retrieve_chunks_by_path_substrings(neighbour.session, names)
        assert_own_rows(subs, neighbour, [token])
        result = pool.adapter.fetch_rows(
            neighbour.session,
            plan_for(RetrieveFilters(), list(files)),
            None,
            token,
            file_names=[f"{n}.md" for n in names],
        )
        assert_own_rows(result.rows, neighbour, [token])
        result = pool.adapter.fetch_rows(fresh.session, plan_for(RetrieveFilters(), list(files)), None, token)
        assert_own_rows(result.rows, fresh, [neighbour.token])
        exact_paths = {r.path for r in result.rows if "exact" in r.lanes}
        assert exact_paths and exact_paths <= set(files)
    finally:
        with pool.db.connection() as conn:
            delete_session(conn, name)


def test_each_session_finds_only_its_own_token(pool: Pool) -> None:
    """The non-vacuous side of isolation: own token → rows; a neighbour's token → none of its rows."""
    for i, own in enumerate(pool.sessions):
        for j, other in enumerate(pool.sessions):
            rows = pool.repo.retrieve(own.session, query_embedding=None, query_text=other.token, limit=50)
            if i == j:
                assert rows and all(
                    own.token in r["content"].lower()
                    or own.token in r["path"]
                    or own.token in (r["title"] or "").lower()
                    for r in rows[:3]
                )
            assert_own_rows(rows, own, pool.other_tokens(i))
            code = pool.repo.retrieve_lexical_code(
                own.session,
                f"refund_{other.token}",
                names=[f"refund_{other.token}"],
                layers=CODE_LAYER_VALUES,
            )
            if i == j:
                assert code and code[0]["metadata"].get("name") == f"refund_{own.token}"
            assert_own_rows(code, own, pool.other_tokens(i))


def test_old_generation_rows_are_never_returned(db, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A full re-index swaps generations: the old rows (and their token) disappear from every lane."""
    root = tmp_path_factory.mktemp("regen")
    name = f"{PREFIX}-regen"
    old = index_tree(
        db, root, name, {"docs/page.md": "# Page oldtokenxyz\n\nold content oldtokenxyz\n"}, "oldtokenxyz"
    )
    (root / "docs/page.md").write_text("# Page newtokenxyz\n\nnew content newtokenxyz\n", encoding="utf-8")
    index_repository(db, root, session_name=name, embedder=EMBEDDER, incremental=False)
    repo = RagRepository(db)
    with db.connection() as conn:
        session = get_session(conn, name)
    result = RetrievalAdapter(repo, EMBEDDER).fetch_rows(
        session, plan_for(RetrieveFilters(), ["docs/page.md"]), None, "oldtokenxyz", file_names=["page.md"]
    )
    rows = [
        *repo.retrieve(
            session, query_embedding=EMBEDDER.embed_query("oldtokenxyz"), query_text="oldtokenxyz", limit=50
        ),
        *repo.retrieve_exact_files(session, ["docs/page.md"]),
        *repo.retrieve_chunks_by_path_substrings(session, ["page"]),
        *result.rows,
    ]
    assert rows
    for row in rows:
        rid, _path, content = row_fields(row)
        assert rid not in old.ids
        assert "oldtokenxyz" not in content


# -- LIKE wildcards match literally ------------------------------------------------------------------------

LITERAL_FILES = [
    "100%_done.md",
    "a_b.md",
    "aXb.md",
    "a%b.md",
    "abb.md",
    "back\\slash.md",
    "under_score/x.md",
    "underXscore/y.md",
]


@pytest.fixture(scope="module")
def literal(db, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    root = tmp_path_factory.mktemp("literal")
    files = {
        name: f"# File {name.replace('/', ' ')}\n\nliteral wildcard text for {name}\n"
        for name in LITERAL_FILES
    }
    try:
        (root / "probe\\name").write_text("x")
        (root / "probe\\name").unlink()
    except OSError:
        files.pop("back\\slash.md")
    return index_tree(db, root, f"{PREFIX}-literal", files, "literal")


def sub_paths(repo: RagRepository, s: Indexed, *subs: str) -> set[str]:
    return {r["path"] for r in repo.retrieve_chunks_by_path_substrings(s.session, list(subs))}


def test_literal_files_are_indexed(literal: Indexed) -> None:
    assert {p for p in LITERAL_FILES if p != "back\\slash.md"} <= literal.paths


@pytest.mark.parametrize(
    ("substring", "expected"),
    [
        ("a_b", {"a_b.md"}),
        ("a%b", {"a%b.md"}),
        ("%", {"100%_done.md", "a%b.md"}),
        ("_", {"100%_done.md", "a_b.md", "under_score/x.md"}),
        ("%_", {"100%_done.md"}),
        ("100%", {"100%_done.md"}),
        ("under_score", {"under_score/x.md"}),
        ("a\\_b", set()),  # a backslash never turns `_` back into a wildcard
        ("a\\%b", set()),
    ],
)
def test_substring_wildcards_match_literally(
    db, literal: Indexed, substring: str, expected: set[str]
) -> None:
    assert sub_paths(RagRepository(db), literal, substring) == expected


@given(sub=st.text(alphabet="ab_%X\\.dmo0/", min_size=1, max_size=5))
@HYPO
def test_substring_lane_is_exactly_literal_containment(db, literal: Indexed, sub: str) -> None:
    key = normalize_path(sub).lower()
    got = sub_paths(RagRepository(db), literal, sub)
    expected = {p for p in literal.paths if key and key in p.lower()}
    assert got == expected


@pytest.mark.parametrize(
    ("prefixes", "expected"),
    [
        (["a_"], {"a_b.md"}),
        (["a%"], {"a%b.md"}),
        (["under_score/"], {"under_score/x.md"}),
        (["%"], set()),
        (["_"], set()),
        (["%%"], set()),
    ],
)
def test_path_prefix_wildcards_match_literally(
    db, literal: Indexed, prefixes: list[str], expected: set[str]
) -> None:
    repo = RagRepository(db)
    rows = repo.retrieve(
        literal.session,
        query_embedding=EMBEDDER.embed_query("literal wildcard text"),
        query_text="literal wildcard text",
        filters=RetrieveFilters(path_prefixes=prefixes),
        limit=100,
    )
    assert {r["path"] for r in rows} == expected


def test_exclude_and_prefer_prefixes_match_literally(db, literal: Indexed) -> None:
    repo = RagRepository(db)
    emb = EMBEDDER.embed_query("literal wildcard text")
    everything = {
        r["path"]
        for r in repo.retrieve(
            literal.session, query_embedding=emb, query_text="literal wildcard text", limit=100
        )
    }
    assert everything == literal.paths
    kept = {
        r["path"]
        for r in repo.retrieve(
            literal.session,
            query_embedding=emb,
            query_text="literal wildcard text",
            limit=100,
            filters=RetrieveFilters(exclude_path_prefixes=["a_", "under_", "%"]),
        )
    }
    assert kept == everything - {"a_b.md", "under_score/x.md"}
    preferred = repo.retrieve(
        literal.session,
        query_embedding=emb,
        query_text="literal wildcard text",
        limit=100,
        filters=RetrieveFilters(prefer_path_prefixes=["a_", "%"]),
    )
    assert {r["path"] for r in preferred if r["prefer_bonus"] > 0} == {"a_b.md"}
    assert preferred[0]["path"] == "a_b.md"


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (["a_b.md"], {"a_b.md"}),
        (["a%b.md"], {"a%b.md"}),
        (["%"], set()),
        (["_.md", "a_b", "%.md"], set()),
        (["./a_b.md", "/aXb.md", "  abb.md  "], {"a_b.md", "aXb.md", "abb.md"}),  # normalised
    ],
)
def test_exact_files_match_literally(db, literal: Indexed, paths: list[str], expected: set[str]) -> None:
    assert {r["path"] for r in RagRepository(db).retrieve_exact_files(literal.session, paths)} == expected


def test_backslash_in_a_file_name_is_found_literally(db, literal: Indexed) -> None:
    if "back\\slash.md" not in literal.paths:
        pytest.skip("the filesystem refuses backslashes in names")
    repo = RagRepository(db)
    assert {r["path"] for r in repo.retrieve_exact_files(literal.session, ["back\\slash.md"])} == {
        "back\\slash.md"
    }
    assert sub_paths(repo, literal, "back\\slash") == {"back\\slash.md"}


WILDCARD_ONLY_BUG = (
    "stores/statements.py `_user_like_patterns` only strips `%` when deciding a pattern is wildcard-only, so "
    "`%_%` / `_%` (which match every non-empty path) survive and one exclude_like_patterns entry hides the "
    "whole session. Fix: drop a pattern when `re.sub(r'(?<!\\\\)[%_]', '', pat)` is empty."
)


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("%_%"),
        pytest.param("_%"),
        "%%",
        "%",
    ],
)
def test_wildcard_only_exclude_like_pattern_does_not_hide_everything(
    db, literal: Indexed, pattern: str
) -> None:
    """`_user_like_patterns` promises to drop "wildcard-only patterns (which would match every path)"."""
    repo = RagRepository(db)
    rows = repo.retrieve(
        literal.session,
        query_embedding=EMBEDDER.embed_query("literal"),
        query_text="literal",
        filters=RetrieveFilters(exclude_like_patterns=[pattern]),
        limit=100,
    )
    assert {r["path"] for r in rows} == literal.paths


# -- SQL injection in every filter -------------------------------------------------------------------------


def _baseline(pool: Pool, own: Indexed, **kw: Any) -> list[str]:
    rows = pool.repo.retrieve(
        own.session,
        query_embedding=EMBEDDER.embed_query(f"refund {own.token}"),
        query_text=f"refund {own.token}",
        limit=30,
        **kw,
    )
    return [str(r["id"]) for r in rows]


NARROWING = ["path_prefixes", "metadata_domain", "metadata_subdomain", "layers"]
NEUTRAL = ["exclude_path_prefixes", "exclude_like_patterns", "prefer_path_prefixes", "prefer_like_patterns"]


def _injection_params() -> list[Any]:
    params = []
    for field_name in NARROWING + NEUTRAL:
        for n, inj in enumerate(INJECTIONS):
            marks = []
            params.append(pytest.param(field_name, inj, id=f"{field_name}-{n}", marks=marks))
    return params


@pytest.mark.parametrize(("field_name", "injection"), _injection_params())
def test_injection_in_retrieve_filters_changes_nothing(pool: Pool, field_name: str, injection: str) -> None:
    own = pool.sessions[1]
    baseline = _baseline(pool, own)
    assert baseline
    value: Any = [injection] if field_name in ("layers", *NEUTRAL, "path_prefixes") else injection
    got = _baseline(pool, own, filters=RetrieveFilters(**{field_name: value}))
    if field_name in NARROWING:
        # No path starts with, no domain equals, no layer is called like the injection ("/"-only and
        # blank prefixes normalise to no filter at all).
        if field_name == "path_prefixes" and not normalize_path(injection):
            assert got == baseline
        else:
            assert got == []
    elif field_name in ("exclude_path_prefixes", "exclude_like_patterns"):
        assert got == baseline  # nothing of the tree matches the injection: nothing is excluded
    else:
        assert got == baseline  # nothing earns a preference bonus: same order
    assert_db_intact(pool)


@pytest.mark.parametrize("injection", INJECTIONS, ids=[f"inj{n}" for n in range(len(INJECTIONS))])
def test_injection_in_paths_queries_and_names_changes_nothing(pool: Pool, injection: str) -> None:
    own = pool.sessions[2]
    foreign = pool.other_tokens(2)
    repo = pool.repo
    assert repo.retrieve_exact_files(own.session, [injection]) == []
    subs = repo.retrieve_chunks_by_path_substrings(own.session, [injection])
    assert all(normalize_path(injection).lower() in r["path"].lower() for r in subs)
    assert_own_rows(subs, own, foreign)
    for text in (injection, f"{injection} refund {own.token}", f"refund {own.token} {injection}"):
        rows = repo.retrieve(
            own.session, query_embedding=EMBEDDER.embed_query(text), query_text=text, limit=20
        )
        assert_own_rows(rows, own, foreign)
        code = repo.retrieve_lexical_code(own.session, text, names=[injection], layers=CODE_LAYER_VALUES)
        assert_own_rows(code, own, foreign)
    # Appending an injection to a real query keeps the lexical hits of the real words.
    plain = repo.retrieve(own.session, query_embedding=None, query_text=f"refund {own.token}", limit=20)
    spiced = repo.retrieve(
        own.session, query_embedding=None, query_text=f"refund {own.token} {injection}", limit=20
    )
    assert plain and spiced
    f = RetrieveFilters(
        metadata_domain=None, exclude_path_prefixes=(injection,), prefer_path_prefixes=(injection,)
    )
    code_plan = CodePlan(terms=[injection, f"refund_{own.token}"], reason="injection")
    result = pool.adapter.fetch_rows(
        own.session,
        plan_for(f, [injection]),
        code_plan,
        f"{injection} {own.token}",
        file_names=[injection],
        terms=[injection],
    )
    assert result.rows
    assert_own_rows(result.rows, own, foreign)
    assert_db_intact(pool)


def test_injection_everywhere_at_once_through_the_adapter(pool: Pool) -> None:
    own = pool.sessions[0]
    inj = INJECTIONS
    f = RetrieveFilters(
        layers=tuple(inj[:2]),
        path_prefixes=tuple(inj[:3]),
        exclude_path_prefixes=tuple(inj),
        exclude_like_patterns=tuple(i for i in inj if i != "\\"),
        prefer_path_prefixes=tuple(inj),
        prefer_like_patterns=tuple(i for i in inj if i != "\\"),
        metadata_domain=inj[0],
        metadata_subdomain=inj[1],
    )
    result = pool.adapter.fetch_rows(
        own.session,
        plan_for(f, inj),
        CodePlan(terms=inj, reason="x"),
        " ".join(inj),
        file_names=inj,
        terms=inj,
    )
    assert_own_rows(result.rows, own, pool.other_tokens(0))
    assert not any("exact" in r.lanes for r in result.rows)
    assert_db_intact(pool)


# -- empty, blank and huge queries -------------------------------------------------------------------------

HUGE = ("платёж refund " * 8000)[:100_000]
ODD_QUERIES = {
    "empty": "",
    "space": " ",
    "blank": " \n\t  \r\n ",
    "100kB-latin": "x" * 100_000,
    "100kB-words": HUGE,
    "100kB-unicode": ("ёжик 🙂 𝔘 ‮ " * 10_000)[:100_000],
    "nul": "refund\x00 платёж",
}


def broad(limit: int = 8) -> tuple[RetrievalPlan, CodePlan]:
    return (
        RetrievalPlan(profile="docs_summary_generic", layers=DOC_LAYERS, limit=limit, filters={}),
        CodePlan(terms=[], reason="broad"),
    )


@pytest.mark.parametrize("label", list(ODD_QUERIES))
def test_fetch_rows_handles_odd_queries(pool: Pool, label: str) -> None:
    query = ODD_QUERIES[label]
    own = pool.sessions[3]
    plan, code_plan = broad()
    t0 = time.perf_counter()
    result = pool.adapter.fetch_rows(own.session, plan, code_plan, query, top_k=8, token_cap=1000)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0, f"{label}: {elapsed:.1f}s"
    assert len(result.rows[: result.core]) <= 8  # top_k bounds the core; the fill only adds rows that fit
    assert_own_rows(result.rows, own, pool.other_tokens(3))
    used = sum(estimate_tokens(r.content) + estimate_tokens(r.path) + 8 for r in result.rows)
    assert used <= 1000 or len(result.rows) == 1
    assert isinstance(result.relevant, bool) and result.gate.reason


@pytest.mark.parametrize("label", ["empty", "space", "blank"])
def test_blank_query_is_not_relevant(pool: Pool, label: str) -> None:
    plan, code_plan = broad()
    result = pool.adapter.fetch_rows(pool.sessions[3].session, plan, code_plan, ODD_QUERIES[label])
    assert result.relevant is False


@pytest.mark.parametrize("label", list(ODD_QUERIES))
async def test_retriever_invoke_handles_odd_queries(pool: Pool, label: str) -> None:
    own = pool.sessions[3]
    retriever = LotsmanRetriever(adapter=pool.adapter, session=own.session, k=3)
    for docs in (retriever.invoke(ODD_QUERIES[label]), await retriever.ainvoke(ODD_QUERIES[label])):
        assert isinstance(docs, list) and len(docs) <= 3
        for doc in docs:
            assert doc.metadata["path"] in own.paths
            assert doc.id in own.ids


def test_huge_query_still_finds_the_session_token(pool: Pool) -> None:
    own = pool.sessions[3]
    plan, code_plan = broad()
    result = pool.adapter.fetch_rows(own.session, plan, code_plan, f"{own.token} " + HUGE)
    assert any(own.token in r.content.lower() for r in result.rows)


def test_real_embedder_clips_a_100kb_query() -> None:
    embedder = make_embedder("use")
    embedder.embed_query("warm up")
    t0 = time.perf_counter()
    vector = embedder.embed_query("x" * 100_000)
    assert time.perf_counter() - t0 < 2.0
    assert len(vector) == embedder.dim


# -- seed 001 validation rules -----------------------------------------------------------------------------


@pytest.fixture
def no_sql(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> RagRepository:
    repo = RagRepository(pool.db)

    def boom(*_a: Any, **_k: Any) -> Callable[..., Any]:
        raise AssertionError("SQL must not run")

    monkeypatch.setattr(repo, "_fetch", boom)
    return repo


@pytest.mark.parametrize("paths", [[], [""], ["", "   ", "\t"], ["./", "/", "//"], ["\\"]])
def test_exact_files_without_real_paths_run_no_sql(
    pool: Pool, no_sql: RagRepository, paths: list[str]
) -> None:
    assert no_sql.retrieve_exact_files(pool.sessions[0].session, paths) == []


@pytest.mark.parametrize("substrings", [[], [""], ["  ", "/"]])
def test_path_substrings_without_text_run_no_sql(
    pool: Pool, no_sql: RagRepository, substrings: list[str]
) -> None:
    assert no_sql.retrieve_chunks_by_path_substrings(pool.sessions[0].session, substrings) == []


@pytest.mark.parametrize("query", ["", "   ", "a b ?", "!!! ... ---", "12 345", "\n"])
def test_lexical_code_without_terms_runs_no_sql(pool: Pool, no_sql: RagRepository, query: str) -> None:
    assert no_sql.retrieve_lexical_code(pool.sessions[0].session, query) == []
    assert no_sql.retrieve_lexical_code(pool.sessions[0].session, query, names=["", ""]) == []


def test_retrieve_without_embedding_or_terms_runs_no_sql(pool: Pool, no_sql: RagRepository) -> None:
    assert no_sql.retrieve(pool.sessions[0].session, query_embedding=None, query_text="  ? ") == []


def test_exact_files_normalise_paths(pool: Pool) -> None:
    own = pool.sessions[0]
    rows = pool.repo.retrieve_exact_files(
        own.session, ["./docs/guide.md", "/docs/guide.md", " docs/guide.md ", "docs\\guide.md", ""]
    )
    assert rows and {r["path"] for r in rows} == {"docs/guide.md"}
    assert len({r["id"] for r in rows}) == len(rows)
    assert_own_rows(rows, own, pool.other_tokens(0))


def test_a_statement_past_the_lane_budget_is_cancelled_by_postgres(db) -> None:
    from stores.errors import LaneBudgetExceeded

    repo = RagRepository(db, statement_budget_ms=50)
    with pytest.raises(LaneBudgetExceeded, match="50 ms budget"):
        repo._fetch("SELECT pg_sleep(2)", {})
    assert repo._fetch("SELECT 1 AS one", {}) == [{"one": 1, "metadata": {}}]  # the connection is fine after


def test_a_lexical_rank_cap_keeps_sessions_apart_and_changes_nothing_above_the_match_count(pool: Pool) -> None:
    """Large sessions rank at most `lexical_rank_cap` lexical matches per set: still scoped to the session,
    and identical to the uncapped ranking while every match is a candidate (the capped set is picked from by
    `ts_rank`, the uncapped one by `ts_rank_cd`)."""
    capped = RagRepository(pool.db)
    for i, own in enumerate(pool.sessions):
        plain = pool.repo.retrieve(own.session, query_embedding=None, query_text=own.token, limit=50)
        capped.lexical_rank_cap = 10_000
        assert capped.retrieve(own.session, query_embedding=None, query_text=own.token, limit=50) == plain
        capped.lexical_rank_cap = 2
        rows = capped.retrieve(own.session, query_embedding=None, query_text=own.token, limit=50)
        assert rows and len(rows) <= 4  # two pairs matches + two OR matches at most
        assert_own_rows(rows, own, pool.other_tokens(i))
