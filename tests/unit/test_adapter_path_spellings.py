"""A path the user typed with `\\` separators (`docs\\api\\x.md`) finds the indexed `docs/api/x.md` in every
path lane of retrieval, while a POSIX name holding a backslash (`back\\slash.md`) is still looked up as
written first (the read tools' two-spelling lookup, `stores/reading.py:read_indexed_lines`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from nodes.context_retrieval.adapter import RetrievalAdapter, exact_lookups, missing_hints, substring_keys
from stores.embedders import FakeEmbeddings

posix_only = pytest.mark.skipif(os.sep == "\\", reason="a backslash is a name character on POSIX only")


@pytest.mark.parametrize(("hints", "lookups"), [
    (["docs\\api\\x.md"], ["docs/api/x.md"] if os.sep == "\\" else ["docs\\api\\x.md", "docs/api/x.md"]),
    (["docs/api/x.md", "./docs/api/x.md"], ["docs/api/x.md"]),     # one spelling, looked up once
    (["  ", "/"], []),                                              # no name: no SQL
])
def test_exact_lane_looks_up_every_spelling(hints: list[str], lookups: list[str]) -> None:
    assert exact_lookups(hints) == lookups


@pytest.mark.parametrize(("hints", "tests_last", "lookups"), [
    # one LIMIT for the whole lane, rows in lookup order: a fixture hinted first must not crowd out the page
    (["tests/fixtures/docs/retrieval.md", "docs/logic/retrieval_policy.md"], True,
     ["docs/logic/retrieval_policy.md", "tests/fixtures/docs/retrieval.md"]),
    (["tests/fixtures/docs/retrieval.md", "docs/logic/retrieval_policy.md"], False,   # a question about tests
     ["tests/fixtures/docs/retrieval.md", "docs/logic/retrieval_policy.md"]),
    (["src/test_app.py", "docs/b.md", "docs/a.md"], True, ["docs/b.md", "docs/a.md", "src/test_app.py"]),
])
def test_exact_lane_asks_for_test_paths_last_unless_the_question_is_about_tests(
        hints: list[str], tests_last: bool, lookups: list[str]) -> None:
    assert exact_lookups(hints, tests_last=tests_last) == lookups


@pytest.mark.parametrize(("hints", "found", "missing"), [
    (["docs\\api\\x.md"], {"docs/api/x.md"}, []),                   # found under its `/` spelling
    (["docs\\api\\x.md"], set(), ["docs\\api\\x.md"]),
    (["docs/api/x.md", "docs/y.md"], {"docs/api/x.md"}, ["docs/y.md"]),
    pytest.param(["back\\slash.md"], {"back\\slash.md"}, [], marks=posix_only),  # found as written
])
def test_missing_hints_count_a_hint_found_under_any_spelling(hints: list[str], found: set[str],
                                                             missing: list[str]) -> None:
    assert missing_hints(hints, found) == missing


def test_substring_keys_of_a_windows_path_are_its_slash_tails() -> None:
    keys = substring_keys(["docs\\tutorial\\cors.md"])
    assert keys[-3:] == ["docs/tutorial/cors.md", "tutorial/cors.md", "cors.md"]


@posix_only
def test_substring_keys_try_a_backslash_name_as_written_first() -> None:
    assert substring_keys(["back\\slash.md"]) == ["back\\slash.md", "back/slash.md", "slash.md"]


class _PathsRepository:
    """A fake store holding one session's paths: exact lookups and path substrings over them."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)

    def _row(self, path: str) -> dict[str, Any]:
        return {"id": path, "path": path, "layer": "D0", "span_start": 1, "span_end": 1, "content": path}

    def retrieve_exact_files(self, session: Any, paths: Sequence[str], **_: Any) -> list[Mapping[str, Any]]:
        return [self._row(p) for p in self.paths if p in paths]

    def retrieve_chunks_by_path_substrings(self, session: Any, subs: Sequence[str], **_: Any
                                           ) -> list[Mapping[str, Any]]:
        return [self._row(p) for p in self.paths if any(s.lower() in p.lower() for s in subs)]


@pytest.mark.parametrize("named", ["docs\\api\\x.md", "docs/api/x.md"])
def test_a_question_naming_a_windows_path_finds_the_indexed_file(named: str) -> None:
    adapter = RetrievalAdapter(_PathsRepository(["docs/api/x.md", "docs/api/y.md"]), FakeEmbeddings())  # type: ignore[arg-type]
    lanes = adapter._path_lanes(None, [named], [named], lambda lane: lane in ("exact", "substring"),  # type: ignore[arg-type]
                                landing=False)
    assert [r["path"] for r in lanes["exact"]] == ["docs/api/x.md"]
    assert "substring" not in lanes  # nothing is missing, so no substring look-up
