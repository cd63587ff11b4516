"""The ranker's trainer (issue 29): cached candidates retrain to the same features, and a model that loses
to RRF on a held-out corpus is not written."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.train_ranker import Candidates, beats_rrf_everywhere, featurize, load_candidates, save_candidates
from nodes.context_retrieval.rank_features import RankQuery
from nodes.evidence import EvidenceRow

ROWS = [
    EvidenceRow(id="1", path="docs/cors.md", layer="D0_DOC_CHUNKS", title="CORS > Пример",
                content="app.add_middleware(CORSMiddleware)", lanes={"semantic": 1, "lexical": 3},
                scores={"lexical_score": 0.4, "distance": 0.3}, fused_score=0.09, span_start=3, span_end=9),
    EvidenceRow(id="2", path="src/app.py", layer="C1_SYMBOL_CATALOG", title="app.make", content="def make(): ...",
                lanes={"code": 2}, fused_score=0.05, metadata={"kind": "function"}),
]


def test_cached_candidates_give_the_features_they_were_collected_with(tmp_path: Path) -> None:
    got = Candidates("c", "c-1", ROWS, RankQuery("Как включить CORSMiddleware?", ["cors"], code_plan=True),
                     {"1": 0.3, "2": 0.5}, [2, 0], {"docs/cors.md"})
    save_candidates([got], tmp_path / "cands.jsonl")
    [back] = load_candidates(tmp_path / "cands.jsonl")
    assert back.rows == got.rows and back.query == got.query and back.gold == got.gold
    a, b = featurize(got), featurize(back)
    assert (a.x == b.x).all() and list(a.y) == list(b.y) and a.paths == b.paths


def _table(*gains: float, macro_gain: float | None = None) -> dict[str, dict[str, float]]:
    table = {f"c{i}": {"rrf_mrr": 0.6, "learned_mrr": 0.6 + g} for i, g in enumerate(gains)}
    m = sum(gains) / len(gains) if macro_gain is None else macro_gain
    table["macro"] = {"rrf_mrr": 0.6, "learned_mrr": 0.6 + m}
    return table


@pytest.mark.parametrize(("table", "written"), [
    (_table(0.02, 0.01, 0.03), True),
    (_table(0.05, 0.0, 0.01), True),          # a corpus that stays equal does not block
    (_table(0.05, -0.001, 0.04), False),      # any corpus that loses does
    (_table(0.0, 0.0, 0.0), False),           # nothing gained: keep the order we have
])
def test_a_model_is_written_only_when_no_held_out_corpus_loses(table: dict[str, dict[str, float]],
                                                                written: bool) -> None:
    assert beats_rrf_everywhere(table) is written


@pytest.mark.parametrize(("labels", "fitted"), [
    ([0, 1, 2], [0, 1, 1]),    # a row holding a key fact counts as any row of its gold file
    ([2, 2, 0], [1, 1, 0]),
    ([0, 0], [0, 0]),
])
def test_trees_are_fitted_on_rows_of_gold_files(labels: list[int], fitted: list[int]) -> None:
    import numpy as np

    from evals.train_ranker import PARAMS, relevance

    assert list(relevance(np.array(labels))) == fitted
    assert len(PARAMS["label_gain"]) > max(fitted)  # LightGBM refuses a label beyond its gains
