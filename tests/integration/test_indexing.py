"""Indexing (issue 3): docs layers D0–D5 and code layers C0–C3 in PostgreSQL, snapshot and incremental jobs,
bad input, job rows and `lotsman index`.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from psycopg import sql
from psycopg.rows import dict_row

from stores.database import Database
from stores.embedders import FakeEmbeddings, make_embedder
from stores.errors import IndexingError
from stores.indexing.files import read_source_file
from stores.indexing.service import IndexReport, index_repository, index_snapshot, parse_file
from stores.layers import CODE_LAYERS, DOCS_LAYERS, Layer
from stores.repository import RagRepository
from stores.sessions import RagSession, delete_session, find_session, get_or_create_session, get_session

REPO = Path(__file__).resolve().parents[2]
ALL_LAYERS = {layer.value for layer in (*DOCS_LAYERS, *CODE_LAYERS)}

HEALTH_PY = '''"""A tiny service so the copy of the repository has an HTTP route."""

from fastapi import FastAPI

app = FastAPI()


@app.get("/health")
def health() -> dict:
    """Liveness probe."""
    return {"ok": True}
'''


# --- embedders that let a test see and steer what gets embedded ---------------------------------------------


class CountingEmbeddings(FakeEmbeddings):
    """The fake embedder (same name, same vectors, same cache entries) that records every text it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts.extend(texts)
        return super().embed_documents(texts)

    def reset(self) -> None:
        self.texts, self.calls = [], 0


class BlockingEmbeddings(FakeEmbeddings):
    """Embeds the first batch, then blocks the next call until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.blocked = threading.Event()
        self.release = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == 2:
            self.blocked.set()
            assert self.release.wait(60), "test never released the embedder"
        return super().embed_documents(texts)


class ExplodingEmbeddings(FakeEmbeddings):
    """Embeds the first batch, then fails: an embedder dying in the middle of a job."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls >= 2:
            raise RuntimeError("embedder exploded mid-job")
        return super().embed_documents(texts)


# --- helpers ------------------------------------------------------------------------------------------------


def _session(db: Database, name: str) -> RagSession:
    with db.connection() as conn:
        return get_session(conn, name)


def active_rows(db: Database, name: str, *, layer: str | None = None, path: str | None = None) -> list[dict]:
    """Rows of the session's active generation (what every reader sees)."""
    session = _session(db, name)
    query = sql.SQL(
        "SELECT id, layer, path, title, content, metadata_json, span_start, span_end, blob_sha, "
        "embedding IS NOT NULL AS embedded FROM {} WHERE rag_session_id = %(sid)s AND generation = "
        "(SELECT active_generation FROM rag_sessions WHERE rag_session_id = %(sid)s) "
        "AND (%(layer)s::text IS NULL OR layer = %(layer)s) AND (%(path)s::text IS NULL OR path = %(path)s) "
        "ORDER BY path, layer, span_start"
    ).format(sql.Identifier(session.table))
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, {"sid": session.rag_session_id, "layer": layer, "path": path}).fetchall()


def layer_counts(db: Database, name: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in active_rows(db, name):
        counts[row["layer"]] = counts.get(row["layer"], 0) + 1
    return counts


def jobs_of(db: Database, name: str) -> list[dict]:
    session = _session(db, name)
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT job_id, kind, status, counts, skipped, error, started_at, finished_at "
            "FROM rag_index_jobs WHERE rag_session_id = %s ORDER BY started_at", (session.rag_session_id,),
        ).fetchall()


def drop_session(db: Database, name: str) -> None:
    with db.connection() as conn:
        if find_session(conn, name):
            delete_session(conn, name)


def embed_count(root: Path, rel: str) -> int:
    """How many rows of one file the pipelines mark for embedding (parsed afresh, no DB)."""
    source = read_source_file(root, rel)
    assert not hasattr(source, "reason"), source
    records, _ = parse_file(source)  # type: ignore[arg-type]
    return sum(1 for r in records if r.embed)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def small_corpus(root: Path) -> Path:
    """Two docs and two modules with unique content (no blob-cache hits from other tests)."""
    tag = uuid.uuid4().hex
    write(root / "docs" / "guide.md", (
        f"# Guide {tag}\n\n## Summary\n- Purpose: explain the guide {tag}.\n\n## Install\n\n"
        "1. Download the package.\n2. Run the installer.\n3. Check the version.\n\n"
        "## Usage\n\nCall `run` daily.\n"
    ))
    write(root / "docs" / "api.md", (
        f"# API {tag}\n\n## Endpoints\n\n- `GET /items` lists items.\n- `POST /items` creates one.\n\n"
        "## Errors\n\nThe **ItemError** is raised for bad input.\n"
    ))
    write(root / "pkg" / "core.py", (
        f'"""Core module {tag}."""\n\nimport os\n\n\nclass Engine:\n    """Runs things."""\n\n'
        "    def start(self, speed: int = 1) -> bool:\n        \"\"\"Start.\"\"\"\n"
        "        return bool(os.getpid())\n\n\n"
        "def helper(x: int) -> int:\n    return x + 1\n"
    ))
    write(root / "pkg" / "cli.py", (
        f'"""CLI {tag}."""\n\nimport sys\n\n\ndef main() -> int:\n    return 0\n\n\n'
        'if __name__ == "__main__":\n    sys.exit(main())\n'
    ))
    return root


