"""The web page's JSON endpoints over the real stores: sessions, cited lines from the index, stored votes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from graph.web import StoreBackend, routes
from stores.sessions import RagSession
from tests.integration.conftest import indexed_session

DOC = """# Виджет

Вставьте на страницу строку ниже.

<img src=x onerror="window.__xss = 1">

Готово.
"""


@pytest.fixture(scope="module")
def session(db, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RagSession]:
    from stores.embedders import make_embedder

    root = tmp_path_factory.mktemp("web-corpus")
    (root / "docs").mkdir()
    (root / "docs" / "widget.md").write_text(DOC, encoding="utf-8")
    yield from indexed_session(db, root, "web", make_embedder("fake"))


RUNS = {("thread-1", "run-1"): [{"path": "docs/widget.md", "start_line": 3, "end_line": 5},
                                 {"path": "docs/widget.md", "start_line": 1, "end_line": 1}]}
"""The answers this stand-in for the LangGraph server gave: what a vote may cite (issue 37 item 11)."""


async def run_citations(thread_id: str, run_id: str) -> list[dict] | None:
    return RUNS.get((thread_id, run_id))


@pytest.fixture(scope="module")
def client(db) -> TestClient:
    return TestClient(Starlette(routes=routes(StoreBackend(lambda: db, runs=run_citations), lambda: None)))


def test_sessions_lists_the_indexed_session(client: TestClient, session: RagSession) -> None:
    res = client.get("/lotsman/api/sessions")
    assert res.status_code == 200
    mine = [s for s in res.json()["sessions"] if s["name"] == session.name]
    assert len(mine) == 1 and mine[0]["rows"] > 0 and mine[0]["embedder"] == "fake"
    assert "root_path" not in mine[0] and "rag_session_id" not in mine[0]


def test_read_returns_the_cited_lines_from_the_index(client: TestClient, session: RagSession) -> None:
    res = client.get("/lotsman/api/read", params={"session": session.name, "path": "docs/widget.md",
                                                  "start_line": 3, "end_line": 5})
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["path"] == "docs/widget.md" and (body["start_line"], body["end_line"]) == (3, 5)
    assert body["lines"] == [{"number": 3, "text": "Вставьте на страницу строку ниже."},
                             {"number": 4, "text": ""},
                             {"number": 5, "text": '<img src=x onerror="window.__xss = 1">'}]


@pytest.mark.parametrize(("params", "status", "says"), [
    ({"session": "never-indexed-web", "path": "docs/widget.md"}, 404, "no session 'never-indexed-web'"),
    ({"path": "docs/other.md"}, 400, "docs/other.md is not in session"),
    ({"path": "docs/widget.md", "start_line": 50, "end_line": 51}, 400, "lines 50-51 are outside docs/widget.md"),
    ({"path": "../../etc/passwd"}, 400, "../../etc/passwd is not in session"),
], ids=["unknown-session", "path-not-in-session", "outside-the-file", "escape-the-root"])
def test_read_refuses_with_one_line(client: TestClient, session: RagSession, params: dict, status: int,
                                    says: str) -> None:
    query = {"session": session.name, "start_line": 1, "end_line": 2, **params}
    res = client.get("/lotsman/api/read", params=query)
    assert res.status_code == status, res.text
    error = res.json()["error"]
    assert error.startswith(says) and "\n" not in error


def test_vote_is_stored(client: TestClient, session: RagSession, db) -> None:
    vote = {"session": session.name, "score": -1, "question": "Как встроить виджет?", "answer": "docs/widget.md:3-5",
            "citations": [{"path": "docs/widget.md", "start_line": 3, "end_line": 5}], "comment": "не то",
            "run_id": "run-1", "thread_id": "thread-1"}
    res = client.post("/lotsman/api/feedback", json=vote)
    assert res.status_code == 200, res.text
    with db.connection() as conn:
        row = conn.execute("SELECT session_name, score, question, comment, run_id, thread_id, citations "
                           "FROM rag_feedback WHERE feedback_id = %s", (res.json()["feedback_id"],)).fetchone()
    assert row == (session.name, -1, "Как встроить виджет?", "не то", "run-1", "thread-1", vote["citations"])


@pytest.mark.parametrize(("cite", "says"), [
    ({"path": "../../etc/passwd", "start_line": 1, "end_line": 1}, "../../etc/passwd is not in session"),
    ({"path": "docs/widget.md", "start_line": 10**20, "end_line": 10**20}, "are outside docs/widget.md"),
    ({"path": "docs/widget.md", "start_line": 2, "end_line": 4}, "is not one of the run's citations"),
], ids=["traversal", "line-1e20", "in-index-not-in-run"])
def test_a_forged_citation_is_a_400_and_stores_nothing(client: TestClient, session: RagSession, db, cite: dict,
                                                       says: str) -> None:
    vote = {"session": session.name, "score": 1, "question": "Как встроить виджет?", "run_id": "run-1",
            "thread_id": "thread-1", "citations": [{"path": "docs/widget.md", "start_line": 3, "end_line": 5}, cite]}
    with db.connection() as conn:
        before = conn.execute("SELECT count(*) FROM rag_feedback").fetchone()
    res = client.post("/lotsman/api/feedback", json=vote)
    assert res.status_code == 400 and says in res.json()["error"], res.text
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM rag_feedback").fetchone() == before


def test_vote_on_unknown_session_is_404(client: TestClient, db) -> None:
    res = client.post("/lotsman/api/feedback", json={"session": "never-indexed-web", "score": 1, "question": "q"})
    assert res.status_code == 404 and res.json()["error"].startswith("no session 'never-indexed-web'")



def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"}).stdout.strip()


def test_a_session_indexed_from_a_git_revision_names_it(client: TestClient, db,
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The picker shows the revision a session was indexed from, and a read says which commit it came from."""
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    repo = tmp_path_factory.mktemp("web-git")
    (repo / "docs").mkdir()
    (repo / "docs" / "widget.md").write_text(DOC, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "docs")
    git(repo, "tag", "v1")
    sha = git(repo, "rev-parse", "HEAD")
    name = f"web-git-{sha[:6]}"
    index_repository(db, repo, session_name=name, embedder=make_embedder("fake"), ref="v1")

    listed = next(s for s in client.get("/lotsman/api/sessions").json()["sessions"] if s["name"] == name)
    assert (listed["git_ref"], listed["commit"], listed["revision"]) == ("v1", sha, f"v1 @ {sha[:12]}")
    read = client.get("/lotsman/api/read", params={"session": name, "path": "docs/widget.md", "start_line": 1,
                                                   "end_line": 1}).json()
    assert read["commit"] == sha and read["lines"] == [{"number": 1, "text": "# Виджет"}]
