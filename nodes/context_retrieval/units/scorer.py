"""The learned unit scorer: a LambdaRank tree ensemble over `UNIT_FEATURES`, read from `unit_model.json`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from nodes.context_retrieval.learned_ranker import Forest, LearnedRanker, RankerModelError, parse_model
from nodes.context_retrieval.units.features import UNIT_FEATURES

UNIT_MODEL_FORMAT = "lotsman-ranker/1"
"""The unit model shares the learned ranker's file format (flat trees, feature names, a prior weight of 0)."""
UNIT_MODEL_PATH = Path(__file__).parent.parent / "unit_model.json"
"""The shipped unit model, reproduced by `python -m evals.train_units`."""

@dataclass(frozen=True)
class UnitScorer:
    """The learned unit scorer: a tree ensemble over `UNIT_FEATURES` (no prior)."""

    model: LearnedRanker

    def score(self, x: np.ndarray) -> np.ndarray:
        if len(x) == 0 or not self.model.trees:
            return np.zeros(len(x))
        return (self.model.forest or Forest.of(self.model.trees)).predict(x)


def parse_unit_model(data: Mapping[str, Any]) -> UnitScorer:
    return UnitScorer(parse_model(data, expected=UNIT_FEATURES, trainer="python -m evals.train_units"))


@lru_cache(maxsize=4)
def load_unit_scorer(path: Path = UNIT_MODEL_PATH) -> UnitScorer:
    """The unit model at `path` (the shipped one by default), read once per process."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RankerModelError(f"no unit model at {path}: run `python -m evals.train_units`") from None
    except (OSError, ValueError) as exc:
        raise RankerModelError(f"cannot read the unit model {path}: {exc}") from None
    return parse_unit_model(data)