# --- the repository's own docs + code -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo-copy")
    for name in ("docs", "stores", "nodes", "graph"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    write(root / "svc" / "health.py", HEALTH_PY)
    return root


@pytest.fixture(scope="module")
def repo_index(db: Database, repo_copy: Path) -> Iterator[tuple[str, IndexReport]]:
    name = f"repo-{uuid.uuid4().hex[:8]}"
    report = index_repository(db, repo_copy, session_name=name, embedder=FakeEmbeddings())
    yield name, report
    drop_session(db, name)


def test_repo_every_layer_has_rows(db: Database, repo_index: tuple[str, IndexReport]) -> None:
    name, report = repo_index
    counts = layer_counts(db, name)
    assert set(counts) == ALL_LAYERS, counts
    assert all(n > 0 for n in counts.values()), counts
    assert report.kind == "snapshot" and report.rows_per_layer == counts
    # No skips: the empty package markers (`__init__.py` with no content) are counted, not listed (issue 37).
    assert not report.skipped, report.skipped
    assert report.empty and all(s.path.endswith("__init__.py") for s in report.empty), report.empty
    # Every embedded row got a vector, every other row none.
    session = _session(db, name)
    assert session.embedder == "fake" and session.embedding_dim == 64
    assert report.embedded == sum(1 for r in active_rows(db, name) if r["embedded"]) > 0


def test_repo_frontmatter_doc_catalog_row(db: Database, repo_index, repo_copy: Path) -> None:
    name, _ = repo_index
    rel = "docs/domains/rag_session.md"
    text = (repo_copy / rel).read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    rows = active_rows(db, name, layer=Layer.D1_DOCUMENT_CATALOG.value, path=rel)
    assert len(rows) == 1
    row = rows[0]
    meta = row["metadata_json"]
    assert row["title"] == front["title"]
    assert meta["doc_id"] == front["id"]
    assert meta["doc_type"] == front["doc_type"]
    assert meta["domain"] == front["domain"]
    assert meta["tags"] == front["tags"]
    assert meta["related_code"] == front["related_code"]
    assert (row["span_start"], row["span_end"]) == (1, len(text.splitlines()))
    assert row["embedded"]


def test_repo_purpose_fact_with_exact_span(db: Database, repo_index, repo_copy: Path) -> None:
    name, _ = repo_index
    rel = "docs/domains/rag_session.md"
    lines = (repo_copy / rel).read_text(encoding="utf-8").splitlines()
    line_no = next(i for i, ln in enumerate(lines, 1) if ln.startswith("- Purpose:"))
    expected_object = lines[line_no - 1].removeprefix("- Purpose:").strip()
    facts = [r for r in active_rows(db, name, layer=Layer.D2_FACT_INDEX.value, path=rel)
             if r["metadata_json"].get("predicate") == "Purpose"]
    assert len(facts) == 1, facts
    fact = facts[0]
    assert (fact["span_start"], fact["span_end"]) == (line_no, line_no)
    assert fact["metadata_json"]["object"] == expected_object
    assert expected_object in fact["content"]


def test_repo_symbol_with_signature(db: Database, repo_index, repo_copy: Path) -> None:
    name, _ = repo_index
    rel = "stores/statements.py"
    lines = (repo_copy / rel).read_text(encoding="utf-8").splitlines()
    def_line = next(i for i, ln in enumerate(lines, 1) if ln.startswith("def escape_like("))
    rows = [r for r in active_rows(db, name, layer=Layer.C1_SYMBOL_CATALOG.value, path=rel)
            if r["metadata_json"].get("qname") == "stores.statements.escape_like"]
    assert len(rows) == 1
    meta = rows[0]["metadata_json"]
    assert "def escape_like(value: str) -> str" in meta["signature"]
    assert meta["kind"] == "function" and meta["parent"] == "stores.statements"
    assert rows[0]["span_start"] == def_line
    assert rows[0]["title"] == "stores.statements.escape_like"


def test_repo_http_route_and_main_entrypoints(db: Database, repo_index) -> None:
    name, _ = repo_index
    c3 = active_rows(db, name, layer=Layer.C3_ENTRYPOINTS.value)
    health = [r for r in c3 if r["path"] == "svc/health.py"]
    assert len(health) == 1
    meta = health[0]["metadata_json"]
    assert (meta["entry_type"], meta["route_or_command"], meta["methods"]) == ("http", "/health", ["GET"])
    assert meta["handler"] == "svc.health.health"
    assert health[0]["span_start"] == HEALTH_PY.splitlines().index('@app.get("/health")') + 1
    # The route is also an endpoint fact (D2) for docs-style questions.
    facts = active_rows(db, name, layer=Layer.D2_FACT_INDEX.value, path="svc/health.py")
    assert facts and any("/health" in r["content"] for r in facts)
    # `graph/cli.py` ends with an `if __name__ == "__main__":` block.
    assert any(r["path"] == "graph/cli.py" and r["metadata_json"]["entry_type"] == "main" for r in c3)


# --- a small corpus through the real (USE) embedder ---------------------------------------------------------


def test_real_embedder_small_corpus(db: Database, tmp_path: Path) -> None:
    root = tmp_path / "real"
    for rel in ("docs/domains/rag_session.md", "docs/domains/index_job.md", "stores/statements.py"):
        write(root / rel, (REPO / rel).read_text(encoding="utf-8"))
    embedder = make_embedder("use")
    name = f"use-{uuid.uuid4().hex[:8]}"
    try:
        report = index_repository(db, root, session_name=name, embedder=embedder)
        session = _session(db, name)
        assert (session.embedder, session.embedding_dim, session.table) == ("use", 512, "rag_chunks_d512")
        counts = layer_counts(db, name)
        assert {"D0_DOC_CHUNKS", "D1_DOCUMENT_CATALOG", "D2_FACT_INDEX", "C0_SOURCE_CHUNKS",
                "C1_SYMBOL_CATALOG"} <= set(counts)
        # every row got a vector: embedded now, or reused from the blob cache when an earlier test of the run
        # indexed the same files with the same embedder (test_demo_answer indexes this repository's docs/)
        assert report.embedded + report.vectors_reused == sum(embed_count(root, rel) for rel in
                                                              ("docs/domains/rag_session.md",
                                                               "docs/domains/index_job.md", "stores/statements.py"))
        query = embedder.embed_query("RagSession — сессия индекса, единица изоляции")
        with db.connection() as conn:
            dims = conn.execute(
                "SELECT DISTINCT vector_dims(embedding) FROM rag_chunks_d512 WHERE rag_session_id = %s "
                "AND embedding IS NOT NULL", (session.rag_session_id,)).fetchall()
            top = conn.execute(
                "SELECT path FROM rag_chunks_d512 WHERE rag_session_id = %s AND generation = %s "
                "AND embedding IS NOT NULL ORDER BY embedding <=> %s::vector LIMIT 3",
                (session.rag_session_id, session.active_generation, str(query)),
            ).fetchall()
        assert dims == [(512,)]
        assert "docs/domains/rag_session.md" in [r[0] for r in top], top
    finally:
        drop_session(db, name)


# --- the fastapi-ru corpus ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fastapi_index(db: Database, fastapi_corpus: Path) -> Iterator[str]:
    name = f"fastapi-{uuid.uuid4().hex[:8]}"
    index_repository(db, fastapi_corpus, session_name=name, embedder=FakeEmbeddings())
    yield name
    drop_session(db, name)


@pytest.mark.corpus
def test_fastapi_every_layer_has_rows(db: Database, fastapi_index: str) -> None:
    counts = layer_counts(db, fastapi_index)
    assert set(counts) == ALL_LAYERS, counts
    assert all(n > 0 for n in counts.values()), counts
    paths = RagRepository(db).indexed_paths(_session(db, fastapi_index))
    assert any(p.startswith("docs/ru/docs/") for p in paths) and "fastapi/routing.py" in paths


@pytest.mark.corpus
def test_fastapi_add_api_route_symbol(db: Database, fastapi_index: str, fastapi_corpus: Path) -> None:
    rows = [r for r in active_rows(db, fastapi_index, layer=Layer.C1_SYMBOL_CATALOG.value,
                                   path="fastapi/routing.py")
            if r["metadata_json"].get("qname") == "fastapi.routing.APIRouter.add_api_route"]
    assert len(rows) == 1
    meta = rows[0]["metadata_json"]
    assert meta["signature"].startswith("def add_api_route(self, path: str, endpoint: Callable")
    assert meta["kind"] == "method"  # defined inside class APIRouter
    lines = (fastapi_corpus / "fastapi/routing.py").read_text(encoding="utf-8").splitlines()
    assert "def add_api_route(" in "\n".join(lines[rows[0]["span_start"] - 1: rows[0]["span_start"] + 3])


@pytest.mark.corpus
def test_fastapi_main_entrypoint(db: Database, fastapi_index: str) -> None:
    rows = active_rows(db, fastapi_index, layer=Layer.C3_ENTRYPOINTS.value, path="fastapi/__main__.py")
    assert [r["metadata_json"]["route_or_command"] for r in rows] == ["python -m fastapi"]
    assert rows[0]["metadata_json"]["entry_type"] == "main"
    assert rows[0]["metadata_json"]["handler"] == "fastapi.cli.main"


@pytest.mark.corpus
def test_fastapi_doc_page_catalog_row(db: Database, fastapi_index: str, fastapi_corpus: Path) -> None:
    rel = "docs/ru/docs/tutorial/cors.md"
    heading = (fastapi_corpus / rel).read_text(encoding="utf-8").splitlines()[0]
    rows = active_rows(db, fastapi_index, layer=Layer.D1_DOCUMENT_CATALOG.value, path=rel)
    assert len(rows) == 1
    title = rows[0]["title"]
    assert title.startswith("CORS"), title
    assert "{ #" not in title  # the mkdocs anchor is not part of the title
    assert title in heading
    assert rows[0]["metadata_json"]["has_frontmatter"] is False


# --- incremental re-indexing --------------------------------------------------------------------------------


def test_incremental_reindex_embeds_only_what_changed(db: Database, tmp_path: Path,
                                                      session_name: str) -> None:
    root = small_corpus(tmp_path / "inc")
    emb = CountingEmbeddings()
    try:
        first = index_repository(db, root, session_name=session_name, embedder=emb)
        files = ("docs/api.md", "docs/guide.md", "pkg/cli.py", "pkg/core.py")
        assert first.kind == "snapshot" and first.parsed == 4
        assert first.embedded == len(emb.texts) == sum(embed_count(root, f) for f in files)
        before = {r["id"]: r for r in active_rows(db, session_name)}

        # Unchanged corpus: nothing parsed, nothing embedded, a `changes` job.
        emb.reset()
        again = index_repository(db, root, session_name=session_name, embedder=emb)
        assert (again.kind, again.parsed, again.embedded, again.rows_written) == ("changes", 0, 0, 0)
        assert emb.texts == [] and again.files_unchanged == 4
        assert set(before) == {r["id"] for r in active_rows(db, session_name)}
        assert [(j["kind"], j["status"]) for j in jobs_of(db, session_name)] == [("snapshot", "done"),
                                                                                ("changes", "done")]

        # `touch` without a content change: still nothing.
        guide = root / "docs/guide.md"
        future = time.time() + 10
        os.utime(guide, (future, future))
        emb.reset()
        touched = index_repository(db, root, session_name=session_name, embedder=emb)
        assert (touched.parsed, touched.embedded, emb.texts) == (0, 0, [])

        # One file's content changes: only its rows are re-parsed, re-embedded and rewritten.
        upgrade = f"\n## Upgrade\n\nRun upgrade {uuid.uuid4().hex}.\n"
        guide.write_text(guide.read_text(encoding="utf-8") + upgrade, encoding="utf-8")
        expected = embed_count(root, "docs/guide.md")
        emb.reset()
        changed = index_repository(db, root, session_name=session_name, embedder=emb)
        assert (changed.parsed, changed.embedded, changed.files_indexed) == (1, expected, 1)
        assert len(emb.texts) == expected
        after = active_rows(db, session_name)
        untouched_before = {i for i, r in before.items() if r["path"] != "docs/guide.md"}
        untouched_after = {r["id"] for r in after if r["path"] != "docs/guide.md"}
        assert untouched_after == untouched_before  # other files' rows were not rewritten
        guide_rows = [r for r in after if r["path"] == "docs/guide.md"]
        assert any("Upgrade" in r["content"] for r in guide_rows)
        assert sum(r["embedded"] for r in guide_rows) == expected
        assert not {r["id"] for r in guide_rows} & set(before)

        # A deleted file loses its rows; nothing is embedded.
        (root / "pkg/cli.py").unlink()
        emb.reset()
        deleted = index_repository(db, root, session_name=session_name, embedder=emb)
        assert (deleted.files_deleted, deleted.embedded, emb.texts) == (1, 0, [])
        assert active_rows(db, session_name, path="pkg/cli.py") == []
        assert {r["path"] for r in active_rows(db, session_name)} == {"docs/api.md", "docs/guide.md",
                                                                      "pkg/core.py"}
        jobs = jobs_of(db, session_name)
        assert [j["kind"] for j in jobs] == ["snapshot", "changes", "changes", "changes", "changes"]
        assert all(j["status"] == "done" for j in jobs)

        # A forced snapshot of the same content reuses the blob cache: nothing parsed or embedded.
        emb.reset()
        full = index_repository(db, root, session_name=session_name, embedder=emb, incremental=False)
        assert (full.kind, full.parsed, full.embedded, full.cache_hits) == ("snapshot", 0, 0, 3)
        assert emb.texts == []
        assert layer_counts(db, session_name) == full.rows_per_layer
    finally:
        drop_session(db, session_name)


# --- snapshot atomicity -------------------------------------------------------------------------------------


def _new_corpus(root: Path, n: int = 4) -> Path:
    tag = uuid.uuid4().hex
    for i in range(n):
        write(root / f"new/page{i}.md", (
            f"# New page {i} {tag}\n\n" + "".join(
                f"## Section {j}\n\nText of section {j} on page {i} ({tag}).\n\n" for j in range(4))
        ))
    return root


def _wait_for_copy(db: Database, table: str, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with db.connection() as conn:
            n = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s",
                             (f'COPY "{table}"%',)).fetchone()[0]
        if n:
            return True
        time.sleep(0.05)
    return False


def test_snapshot_is_atomic_for_concurrent_readers(db: Database, tmp_path: Path, session_name: str) -> None:
    old_root = small_corpus(tmp_path / "old")
    new_root = _new_corpus(tmp_path / "new")
    repo = RagRepository(db)
    try:
        index_repository(db, old_root, session_name=session_name, embedder=FakeEmbeddings())
        old_paths = repo.indexed_paths(_session(db, session_name))
        old_ids = {r["id"] for r in active_rows(db, session_name)}
        assert old_paths == ["docs/api.md", "docs/guide.md", "pkg/cli.py", "pkg/core.py"]

        blocking = BlockingEmbeddings()
        outcome: dict[str, Any] = {}
        # One batch is exactly the first file's rows: it is written (uncommitted) before the job blocks.
        batch = embed_count(new_root, "new/page0.md")

        def job() -> None:
            try:
                outcome["report"] = index_snapshot(db, _session(db, session_name), new_root, blocking,
                                                   batch_size=batch)
            except BaseException as exc:  # pragma: no cover - reported below
                outcome["error"] = exc

        thread = threading.Thread(target=job, daemon=True)
        thread.start()
        try:
            assert blocking.blocked.wait(30), "the snapshot job never reached its second embedding batch"
            # The job is streaming the new generation into the table (COPY waiting for the blocked batch).
            assert _wait_for_copy(db, _session(db, session_name).table), "the job is not writing rows"
            # Mid-job: readers see the old index, completely.
            session = _session(db, session_name)
            assert repo.indexed_paths(session) == old_paths
            assert {r["id"] for r in active_rows(db, session_name)} == old_ids
            assert jobs_of(db, session_name)[-1]["status"] == "running"
        finally:
            blocking.release.set()
            thread.join(60)
        assert not thread.is_alive()
        assert "error" not in outcome, outcome.get("error")

        new_paths = repo.indexed_paths(_session(db, session_name))
        assert new_paths == [f"new/page{i}.md" for i in range(4)]
        assert not {r["id"] for r in active_rows(db, session_name)} & old_ids
        session = _session(db, session_name)
        with db.connection() as conn:  # the old generation is gone, not merely hidden
            other = conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND generation <> %s").format(
                    sql.Identifier(session.table)), (session.rag_session_id, session.active_generation),
            ).fetchone()[0]
        assert other == 0
        assert jobs_of(db, session_name)[-1]["status"] == "done"
    finally:
        drop_session(db, session_name)


