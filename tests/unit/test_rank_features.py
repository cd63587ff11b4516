"""The learned ranker's features (issue 29): each column says what it should about a known candidate."""

from __future__ import annotations

import numpy as np
import pytest

from nodes.context_retrieval.rank_features import FEATURES, RankQuery, candidate_features, cyrillic_share
from nodes.evidence import EvidenceRow


def row(rid: str, path: str, *, layer: str = "D0_DOC_CHUNKS", title: str = "", content: str = "",
        lanes: dict[str, int] | None = None, lexical: float | None = None, fused: float = 0.01) -> EvidenceRow:
    scores = {"lexical_score": lexical} if lexical is not None else {}
    return EvidenceRow(id=rid, path=path, layer=layer, title=title, content=content, lanes=lanes or {},
                       scores=scores, fused_score=fused)


ROWS = [
    row("a", "docs/cors.md", title="CORS > Параметры", content="Используйте CORSMiddleware и allow_origins.",
        lanes={"semantic": 1, "lexical": 2}, lexical=0.5, fused=0.05),
    row("b", "src/app/middleware.py", layer="C1_SYMBOL_CATALOG", title="app.middleware.add_cors",
        content="def add_cors(app, allow_origins): ...", lanes={"code": 1}, lexical=1.0, fused=0.03),
    row("c", "README.md", title="Project", content="An overview of the project.", lanes={"ranked": 3}, fused=0.02),
    row("d", "docs/cors.md", title="CORS > Пример", content="Пример: app.add_middleware(CORSMiddleware)",
        lanes={"semantic": 4}, fused=0.01),
    row("e", "tests/test_cors.py", layer="C0_SOURCE_CHUNKS", content="def test_cors(): pass", fused=0.005),
]
QUERY = RankQuery("Как включить CORSMiddleware с allow_origins?", ["cors", "allow_origins"], code_plan=True)
SIMILARITY = {"a": 0.30, "b": 0.50, "c": 0.90, "d": 0.40}  # "e" has no vector


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return candidate_features(ROWS, QUERY, SIMILARITY)


def col(x: np.ndarray, name: str) -> np.ndarray:
    return x[:, FEATURES.index(name)]


def test_one_row_of_features_per_candidate(x: np.ndarray) -> None:
    assert x.shape == (len(ROWS), len(FEATURES))
    assert np.isfinite(x).all()


@pytest.mark.parametrize(("name", "expected"), [
    ("rr_semantic", [1.0, 0.0, 0.0, 0.25, 0.0]),
    ("rr_code", [0.0, 1.0, 0.0, 0.0, 0.0]),
    ("n_lanes", [2, 1, 1, 1, 0]),
    ("inv_pos", [1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 5]),
    ("inv_file_pos", [1.0, 1 / 2, 1 / 3, 1.0, 1 / 4]),       # docs/cors.md is the first file, twice
    ("fused_rel", [1.0, 0.6, 0.4, 0.2, 0.1]),
    ("layer_C1", [0, 1, 0, 0, 0]),
    ("path_readme", [0, 0, 1, 0, 0]),
    ("path_test", [0, 0, 0, 0, 1]),
    ("path_py", [0, 1, 0, 0, 1]),
    ("path_depth", [1, 2, 0, 1, 1]),
    ("lexical_rel", [0.5, 1.0, 0.0, 0.0, 0.0]),
    ("cos_rel", [0.0, 0.2, 0.6, 0.1, 0.65]),                 # no vector: the worst distance + 0.05
    ("inv_cos_rank", [1.0, 1 / 3, 1 / 4, 1 / 2, 1 / 5]),
    ("file_rows", [2, 1, 1, 2, 1]),
    ("file_cos_rel", [0.0, 0.2, 0.6, 0.0, 0.65]),           # a file is as near as its nearest row
    ("file_fused_rel", [1.2, 0.6, 0.4, 1.2, 0.1]),
    ("code_plan", [1, 1, 1, 1, 1]),
    ("find_files", [0, 0, 0, 0, 0]),
])
def test_feature_values(x: np.ndarray, name: str, expected: list[float]) -> None:
    assert col(x, name) == pytest.approx(expected)


def test_identifier_hits_count_names_the_question_writes(x: np.ndarray) -> None:
    # CORSMiddleware and allow_origins are identifier-shaped; row a holds both, b one, c none
    assert col(x, "identifiers")[0] == 2
    assert col(x, "identifier_hits")[:3] == pytest.approx([1.0, 0.5, 0.0])


def test_a_question_without_identifiers_marks_the_column_absent() -> None:
    x = candidate_features(ROWS[:2], RankQuery("как включить cors"), {})
    assert col(x, "identifier_hits") == pytest.approx([-1.0, -1.0])


def test_language_columns_see_a_russian_question_over_english_code(x: np.ndarray) -> None:
    assert col(x, "query_cyrillic")[0] == pytest.approx(12 / 38)  # «Как включить с» among CORSMiddleware, allow_origins
    assert col(x, "passage_cyrillic")[1] == 0.0
    assert col(x, "cyrillic_gap")[1] == pytest.approx(col(x, "query_cyrillic")[1])


@pytest.mark.parametrize(("text", "share"), [("abc", 0.0), ("абв", 1.0), ("аб cd", 0.5), ("123 !", 0.0)])
def test_cyrillic_share(text: str, share: float) -> None:
    assert cyrillic_share(text) == pytest.approx(share)


def test_no_candidates_is_an_empty_matrix() -> None:
    assert candidate_features([], QUERY, {}).shape == (0, len(FEATURES))


def test_features_do_not_depend_on_absolute_distances() -> None:
    """Distances shifted by a constant (another embedder, another language) give the same relative columns."""
    shifted = {k: v + 0.3 for k, v in SIMILARITY.items()}
    a, b = candidate_features(ROWS, QUERY, SIMILARITY), candidate_features(ROWS, QUERY, shifted)
    assert a == pytest.approx(b)


def test_a_huge_one_word_query_is_read_only_up_to_its_cap() -> None:
    """`retrieve` must survive a 100 kB question (the identifier pattern backtracks over long letter runs);
    the features read its first MAX_QUERY_CHARS characters, so a long query and its head score alike."""
    from nodes.context_retrieval.rank_features import MAX_QUERY_CHARS

    huge = "a" * 100_000
    got = candidate_features(ROWS, RankQuery(huge), SIMILARITY)
    assert got == pytest.approx(candidate_features(ROWS, RankQuery(huge[:MAX_QUERY_CHARS]), SIMILARITY))



def test_a_policy_row_has_its_layer_column() -> None:
    """D6 rows (issue 30) get a layer column of their own, not all zeros."""
    got = candidate_features([row("p", "docs/rules.md", layer="D6_POLICY_INDEX")], RankQuery("rules"), {})
    assert col(got, "layer_D6")[0] == 1 and col(got, "layer_D0")[0] == 0
