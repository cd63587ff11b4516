"""Issue 26 items 1 and 3, issue 30 item 4: index a git revision, a no-op re-index, code rows' revision.

A real git repository (two tags, one fact changed between them) is indexed through the CLI into two
sessions; the question whose answer changed is asked in each.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import graph.cli as cli
from stores.database import Database
from tests.gitrepo import git

GUIDE_V1 = """# Retry guide

## Default retry budget

The client retries a failed upload 3 times before giving up.
The retry budget is configured in `settings.py`.
"""

GUIDE_V2 = GUIDE_V1.replace("3 times", "7 times")

SETTINGS_PY = '''"""Client settings."""


def retry_budget() -> int:
    """How many times a failed upload is retried."""
    return {n}
'''

def other_docs() -> dict[str, str]:
    """Eight pages that never change, unique to the test (the blob cache outlives a test: it must start cold)."""
    token = uuid.uuid4().hex[:8]
    return {f"docs/page{i}.md": f"# Page {i}\n\nThe page number {i} talks about topic{i} only ({token}).\n"
            for i in range(8)}

QUESTION = "How many times does the client retry a failed upload?"




def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def tagged_repo(tmp_path: Path) -> Path:
    """v1: the budget is 3; v2: it is 7 (the guide and `settings.py` changed, eight other pages did not).
    The working tree is then edited past v2 (never indexed with --ref: it must not leak into them)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    token = uuid.uuid4().hex[:8]
    _write(repo, {"docs/retry.md": GUIDE_V1 + f"\nRevision notes {token}.\n",
                  "app/settings.py": SETTINGS_PY.format(n=3) + f"# {token}\n", **other_docs()})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "v1")
    git(repo, "tag", "v1")
    _write(repo, {"docs/retry.md": GUIDE_V2 + f"\nRevision notes {token}.\n",
                  "app/settings.py": SETTINGS_PY.format(n=7) + f"# {token}\n"})
    git(repo, "commit", "-q", "-am", "v2")
    git(repo, "tag", "-a", "v2", "-m", "release 2")  # an annotated tag names a tag object, not the commit
    _write(repo, {"docs/retry.md": GUIDE_V1.replace("3 times", "11 times")})  # uncommitted work
    return repo


@pytest.fixture
def names(db: Database) -> Iterator[list[str]]:
    """Session names for one test, deleted afterwards."""
    from stores.sessions import delete_session, find_session

    made = [f"rev-{uuid.uuid4().hex[:8]}-{i}" for i in range(3)]
    yield made
    with db.connection() as conn:
        for name in made:
            if find_session(conn, name) is not None:
                delete_session(conn, name)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _index_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = _run(capsys, "index", *argv, "--embedder", "fake", "--json")
    assert code == 0, err
    return json.loads(out)


def _rows(db: Database, name: str) -> list[tuple[str, str, dict]]:
    from stores.sessions import get_session

    with db.connection() as conn:
        session = get_session(conn, name)
        return conn.execute(
            f'SELECT layer, path, metadata_json FROM "{session.table}" WHERE rag_session_id = %s AND generation = %s',
            (session.rag_session_id, session.active_generation)).fetchall()


