"""Issue 14 faults through the CLI: pools closed after a command, a stopped database, a deleted session."""

from __future__ import annotations

from pathlib import Path

import pytest

import graph.cli as cli
from stores.database import Database


@pytest.fixture
def opened_pools(monkeypatch: pytest.MonkeyPatch) -> list[Database]:
    """Every `Database` the command opens, to check that it was closed before `main` returned."""
    opened: list[Database] = []
    original = Database.__init__

    def tracking_init(self: Database, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(Database, "__init__", tracking_init)
    return opened


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("command", [
    ["ask", "Как настроить CORS?"], ["retrieve", "Как настроить CORS?"],
    ["index", "{corpus}", "--full"],  # unchanged, it is a no-op: one plain connection, no pool
    ["sessions"],
], ids=["ask", "retrieve", "index", "sessions"])
def test_commands_close_their_connection_pools(command: list[str], opened_pools: list[Database], db: Database,
                                               tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 3: a pool left to `__del__` can print `RuntimeError: cannot join current thread` after exit 0."""
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    corpus = tmp_path / "corpus"
    (corpus / "docs").mkdir(parents=True)
    (corpus / "docs" / "cors.md").write_text("# CORS\n\nCORS настраивается через CORSMiddleware.\n")
    session = f"pools-{tmp_path.name[-12:]}"
    index_repository(db, corpus, session_name=session, embedder=make_embedder("fake"))

    argv = [arg.replace("{corpus}", str(corpus)) for arg in command]
    if command[0] != "sessions":
        argv += ["--session", session]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert opened_pools, "the command opened no database"
    assert all(d.pool.closed for d in opened_pools), "a connection pool was left to the garbage collector"


# --- issue 25, item 9: a session deleted during an answer is said to be deleted ---------------------------
@pytest.fixture
def deleted_mid_answer(monkeypatch: pytest.MonkeyPatch, db: Database, tmp_path: Path) -> str:
    """A fresh session that another client deletes right after the turn has resolved it (the race of
    `lotsman sessions --delete` during `lotsman ask`), through the real database."""
    from graph.deps import GraphDeps
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository
    from stores.sessions import delete_session, find_session

    corpus = tmp_path / "corpus"
    (corpus / "docs").mkdir(parents=True)
    (corpus / "docs" / "cors.md").write_text("# CORS\n\nCORS настраивается через CORSMiddleware.\n")
    session = f"deleted-{tmp_path.name[-12:]}"
    index_repository(db, corpus, session_name=session, embedder=make_embedder("fake"))

    resolve = GraphDeps.bundle

    def resolve_then_lose(self: GraphDeps, name: str):  # type: ignore[no-untyped-def]
        bundle = resolve(self, name)
        with db.connection() as conn:
            if find_session(conn, name) is not None:
                delete_session(conn, name)
        return bundle

    monkeypatch.setattr(GraphDeps, "bundle", resolve_then_lose)
    monkeypatch.setenv("LOTSMAN_EMBEDDER", "fake")
    return session


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_session_deleted_during_ask_is_exit_4(deleted_mid_answer: str, as_json: bool,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """It used to answer "the indexed material does not answer this question", exit 0."""
    argv = ["ask", "Как настроить CORS?", "--session", deleted_mid_answer] + (["--json"] if as_json else [])
    assert cli.main(argv) == 4
    out, err = capsys.readouterr()
    assert out == ""  # no answer that blames the question
    assert err.splitlines() == [f"error: session '{deleted_mid_answer}' was deleted while answering: index the "
                                f"repository again with `lotsman index PATH --session {deleted_mid_answer}`"]