def test_failing_embedder_leaves_old_index_and_a_failed_job(db: Database, tmp_path: Path,
                                                            session_name: str) -> None:
    old_root = small_corpus(tmp_path / "old")
    new_root = _new_corpus(tmp_path / "new")
    try:
        index_repository(db, old_root, session_name=session_name, embedder=FakeEmbeddings())
        session = _session(db, session_name)
        old = {r["id"]: (r["path"], r["layer"]) for r in active_rows(db, session_name)}

        with pytest.raises(RuntimeError, match="exploded"):
            index_snapshot(db, session, new_root, ExplodingEmbeddings(), batch_size=4)

        assert {r["id"]: (r["path"], r["layer"]) for r in active_rows(db, session_name)} == old
        assert _session(db, session_name).active_generation == session.active_generation
        with db.connection() as conn:  # no half-built generation left behind
            leftovers = conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE rag_session_id = %s AND generation <> %s").format(
                    sql.Identifier(session.table)), (session.rag_session_id, session.active_generation),
            ).fetchone()[0]
        assert leftovers == 0
        failed = jobs_of(db, session_name)[-1]
        assert (failed["kind"], failed["status"]) == ("snapshot", "failed")
        assert "RuntimeError" in failed["error"] and "exploded mid-job" in failed["error"]
        assert failed["finished_at"] is not None

        # The session is not left locked: the next job runs.
        report = index_snapshot(db, _session(db, session_name), new_root, FakeEmbeddings(), batch_size=4)
        paths = RagRepository(db).indexed_paths(_session(db, session_name))
        assert paths == [f"new/page{i}.md" for i in range(4)]
        assert report.kind == "snapshot" and jobs_of(db, session_name)[-1]["status"] == "done"
    finally:
        drop_session(db, session_name)