@pytest.mark.usefixtures("cli_on_test_db")
def test_two_tags_answer_from_their_own_revision(tagged_repo: Path, names: list[str], db: Database,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    v1, v2, _ = names
    first = _index_json(capsys, str(tagged_repo), "--session", v1, "--ref", "v1")
    second = _index_json(capsys, str(tagged_repo), "--session", v2, "--ref", "v2")

    sha1 = git(tagged_repo, "rev-parse", "v1^{commit}")
    sha2 = git(tagged_repo, "rev-parse", "v2^{commit}")
    assert first["revision"] == {"repo": str(tagged_repo.resolve()), "ref": "v1", "commit": sha1}
    assert second["revision"]["commit"] == sha2
    # the second tag re-embeds only what changed: 2 of 10 files, the rest comes from the blob cache
    assert first["reembedded_share"] == 1.0 and second["cache_hits"] == 8 and second["parsed"] == 2
    assert 0 < second["reembedded_share"] < 0.5

    answers = {}
    for name in (v1, v2):
        code, out, err = _run(capsys, "ask", QUESTION, "--session", name, "--json")
        assert code == 0, err
        answers[name] = json.loads(out)["answer"]
    assert "3 times" in answers[v1] and "7 times" not in answers[v1]
    assert "7 times" in answers[v2] and "3 times" not in answers[v2]
    assert "11 times" not in answers[v1] + answers[v2]  # the working tree was never read
    # `ask --ref` picks the session of that revision, by tag or by commit prefix
    for ref, fact, sha in (("v1", "3 times", sha1), (sha2[:10], "7 times", sha2)):
        code, out, err = _run(capsys, "ask", QUESTION, "--ref", ref, "--json")
        assert code == 0, err
        got = json.loads(out)
        assert fact in got["answer"]
        assert got["revision"]["commit"] == sha  # the answer says which commit it was read from
    code, _, err = _run(capsys, "ask", QUESTION, "--ref", "v9", "--json")
    assert code == 4 and err.count("\n") == 1 and "v9" in err

    code, out, _ = _run(capsys, "sessions", "--json")
    listed = {s["name"]: s for s in json.loads(out)}
    assert (listed[v1]["git_ref"], listed[v1]["commit_sha"], listed[v1]["repo_path"]) == \
        ("v1", sha1, str(tagged_repo.resolve()))
    assert (listed[v2]["git_ref"], listed[v2]["commit_sha"]) == ("v2", sha2)


@pytest.mark.usefixtures("cli_on_test_db")
def test_code_rows_carry_repository_commit_and_language(tagged_repo: Path, names: list[str], db: Database,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rev, folder, _ = names
    _index_json(capsys, str(tagged_repo), "--session", rev, "--ref", "v1")
    _index_json(capsys, str(tagged_repo), "--session", folder)
    sha1 = git(tagged_repo, "rev-parse", "v1^{commit}")

    for name, commit in ((rev, sha1), (folder, None)):
        rows = _rows(db, name)
        code = [meta for layer, _, meta in rows if layer.startswith("C")]
        assert code and all(m["repo_id"] == str(tagged_repo.resolve()) and m["commit_sha"] == commit
                            and m["lang"] == "python" for m in code)
        assert all("commit_sha" not in meta for layer, _, meta in rows if layer.startswith("D"))


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("case", ["missing ref", "not a repository", "option-like ref"])
def test_bad_ref_is_one_line_and_changes_nothing(case: str, tagged_repo: Path, tmp_path: Path, names: list[str],
                                                 db: Database, capsys: pytest.CaptureFixture[str]) -> None:
    name = names[0]
    _index_json(capsys, str(tagged_repo), "--session", name, "--ref", "v1")
    before = sorted(map(str, _rows(db, name)))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.md").write_text("# A\n\ntext\n")
    path, ref = {"missing ref": (tagged_repo, "v9"), "not a repository": (plain, "v1"),
                 "option-like ref": (tagged_repo, "--output=x")}[case]

    code, out, err = _run(capsys, "index", str(path), "--session", name, f"--ref={ref}", "--embedder", "fake")

    assert code != 0 and out == ""
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert sorted(map(str, _rows(db, name))) == before
    code, out, err = _run(capsys, "index", str(path), "--session", names[1], f"--ref={ref}", "--embedder", "fake")
    assert code != 0
    code, out, _ = _run(capsys, "sessions", "--json")
    assert names[1] not in {s["name"] for s in json.loads(out)}  # a bad ref creates no session


@pytest.mark.usefixtures("cli_on_test_db")
def test_unchanged_folder_is_a_noop_before_any_parse(tmp_path: Path, names: list[str], db: Database,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from stores.sessions import get_session

    root = tmp_path / "docs"
    _write(root, other_docs())
    name = names[0]
    first = _index_json(capsys, str(root), "--session", name)
    assert first["noop"] is False and first["parsed"] == 8

    again = _index_json(capsys, str(root), "--session", name)
    assert again["noop"] is True and again["parsed"] == again["cache_hits"] == 0
    assert again["files_unchanged"] == 8 and again["kind"] == "changes"

    page = root / "docs/page0.md"
    stat = page.stat()
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # touched, same bytes
    assert _index_json(capsys, str(root), "--session", name)["noop"] is True

    page.write_text(page.read_text() + "\nA new line about topic0.\n")
    changed = _index_json(capsys, str(root), "--session", name)
    assert changed["noop"] is False and changed["files_indexed"] == 1 and changed["files_unchanged"] == 7
    (root / "docs/new.md").write_text("# New\n\nA new page.\n")
    assert _index_json(capsys, str(root), "--session", name)["files_indexed"] == 1
    code, out, _ = _run(capsys, "index", str(root), "--session", name, "--embedder", "fake")
    assert code == 0 and "nothing changed since the last index job" in out

    with db.connection() as conn:
        jobs = conn.execute("SELECT count(*) FILTER (WHERE (counts->>'noop')::boolean), count(*), "
                            "count(*) FILTER (WHERE counts ? 'tree') "
                            "FROM rag_index_jobs WHERE rag_session_id = %s AND status = 'done'",
                            (get_session(conn, name).rag_session_id,)).fetchone()
    assert jobs == (3, 6, 1)  # three no-ops among six jobs, each recorded; only the last one keeps its tree


@pytest.mark.usefixtures("cli_on_test_db")
def test_same_revision_again_is_a_noop_and_a_new_one_is_not(tagged_repo: Path, names: list[str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    name = names[0]
    _index_json(capsys, str(tagged_repo), "--session", name, "--ref", "v1")
    assert _index_json(capsys, str(tagged_repo), "--session", name, "--ref", "v1")["noop"] is True
    moved = _index_json(capsys, str(tagged_repo), "--session", name, "--ref", "v2")
    assert moved["noop"] is False and moved["kind"] == "snapshot" and moved["parsed"] == 2
    # the working tree into a session of a revision: a new snapshot, and the session forgets the revision
    folder = _index_json(capsys, str(tagged_repo), "--session", name)
    assert folder["kind"] == "snapshot" and folder["revision"] is None
    code, out, _ = _run(capsys, "sessions", "--json")
    listed = {s["name"]: s for s in json.loads(out)}
    assert listed[name]["commit_sha"] is None and listed[name]["git_ref"] is None


def test_session_for_ref_picks_the_revision(db: Database, tagged_repo: Path, names: list[str]) -> None:
    from stores.embedders import make_embedder
    from stores.errors import SessionNotFoundError, UsageError
    from stores.indexing.service import index_repository
    from stores.sessions import run_session, session_for_ref

    v1, v2, dup = names
    fake = make_embedder("fake")
    for name, ref in ((v1, "v1"), (v2, "v2")):
        index_repository(db, tagged_repo, session_name=name, embedder=fake, ref=ref, parse_workers=0)
    sha1 = git(tagged_repo, "rev-parse", "v1^{commit}")
    with db.connection() as conn:
        assert session_for_ref(conn, "v1", within=v2).name == v1
        assert session_for_ref(conn, sha1[:8], within=v1).name == v1
        assert run_session(conn, v2, None) == session_for_ref(conn, "v2", within=v1).rag_session_id
        with pytest.raises(SessionNotFoundError, match="no session is indexed from revision 'v3'"):
            session_for_ref(conn, "v3", within=v1)
    index_repository(db, tagged_repo, session_name=dup, embedder=fake, ref="v1", parse_workers=0)
    with db.connection() as conn, pytest.raises(UsageError, match="several sessions"):
        session_for_ref(conn, "v1", within=v1)


@pytest.mark.usefixtures("cli_on_test_db")
def test_rows_of_another_pipeline_version_are_rebuilt_though_no_file_changed(
        tmp_path: Path, names: list[str], db: Database, capsys: pytest.CaptureFixture[str]) -> None:
    """Upgrading Lotsman: a diff by blob sha kept every unchanged file's old rows, so new layers (issue 30)
    reached a session only with --full; a session whose last job ran other pipelines is re-indexed whole."""
    from stores.sessions import get_session

    root = tmp_path / "docs"
    _write(root, other_docs())
    name = names[0]
    assert _index_json(capsys, str(root), "--session", name)["kind"] == "snapshot"
    assert _index_json(capsys, str(root), "--session", name)["noop"] is True
    with db.connection() as conn:  # as if the rows were made by an older Lotsman
        session = get_session(conn, name)
        conn.execute("UPDATE rag_index_jobs SET counts = jsonb_set(counts, '{tree,pipeline}', '\"docs-1+code-1+1\"')"
                     " WHERE rag_session_id = %s AND counts ? 'tree'", (session.rag_session_id,))
    upgraded = _index_json(capsys, str(root), "--session", name)
    # every file is processed again (here from the blob cache, whose key did not change; after a real upgrade
    # the key carries the new version, so the files are parsed again)
    assert upgraded["noop"] is False and upgraded["kind"] == "snapshot"
    assert upgraded["parsed"] + upgraded["cache_hits"] == 8
    assert _index_json(capsys, str(root), "--session", name)["noop"] is True  # and the next run is a no-op again
