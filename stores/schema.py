"""Schema: idempotent, versioned `ensure_tables`, and per-embedding-space chunk tables.

Why one chunk table per embedding dimension (`rag_chunks_d384`, `rag_chunks_d512`, ...): an HNSW index
needs a fixed `vector(n)` column, and sessions built with different embedders must coexist. A table per
dimension keeps a plain `embedding vector(n)` column with its own HNSW index, so both our ranking SQL and
langchain-postgres' `PGVectorStore` (which orders by `embedding <=> :q`) use the index directly; partial
indexes on a cast would force every query, including PGVectorStore's, to repeat the cast. The view
`rag_chunks` unions all spaces for inspection. See docs/architecture/storage.md.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

SCHEMA_VERSION = 9
"""Bump and add a step to `_UPGRADES` when the schema changes; upgrades run in order."""

CHUNK_TABLE_PREFIX = "rag_chunks_d"

HNSW_WITH = "m = 16, ef_construction = 64"
GIN_WITH = "gin_pending_list_limit = 128"
"""Storage of the `tsv` GIN index (schema v8). Rows written with the default `fastupdate` wait in a pending
list of up to 4 MB that every lexical search reads in full and checks row by row: 107 pending pages at
100k rows cost each question 7.5 ms of PostgreSQL time (48.4 → 40.9 ms per request once merged), and
an empty search 0.66 ms instead of 0.03. At 128 kB a writer merges the list every ~16 pages (inserting
20k rows into an 80k-row index: 0.7 → 1.3 s; `fastupdate = off`: 4.1 s)."""
HNSW_BUILD_MEMORY = "512MB"
"""`maintenance_work_mem` of an HNSW build: the graph of the stdlib's 25k vectors (512 dims) needs ~100 MB,
and a graph that outgrows it is finished on disk, several times slower (PostgreSQL's default is 64 MB)."""

_BASE_DDL = """
CREATE TABLE IF NOT EXISTS rag_schema_version (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS rag_sessions (
    rag_session_id text PRIMARY KEY,
    project_id text NOT NULL DEFAULT '',
    name text NOT NULL UNIQUE,
    embedder text NOT NULL,
    embedding_dim integer NOT NULL CHECK (embedding_dim > 0),
    active_generation integer NOT NULL DEFAULT 0,
    root_path text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS rag_index_jobs (
    job_id text PRIMARY KEY,
    rag_session_id text NOT NULL REFERENCES rag_sessions(rag_session_id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('snapshot', 'changes')),
    status text NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    counts jsonb NOT NULL DEFAULT '{}'::jsonb,
    skipped jsonb NOT NULL DEFAULT '[]'::jsonb,
    error text,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX IF NOT EXISTS rag_index_jobs_session ON rag_index_jobs (rag_session_id, started_at DESC);
CREATE TABLE IF NOT EXISTS rag_blob_cache (
    cache_key text PRIMARY KEY,
    blob_sha text NOT NULL,
    path text NOT NULL,
    pipeline_version text NOT NULL,
    embedder text NOT NULL,
    records jsonb NOT NULL,
    vectors bytea,
    created_at timestamptz NOT NULL DEFAULT now()
);
"""

TSV_EXPRESSION = """
        setweight(to_tsvector('russian', coalesce(title, '')), 'A')
        || setweight(to_tsvector('russian', translate(path, '/._-', '    ')), 'B')
        || to_tsvector('russian', left(content, 60000))
        || to_tsvector('russian', lotsman_identifier_words(left(content, 60000)))
    """
"""The chunk tables' generated `tsv`: title (A), path words (B), content, and the words inside the content's
identifiers (schema v7, `lotsman_identifier_words`)."""

# PostgreSQL's parser keeps `datetime.timedelta` or `self.headers` as one "host" token and `FileResponse` as
# one word, so "timedelta", "headers" or "file response" never matched them lexically. This adds the parts:
# dotted names split at the dots (each part whole), CamelCase names split into humps (`JSONRenderer` → JSON
# Renderer; the whole name is already a lexeme of the content), and snake_case names joined into one word
# (`get_logger` → getlogger: the parser already splits at `_`, and the parts alone are common words that
# the session's stoplist often drops). Each distinct identifier once, in sorted order (deterministic).
# Dev macro over the five eval corpora: recall@5 0.890 → 0.902, MRR 0.697 → 0.701, code-gold recall@5
# 0.843 → 0.848. Cost there (32.6k rows): tsv +28 % (11.1 → 14.2 MB), a fresh GIN index +25 % (4.2 → 5.3 MB),
# ~60–80 µs more PostgreSQL CPU per written row. The title's identifiers too (code titles are qualified names)
# gave recall@5 0.911 but MRR 0.698 and reordered the code lane enough to add an unrelated passage to a
# fastapi answer; not kept (docs/architecture/storage.md).
_IDENTIFIER_WORDS_DDL = r"""
CREATE OR REPLACE FUNCTION lotsman_identifier_words(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(DISTINCT
               CASE WHEN strpos(m[1], '.') > 0 THEN translate(m[1], '.', ' ') ELSE '' END
               || CASE WHEN m[1] ~ '[a-z0-9][A-Z]|[A-Z][A-Z][a-z]' THEN ' ' || regexp_replace(regexp_replace(
                      translate(m[1], '.', ' '), '([a-z0-9])([A-Z])', '\1 \2', 'g'),
                      '([A-Z])([A-Z][a-z])', '\1 \2', 'g') ELSE '' END
               || CASE WHEN m[1] ~ '[A-Za-z0-9]_[A-Za-z0-9]' THEN ' ' || translate(m[1], '._', ' ') ELSE '' END,
               ' '), '')
    FROM regexp_matches(t, '([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+'
                           '|[A-Za-z0-9_]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9_]*'
                           '|[A-Za-z0-9_]*[A-Za-z0-9]_[A-Za-z0-9][A-Za-z0-9_]*)', 'g') AS m
$$;
"""

_CHUNK_DDL = """
CREATE TABLE IF NOT EXISTS {table} (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    rag_session_id text NOT NULL REFERENCES rag_sessions(rag_session_id) ON DELETE CASCADE,
    generation integer NOT NULL,
    layer text NOT NULL,
    path text NOT NULL,
    title text NOT NULL DEFAULT '',
    content text NOT NULL,
    metadata_json jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    span_start integer NOT NULL,
    span_end integer NOT NULL,
    blob_sha text NOT NULL,
    embedding vector({dim}),
    tsv tsvector GENERATED ALWAYS AS ({tsv}) STORED
);
CREATE INDEX IF NOT EXISTS {ix_session} ON {table} (rag_session_id, generation, layer);
CREATE INDEX IF NOT EXISTS {ix_path} ON {table} (path text_pattern_ops);
CREATE INDEX IF NOT EXISTS {ix_hnsw} ON {table} USING hnsw (embedding vector_cosine_ops) WITH ({hnsw_with});
CREATE INDEX IF NOT EXISTS {ix_tsv} ON {table} USING gin (tsv) WITH ({gin_with});
CREATE INDEX IF NOT EXISTS {ix_domain} ON {table} (lower(metadata_json->>'domain'));
CREATE INDEX IF NOT EXISTS {ix_subdomain} ON {table} (lower(metadata_json->>'subdomain'));
CREATE INDEX IF NOT EXISTS {ix_name} ON {table} (rag_session_id, lower(metadata_json->>'name'));
"""

# An OR of the query's lexemes minus the session's too-frequent ones (a stand-in for BM25's IDF: ts_rank
# has none, so "fastapi" in every title would otherwise outrank the topic word). IMMUTABLE, so the
# planner folds it once per statement and the GIN index stays usable.
_OR_TSQUERY_DDL = """
CREATE OR REPLACE FUNCTION lotsman_or_tsquery(q text, stop text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')), ''::tsquery)
    FROM unnest(to_tsvector('russian', q))
    WHERE lexeme <> ALL(coalesce(stop, '{}'::text[]))
$$;
"""

# version -> SQL applied when upgrading *to* that version (version 1 is the base DDL itself).
# Rows that match two of the query's lexemes. The lexical lane ranks these first and falls back to the plain
# OR only when they are too few. Written as a chain, 'a' & ('b' | 'c') | 'b' & 'c' (schema v8), not as every
# pair, 'a' & 'b' | 'a' & 'c' | 'b' & 'c' (v4): the same rows, but GIN checks each candidate row against the
# query, and the chain has n - 1 ANDs instead of n(n - 1)/2 (measured on a 366k-row table, 7 lexemes: the index
# scan 6.1 → 2.8 ms; ~0.7 ms per request at 100k rows). Lexemes in sorted order: the query text is deterministic.
_PAIRS_TSQUERY_DDL = """
CREATE OR REPLACE FUNCTION lotsman_pairs_tsquery(q text, stop text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH l AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('russian', q))
               WHERE lexeme <> ALL(coalesce(stop, '{}'::text[])))
    SELECT coalesce(to_tsquery('simple', string_agg(
               '(' || quote_literal(a.lexeme) || ' & (' || r.rest || '))', ' | ' ORDER BY a.lexeme)), ''::tsquery)
    FROM l a CROSS JOIN LATERAL (SELECT string_agg(quote_literal(b.lexeme), ' | ' ORDER BY b.lexeme) AS rest
                                 FROM l b WHERE b.lexeme > a.lexeme) r
    WHERE r.rest IS NOT NULL
$$;
"""

# v7: `tsv` gains the words inside identifiers. A generated column's expression cannot be altered on
# PostgreSQL 15/16, so each chunk table's `tsv` is dropped and added again: PostgreSQL recomputes it from the
# rows in place (nothing is re-indexed or re-embedded), rewriting the table and rebuilding its indexes — the
# HNSW build gets the same memory as after a bulk load. The sessions' stoplists were counted over the old
# tsv: cleared, so each process counts them again on a session's first question (`GraphDeps.bundle`; 0.5 s
# at 13k rows) until the next index job stores them. Five eval corpora, 32.6k rows: 6–15 s on 2 shared cores.
_IDENTIFIER_WORDS_UPGRADE = _IDENTIFIER_WORDS_DDL + f"""
SET LOCAL maintenance_work_mem = '{HNSW_BUILD_MEMORY}';
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables
             WHERE schemaname = current_schema() AND tablename ~ '^rag_chunks_d[0-9]+$' LOOP
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
            WHERE d.adrelid = format('%I', t)::regclass AND a.attname = 'tsv'
              AND pg_get_expr(d.adbin, d.adrelid) LIKE '%lotsman_identifier_words%');
        EXECUTE format('ALTER TABLE %I DROP COLUMN tsv, ADD COLUMN tsv tsvector GENERATED ALWAYS AS (%s) STORED',
                       t, $tsv${TSV_EXPRESSION}$tsv$);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING gin (tsv)', t || '_tsv', t);
    END LOOP;
END $$;
UPDATE rag_sessions SET stop_lexemes = NULL WHERE stop_lexemes IS NOT NULL;
"""

# v8: the pairs query as a chain, and a short GIN pending list on every chunk table (`GIN_WITH`); the list
# that is already there is merged now (107 pages: 0.2 s), not by the next writer.
_LEXICAL_INDEX_UPGRADE = _PAIRS_TSQUERY_DDL + f"""
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables
             WHERE schemaname = current_schema() AND tablename ~ '^rag_chunks_d[0-9]+$' LOOP
        CONTINUE WHEN to_regclass(format('%I', t || '_tsv')) IS NULL;
        EXECUTE format('ALTER INDEX %I SET ({GIN_WITH})', t || '_tsv');
        PERFORM gin_clean_pending_list(format('%I', t || '_tsv')::regclass);
    END LOOP;
END $$;
"""

# v9: where users and agents ask, and revisions. A session may record the git revision it was indexed from
# (`lotsman index PATH --ref REF`); answers carry that commit. Votes on answers (`rag_feedback`) and, when
# question logging is on, the questions asked (`rag_question_log`, the input of `lotsman gaps`). Structures
# computed per index generation and loaded by the first question instead of rebuilt there
# (`rag_generation_artifacts`: the alias index, the layout, the file list).
_V9_DDL = """
ALTER TABLE rag_sessions ADD COLUMN IF NOT EXISTS repo_path text;
ALTER TABLE rag_sessions ADD COLUMN IF NOT EXISTS git_ref text;
ALTER TABLE rag_sessions ADD COLUMN IF NOT EXISTS commit_sha text;
CREATE TABLE IF NOT EXISTS rag_feedback (
    feedback_id text PRIMARY KEY,
    rag_session_id text REFERENCES rag_sessions(rag_session_id) ON DELETE CASCADE,
    session_name text NOT NULL,
    run_id text,
    thread_id text,
    question text NOT NULL,
    answer text NOT NULL DEFAULT '',
    citations jsonb NOT NULL DEFAULT '[]'::jsonb,
    score smallint NOT NULL CHECK (score IN (-1, 1)),
    comment text,
    langsmith_sent boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS rag_feedback_session ON rag_feedback (rag_session_id, created_at DESC);
CREATE TABLE IF NOT EXISTS rag_question_log (
    question_id text PRIMARY KEY,
    rag_session_id text REFERENCES rag_sessions(rag_session_id) ON DELETE CASCADE,
    session_name text NOT NULL,
    run_id text,
    question text NOT NULL,
    abstained boolean NOT NULL DEFAULT false,
    confidence real,
    top_files jsonb NOT NULL DEFAULT '[]'::jsonb,
    source text NOT NULL DEFAULT 'cli',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS rag_question_log_session ON rag_question_log (rag_session_id, created_at DESC);
CREATE TABLE IF NOT EXISTS rag_generation_artifacts (
    rag_session_id text NOT NULL REFERENCES rag_sessions(rag_session_id) ON DELETE CASCADE,
    generation integer NOT NULL,
    name text NOT NULL,
    format_version integer NOT NULL DEFAULT 1,
    payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rag_session_id, generation, name)
);
"""

_UPGRADES: dict[int, str] = {
    2: _OR_TSQUERY_DDL,
    # v3: symbol-name lookups of the code lane get an index on every existing chunk table.
    3: """
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables
             WHERE schemaname = current_schema() AND tablename ~ '^rag_chunks_d[0-9]+$' LOOP
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I (rag_session_id, lower(metadata_json->>''name''))',
                       t || '_name', t);
    END LOOP;
END $$;
""",
    4: _PAIRS_TSQUERY_DDL,
    # v5: the lexical lane's stoplist is computed once per index job, not on a session's first question.
    5: "ALTER TABLE rag_sessions ADD COLUMN IF NOT EXISTS stop_lexemes text[];",
    # v6: chunk rows cannot outlive their session (a delete racing an index job left hundreds of orphans):
    # orphans of earlier races are dropped, then a cascading foreign key; and the blob cache keeps each
    # file's indexing warnings (broken frontmatter), which a cache hit used to lose. NULL = not recorded.
    6: """
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables
             WHERE schemaname = current_schema() AND tablename ~ '^rag_chunks_d[0-9]+$' LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_constraint WHERE conname = t || '_rag_session_id_fkey');
        EXECUTE format('DELETE FROM %I c WHERE NOT EXISTS '
                       '(SELECT 1 FROM rag_sessions s WHERE s.rag_session_id = c.rag_session_id)', t);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (rag_session_id) '
                       'REFERENCES rag_sessions(rag_session_id) ON DELETE CASCADE', t, t || '_rag_session_id_fkey');
    END LOOP;
END $$;
ALTER TABLE rag_blob_cache ADD COLUMN IF NOT EXISTS warnings text[];
""",
    7: _IDENTIFIER_WORDS_UPGRADE,
    8: _LEXICAL_INDEX_UPGRADE,
    9: _V9_DDL,
}


def chunk_table(dim: int) -> str:
    """Name of the chunk table of one embedding space."""
    if not isinstance(dim, int) or dim <= 0 or dim > 16000:
        raise ValueError(f"invalid embedding dimension: {dim!r}")
    return f"{CHUNK_TABLE_PREFIX}{dim}"


def ensure_tables(conn: psycopg.Connection) -> int:
    """Create or upgrade the schema; safe to call on every start and from concurrent processes.

    Returns:
        The schema version now in place.
    """
    if _current_version(conn) == SCHEMA_VERSION:
        # Up to date: no DDL, no lock. Also what lets the QA graph start on a read replica (a hot standby
        # refuses even `CREATE TABLE IF NOT EXISTS`).
        return SCHEMA_VERSION
    with conn.transaction():
        # One schema change at a time across processes.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('lotsman_schema'))")
        conn.execute(_BASE_DDL)
        row = conn.execute("SELECT version FROM rag_schema_version").fetchone()
        current = row[0] if row else 0
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"database schema version {current} is newer than this Lotsman ({SCHEMA_VERSION}): upgrade Lotsman"
            )
        if current == 0:  # a new database: the base DDL plus every upgrade step
            for version in range(2, SCHEMA_VERSION + 1):
                conn.execute(_UPGRADES[version])
        for version in range(max(current, 1) + 1, SCHEMA_VERSION + 1):
            conn.execute(_UPGRADES[version])
        conn.execute(
            "INSERT INTO rag_schema_version (singleton, version) VALUES (true, %s) "
            "ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, updated_at = now()",
            (SCHEMA_VERSION,),
        )
    return SCHEMA_VERSION


