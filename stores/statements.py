"""`RetrievalStatementBuilder`: the SQL of seed 001 (filters, ranking fields), parameterized throughout.

Every statement is scoped by `rag_session_id` and by the session's active generation, read *inside* the
same statement so a concurrent snapshot swap is seen entirely or not at all. User text only ever reaches
SQL as bound parameters; LIKE patterns built from user paths are escaped (`%`, `_`, `\\` match literally).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from psycopg import sql

from stores.indexing.files import BACKSLASH_IS_SEPARATOR, path_spellings
from stores.layers import Layer

TEST_PATH_PATTERNS = ("tests/%", "%/tests/%", "test/%", "%/test/%", "%/test\\_%", "test\\_%", "%\\_test.py",
                      "%conftest.py", "fixtures/%", "%/fixtures/%", "%\\_pb2.py", "%/generated/%")
"""Paths that count as tests for `prefer_non_tests` (already LIKE-escaped): tests, their fixtures, and
generated code (protobuf modules, `generated/` folders) — none of them is where a user's answer lives."""

DEFAULT_LAYER_ORDER = [layer.value for layer in Layer]

_WORD = re.compile(r"[\w]+", re.UNICODE)
MAX_QUERY_TERMS = 24
MAX_QUERY_CHARS = 4000


def escape_like(value: str) -> str:
    """Escape LIKE wildcards so user text matches literally (default escape character `\\`)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def normalize_path(path: str, *, backslash_separator: bool = BACKSLASH_IS_SEPARATOR) -> str:
    """Normalise a user-supplied path the way the index spells paths: no `./` or leading `/`, trimmed, and
    `\\` turned into `/` only where it is a separator (`backslash_separator`, Windows by default). Slashes and
    backslashes alone name no indexed file (it has a `.md` / `.py` name): empty, so no SQL runs for them."""
    p = path.replace("\x00", "").strip()
    if backslash_separator:
        p = p.replace("\\", "/")
    if not p.strip("/\\"):
        return ""
    while p.startswith("./"):
        p = p[2:]
    return p.lstrip("/")


def path_lookups(path: str, *, backslash_separator: bool = BACKSLASH_IS_SEPARATOR) -> list[str]:
    """The indexed paths a user's path may name, in the order to look them up: as written (a POSIX name may
    hold a backslash, `back\\slash.md`, and the index stores it verbatim), then with `\\` as a folder separator
    (`docs\\api\\x.md` typed on Windows names `docs/api/x.md`); on Windows only the latter. Normalised by
    `normalize_path`, deduplicated; empty when the path names no file."""
    spellings = (normalize_path(s, backslash_separator=False)
                 for s in path_spellings(path, backslash_separator=backslash_separator))
    return [p for p in dict.fromkeys(spellings) if p]


_LOWER_CAMEL = re.compile(r"\b[a-z]+(?:[A-Z][a-z0-9]*)+\b")
_HUMP = re.compile(r"[A-Z]?[a-z0-9]+")
_SNAKE = re.compile(r"[A-Za-z0-9_]*[A-Za-z0-9]_[A-Za-z0-9][A-Za-z0-9_]*")


def query_terms(text: str, *, min_len: int = 3) -> list[str]:
    """Words of a query for lexical search (order kept, deduped, capped).

    A lowerCamelCase word (`operationId`, `getApp`) also gives its parts: PostgreSQL's parser splits
    snake_case (`operation_id` → operation, id) but keeps camelCase whole, so the code that spells the
    name in Python's style would otherwise never match. A snake_case word also gives its whole name with
    the underscores dropped (`get_app_dir` → getappdir), the one lexeme the index adds for it (schema v7,
    `lotsman_identifier_words`): its parts alone are common words. UpperCamelCase stays whole, as the index
    also has it whole; its humps would widen the query (measured: dev key-fact coverage 0.355 → 0.333).
    """
    text = text[:MAX_QUERY_CHARS]
    parts = " ".join(" ".join(_HUMP.findall(m.group(0))) for m in _LOWER_CAMEL.finditer(text))
    joined = " ".join(m.group(0).replace("_", "") for m in _SNAKE.finditer(text))
    seen: dict[str, None] = {}
    for match in _WORD.finditer(f"{text} {parts} {joined}".lower()):
        word = match.group(0).strip("_")
        if len(word) >= min_len and not word.isdigit():
            seen.setdefault(word, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


TSQ = "lotsman_or_tsquery(%(qtext)s, %(stop)s::text[])"
"""The lexical query: an OR of the query's lexemes without the session's too-frequent ones (schema v2)."""
TSQ_PAIRS = "lotsman_pairs_tsquery(%(qtext)s, %(stop)s::text[])"
"""Rows matching two of the query's lexemes (schema v4): the first lexical candidates."""
EXACT_DISTANCE = "(c.embedding <=> %(qvec)s::vector) + 0"
"""The distance as an expression the HNSW index cannot serve: ordering by it is an exact scan."""
PRE_RANK_CAPPED = "ts_rank"
"""What picks a capped lexical match set's candidates (`build_retrieve` with `rank_cap`; the candidates are
then ordered by `ts_rank_cd` like every other). Over 13,093 stdlib matches `ts_rank_cd` cost 7.3 µs a row and
`ts_rank` 1.6 µs: at 100k rows the ranked SQL of 20 questions took 288-323 ms with `ts_rank_cd` over 1,000
matches, 236-288 ms with `ts_rank` over 1,000 and 250-281 ms over 2,000 (`LEXICAL_RANK_CAP`). Chosen on the
five eval corpora with `ts_rank` picking every session's candidates (uncapped there): macro recall@5 0.8986 →
0.8981, MRR 0.6936 → 0.6930, lead citation 0.555 → 0.557, within one case; their sessions are below the cap,
so they keep `ts_rank_cd`."""
LEXICAL_CODE_CAP = 400
"""Most lexical code candidates ranked per request (exact symbol names always come in addition)."""


