"""Keeping an index fresh (issue 26.2) and the stored generation artifacts (26.4), on the real database.

`lotsman watch` and the git hooks run as the installed CLI in subprocesses; an index job held in the middle
of its write shows that a question asked meanwhile is answered from the previous rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from graph.builder import build_graph
from graph.context import Context
from graph.deps import GraphDeps
from graph.settings import Settings
from stores.artifacts import NAMES, store_generation_artifacts
from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.indexing.service import index_repository
from stores.repository import RagRepository
from stores.sessions import RagSession, delete_session, find_session, get_session
from tests.integration.conftest import LOTSMAN, ROOT, cli_env, held_index_job, run_lotsman

QUESTION = "Какой код доступа к складу?"
SECRET = "ZEBRA-4471"
DEADLINE_S = 180


def write_corpus(root: Path) -> None:
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "docs" / "sklad.md").write_text("# Склад\n\nСклад открыт с девяти утра.\n", encoding="utf-8")
    (root / "docs" / "dostavka.md").write_text("# Доставка\n\nДоставка занимает два дня.\n", encoding="utf-8")
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "store.py").write_text('def open_store():\n    """Открыть склад."""\n', encoding="utf-8")


def add_secret(root: Path) -> None:
    with (root / "docs" / "sklad.md").open("a", encoding="utf-8") as f:
        f.write(f"\nКод доступа к складу — {SECRET}.\n")


def ask_cli(env: dict[str, str], session: str) -> dict:
    done = run_lotsman("ask", QUESTION, "--session", session, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def cleanup(db: Database) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        with db.connection() as conn:
            if find_session(conn, name) is not None:
                delete_session(conn, name)


class Lines:
    """A subprocess's stdout read on a thread, so a test can wait for a line without blocking forever."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        stream = proc.stdout
        threading.Thread(target=lambda: [self._queue.put(line) for line in stream], daemon=True).start()

    def wait_for(self, prefix: str, after: int = 0) -> str:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            found = [line for line in self.seen[after:] if line.startswith(prefix)]
            if found:
                return found[0]
            try:
                self.seen.append(self._queue.get(timeout=0.5))
            except queue.Empty:
                continue
        raise AssertionError(f"no line starting {prefix!r}; got {self.seen}")


def test_watch_makes_an_edit_answerable_and_ctrl_c_stops_it(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                           session_name: str, cleanup: list[str]) -> None:
    cleanup.append(session_name)
    write_corpus(tmp_path)
    env = cli_env(pg_data_dir, LOTSMAN_WATCH_DEBOUNCE_MS="200")
    proc = subprocess.Popen([str(LOTSMAN), "watch", str(tmp_path), "--session", session_name], text=True, env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = Lines(proc)
        lines.wait_for("watching ")
        assert SECRET not in ask_cli(env, session_name)["answer"]
        mark = len(lines.seen)
        add_secret(tmp_path)
        assert lines.wait_for("changed: ", mark) == "changed: docs/sklad.md (modified)\n"
        assert lines.wait_for("re-indexed ", mark).startswith(f"re-indexed session '{session_name}'")
        out = ask_cli(env, session_name)
        assert SECRET in out["answer"], out["answer"]
        assert out["citations"][0]["path"] == "docs/sklad.md"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        lines.wait_for("stopped watching", mark)
    finally:
        if proc.poll() is None:
            proc.kill()


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True, env=env)


def test_a_commit_runs_the_hook_and_the_committed_change_is_indexed(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                                    session_name: str, cleanup: list[str]) -> None:
    cleanup.append(session_name)
    repo = tmp_path / "repo"
    write_corpus(repo)
    env = cli_env(pg_data_dir)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    own = "#!/bin/sh\necho \"own hook ran\" >> \"$(git rev-parse --git-dir)/own.log\"\nexit 0\n"
    (repo / ".git" / "hooks" / "post-commit").write_text(own, encoding="utf-8")
    (repo / ".git" / "hooks" / "post-commit").chmod(0o755)
    assert run_lotsman("index", str(repo), "--session", session_name, env=env).returncode == 0

    for _ in range(2):  # installing twice changes nothing
        installed = run_lotsman("hook", "install", str(repo), "--session", session_name, env=env)
        assert installed.returncode == 0, installed.stderr
    hook = (repo / ".git" / "hooks" / "post-commit").read_text(encoding="utf-8")
    assert hook.count("lotsman hook run") == 1 and "own hook ran" in hook
    assert all((repo / ".git" / "hooks" / name).stat().st_mode & 0o111 for name in ("post-merge", "post-checkout"))

    add_secret(repo)
    _git(repo, "commit", "-q", "-am", "the code", env=env)  # returns at once: the job runs in the background
    log = repo / ".git" / "lotsman-index.log"
    deadline = time.monotonic() + DEADLINE_S
    while not (log.exists() and "re-indexed" in log.read_text(encoding="utf-8")):
        assert time.monotonic() < deadline, log.read_text(encoding="utf-8") if log.exists() else "no hook log"
        time.sleep(0.2)
    assert "1 file indexed" in log.read_text(encoding="utf-8")
    assert (repo / ".git" / "own.log").read_text(encoding="utf-8") == "own hook ran\n"
    assert SECRET in ask_cli(env, session_name)["answer"]

    removed = run_lotsman("hook", "uninstall", str(repo), env=env)
    assert removed.returncode == 0, removed.stderr
    assert (repo / ".git" / "hooks" / "post-commit").read_text(encoding="utf-8") == own
    assert not (repo / ".git" / "hooks" / "post-merge").exists()