# --- bad input ----------------------------------------------------------------------------------------------


def bad_corpus(root: Path, outside: Path) -> dict[str, str]:
    """Good files plus one of each kind of bad input; returns path → expected reason pattern."""
    tag = uuid.uuid4().hex
    write(root / "good.md", f"# Good\n\n## Part\n\nGood text {tag}.\n")
    write(root / "good.py", f'"""Good module {tag}."""\n\n\ndef ok() -> int:\n    return 1\n')
    write(root / "broken_frontmatter.md",
          f"---\ntitle: [unclosed\nid: : :\n---\n# Broken frontmatter\n\nBody text {tag} survives.\n")
    write(root / "binary.md", b"# Looks like markdown\n\x00\x01\x02\x00binary")
    write(root / "latin1.md", "# Caf\u00e9\n\nna\u00efve\n".encode("latin-1"))
    write(root / "empty.md", "")
    write(root / "huge.md", "# Huge\n\n" + "word " * 2000)
    write(root / "broken.py", "def broken(:\n    return 1\n")
    write(outside / "secret.md", "# Outside the root\n\nMust not be indexed.\n")
    write(outside / "sub" / "other.md", "# Also outside\n")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "leakdir").symlink_to(outside / "sub", target_is_directory=True)
    return {
        "binary.md": r"binary",
        "latin1.md": r"invalid UTF-8",
        "empty.md": r"empty",
        "huge.md": r"too large: \d+ bytes > limit 4000",
        "broken.py": r"syntax error at line 1",
        "leak.md": r"symlink points outside the root",
        "leakdir": r"symlink points outside the root",
    }