@dataclass(frozen=True)
class RetrieveFilters:
    """Filters of seed 001 `RagRepository.retrieve(...)`."""

    layers: Sequence[str] = ()
    path_prefixes: Sequence[str] = ()
    exclude_path_prefixes: Sequence[str] = ()
    exclude_like_patterns: Sequence[str] = ()
    prefer_path_prefixes: Sequence[str] = ()
    prefer_like_patterns: Sequence[str] = ()
    prefer_non_tests: bool = False
    metadata_domain: str | None = None
    metadata_subdomain: str | None = None


@dataclass
class _Where:
    clauses: list[sql.Composable] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def add(self, clause: str, **params: Any) -> None:
        self.clauses.append(sql.SQL(clause))
        self.params.update(params)

    def sql(self) -> sql.Composable:
        return sql.SQL(" AND ").join(self.clauses) if self.clauses else sql.SQL("TRUE")


def _like_prefixes(prefixes: Sequence[str]) -> list[str]:
    return [escape_like(normalize_path(p)) + "%" for p in prefixes if normalize_path(p)]


_UNESCAPED_WILDCARD = re.compile(r"(?<!\\)[%_]")


def _user_like_patterns(patterns: Sequence[str]) -> list[str]:
    """LIKE patterns from the policy, which escapes user text itself (seed 000 `%term%`): passed through
    lower-cased; a dangling escape is completed, and wildcard-only patterns (which would match every
    path) are dropped."""
    out = []
    for p in patterns:
        pat = p.strip().lower().replace("\x00", "")
        if (len(pat) - len(pat.rstrip("\\"))) % 2:
            pat += "\\"  # "abc\" would end with the escape character: make it a literal backslash
        if _UNESCAPED_WILDCARD.sub("", pat):
            out.append(pat)
    return out