def test_bad_input_is_one_line_and_changes_nothing(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                   session_name: str) -> None:
    env = cli_env(pg_data_dir)
    plain = tmp_path / "plain"
    write_corpus(plain)
    before = sorted(p.relative_to(plain) for p in plain.rglob("*"))
    for args in (("watch", str(tmp_path / "missing"), "--session", session_name),
                 ("watch", str(plain / "docs" / "sklad.md"), "--session", session_name),
                 ("hook", "install", str(plain), "--session", session_name),
                 ("hook", "install", str(tmp_path / "missing"), "--session", session_name),
                 ("hook", "uninstall", str(plain))):
        done = run_lotsman(*args, env=env)
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), (args, done.stderr)
    assert sorted(p.relative_to(plain) for p in plain.rglob("*")) == before
    with db.connection() as conn:
        assert find_session(conn, session_name) is None


def _answer(db: Database, session: str) -> str:
    deps = GraphDeps(settings=Settings(), db=db, embedder=FakeEmbeddings())
    graph = build_graph(deps)
    try:
        out = asyncio.run(graph.ainvoke({"messages": [HumanMessage(QUESTION)]},
                                        context=Context(rag_session_id=session, use_llm=False)))
    finally:
        deps.lane_pool().shutdown(wait=True)
    return str(out["answer"])


def test_a_question_during_a_re_index_reads_the_previous_rows(db: Database, tmp_path: Path, session_name: str,
                                                              cleanup: list[str]) -> None:
    cleanup.append(session_name)
    write_corpus(tmp_path)
    index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings(), parse_workers=0)
    add_secret(tmp_path)
    with held_index_job(db, tmp_path, session_name) as worker:
        during = _answer(db, session_name)  # answered while the job is held: nothing waits for it
        assert worker.is_alive()
        assert "Склад открыт" in during and SECRET not in during
    assert SECRET in _answer(db, session_name)


def test_a_running_process_sees_a_changes_job(db: Database, tmp_path: Path, session_name: str,
                                              cleanup: list[str]) -> None:
    """A changes job keeps the generation number; the bundle (file list, aliases) must still be renewed."""
    cleanup.append(session_name)
    write_corpus(tmp_path)
    index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings(), parse_workers=0)
    deps = GraphDeps(settings=Settings(), db=db, embedder=FakeEmbeddings())
    try:
        first = deps.bundle(session_name)
        assert first.adapter.layout is not None and "docs/vozvrat.md" not in first.adapter.layout.paths
        (tmp_path / "docs" / "vozvrat.md").write_text("# Возврат товара\n\nВозврат в течение 14 дней.\n",
                                                      encoding="utf-8")
        index_repository(db, tmp_path, session_name=session_name, embedder=FakeEmbeddings(), parse_workers=0)
        second = deps.bundle(session_name)
        assert second.session.active_generation == first.session.active_generation
        assert second.adapter.layout is not None and "docs/vozvrat.md" in second.adapter.layout.paths
        assert "возврат товара" in second.router.aliases.entries
    finally:
        deps.lane_pool().shutdown(wait=True)


def _session_without_artifacts(db: Database, root: Path, name: str) -> tuple[RagSession, GraphDeps]:
    """A session indexed from `write_corpus` whose generation artifacts are gone (as for a session older than
    schema v9), and graph deps to ask it."""
    write_corpus(root)
    index_repository(db, root, session_name=name, embedder=FakeEmbeddings(), parse_workers=0)
    with db.connection() as conn:
        session = get_session(conn, name)
        conn.execute("DELETE FROM rag_generation_artifacts WHERE rag_session_id = %s", (session.rag_session_id,))
    return session, GraphDeps(settings=Settings(), db=db, embedder=FakeEmbeddings())