def test_bad_input_is_skipped_with_reasons_while_the_rest_is_indexed(db: Database, tmp_path: Path,
                                                                     session_name: str) -> None:
    root, outside = tmp_path / "bad", tmp_path / "outside"
    expected = bad_corpus(root, outside)
    try:
        report = index_repository(db, root, session_name=session_name, embedder=FakeEmbeddings(),
                                  max_bytes=4000)
        reasons = {s.path: s.reason for s in report.skipped}
        assert set(reasons) == set(expected), reasons
        for path, pattern in expected.items():
            assert re.search(pattern, reasons[path]), (path, reasons[path])

        paths = {r["path"] for r in active_rows(db, session_name)}
        assert paths == {"good.md", "good.py", "broken_frontmatter.md"}
        assert not any("Outside the root" in r["content"] for r in active_rows(db, session_name))
        # Broken frontmatter: indexed from its body, with a warning.
        broken = "broken_frontmatter.md"
        catalog = active_rows(db, session_name, layer=Layer.D1_DOCUMENT_CATALOG.value, path=broken)
        assert catalog and catalog[0]["title"] == "Broken frontmatter"
        assert any("survives" in r["content"] for r in active_rows(db, session_name, path=broken))
        assert any(w.startswith("broken_frontmatter.md:") and "frontmatter" in w for w in report.warnings)
        # The job row keeps the skips too.
        job = jobs_of(db, session_name)[-1]
        assert {s["path"]: s["reason"] for s in job["skipped"]} == reasons

        # Re-indexing: the same skips, and nothing already indexed is lost.
        rows_before = {r["id"] for r in active_rows(db, session_name)}
        again = index_repository(db, root, session_name=session_name, embedder=FakeEmbeddings(),
                                 max_bytes=4000)
        assert {s.path for s in again.skipped} == set(expected)
        assert again.embedded == 0
        assert {r["id"] for r in active_rows(db, session_name)} == rows_before
    finally:
        drop_session(db, session_name)


