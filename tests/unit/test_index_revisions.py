"""Issue 26 items 1 and 3, issue 30 item 4, the decisions without a database: which session a ref names,
when a folder is unchanged, what a code row records, how git's output is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.errors import IndexingError, SessionNotFoundError, UsageError
from stores.indexing.files import STAT_RACY_NS, changed_since, is_candidate_path, stat_tree
from stores.indexing.git_source import collect_revision, parse_tree_line, resolve_revision, split_batch
from stores.indexing.records import ChunkRecord
from stores.indexing.unchanged import FOLDER, GIT, same_source
from stores.indexing.versions import PIPELINE_VERSION
from stores.indexing.writer import RowOrigin, row_metadata
from stores.layers import Layer
from stores.sessions import RagSession, pick_revision_session, ref_matches
from tests.gitrepo import git

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(("ref", "git_ref", "commit", "matches"), [
    ("v1", "v1", SHA, True),            # the ref as it was given
    (SHA, "v1", SHA, True),             # the full sha
    (SHA[:7], "v1", SHA, True),         # a short sha, git's 7 digits
    (SHA[:7].upper(), "main", SHA, True),
    (SHA[:6], "v1", SHA, False),        # too short to be a sha: only a ref of that name would match
    ("v2", "v1", SHA, False),
    ("v1", "v1", None, False),          # a folder's session has no revision
    ("abcdefg", "v1", SHA, False),      # not a prefix
])
def test_ref_matches(ref: str, git_ref: str, commit: str | None, matches: bool) -> None:
    assert ref_matches(ref, git_ref, commit) is matches


def _session(name: str, ref: str | None, commit: str | None, repo: str | None = "/r") -> RagSession:
    return RagSession(rag_session_id=name, name=name, embedder="fake", embedding_dim=64, active_generation=1,
                      repo_path=repo if commit else None, git_ref=ref, commit_sha=commit)


SESSIONS = [_session("a1", "v1", SHA), _session("a2", "v2", "f" * 40), _session("folder", None, None),
            _session("b1", "v1", "e" * 40, repo="/other")]


@pytest.mark.parametrize(("ref", "repo", "expected"), [
    ("v2", None, "a2"),
    ("v1", "/r", "a1"),                 # two repositories have a v1: the anchor's repository decides
    ("v1", "/other", "b1"),
    ("fffffff", None, "a2"),
    ("v1", None, UsageError),           # ambiguous without a repository
    ("v3", "/r", SessionNotFoundError),
    ("v2", "/other", SessionNotFoundError),
])
def test_pick_revision_session(ref: str, repo: str | None, expected: str | type[Exception]) -> None:
    if isinstance(expected, str):
        assert pick_revision_session(ref, SESSIONS, repo_path=repo).name == expected
    else:
        with pytest.raises(expected):
            pick_revision_session(ref, SESSIONS, repo_path=repo)


def test_a_missing_revision_lists_the_indexed_ones() -> None:
    with pytest.raises(SessionNotFoundError, match=r"v1 @ 0123456789ab \(session 'a1'\)"):
        pick_revision_session("v9", SESSIONS, repo_path="/r")


NOW = 10**19
OLD = NOW - 10 * STAT_RACY_NS


@pytest.mark.parametrize(("previous", "current", "expected"), [
    ({"a.md": [1, OLD, 5, "s"]}, {"a.md": (1, OLD, 5)}, []),                 # unchanged: nothing to read
    ({"a.md": [1, OLD, 5, "s"]}, {"a.md": (1, OLD + 1, 5)}, ["a.md"]),       # touched: its sha decides
    ({"a.md": [1, OLD, 5, "s"]}, {"a.md": (2, OLD, 5)}, ["a.md"]),
    ({"a.md": [1, OLD, 5, "s"]}, {"a.md": (1, OLD, 6)}, ["a.md"]),           # replaced (new inode)
    ({"a.md": [1, NOW - 1, 5, "s"]}, {"a.md": (1, NOW - 1, 5)}, ["a.md"]),   # too recent to trust its stat
    ({"a.md": [1, OLD, 5, "s"]}, {"a.md": (1, OLD, 5), "b.md": (1, OLD, 7)}, None),  # a file added
    ({"a.md": [1, OLD, 5, "s"], "b.md": [1, OLD, 7, "t"]}, {"a.md": (1, OLD, 5)}, None),  # a file removed
    ({"x": [-1, -1, -1, None]}, {"x": (-1, -1, -1)}, []),                   # a reported name stays as it was
])
def test_changed_since(previous: dict, current: dict, expected: list[str] | None) -> None:
    assert changed_since(previous, current, NOW) == expected


@pytest.mark.parametrize(("path", "candidate"), [
    ("docs/a.md", True), ("a.PY", True), ("pkg/mod.py", True), ("notes.markdown", True),
    ("img.png", False), (".hidden.md", False), (".github/x.md", False), ("node_modules/a/readme.md", False),
    ("pkg/__pycache__/m.py", False), ("venv/lib/a.py", False),
])
def test_a_git_tree_path_follows_the_folder_rules(path: str, candidate: bool) -> None:
    assert is_candidate_path(path) is candidate


@pytest.mark.parametrize(("layer", "path", "origin", "added"), [
    (Layer.C1_SYMBOL_CATALOG, "app/m.py", RowOrigin("/repo", SHA), {"repo_id": "/repo", "commit_sha": SHA,
                                                                     "lang": "python"}),
    (Layer.C0_SOURCE_CHUNKS, "m.py", RowOrigin("/dir", None), {"repo_id": "/dir", "commit_sha": None,
                                                                "lang": "python"}),
    (Layer.D0_DOC_CHUNKS, "a.md", RowOrigin("/repo", SHA), {}),      # docs rows are left as parsed
    (Layer.C2_DEPENDENCY_GRAPH, "m.py", None, {}),
])
def test_code_rows_record_their_revision(layer: Layer, path: str, origin: RowOrigin | None, added: dict) -> None:
    record = ChunkRecord(layer=layer, path=path, title="t", content="c", span_start=1, span_end=1,
                         metadata={"qname": "m.f"})
    assert row_metadata(record, origin) == {"qname": "m.f", **added}
    assert record.metadata == {"qname": "m.f"}  # the cached record is not changed


P = PIPELINE_VERSION


@pytest.mark.parametrize(("previous", "kind", "root", "commit", "same"), [
    ({"kind": FOLDER, "root": "/r", "max_bytes": 10, "pipeline": P}, FOLDER, "/r", None, True),
    ({"kind": FOLDER, "root": "/r", "max_bytes": 9, "pipeline": P}, FOLDER, "/r", None, False),  # another size limit
    ({"kind": FOLDER, "root": "/s", "max_bytes": 10, "pipeline": P}, FOLDER, "/r", None, False),
    ({"kind": FOLDER, "root": "/r", "max_bytes": 10, "pipeline": "docs-1+code-1+1"}, FOLDER, "/r", None, False),
    ({"kind": FOLDER, "root": "/r", "max_bytes": 10}, FOLDER, "/r", None, False),  # recorded before versions were
    ({"kind": GIT, "root": "/r", "max_bytes": 10, "commit": SHA, "pipeline": P}, GIT, "/r", SHA, True),
    ({"kind": GIT, "root": "/r", "max_bytes": 10, "commit": SHA, "pipeline": P}, GIT, "/r", "f" * 40, False),
    ({"kind": GIT, "root": "/r", "max_bytes": 10, "commit": SHA, "pipeline": P}, FOLDER, "/r", None, False),
    (None, FOLDER, "/r", None, False),
])
def test_same_source(previous: dict | None, kind: str, root: str, commit: str | None, same: bool) -> None:
    """A Lotsman whose pipelines parse differently re-indexes an unchanged folder (else old rows stay)."""
    assert same_source(previous, kind, root, 10, commit) is same


def test_git_output_is_read_byte_exact() -> None:
    entry = parse_tree_line(b"100644 blob " + SHA.encode() + b"      12\tdocs/caf\xc3\xa9 a.md")
    assert entry is not None and (entry.mode, entry.size, entry.path) == ("100644", 12, "docs/café a.md")
    assert parse_tree_line(b"garbage") is None
    stream = b"%s blob 3\nab\n\n%s blob 0\n\n" % (SHA.encode(), SHA.encode())
    assert split_batch(stream, 2) == [b"ab\n", b""]
    with pytest.raises(IndexingError, match="missing"):
        split_batch(b"deadbeef missing\n", 1)




@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs/a.md").write_text("# A\n\nfirst\n")
    (root / "big.md").write_text("x" * 500)
    (root / "empty.py").write_text("")
    (root / ".hidden/x.md").parent.mkdir()
    (root / ".hidden/x.md").write_text("# hidden\n")
    (root / "link.md").symlink_to("docs/a.md")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    git(root, "tag", "v1")
    (root / "docs/a.md").write_text("# A\n\nedited, not committed\n")
    return root


def test_a_revision_is_read_from_git_not_from_the_working_tree(repo: Path) -> None:
    revision = resolve_revision(repo, "v1")
    assert revision.commit_sha == git(repo, "rev-parse", "HEAD") and revision.prefix == ""
    collected = collect_revision(revision, max_bytes=100)
    assert [(f.path, f.text) for f in collected.files] == [("docs/a.md", "# A\n\nfirst\n")]
    assert collected.files[0].blob_sha == git(repo, "rev-parse", "v1:docs/a.md")  # the cache key git's own
    assert {s.path: s.reason.split(":")[0] for s in collected.skipped} == {
        "big.md": "too large", "empty.py": "empty file", "link.md": "symlink"}


def test_a_folder_inside_the_repository_indexes_its_subtree(repo: Path) -> None:
    revision = resolve_revision(repo / "docs", "v1")
    assert revision.prefix == "docs/" and revision.repo_path == str(repo.resolve())
    assert [f.path for f in collect_revision(revision).files] == ["a.md"]


@pytest.mark.parametrize(("where", "ref", "message"), [
    ("repo", "v9", "no revision 'v9'"),
    ("repo", "-h", "not a git ref"),
    ("repo", " ", "not a git ref"),
    ("plain", "v1", "is not a git repository"),
    ("missing", "v1", "path not found"),
])
def test_bad_revision_input_is_one_line(repo: Path, tmp_path: Path, where: str, ref: str, message: str) -> None:
    (tmp_path / "plain").mkdir()
    path = {"repo": repo, "plain": tmp_path / "plain", "missing": tmp_path / "missing"}[where]
    with pytest.raises(IndexingError, match=message) as raised:
        resolve_revision(path, ref)
    assert "\n" not in str(raised.value)


def test_a_folder_the_revision_lacks_is_refused_not_indexed_empty(repo: Path) -> None:
    """ls-tree lists nothing for a folder a revision lacks: indexed, the empty snapshot replaced the index."""
    (repo / "later").mkdir()
    (repo / "later/b.md").write_text("# B\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    assert [f.path for f in collect_revision(resolve_revision(repo / "later", "HEAD")).files] == ["b.md"]
    with pytest.raises(IndexingError, match="later does not exist in revision 'v1'") as raised:
        resolve_revision(repo / "later", "v1")
    assert "\n" not in str(raised.value)


def test_stat_tree_lists_what_collect_files_would_vet(repo: Path) -> None:
    stats = stat_tree(repo)
    assert set(stats) == {"docs/a.md", "big.md", "empty.py", "link.md"}
    assert stats["link.md"][0] == (repo / "docs/a.md").stat().st_size  # a link is stat'ed through


@pytest.mark.parametrize(("ref", "ok"), [(None, True), ("v1.2", True), (SHA[:8], True), ("", False), ("  ", False),
                                         (12, False)])
def test_the_run_context_names_a_revision(ref: object, ok: bool) -> None:
    from graph.context import Context
    from stores.errors import InvalidInputError

    if ok:
        assert Context(rag_session_id="docs", ref=ref).ref == ref
    else:
        with pytest.raises(InvalidInputError, match="ref"):
            Context(rag_session_id="docs", ref=ref)