def test_artifacts_describe_the_rows_and_are_built_when_missing(db: Database, tmp_path: Path, session_name: str,
                                                                cleanup: list[str]) -> None:
    cleanup.append(session_name)
    session, deps = _session_without_artifacts(db, tmp_path, session_name)
    try:
        bundle = deps.bundle(session_name)  # an old session's first question: built from the rows and stored
    finally:
        deps.lane_pool().shutdown(wait=True)
    repo = RagRepository(db)
    assert bundle.adapter.layout is not None
    assert sorted(bundle.adapter.layout.paths) == repo.indexed_paths(session)
    assert bundle.symbols == frozenset(repo.symbol_names(session)) and "open_store" in bundle.symbols
    assert bundle.adapter.present_layers == repo.present_layers(session)
    with db.connection() as conn:
        stored = {r[0] for r in conn.execute("SELECT name FROM rag_generation_artifacts WHERE rag_session_id = %s "
                                             "AND generation = %s", (session.rag_session_id,
                                                                     session.active_generation)).fetchall()}
        assert stored == set(NAMES)
        store_generation_artifacts(conn, session.rag_session_id, session.active_generation)  # an upsert


def test_a_reader_building_artifacts_never_waits_for_a_job_storing_them(db: Database, tmp_path: Path,
                                                                        session_name: str,
                                                                        cleanup: list[str]) -> None:
    """A job's transaction holds the generation's artifact rows until it commits; a question that has to
    build them itself (missing, or older than the last job) answers without waiting and leaves them."""
    from stores.artifacts import save_artifacts

    cleanup.append(session_name)
    session, deps = _session_without_artifacts(db, tmp_path, session_name)
    built: list[object] = []
    job = db.pool.getconn()
    try:
        job.execute("SELECT 1")  # inside a transaction: the rows stay locked until it ends, like a job's
        save_artifacts(job, session.rag_session_id, session.active_generation, {"stats": {"last_job": "x"}})
        reader = threading.Thread(target=lambda: built.append(deps.bundle(session_name)), daemon=True)
        reader.start()
        reader.join(30)
        assert built, "the question waited for the job's transaction"
    finally:
        job.rollback()
        db.pool.putconn(job)
        deps.lane_pool().shutdown(wait=True)


# ---- issue 37: revisions refused at install, folder moves, edits during the first job, a re-created root -----

QUICK_S = 60
"""How long a running watch may take to show a change (its model is loaded; a job takes about a second)."""


def _git_repo(root: Path) -> None:
    write_corpus(root)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    _git(root, "tag", "v1")


def test_hook_install_refuses_a_session_built_from_a_revision(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                              session_name: str, cleanup: list[str]) -> None:
    """It installed, and every hook run then failed into the log."""
    cleanup.append(session_name)
    repo = tmp_path / "repo"
    _git_repo(repo)
    env = cli_env(pg_data_dir)
    assert run_lotsman("index", str(repo), "--ref", "v1", "--session", session_name, env=env).returncode == 0
    hooks = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    done = run_lotsman("hook", "install", str(repo), "--session", session_name, env=env)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "git revision v1 @ " in lines[0] and session_name in lines[0] and "--session" in lines[0], lines[0]
    assert sorted(p.name for p in (repo / ".git" / "hooks").iterdir()) == hooks  # nothing written
    assert run_lotsman("hook", "install", str(repo), "--session", f"{session_name}-w", env=env).returncode == 0


def _paths(db: Database, session: str) -> set[str]:
    with db.connection() as conn:
        found = find_session(conn, session)
    return set(RagRepository(db).indexed_paths(found)) if found is not None else set()