def test_missing_or_file_path_is_a_clear_error(db: Database, tmp_path: Path, session_name: str,
                                                lotsman) -> None:
    with pytest.raises(IndexingError, match="path not found"):
        index_repository(db, tmp_path / "missing", session_name=session_name, embedder=FakeEmbeddings())
    a_file = write(tmp_path / "file.md", "# A file\n")
    with pytest.raises(IndexingError, match="not a directory"):
        index_repository(db, a_file, session_name=session_name, embedder=FakeEmbeddings())
    with db.connection() as conn:
        assert find_session(conn, session_name) is None  # nothing was created

    proc = lotsman("index", str(tmp_path / "missing"), "--session", session_name, "--embedder", "fake")
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == IndexingError.exit_code, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: path not found"), proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


# --- job rows -----------------------------------------------------------------------------------------------


def test_job_rows_have_kind_status_counts_and_finish_time(db: Database, tmp_path: Path,
                                                          session_name: str) -> None:
    root = small_corpus(tmp_path / "jobs")
    write(root / "binary.md", b"\x00\x01")
    try:
        first = index_repository(db, root, session_name=session_name, embedder=FakeEmbeddings())
        (root / "pkg/cli.py").unlink()
        second = index_repository(db, root, session_name=session_name, embedder=FakeEmbeddings())
        jobs = jobs_of(db, session_name)
        assert [j["job_id"] for j in jobs] == [first.job_id, second.job_id]
        snap, changes = jobs
        assert (snap["kind"], snap["status"], snap["error"]) == ("snapshot", "done", None)
        assert (changes["kind"], changes["status"], changes["error"]) == ("changes", "done", None)
        for job in jobs:
            assert job["finished_at"] is not None and job["finished_at"] >= job["started_at"]
        assert snap["counts"]["rows_written"] == first.rows_written == sum(first.rows_per_layer.values())
        assert snap["counts"]["rows_per_layer"] == first.rows_per_layer
        assert snap["counts"]["embedded"] == first.embedded > 0
        assert snap["counts"]["files_indexed"] == 4
        assert snap["skipped"] == [{"path": "binary.md", "reason": "binary file (NUL byte)"}]
        assert changes["counts"]["files_deleted"] == 1 and changes["counts"]["embedded"] == 0
    finally:
        drop_session(db, session_name)


