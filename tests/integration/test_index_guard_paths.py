"""Issue 37 item 2b: the 5000-file guard applies on every path, not only `lotsman index`.

Indexing `/` through the index graph (the server's token holder) ran at 100 % CPU with memory growing
~16 MB/s: only the CLI counted the folder's files first. The guard now lives in `index_repository`
(`allow_large=False` by default), so the index graph, `watch` and hooks refuse too, before the session is
created or any file is read, and the count stops at the limit + 1.
"""

from __future__ import annotations

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
from tests.gitrepo import git
from tests.walkcount import count_walks

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
    seen = count_walks(monkeypatch)

    def job_walk(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise Walked

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


def _small(root: Path, files_: int = 12) -> Path:
    for i in range(files_):
        (root / "docs").mkdir(parents=True, exist_ok=True)
        (root / "docs" / f"page{i}.md").write_text(f"# Page {i}\n\nThe pilot boards at step {i}.\n")
    return root


def _never_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every folder count as huge; returns the list of counts made."""
    counted: list[int] = []
    monkeypatch.setattr(files, "count_candidates", lambda *a, **k: counted.append(1) or 10**6)
    return counted


def test_the_sessions_own_folder_is_not_counted_again(db: Database, tmp_path: Path, name: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A session built from the folder's working tree (its size was accepted then) keeps its incremental runs
    (watch, hooks) without the flag."""
    root = _small(tmp_path / "repo")
    service.index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    counted = _never_counted(monkeypatch)
    (root / "docs" / "page0.md").write_text("# Page 0\n\nChanged.\n")
    report = service.index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    assert counted == [] and report.files_indexed == 1


def test_a_session_without_an_index_does_not_exempt_its_folder(db: Database, big: Path, name: str,
                                                               walks: list[str]) -> None:
    """A session row alone (created by a job that then failed, was cancelled or read a revision) says nothing
    about the folder's size: before, its root_path alone let `lotsman index` of a huge folder through."""
    from stores.sessions import create_session

    with db.connection() as conn:
        create_session(conn, name, "fake", 64, root_path=str(big.resolve()))
    with pytest.raises(TooManyFilesError):
        service.index_repository(db, big, session_name=name, embedder=FakeEmbeddings(), check_unchanged=False)


def _tagged(root: Path) -> Path:
    _small(root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    git(root, "tag", "v1")
    return root


def test_a_revision_above_the_limit_is_refused(db: Database, tmp_path: Path, name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`lotsman index --ref` and the index graph's `ref` indexed any number of files: the guard ran only for a
    working tree. The revision's candidates are counted from `git ls-tree`, before the session is created."""
    repo = _tagged(tmp_path / "repo")
    monkeypatch.setattr(files, "CONFIRM_ABOVE_FILES", 10)  # the revision holds 12 candidates
    with pytest.raises(TooManyFilesError) as refused:
        service.index_repository(db, repo, session_name=name, embedder=FakeEmbeddings(), ref="v1", parse_workers=0)
    text = str(refused.value)
    assert "v1" in text and "more than 10" in text and "\n" not in text
    assert _no_session(db, name)
    report = service.index_repository(db, repo, session_name=name, embedder=FakeEmbeddings(), ref="v1",
                                      parse_workers=0, allow_large=True)
    assert report.files_indexed == 12


def test_a_revisions_session_does_not_exempt_the_working_tree(db: Database, tmp_path: Path, name: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The ref job created the session with the folder as its root: a plain index of that folder then
    skipped the count (`known_root`), whatever the folder held."""
    repo = _tagged(tmp_path / "repo")
    service.index_repository(db, repo, session_name=name, embedder=FakeEmbeddings(), ref="v1", parse_workers=0)
    counted = _never_counted(monkeypatch)
    with pytest.raises(TooManyFilesError):
        service.index_repository(db, repo, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    assert counted == [1]


@pytest.mark.parametrize(("caller", "hint"), [
    ("graph", "allow_large: true"),
    ("watch", "--yes (`lotsman watch"),
    ("hook", "--yes` once"),
])
def test_the_refusal_says_what_the_caller_can_pass(db: Database, big: Path, name: str, walks: list[str],
                                                   monkeypatch: pytest.MonkeyPatch, caller: str, hint: str) -> None:
    """The refusal named `--yes` (`lotsman index`) and `allow_large` (the graph) everywhere: watch has its own
    `--yes`, hooks have none (their log must say to index once by hand)."""
    import argparse
    from contextlib import contextmanager

    import graph.cli_commands as cli_commands
    from graph.cli_hook import _hook_index
    from graph.cli_watch import _watch

    @contextmanager
    def open_deps(settings, production=False):  # type: ignore[no-untyped-def]
        yield GraphDeps(settings=SETTINGS, db=db, embedder=FakeEmbeddings())

    monkeypatch.setattr(cli_commands, "open_deps", open_deps)
    with pytest.raises(TooManyFilesError) as refused:
        if caller == "graph":
            service.index_repository(db, big, session_name=name, embedder=FakeEmbeddings())
        elif caller == "watch":
            _watch(argparse.Namespace(path=str(big), session=name, yes=False), SETTINGS)
        else:
            _hook_index(SETTINGS, big, name)
    text = str(refused.value)
    assert hint in text and name in text or caller == "graph", text
    assert (caller == "graph") == ("allow_large" in text), text
    assert (caller == "hook") == ("lotsman index" in text), text


def test_lotsman_index_counts_the_folder_once(db: Database, pg_url: str, tmp_path: Path, name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI counted before its no-op check and the service again, with another `known_root` expression:
    one guard now (`unchanged.check_source_size`), asked once, the job told so."""
    import argparse

    from graph.cli_index import _index

    root = _small(tmp_path / "repo")
    calls: list[Path] = []
    real = files.count_candidates
    monkeypatch.setattr(files, "count_candidates", lambda root, **k: calls.append(root) or real(root, **k))
    args = argparse.Namespace(path=str(root), session=name, embedder="fake", full=False, rebuild=False, ref=None,
                              yes=False, json=True, verbose=False)
    assert _index(args, Settings(database_url=pg_url, parse_workers=0, embedder="fake")) == 0
    assert len(calls) == 1, calls


def test_lotsman_index_ref_checks_the_name_like_ask() -> None:
    """`--ref` of `ask` went through the shared name check, `index --ref` did not."""
    from graph.cli import build_parser
    from stores.errors import UsageError

    parser = build_parser(plugins=False)
    for bad in ("v1\x1b[2J", "v" * 300):  # a control character, a name past 256 characters
        with pytest.raises(UsageError, match="--ref v1.0") as refused:
            parser.parse_args(["index", ".", "--ref", bad])
        assert refused.value.exit_code == 2
    assert parser.parse_args(["index", ".", "--ref", "v1"]).ref == "v1"
