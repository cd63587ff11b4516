"""SQL statement builder (seed 001 validation rules): escaping, normalisation, no SQL without input."""

from __future__ import annotations

import pytest

from stores.statements import (
    RetrievalStatementBuilder,
    RetrieveFilters,
    _user_like_patterns,
    escape_like,
    normalize_path,
    path_lookups,
    query_terms,
)


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("100%", "100\\%"), ("a_b", "a\\_b"), ("c:\\x", "c:\\\\x"), ("plain/path.md", "plain/path.md")],
)
def test_escape_like_makes_wildcards_literal(raw: str, escaped: str) -> None:
    assert escape_like(raw) == escaped


@pytest.mark.parametrize(
    ("raw", "norm"),
    [("./docs/a.md", "docs/a.md"), ("/docs/a.md", "docs/a.md"), ("   ", ""), ("././a", "a")],
)
def test_normalize_path(raw: str, norm: str) -> None:
    assert normalize_path(raw) == norm


@pytest.mark.parametrize(
    ("raw", "separator", "lookups"),
    [
        ("docs\\api\\x.md", False, ["docs\\api\\x.md", "docs/api/x.md"]),  # POSIX: as written, then `/`
        ("docs\\api\\x.md", True, ["docs/api/x.md"]),                       # Windows: a separator only
        ("back\\slash.md", False, ["back\\slash.md", "back/slash.md"]),      # the literal name first
        ("./docs/a.md", False, ["docs/a.md"]),                                # one spelling, once
        (".\\docs\\a.md", False, [".\\docs\\a.md", "docs/a.md"]),
        ("  \\ ", False, []),                                                 # no name: no lookup
    ],
)
def test_path_lookups(raw: str, separator: bool, lookups: list[str]) -> None:
    assert path_lookups(raw, backslash_separator=separator) == lookups


def test_policy_like_patterns_pass_through_and_drop_match_all() -> None:
    # the policy escapes user text already (`%add\\_api\\_route%`); escaping again would break it
    assert _user_like_patterns(["%README.md%", "%add\\_api\\_route%", "  ", "%%"]) == [
        "%readme.md%", "%add\\_api\\_route%"]


def test_exact_files_drop_empty_paths_and_skip_sql_when_none_left() -> None:
    b = RetrievalStatementBuilder("rag_chunks_d64")
    assert b.build_exact_files("s", ["", "  ", "./"], [], 10) is None
    stmt, params = b.build_exact_files("s", ["./docs/a.md", "docs/a.md", ""], [], 10)
    assert params["paths"] == ["docs/a.md"]


def test_lexical_code_without_terms_builds_no_sql() -> None:
    assert RetrievalStatementBuilder("t").build_lexical_code("s", "?? !! a", 10) is None


def test_retrieve_without_embedding_or_terms_builds_no_sql() -> None:
    stmt, params = RetrievalStatementBuilder("t").build_retrieve("s", None, "", RetrieveFilters(), limit=5)
    assert params == {}


def test_user_text_only_reaches_sql_as_parameters() -> None:
    evil = "'; DROP TABLE rag_sessions; --"
    stmt, params = RetrievalStatementBuilder("t").build_retrieve(
        evil, [0.1, 0.2], evil, RetrieveFilters(path_prefixes=[evil], metadata_domain=evil), limit=5)
    rendered = stmt.as_string(None) if hasattr(stmt, "as_string") else str(stmt)
    assert "DROP TABLE" not in rendered
    assert params["sid"] == evil and params["domain"] == evil.lower()


def test_query_terms_are_capped_and_deduped() -> None:
    terms = query_terms(" ".join(f"word{i} word{i}" for i in range(100)))
    assert len(terms) == 24 and len(set(terms)) == 24


def test_lexical_query_goes_through_the_or_tsquery_function_with_stop_lexemes() -> None:
    stmt, params = RetrievalStatementBuilder("t").build_retrieve(
        "s", None, "Как настроить CORS", RetrieveFilters(), limit=5, stop_lexemes=["fastapi"])
    assert params["stop"] == ["fastapi"] and params["qtext"] == "как настроить cors"


def test_lower_camel_case_words_also_give_their_parts() -> None:
    """`operationId` must reach code that spells it `operation_id` (PostgreSQL splits snake_case only)."""
    from stores.statements import query_terms

    assert query_terms("Где вычисляется operationId?") == ["где", "вычисляется", "operationid", "operation"]
    # not lowerCamel: `APIRouter` stays whole (so does the index's lexeme); snake_case adds its joined name
    assert query_terms("APIRouter and get_app_dir") == ["apirouter", "and", "get_app_dir", "getappdir"]


def test_snake_case_words_also_give_the_whole_name_as_one_word() -> None:
    """The index adds `get_app_dir` as one lexeme (`getappdir`, schema v7): the question's spelling must
    give the same word, or only the name's common parts (`get`, `app`) would match."""
    assert query_terms("Где get_app_dir и _private_name?") == [
        "где", "get_app_dir", "private_name", "getappdir", "privatename"]
    assert query_terms("FileResponse datetime.timedelta") == ["fileresponse", "datetime", "timedelta"]
