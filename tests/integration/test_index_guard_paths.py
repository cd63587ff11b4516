"""Issue 37 item 2b: the 5000-file guard applies on every path, not only `lotsman index`.

Indexing `/` through the index graph (the server's token holder) ran at 100 % CPU with memory growing
~16 MB/s: only the CLI counted the folder's files first. The guard now lives in `index_repository`
(`allow_large=False` by default), so the index graph, `watch` and hooks refuse too, before the session is
created or any file is read, and the count stops at the limit + 1.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import stores.indexing.files as files
import stores.indexing.service as service
import stores.indexing.unchanged as unchanged
from graph.deps import GraphDeps
from graph.index_graph import build_index_graph
from graph.settings import Settings
from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.errors import IndexingError
from stores.indexing.files import CONFIRM_ABOVE_FILES, TooManyFilesError
from stores.sessions import delete_session, find_session

DIRS, PER_DIR = 60, 100
"""6000 candidate files in 60 folders: the count must stop in the 51st folder."""
SETTINGS = Settings(parse_workers=0, embedder="fake")


class Walked(Exception):
    """Raised by a stand-in for the job's own walk: the guard let the job through."""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big")
    for d in range(DIRS):
        folder = root / f"d{d:02d}"
        folder.mkdir()
        for i in range(PER_DIR):
            (folder / f"m{i}.py").write_bytes(b"x = 1\n")
    return root


@pytest.fixture
def name(db: Database) -> Iterator[str]:
    made = f"guard-{uuid.uuid4().hex[:8]}"
    yield made
    with db.connection() as conn:
        if find_session(conn, made) is not None:
            delete_session(conn, made)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Folders the count visits (`os.walk` as files.py sees it); the job's own walks raise `Walked`."""
    seen: list[str] = []
    real_walk = os.walk

    def counting_walk(top, *args, **kwargs):  # type: ignore[no-untyped-def]
        for entry in real_walk(top, *args, **kwargs):
            seen.append(entry[0])
            yield entry

    def job_walk(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise Walked

    monkeypatch.setattr(files.os, "walk", counting_walk)
    for module in (service, unchanged):
        monkeypatch.setattr(module, "stat_tree", job_walk)
    monkeypatch.setattr(service, "collect_files", job_walk)
    return seen


def _no_session(db: Database, name: str) -> bool:
    with db.connection() as conn:
        return find_session(conn, name) is None


def _refusal(exc: BaseException, big: Path) -> str:
    text = str(exc)
    assert "\n" not in text and str(big) in text and f"more than {CONFIRM_ABOVE_FILES}" in text, text
    assert "allow_large" in text and "--yes" in text, text
    return text


def test_the_service_refuses_a_huge_folder_before_reading_it(db: Database, big: Path, name: str,
                                                             walks: list[str]) -> None:
    with pytest.raises(TooManyFilesError) as refused:
        service.index_repository(db, big, session_name=name, embedder=FakeEmbeddings())

    _refusal(refused.value, big)
    assert refused.value.exit_code == 6 and isinstance(refused.value, IndexingError)
    # before: no guard here, the job went on to walk and read every file (here: `Walked`)
    assert _no_session(db, name)  # refused before the session was created
    assert len(walks) <= (CONFIRM_ABOVE_FILES // PER_DIR) + 2 < DIRS + 1  # the count stopped early
    print(f"guard: counted in {len(walks)} of {DIRS + 1} folders before refusing")


def test_allow_large_lets_the_job_through(db: Database, big: Path, name: str, walks: list[str]) -> None:
    with pytest.raises(Walked):
        service.index_repository(db, big, session_name=name, embedder=FakeEmbeddings(), allow_large=True)
    assert walks == []  # nothing counted: the caller said it is meant


async def test_the_index_graph_refuses_a_huge_folder(db: Database, big: Path, name: str, walks: list[str]) -> None:
    graph = build_index_graph(GraphDeps(settings=SETTINGS, db=db, embedder=FakeEmbeddings()))

    with pytest.raises(TooManyFilesError) as refused:
        await graph.ainvoke({"path": str(big), "session": name})
    _refusal(refused.value, big)
    assert isinstance(refused.value, ValueError)  # what langgraph-api shows its clients with the message
    assert _no_session(db, name)

    with pytest.raises(Walked):
        await graph.ainvoke({"path": str(big), "session": name, "allow_large": True})


async def test_the_index_graph_checks_allow_large_is_a_boolean(db: Database, big: Path, name: str,
                                                               walks: list[str]) -> None:
    from stores.errors import InvalidInputError

    graph = build_index_graph(GraphDeps(settings=SETTINGS, db=db, embedder=FakeEmbeddings()))
    with pytest.raises(InvalidInputError, match="allow_large"):
        await graph.ainvoke({"path": str(big), "session": name, "allow_large": "yes"})
    assert walks == [] and _no_session(db, name)


def test_watch_and_hooks_refuse_a_huge_folder(db: Database, big: Path, name: str, walks: list[str]) -> None:
    """`lotsman watch` and `lotsman hook run` index through `cli_watch._index_once`."""
    from graph.cli_watch import _index_once

    settings = SETTINGS
    with pytest.raises(TooManyFilesError) as refused:
        _index_once(GraphDeps(settings=settings, db=db, embedder=FakeEmbeddings()), settings, big, name)
    _refusal(refused.value, big)
    assert _no_session(db, name)


def test_the_sessions_own_folder_is_not_counted_again(db: Database, big: Path, name: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A session built with `allow_large` keeps its incremental runs (watch, hooks) without the flag."""
    with db.connection() as conn:
        from stores.sessions import create_session

        create_session(conn, name, "fake", 64, root_path=str(big.resolve()))
    counted: list[int] = []
    monkeypatch.setattr(files, "count_candidates", lambda *a, **k: counted.append(1) or 10**6)
    monkeypatch.setattr(service, "collect_files", lambda *a, **k: (_ for _ in ()).throw(Walked()))
    monkeypatch.setattr(service, "stat_tree", lambda *a, **k: (_ for _ in ()).throw(Walked()))
    with pytest.raises(Walked):
        service.index_repository(db, big, session_name=name, embedder=FakeEmbeddings(), check_unchanged=False)
    assert counted == []