def _current_version(conn: psycopg.Connection) -> int | None:
    """The recorded schema version, or None before the first `ensure_tables` (read-only query)."""
    with conn.transaction():
        if conn.execute("SELECT to_regclass('rag_schema_version')").fetchone() == (None,):
            return None
        row = conn.execute("SELECT version FROM rag_schema_version").fetchone()
    return row[0] if row else None


def existing_spaces(conn: psycopg.Connection) -> list[int]:
    """Dimensions that already have a chunk table."""
    rows = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE %s",
        (CHUNK_TABLE_PREFIX + "%",),
    ).fetchall()
    return sorted(int(r[0][len(CHUNK_TABLE_PREFIX):]) for r in rows if r[0][len(CHUNK_TABLE_PREFIX):].isdigit())


def ensure_space(conn: psycopg.Connection, dim: int) -> str:
    """Create the chunk table (and its indexes) of one embedding space if missing; refresh the view.

    A table that exists is left alone, without DDL: its indexes were created with it in one transaction, and
    its HNSW index is dropped and rebuilt by bulk loads (`build_vector_index`). `CREATE INDEX IF NOT EXISTS`
    on it waited behind another session's COPY, and raced a bulk load's rebuild of the HNSW index
    (`UniqueViolation` on `pg_class_relname_nsp_index`).
    """
    table = chunk_table(dim)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('lotsman_schema'))")
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() != (None,):
            return table
        names = {
            "table": sql.Identifier(table),
            "dim": sql.Literal(dim),
            "hnsw_with": sql.SQL(HNSW_WITH),
            "gin_with": sql.SQL(GIN_WITH),
            "tsv": sql.SQL(TSV_EXPRESSION),
            **{k: sql.Identifier(f"{table}_{k[3:]}") for k in
               ("ix_session", "ix_path", "ix_hnsw", "ix_tsv", "ix_domain", "ix_subdomain", "ix_name")},
        }
        conn.execute(sql.SQL(_CHUNK_DDL).format(**names))
        _refresh_view(conn)
    return table