# --- `lotsman index` ----------------------------------------------------------------------------------------


def test_cli_index_prints_layer_table_and_skips(db: Database, lotsman, tmp_path: Path,
                                                session_name: str) -> None:
    root = small_corpus(tmp_path / "cli")
    write(root / "svc" / "health.py", HEALTH_PY)
    write(root / "binary.md", b"# bin\x00\x00")
    write(root / "broken.py", "class (:\n")
    try:
        proc = lotsman("index", str(root), "--session", session_name, "--embedder", "fake")
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        assert f"session '{session_name}' (snapshot, embedder fake)" in out
        table = dict(re.findall(r"^([DC]\d_[A-Z_]+)\s+(\d+)\s*$", out, flags=re.M))
        assert {k: int(v) for k, v in table.items()} == layer_counts(db, session_name)
        assert {"D0_DOC_CHUNKS", "D1_DOCUMENT_CATALOG", "D2_FACT_INDEX", "C0_SOURCE_CHUNKS",
                "C1_SYMBOL_CATALOG", "C2_DEPENDENCY_GRAPH", "C3_ENTRYPOINTS"} <= set(table)
        assert "skipped binary.md: binary file (NUL byte)" in out
        assert re.search(r"^skipped broken\.py: syntax error at line 1", out, flags=re.M)

        again = lotsman("index", str(root), "--session", session_name, "--embedder", "fake")
        assert again.returncode == 0, again.stderr
        assert f"session '{session_name}' (changes, embedder fake)" in again.stdout
        assert "embedded 0 rows" in again.stdout and "parsed 0" in again.stdout
        assert "skipped binary.md: binary file (NUL byte)" in again.stdout

        # The session's recorded embedder is the default when --embedder is omitted.
        third = lotsman("index", str(root), "--session", session_name)
        assert third.returncode == 0, third.stderr
        assert "embedder fake" in third.stdout
    finally:
        drop_session(db, session_name)


def test_get_or_create_session_checks_the_embedder(db: Database, session_name: str) -> None:
    from stores.errors import EmbedderMismatchError

    try:
        with db.connection() as conn:
            created = get_or_create_session(conn, session_name, "fake", 64)
            assert get_or_create_session(conn, session_name, "fake", 64) == created
            with pytest.raises(EmbedderMismatchError, match="re-index"):
                get_or_create_session(conn, session_name, "use", 512)
    finally:
        drop_session(db, session_name)


def test_a_file_that_breaks_keeps_its_last_good_rows(db: Database, tmp_path: Path) -> None:
    """SPEC §8: bad input loses nothing already indexed — a syntax error mid-edit is reported, not a wipe."""
    root = tmp_path / "repo"
    write(root / "pkg" / "mod.py", "def answer() -> int:\n    return 42\n")
    write(root / "docs" / "a.md", "# A\n\nSome text.\n")
    name = f"broken-{uuid.uuid4().hex[:8]}"
    emb = FakeEmbeddings()
    try:
        index_repository(db, root, session_name=name, embedder=emb)
        before = {r["id"] for r in active_rows(db, name, path="pkg/mod.py")}
        assert before
        write(root / "pkg" / "mod.py", "def answer( -> int:\n")
        report = index_repository(db, root, session_name=name, embedder=emb)
        assert [s.path for s in report.skipped] == ["pkg/mod.py"]
        assert "syntax error" in report.skipped[0].reason
        assert {r["id"] for r in active_rows(db, name, path="pkg/mod.py")} == before
    finally:
        drop_session(db, name)


def test_a_file_that_turns_binary_keeps_its_last_good_rows(db: Database, tmp_path: Path) -> None:
    """SPEC §8: a file still in the tree but now skipped is not treated as deleted."""
    root = tmp_path / "repo"
    write(root / "docs" / "a.md", "# A\n\nSome text.\n")
    write(root / "docs" / "b.md", "# B\n\nOther text.\n")
    name = f"binary-{uuid.uuid4().hex[:8]}"
    emb = FakeEmbeddings()
    try:
        index_repository(db, root, session_name=name, embedder=emb)
        before = {r["id"] for r in active_rows(db, name, path="docs/a.md")}
        write(root / "docs" / "a.md", b"\x00\x01binary now")
        report = index_repository(db, root, session_name=name, embedder=emb)
        assert any(s.path == "docs/a.md" for s in report.skipped) and report.files_deleted == 0
        assert {r["id"] for r in active_rows(db, name, path="docs/a.md")} == before
    finally:
        drop_session(db, name)