def _wait_until(check: Callable[[], bool], what: str, deadline_s: float = QUICK_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not check():
        assert time.monotonic() < deadline, f"not within {deadline_s} s: {what}"
        time.sleep(0.2)


@contextlib.contextmanager
def _watching(root: Path, session: str, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    proc = subprocess.Popen([str(LOTSMAN), "watch", str(root), "--session", session], text=True, env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        yield proc, Lines(proc)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize("move", ["moved-in", "renamed", "moved-out"])
def test_watch_follows_a_folder_moved_in_renamed_or_moved_out(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                              session_name: str, cleanup: list[str],
                                                              move: str) -> None:
    """A folder's move sends one event naming the folder: a folder moved in was never indexed, and a folder
    named like a file (`api.v1`) renamed or moved out stayed in the index."""
    cleanup.append(session_name)
    root, outside = tmp_path / "root", tmp_path / "outside"
    write_corpus(root)
    (root / "api.v1").mkdir()
    (root / "api.v1" / "routes.md").write_text("# Маршруты\n\nGET /items.\n", encoding="utf-8")
    (outside / "guide" / "deep").mkdir(parents=True)
    (outside / "guide" / "deep" / "intro.md").write_text("# Введение\n\nНачните здесь.\n", encoding="utf-8")
    (outside / "pictures").mkdir()
    (outside / "pictures" / "a.png").write_bytes(b"\x89PNG")
    base = {"docs/sklad.md", "docs/dostavka.md", "pkg/store.py"}
    env = cli_env(pg_data_dir, LOTSMAN_WATCH_DEBOUNCE_MS="200")
    with _watching(root, session_name, env) as (proc, lines):
        lines.wait_for("watching ")
        assert _paths(db, session_name) == base | {"api.v1/routes.md"}
        mark = len(lines.seen)
        if move == "moved-in":
            shutil.move(outside / "pictures", root / "pictures")  # nothing the indexer reads: no job
            shutil.move(outside / "guide", root / "guide")
            expected, shown = base | {"api.v1/routes.md", "guide/deep/intro.md"}, "changed: guide/ (added)\n"
        elif move == "renamed":
            (root / "api.v1").rename(root / "api.v2")
            expected, shown = base | {"api.v2/routes.md"}, "changed: api.v1/ (deleted), api.v2/ (added)\n"
        else:
            shutil.move(root / "api.v1", outside / "api.v1")
            expected, shown = base, "changed: api.v1/ (deleted)\n"
        _wait_until(lambda: _paths(db, session_name) == expected, f"the index holds {sorted(expected)}")
        assert lines.wait_for("changed: ", mark) == shown
        assert proc.poll() is None


def test_an_edit_made_during_the_first_index_is_indexed(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                        session_name: str, cleanup: list[str]) -> None:
    """The watcher started only after the first job: an edit made after that job had read the files was
    lost. The first job is held once it has read them (at its blob cache lookup) while the file changes."""
    cleanup.append(session_name)
    write_corpus(tmp_path)
    env = cli_env(pg_data_dir, LOTSMAN_WATCH_DEBOUNCE_MS="200")
    holder = db.pool.getconn()
    try:
        holder.execute("LOCK TABLE rag_blob_cache IN ACCESS EXCLUSIVE MODE")
        with _watching(tmp_path, session_name, env) as (_, lines):
            _wait_until(lambda: _waits_for(db, "rag_blob_cache"), "the first job waits for the blob cache",
                        DEADLINE_S)
            add_secret(tmp_path)
            holder.rollback()
            lines.wait_for("watching ")
            _wait_until(lambda: SECRET in ask_cli(env, session_name)["answer"], "the edit is answerable")
    finally:
        holder.rollback()
        db.pool.putconn(holder)


def _waits_for(db: Database, table: str) -> bool:
    with db.connection() as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = to_regclass(%s)",
                           (table,)).fetchone()
    return bool(row and row[0])


def test_watch_resumes_when_its_folder_is_deleted_and_created_again(db: Database, pg_data_dir: Path,
                                                                    tmp_path: Path, session_name: str,
                                                                    cleanup: list[str]) -> None:
    """A deleted folder sends no more events: the watch went on deaf after the folder came back."""
    cleanup.append(session_name)
    root = tmp_path / "root"
    write_corpus(root)
    env = cli_env(pg_data_dir, LOTSMAN_WATCH_DEBOUNCE_MS="200")
    with _watching(root, session_name, env) as (proc, lines):
        lines.wait_for("watching ")
        mark = len(lines.seen)
        shutil.rmtree(root)
        assert "is gone" in lines.wait_for("note: ", mark)
        assert "docs/sklad.md" in _paths(db, session_name)  # the index stays while the folder is away
        write_corpus(root)
        (root / "docs" / "back.md").write_text("# Снова здесь\n", encoding="utf-8")
        lines.wait_for("watching ", mark)
        _wait_until(lambda: "docs/back.md" in _paths(db, session_name), "the folder that came back is indexed")
        (root / "docs" / "later.md").write_text("# Позже\n", encoding="utf-8")
        _wait_until(lambda: "docs/later.md" in _paths(db, session_name), "the new folder is watched")

        mark = len(lines.seen)
        shutil.rmtree(root)  # deleted and created again within one burst
        write_corpus(root)
        (root / "docs" / "quick.md").write_text("# Быстро\n", encoding="utf-8")
        _wait_until(lambda: "docs/quick.md" in _paths(db, session_name), "a quickly re-created folder is indexed")
        (root / "docs" / "quick2.md").write_text("# Быстро\n", encoding="utf-8")
        _wait_until(lambda: "docs/quick2.md" in _paths(db, session_name), "and watched")
        assert proc.poll() is None


def test_watch_refuses_a_huge_folder_without_yes(db: Database, pg_data_dir: Path, tmp_path: Path,
                                                 session_name: str) -> None:
    from stores.indexing.files import CONFIRM_ABOVE_FILES

    for i in range(CONFIRM_ABOVE_FILES + 1):
        (tmp_path / f"n{i}.md").write_text("# x\n", encoding="utf-8")
    done = run_lotsman("watch", str(tmp_path), "--session", session_name, env=cli_env(pg_data_dir))
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1 and "--yes" in lines[0], done.stderr
    with db.connection() as conn:
        assert find_session(conn, session_name) is None