class RetrievalStatementBuilder:
    """Builds the parameterized statements of `RagRepository` for one chunk table."""

    def __init__(self, table: str, *, scope_after_match: bool = False) -> None:
        """
        Args:
            scope_after_match: lexical match sets come from the GIN index alone and the session's scope is
                checked on the matched rows (`_matches`); for a session that holds most of its table.
        """
        self.table = sql.Identifier(table)
        self.scope_after_match = scope_after_match

    def scope(self, where: _Where, session_id: str, alias: str = "c") -> None:
        where.add(
            f"{alias}.rag_session_id = %(sid)s AND {alias}.generation = "
            "(SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s)",
            sid=session_id,
        )

    def filters(self, where: _Where, f: RetrieveFilters, alias: str = "c") -> None:
        """Hard filters (narrowing): layers, path prefixes, excludes, metadata domain/subdomain."""
        if f.layers:
            where.add(f"{alias}.layer = ANY(%(layers)s)", layers=list(f.layers))
        if prefixes := _like_prefixes(f.path_prefixes):
            where.add(f"{alias}.path LIKE ANY(%(path_prefixes)s)", path_prefixes=prefixes)
        if excl := _like_prefixes(f.exclude_path_prefixes):
            where.add(f"NOT ({alias}.path LIKE ANY(%(exclude_prefixes)s))", exclude_prefixes=excl)
        if excl_like := _user_like_patterns(f.exclude_like_patterns):
            where.add(f"NOT (lower({alias}.path) LIKE ANY(%(exclude_like)s))", exclude_like=excl_like)
        if f.metadata_domain:
            where.add(f"lower({alias}.metadata_json->>'domain') = %(domain)s", domain=f.metadata_domain.lower())
        if f.metadata_subdomain:
            where.add(f"lower({alias}.metadata_json->>'subdomain') = %(subdomain)s",
                      subdomain=f.metadata_subdomain.lower())

    def build_retrieve(
        self, session_id: str, query_embedding: Sequence[float] | None, query_text: str, f: RetrieveFilters,
        *, limit: int, candidates: int = 80, stop_lexemes: Sequence[str] = (), exact: bool = False,
        rank_cap: int | None = None,
    ) -> tuple[sql.Composable, dict[str, Any]]:
        """Seed 001 `build_retrieve`: vector candidates (HNSW) ∪ lexical candidates (GIN), then ranking.

        With `exact`, the vector candidates come from an exact scan of the session's rows instead of the
        HNSW index, which every session shares (`EXACT_DISTANCE`): a small session's neighbours then do not
        depend on what else the table holds (the approximate search visits other sessions' rows first).

        With `rank_cap`, each lexical match set is cut to that many rows (by id), and its candidates are
        picked from those by `PRE_RANK_CAPPED`: on large sessions a common word matches thousands of rows, and
        ranking them all was most of the lane (4,117 OR matches: 85 ms of the stdlib's ranked SQL).

        Returns rows ordered by `prefer_bonus DESC, test_penalty, layer_rank, lexical_rank,
        structural_rank, distance`, each with those fields plus `lexical_score`.
        """
        where = _Where()
        self.scope(where, session_id)
        self.filters(where, f)
        terms = query_terms(query_text)
        params: dict[str, Any] = {**where.params, "limit": limit, "cand": candidates,
                                  "qtext": " ".join(terms), "stop": list(stop_lexemes)}
        layer_order = list(f.layers) or DEFAULT_LAYER_ORDER
        params["layer_order"] = layer_order
        params["prefer_prefixes"] = _like_prefixes(f.prefer_path_prefixes) or None
        params["prefer_like"] = _user_like_patterns(f.prefer_like_patterns) or None
        params["test_patterns"] = list(TEST_PATH_PATTERNS) if f.prefer_non_tests else None
        parts: list[sql.Composable] = []
        if query_embedding is not None:
            params["qvec"] = vector_literal(query_embedding)
            parts.append(self._vector_candidates(where, exact))
        lexical_ctes: sql.Composable = sql.SQL("")
        if terms:
            # Rows matching two of the request's lexemes first; the plain OR query (every row with any
            # lexeme, all of them ranked) only runs when pairs give too few candidates. On large sessions
            # ranking every OR match dominated the request; on small ones the OR query still decides.
            pairs_match = "c.tsv @@ " + TSQ_PAIRS
            or_match = "c.tsv @@ " + TSQ + " AND (SELECT count(*) FROM lex_pairs) < %(cand)s"
            lexical_ctes = sql.SQL(
                "lex_pairs AS (" + _ranked_matches(pairs_match, rank_cap, self.scope_after_match) + ")"
                ", lex_or AS (" + _ranked_matches(or_match, rank_cap, self.scope_after_match) + "), "
            ).format(t=self.table, w=where.sql())
            params["rank_cap"] = rank_cap
            parts.append(sql.SQL("(SELECT id FROM lex_pairs)"))
            parts.append(sql.SQL("(SELECT id FROM lex_or)"))
        if not parts:
            return sql.SQL("SELECT NULL WHERE FALSE"), {}
        distance = (sql.SQL("(c.embedding <=> %(qvec)s::vector)") if query_embedding is not None
                    else sql.SQL("NULL::float8"))
        stmt = sql.SQL("""
WITH {lexical_ctes}cand AS ({cand})
SELECT c.id::text AS id, c.path, c.layer, c.title, c.content, c.metadata_json AS metadata,
       c.span_start, c.span_end,
       {distance} AS distance,
       ts_rank_cd(c.tsv, {tsq}, 1) AS lexical_score,
       (CASE WHEN %(prefer_prefixes)s::text[] IS NOT NULL AND c.path LIKE ANY(%(prefer_prefixes)s::text[])
             THEN 1 ELSE 0 END
        + CASE WHEN %(prefer_like)s::text[] IS NOT NULL AND lower(c.path) LIKE ANY(%(prefer_like)s::text[])
             THEN 1 ELSE 0 END) AS prefer_bonus,
       CASE WHEN %(test_patterns)s::text[] IS NOT NULL AND c.path LIKE ANY(%(test_patterns)s::text[])
            THEN 1 ELSE 0 END AS test_penalty,
       coalesce(array_position(%(layer_order)s::text[], c.layer), 99) AS layer_rank,
       CASE WHEN c.tsv @@ {tsq} THEN 0 ELSE 1 END AS lexical_rank,
       CASE WHEN c.layer IN ('D1_DOCUMENT_CATALOG', 'C1_SYMBOL_CATALOG', 'C3_ENTRYPOINTS') THEN 0
            WHEN jsonb_array_length(coalesce(c.metadata_json->'section_path', '[]'::jsonb)) <= 1 THEN 1
            ELSE 2 END AS structural_rank
FROM {t} c JOIN (SELECT DISTINCT id FROM cand) k ON k.id = c.id
ORDER BY prefer_bonus DESC, test_penalty ASC, layer_rank ASC, lexical_rank ASC, structural_rank ASC,
         distance ASC NULLS LAST, lexical_score DESC, c.path, c.span_start, c.layer, c.span_end, c.id
LIMIT %(limit)s""").format(
            cand=sql.SQL(" UNION ALL ").join(parts), distance=distance, t=self.table, tsq=sql.SQL(TSQ),
            lexical_ctes=lexical_ctes,
        )
        return stmt, params

    def _vector_candidates(self, where: _Where, exact: bool) -> sql.Composable:
        order = EXACT_DISTANCE if exact else "c.embedding <=> %(qvec)s::vector"
        return sql.SQL(
            "(SELECT c.id FROM {t} c WHERE {w} AND c.embedding IS NOT NULL "
            "ORDER BY " + order + ", c.path, c.span_start, c.layer, c.id LIMIT %(cand)s)"
        ).format(t=self.table, w=where.sql())

    def build_exact_files(self, session_id: str, paths: Sequence[str], layers: Sequence[str], limit: int
                          ) -> tuple[sql.Composable, dict[str, Any]] | None:
        """Seed 001 `retrieve_exact_files`: rows of the given paths, no vector ranking. None → no SQL."""
        clean = list(dict.fromkeys(p for p in (normalize_path(x) for x in paths) if p))
        if not clean:
            return None
        where = _Where()
        self.scope(where, session_id)
        where.add("c.path = ANY(%(paths)s)", paths=clean)
        if layers:
            where.add("c.layer = ANY(%(layers)s)", layers=list(layers))
        order = "array_position(%(paths)s::text[], c.path), c.span_start, c.layer, c.span_end, c.id"
        return self._plain(where, order, limit)

    def build_overlapping(self, session_id: str, spans: Sequence[tuple[str, int, int]], layers: Sequence[str],
                          limit: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        """Rows of `layers` that overlap one of `spans` (path, first line, last line). None → no SQL."""
        clean = [(normalize_path(p), int(a), int(b)) for p, a, b in spans if normalize_path(p)]
        if not clean:
            return None
        where = _Where()
        self.scope(where, session_id)
        where.add("c.path = ANY(%(paths)s)", paths=list(dict.fromkeys(p for p, _, _ in clean)))
        if layers:
            where.add("c.layer = ANY(%(layers)s)", layers=list(layers))
        where.add("EXISTS (SELECT 1 FROM unnest(%(span_paths)s::text[], %(span_starts)s::int[], %(span_ends)s::int[])"
                  " AS s(p, a, b) WHERE c.path = s.p AND c.span_start <= s.b AND c.span_end >= s.a)",
                  span_paths=[p for p, _, _ in clean], span_starts=[a for _, a, _ in clean],
                  span_ends=[b for _, _, b in clean])
        return self._plain(where, "c.path, c.span_start, c.layer, c.span_end, c.id", limit)

    def build_path_substrings(self, session_id: str, substrings: Sequence[str], layers: Sequence[str], limit: int
                              ) -> tuple[sql.Composable, dict[str, Any]] | None:
        """Rows whose path contains any of the substrings (literal match); None → no SQL."""
        pats = ["%" + escape_like(normalize_path(s).lower()) + "%" for s in substrings if normalize_path(s)]
        if not pats:
            return None
        where = _Where()
        self.scope(where, session_id)
        where.add("lower(c.path) LIKE ANY(%(subs)s)", subs=pats)
        if layers:
            where.add("c.layer = ANY(%(layers)s)", layers=list(layers))
        return self._plain(where, "length(c.path), c.path, c.span_start, c.layer, c.span_end, c.id", limit)

    def build_lexical_code(self, session_id: str, query_text: str, limit: int, layers: Sequence[str] = (
            Layer.C0_SOURCE_CHUNKS.value,), names: Sequence[str] = (), stop_lexemes: Sequence[str] = (),
    ) -> tuple[sql.Composable, dict] | None:
        """Seed 001 `build_lexical_code`: code rows by terms (and exact symbol names). None → no SQL."""
        terms = query_terms(query_text)
        names = [n.lower() for n in names if n]
        if not terms and not names:
            return None
        where = _Where()
        self.scope(where, session_id)
        where.add("c.layer = ANY(%(layers)s)", layers=list(layers))
        # Two index-friendly candidate sets instead of one OR (an OR across the GIN-indexed tsv and the
        # name expression made PostgreSQL scan the whole table): lexical matches ∪ exact symbol names.
        # Pairs of lexemes first, the plain OR only when pairs are too few (see build_retrieve).
        # `OFFSET 0` fences each match set off from its `ORDER BY id LIMIT`: without it the planner, which
        # expects many matches, walks the primary key in id order and filters every row of the table until
        # it has `cap` of them — 105k rows and 560 ms when few code rows match (measured at 100k rows).
        # The pairs' match set is computed once (a CTE) and also decides whether the OR set is needed.
        pairs_match = _matches("c.id", "c.tsv @@ " + TSQ_PAIRS, self.scope_after_match)
        or_match = _matches("c.id", "c.tsv @@ " + TSQ + " AND (SELECT count(*) FROM pairs) < %(cap)s",
                            self.scope_after_match)
        pairs = sql.SQL(
            "pairs AS MATERIALIZED (SELECT id FROM (" + pairs_match + " OFFSET 0) m ORDER BY id LIMIT %(cap)s)"
        ).format(t=self.table, w=where.sql())
        cand = sql.SQL(
            "SELECT id FROM pairs "
            "UNION (SELECT id FROM (" + or_match + " OFFSET 0) m ORDER BY id LIMIT %(cap)s) "
            "UNION SELECT c.id FROM {t} c WHERE {w} AND lower(c.metadata_json->>'name') = ANY(%(names)s)"
        ).format(t=self.table, w=where.sql())
        # The order leads with (name match, layer): rows of a group after the one that holds the `limit`-th
        # candidate cannot make the cut, so `ts_rank_cd` — ~10 µs a row, most of the statement once the
        # candidates are found — runs only on the groups up to it (`groups`, `cut`).
        # NULL-safe: rows without a name must sort after name matches, not first (NULLs lead in DESC).
        groups = sql.SQL(
            "groups AS MATERIALIZED (SELECT c.id, coalesce(lower(c.metadata_json->>'name') = ANY(%(names)s), false) "
            "AS named, array_position(%(layers)s::text[], c.layer) AS layer_pos FROM {t} c WHERE c.id IN ({cand})), "
            "cut AS (SELECT named, layer_pos FROM groups ORDER BY named DESC, layer_pos "
            "OFFSET greatest(%(limit)s - 1, 0) LIMIT 1)"
        ).format(t=self.table, cand=cand)
        order = ("g.named DESC, g.layer_pos, ts_rank_cd(c.tsv, " + TSQ + ", 1) DESC, "
                 "c.path, c.span_start, c.layer, c.span_end, c.id")
        stmt = sql.SQL(
            "WITH {pairs}, {groups} SELECT c.id::text AS id, c.path, c.layer, c.title, c.content, "
            "c.metadata_json AS metadata, c.span_start, c.span_end FROM groups g JOIN {t} c ON c.id = g.id "
            "WHERE NOT EXISTS (SELECT 1 FROM cut) OR g.named > (SELECT named FROM cut) "
            "OR (g.named = (SELECT named FROM cut) AND g.layer_pos <= (SELECT layer_pos FROM cut)) "
            "ORDER BY " + order + " LIMIT %(limit)s"
        ).format(t=self.table, pairs=pairs, groups=groups)
        params = {**where.params, "qtext": " ".join(terms), "stop": list(stop_lexemes), "names": names,
                  "limit": limit, "cap": LEXICAL_CODE_CAP}
        return stmt, params

    def _plain(self, where: _Where, order: str, limit: int) -> tuple[sql.Composable, dict[str, Any]]:
        stmt = sql.SQL(
            "SELECT c.id::text AS id, c.path, c.layer, c.title, c.content, c.metadata_json AS metadata, "
            "c.span_start, c.span_end FROM {t} c WHERE {w} ORDER BY " + order + " LIMIT %(limit)s"
        ).format(t=self.table, w=where.sql())
        return stmt, {**where.params, "limit": limit}


def _matches(columns: str, match: str, scope_after_match: bool) -> str:
    """`SELECT columns` of the rows under `{w}` (alias `c`) that satisfy `match`.

    With `scope_after_match` the rows come from the GIN index alone (`OFFSET 0` fences the match off) and
    the scope is checked on them. Left to itself, the planner ANDs the GIN bitmap with a bitmap of the
    session's rows from `(rag_session_id, generation, layer)`: worth it for a session that is a small part
    of its table, but for one that is most of it the second bitmap holds nearly every row of the table and
    removes almost no heap page. At 1M rows (93% of the table) building it took 25-85 ms per match set,
    most of the lexical statements' time (one set: 97-155 ms with it, 23-32 ms without).
    """
    if scope_after_match:
        return "SELECT " + columns + " FROM (SELECT * FROM {t} c WHERE " + match + " OFFSET 0) c WHERE {w}"
    return "SELECT " + columns + " FROM {t} c WHERE {w} AND " + match


def _ranked_matches(match: str, cap: int | None, scope_after_match: bool) -> str:
    """Ids of the best `%(cand)s` rows matching `match` (under `{w}`): by `ts_rank_cd`, or with a cap by
    `PRE_RANK_CAPPED` among the first `cap` matches by id (`OFFSET 0` keeps the planner from walking the
    primary key).

    The capped matches carry the columns of the rank's order with them instead of being read again by
    primary key (1,000 index look-ups per set: 19.1 → 17.5 ms of the ranked SQL per request at 100k rows)."""
    def rank(fn: str) -> str:
        return "ORDER BY " + fn + "(c.tsv, " + TSQ + ", 1) DESC, c.path, c.span_start, c.layer, c.id LIMIT %(cand)s"

    if cap is None:
        return _matches("c.id", match, scope_after_match) + " " + rank("ts_rank_cd")
    return ("SELECT c.id FROM (SELECT * FROM (" + _matches("c.id, c.tsv, c.path, c.span_start, c.layer", match,
                                                              scope_after_match)
            + " OFFSET 0) m ORDER BY id LIMIT %(rank_cap)s) c " + rank(PRE_RANK_CAPPED))


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector (`[0.1,0.2]`), for a `%s::vector` parameter."""
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
