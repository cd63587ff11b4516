"""The learned ranker's model file (issue 29): numpy scores equal LightGBM's, and a model that does not fit
the feature extractor is refused with one clear error."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import lightgbm as lgb  # the dev extra installs it (it trains the shipped model)
import numpy as np
import pytest

from evals.train_ranker import export
from nodes.context_retrieval.learned_ranker import (
    MODEL_FORMAT,
    MODEL_PATH,
    RankerModelError,
    load_ranker,
    parse_model,
    rrf_prior,
)
from nodes.context_retrieval.rank_features import FEATURES, RankQuery
from nodes.evidence import EvidenceRow


@pytest.fixture(scope="module")
def trained() -> tuple[Any, dict[str, Any], np.ndarray]:
    """A small LambdaRank model on random data over the real feature columns, and its exported file."""
    rng = np.random.default_rng(0)
    groups = [20] * 30
    x = rng.normal(size=(sum(groups), len(FEATURES)))
    y = (x[:, 3] + 0.5 * x[:, 10] + rng.normal(scale=0.3, size=len(x)) > 1.0).astype(int)
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 4, "min_data_in_leaf": 5, "verbose": -1,
                         "seed": 1, "deterministic": True, "force_row_wise": True},
                        lgb.Dataset(x, y, group=groups), num_boost_round=30)
    return booster, export(booster, 2.0, {"note": "test"}), x


def test_numpy_scores_equal_lightgbm(trained: tuple[Any, dict[str, Any], np.ndarray]) -> None:
    booster, data, x = trained
    ranker = parse_model(json.loads(json.dumps(data)))  # through JSON, as the file is read
    assert ranker.score(x[:20]) == pytest.approx(booster.predict(x[:20]) + rrf_prior(20, 2.0), abs=1e-9)


def test_the_rrf_prior_alone_keeps_the_fused_order() -> None:
    data = {"format": MODEL_FORMAT, "features": list(FEATURES), "prior_weight": 1.0,
            "trees": [{"feature": [], "threshold": [], "left": [], "right": [], "value": [0.25]}]}
    rows = [EvidenceRow(id=str(i), path=f"f{i}.md", layer="D0_DOC_CHUNKS", content="x") for i in range(5)]
    ordered = parse_model(data).order(rows, RankQuery("q"), {})
    assert [r.id for r in ordered] == ["0", "1", "2", "3", "4"]
    assert ordered[0].scores["learned"] == pytest.approx(1.25)


def _broken(data: dict[str, Any], change: str) -> dict[str, Any]:
    bad = copy.deepcopy(data)
    if change == "renamed feature":
        bad["features"][0] = "rr_something_else"
    elif change == "missing feature":
        bad["features"] = bad["features"][:-1]
    elif change == "other order":
        bad["features"][0], bad["features"][1] = bad["features"][1], bad["features"][0]
    elif change == "format":
        bad["format"] = "lotsman-ranker/0"
    elif change == "no prior":
        del bad["prior_weight"]
    elif change == "tree without leaves":
        del bad["trees"][0]["value"]
    elif change == "split beyond the features":
        bad["trees"][0]["feature"][0] = len(FEATURES) + 3
    return bad


@pytest.mark.parametrize(("change", "message"), [
    ("renamed feature", r"trained on other features \(missing \['rr_ranked'\], unknown \['rr_something_else'\]"),
    ("missing feature", r"trained on other features \(missing \['title_sections'\]"),
    ("other order", r"other order"),
    ("format", r"format 'lotsman-ranker/0'"),
    ("no prior", r"no usable prior_weight"),
    ("tree without leaves", r"malformed"),
    ("split beyond the features", r"splits on a feature it does not name"),
])
def test_a_model_that_does_not_fit_is_refused(trained: tuple[Any, dict[str, Any], np.ndarray], change: str,
                                              message: str) -> None:
    with pytest.raises(RankerModelError, match=message) as err:
        parse_model(_broken(trained[1], change))
    assert "\n" not in str(err.value) and "retrain" in str(err.value)


def test_a_missing_model_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(RankerModelError, match=r"no ranker model at .*train_ranker.*ranker=rrf"):
        load_ranker(tmp_path / "absent.json")


def test_the_shipped_model_fits_the_feature_extractor() -> None:
    """A change to FEATURES without retraining (`python -m evals.train_ranker`) fails here, not in production."""
    ranker = load_ranker(MODEL_PATH)
    assert ranker.features == FEATURES and ranker.trees
    assert set(ranker.meta["leave_one_corpus_out"]) >= {"macro"}


def test_the_trainer_reports_a_corpus_folder_it_cannot_use_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from evals.train_ranker import main

    assert main(["--corpora-dir", "/proc/no-such-dir", "--dry-run"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "/proc/no-such-dir" in err[0]
