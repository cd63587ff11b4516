"""A question naming a file with Windows separators (`docs\\api\\x.md`) finds the indexed `docs/api/x.md`
through the real path lanes on the embedded DB, and a POSIX file named `back\\slash.md` is still found by its
own name (`stores.statements.path_lookups`: as written, then with `/`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import pytest

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.retrieval_policy import RetrievalPlan
from stores.database import Database
from stores.embedders import FakeEmbeddings
from stores.layers import DOCS_LAYERS
from stores.repository import RagRepository
from stores.sessions import RagSession
from tests.integration.conftest import indexed_session

EMBEDDER = FakeEmbeddings()
DOC_LAYERS = [layer.value for layer in DOCS_LAYERS]
FILES = {
    "docs/api/x.md": "# The X endpoint\n\nHow the x endpoint answers a request.\n",
    "docs/tutorial/cors.md": "# CORS\n\nAllowing other origins to call the API.\n",
    "docs/other.md": "# Other\n\nSomething unrelated to either page.\n",
}
BACKSLASH_NAME = "back\\slash.md"


@pytest.fixture(scope="module")
def session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RagSession]:
    root = tmp_path_factory.mktemp("windows-paths")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if os.sep == "/":
        (root / BACKSLASH_NAME).write_text("# Back slash\n\nA POSIX name with a backslash in it.\n")
    yield from indexed_session(db, root, "it-winpath", EMBEDDER)


def ask(db: Database, session: RagSession, named: Sequence[str], query: str) -> dict[str, set[str]]:
    """The paths each lane found for a question naming `named` (the route's hints and file anchors)."""
    plan = RetrievalPlan(profile="docs_summary_generic", layers=DOC_LAYERS, limit=8,
                         filters={"target_doc_hints": list(named)})
    result = RetrievalAdapter(RagRepository(db), EMBEDDER).fetch_rows(session, plan, None, query,
                                                                      file_names=list(named))
    lanes: dict[str, set[str]] = {}
    for row in result.rows:
        for lane in row.lanes:
            lanes.setdefault(lane, set()).add(row.path)
    return lanes


@pytest.mark.parametrize(("named", "path"), [
    ("docs\\api\\x.md", "docs/api/x.md"),
    ("docs\\tutorial\\cors.md", "docs/tutorial/cors.md"),
    ("docs/api/x.md", "docs/api/x.md"),
])
def test_a_named_file_is_found_whichever_separator_the_user_typed(db: Database, session: RagSession,
                                                                 named: str, path: str) -> None:
    lanes = ask(db, session, [named], f"what does {named} say?")
    assert lanes.get("exact") == {path}


def test_a_windows_tail_is_found_by_the_substring_lane(db: Database, session: RagSession) -> None:
    lanes = ask(db, session, ["api\\x.md"], "what does api\\x.md say?")  # no exact file: its tail
    assert "docs/api/x.md" in lanes.get("substring", set())


@pytest.mark.skipif(os.sep == "\\", reason="a backslash is a name character on POSIX only")
def test_a_backslash_name_is_found_by_its_own_name(db: Database, session: RagSession) -> None:
    lanes = ask(db, session, [BACKSLASH_NAME], "what does back\\slash.md say?")
    assert lanes.get("exact") == {BACKSLASH_NAME}