def test_every_index_job_stores_the_lexical_stoplist(db: Database, tmp_path: Path) -> None:
    """The stoplist is computed by the job, so a session's first question does not pay for it."""
    root = tmp_path / "repo"
    for i in range(3):
        write(root / "docs" / f"d{i}.md", f"# Doc {i}\n\nCommon words here, topic{i}.\n")
    name = f"stop-{uuid.uuid4().hex[:8]}"
    try:
        index_repository(db, root, session_name=name, embedder=FakeEmbeddings())
        with db.connection() as conn:
            assert get_session(conn, name).stop_lexemes == []  # too few files for shares to mean anything
    finally:
        drop_session(db, name)


# --- issue 14, item 8: warnings survive the blob cache -------------------------------------------------
def _broken_frontmatter_corpus(root: Path) -> Path:
    tag = uuid.uuid4().hex  # unique content: the first index of this test parses it
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "fm.md").write_text(f"---\ntitle: [unclosed\n---\n# Заметка {tag}\n\nТекст.\n")
    return root


def test_frontmatter_warnings_are_reported_on_a_cache_hit(db: Database, tmp_path: Path) -> None:
    root = _broken_frontmatter_corpus(tmp_path)
    first = index_repository(db, root, session_name=f"fm-a-{uuid.uuid4().hex[:6]}", embedder=FakeEmbeddings())
    second = index_repository(db, root, session_name=f"fm-b-{uuid.uuid4().hex[:6]}", embedder=FakeEmbeddings())

    assert (first.parsed, first.cache_hits) == (1, 0)
    assert (second.parsed, second.cache_hits) == (0, 1), "the second session must come from the cache"
    assert first.warnings and all(w.startswith("docs/fm.md: ") for w in first.warnings)
    assert second.warnings == first.warnings


def test_cache_entries_from_before_v6_still_report_their_warnings(db: Database, tmp_path: Path) -> None:
    root = _broken_frontmatter_corpus(tmp_path)
    first = index_repository(db, root, session_name=f"fm-c-{uuid.uuid4().hex[:6]}", embedder=FakeEmbeddings())
    with db.connection() as conn:  # what an entry written by an older Lotsman looks like
        conn.execute("UPDATE rag_blob_cache SET warnings = NULL WHERE path = 'docs/fm.md'")

    second = index_repository(db, root, session_name=f"fm-d-{uuid.uuid4().hex[:6]}", embedder=FakeEmbeddings())

    assert second.cache_hits == 1 and second.embedded == 0, "re-parsed for warnings, vectors from the cache"
    assert second.warnings == first.warnings


class CountingExplodingEmbeddings(FakeEmbeddings):
    """Embeds `good_calls` batches, then fails (a job killed half-way); counts the texts it embedded."""

    def __init__(self, good_calls: int | None = None) -> None:
        super().__init__()
        self.calls, self.texts, self.good_calls = 0, 0, good_calls

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.good_calls is not None and self.calls > self.good_calls:
            raise RuntimeError("killed half-way")
        self.texts += len(texts)
        return super().embed_documents(texts)


def test_a_job_that_dies_half_way_leaves_its_embeddings_in_the_cache(db: Database, tmp_path: Path,
                                                                       session_name: str, monkeypatch) -> None:
    from stores.indexing import service

    monkeypatch.setattr(service, "CACHE_FLUSH_FILES", 1)  # commit every finished file
    tag = uuid.uuid4().hex
    for i in range(8):
        (tmp_path / f"page{i}.md").write_text(
            f"# Page {i} {tag}\n\n## Part one\n\nText {i} about topic {tag}.\n\n## Part two\n\nMore text {i}.\n",
            encoding="utf-8")
    try:
        with pytest.raises(RuntimeError, match="killed half-way"):
            index_repository(db, tmp_path, session_name=session_name, embedder=CountingExplodingEmbeddings(4),
                             batch_size=2)
        with db.connection() as conn:
            cached = conn.execute("SELECT count(*) FROM rag_blob_cache WHERE records::text LIKE %s",
                                  (f"%{tag}%",)).fetchone()[0]
        assert cached >= 1, "files finished before the failure are in the blob cache"

        resumed_embedder = CountingExplodingEmbeddings()
        resumed = index_repository(db, tmp_path, session_name=session_name, embedder=resumed_embedder, batch_size=2)
        total = sum(embed_count(tmp_path, f"page{i}.md") for i in range(8))
        assert resumed.cache_hits == cached
        assert 0 < resumed_embedder.texts < total, "only the files the failed job did not finish are embedded"
        assert resumed.rows_written > 0 and resumed.kind == "snapshot"
    finally:
        drop_session(db, session_name)