def vector_index(table: str) -> str:
    """Name of a chunk table's HNSW index (as `ensure_space` creates it)."""
    return f"{table}_hnsw"


def has_vector_index(conn: psycopg.Connection, table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (vector_index(table),)).fetchone()
    return bool(row and row[0])


def drop_vector_index(conn: psycopg.Connection, table: str, *, lock_timeout_ms: int = 1000) -> bool:
    """Drop a chunk table's HNSW index before a bulk load; False (and nothing dropped) when the table's lock
    does not come within `lock_timeout_ms` (a long statement holds it: readers would queue behind us)."""
    try:
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(f"{lock_timeout_ms}ms")))
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(vector_index(table))))
    except psycopg.errors.LockNotAvailable:
        return False
    return True


def build_vector_index(conn: psycopg.Connection, table: str, *, lock_timeout_ms: int | None = None) -> bool:
    """(Re)build a chunk table's HNSW index when it is missing: after a bulk load that dropped it, or when the
    job that dropped it was killed before building it again. Returns whether it was built.

    Until it exists the vector lane scans exactly: the same rows, only slower. The existence check comes
    first because `CREATE INDEX IF NOT EXISTS` takes the table's SHARE lock even when the index exists.

    Args:
        lock_timeout_ms: give up (False) when the table's lock does not come in time — another job is
            loading rows, and that job builds the index itself when its load is done.
    """
    if has_vector_index(conn, table):
        return False
    try:
        with conn.transaction():
            if lock_timeout_ms is not None:
                conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(f"{lock_timeout_ms}ms")))
            _create_vector_index(conn, table)
    except psycopg.errors.LockNotAvailable:
        return False
    return True


def _create_vector_index(conn: psycopg.Connection, table: str) -> None:
    conn.execute(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(sql.Literal(HNSW_BUILD_MEMORY)))
    conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops) "
                         "WITH ({})").format(sql.Identifier(vector_index(table)), sql.Identifier(table),
                                             sql.SQL(HNSW_WITH)))


def _refresh_view(conn: psycopg.Connection) -> None:
    parts = [
        sql.SQL(
            "SELECT id, rag_session_id, generation, layer, path, title, content, metadata_json, span_start, "
            "span_end, blob_sha, embedding::vector AS embedding, {dim} AS embedding_dim FROM {table}"
        ).format(dim=sql.Literal(dim), table=sql.Identifier(chunk_table(dim)))
        for dim in existing_spaces(conn)
    ]
    conn.execute("DROP VIEW IF EXISTS rag_chunks")
    if parts:
        conn.execute(sql.SQL("CREATE VIEW rag_chunks AS ") + sql.SQL(" UNION ALL ").join(parts))
