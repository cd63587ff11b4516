"""The learned ranker: a LambdaRank tree ensemble, exported to JSON and evaluated in numpy.

Training (`python -m evals.train_ranker`) uses LightGBM; running needs only numpy: the model file holds each
tree as flat arrays (split feature, threshold, children, leaf values) and the names of the features it was
trained on. The trees correct the RRF order rather than replace it: the score of a candidate at fused
position i is `prior_weight / (i + 1)` plus the trees' sum (`rrf_prior`; the trainer starts boosting from the
same prior). A file whose features differ from `rank_features.FEATURES` is refused with a clear error instead
of silently scoring the wrong columns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from nodes.context_retrieval.rank_features import FEATURES, MAX_CANDIDATES, RankQuery, candidate_features
from nodes.evidence import EvidenceRow
from stores.errors import LotsmanError

MODEL_FORMAT = "lotsman-ranker/1"
MODEL_PATH = Path(__file__).with_name("ranker_model.json")
"""The shipped model, reproduced by `python -m evals.train_ranker` from the pinned eval corpora."""


class RankerModelError(LotsmanError):
    """A ranker model file that cannot be used (missing, malformed, or trained on other features)."""

    exit_code = 1


@dataclass(frozen=True)
class Tree:
    """One regression tree as arrays over its internal nodes; a child < 0 is leaf `~child`."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    """Leaf values (the learning rate already applied)."""


def rrf_prior(n: int, weight: float) -> np.ndarray:
    """The prior score of `n` candidates in their fused (RRF) order: `weight / (position + 1)`."""
    return weight / (np.arange(n) + 1.0)


@dataclass(frozen=True)
class Forest:
    """Every tree in one padded array per field, so that scoring walks all trees at once, one level per
    step (100 trees one by one cost ~6 ms a request; together, well under 1 ms)."""

    feature: np.ndarray
    """(trees, max internal nodes) split feature; a tree without a split has one dummy node."""
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    """(trees, max leaves) leaf values."""
    depth: int

    @classmethod
    def of(cls, trees: Sequence[Tree]) -> Forest:
        n_nodes = max(1, *(len(t.feature) for t in trees)) if trees else 1
        n_leaves = max(1, *(len(t.value) for t in trees)) if trees else 1
        shape = (len(trees), n_nodes)
        feature, threshold = np.zeros(shape, dtype=np.int64), np.full(shape, np.inf)
        left, right = np.full(shape, ~0, dtype=np.int64), np.full(shape, ~0, dtype=np.int64)
        value = np.zeros((len(trees), n_leaves))
        for i, t in enumerate(trees):
            k = len(t.feature)
            feature[i, :k], threshold[i, :k], left[i, :k], right[i, :k] = t.feature, t.threshold, t.left, t.right
            value[i, : len(t.value)] = t.value
        return cls(feature, threshold, left, right, value, depth=n_nodes)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The trees' sum for each row of `x`."""
        trees = np.arange(len(self.feature))[:, None]
        rows = np.arange(len(x))[None, :]
        node = np.zeros((len(self.feature), len(x)), dtype=np.int64)
        for _ in range(self.depth):  # a path visits at most every internal node once
            inner = node >= 0
            if not inner.any():
                break
            at = np.where(inner, node, 0)
            go_left = x[rows, self.feature[trees, at]] <= self.threshold[trees, at]
            node = np.where(inner, np.where(go_left, self.left[trees, at], self.right[trees, at]), node)
        return self.value[trees, ~node].sum(axis=0)


@dataclass(frozen=True)
class LearnedRanker:
    """A tree ensemble over `FEATURES` on top of the RRF prior."""

    trees: tuple[Tree, ...]
    features: tuple[str, ...]
    prior_weight: float
    meta: Mapping[str, Any]
    forest: Forest | None = None

    def score(self, x: np.ndarray) -> np.ndarray:
        """Scores of candidates given in fused order: the RRF prior plus the trees' sum."""
        total = rrf_prior(len(x), self.prior_weight)
        if len(x) == 0 or not self.trees:
            return total
        return total + (self.forest or Forest.of(self.trees)).predict(x)

    def order(self, rows: Sequence[EvidenceRow], query: RankQuery,
              similarity: Mapping[str, float]) -> list[EvidenceRow]:
        """The first `MAX_CANDIDATES` rows re-ordered by the model (its score in `scores["learned"]`), the
        rest after them in their fused order."""
        head, tail = list(rows[:MAX_CANDIDATES]), list(rows[MAX_CANDIDATES:])
        if not head:
            return tail
        scores = self.score(candidate_features(head, query, similarity))
        order = np.argsort(-scores, kind="stable")
        ranked = [head[i].model_copy(update={"scores": {**head[i].scores, "learned": round(float(scores[i]), 5)}})
                  for i in order]
        return ranked + tail


def parse_model(data: Mapping[str, Any], *, expected: Sequence[str] = FEATURES,
                trainer: str = "python -m evals.train_ranker") -> LearnedRanker:
    """Build a ranker from a model file's JSON, refusing one trained on other features (`trainer`: the
    command that rebuilds it, named in the error)."""
    if data.get("format") != MODEL_FORMAT:
        raise RankerModelError(f"ranker model format {data.get('format')!r} is not {MODEL_FORMAT!r}: "
                               f"retrain it with `{trainer}`")
    features = tuple(data.get("features") or ())
    if features != tuple(expected):
        missing = [f for f in expected if f not in features]
        extra = [f for f in features if f not in expected]
        raise RankerModelError(
            f"ranker model was trained on other features (missing {missing or '-'}, unknown {extra or '-'}"
            f"{', other order' if not missing and not extra else ''}): retrain it with `{trainer}`")
    try:
        trees = tuple(Tree(feature=np.asarray(t["feature"], dtype=np.int64),
                           threshold=np.asarray(t["threshold"], dtype=np.float64),
                           left=np.asarray(t["left"], dtype=np.int64), right=np.asarray(t["right"], dtype=np.int64),
                           value=np.asarray(t["value"], dtype=np.float64)) for t in data["trees"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RankerModelError(f"ranker model is malformed ({type(exc).__name__}: {exc}): retrain it") from None
    prior = data.get("prior_weight")
    if not isinstance(prior, int | float) or isinstance(prior, bool) or prior < 0:
        raise RankerModelError(f"ranker model has no usable prior_weight ({prior!r}): retrain it")
    for t in trees:
        if len(t.feature) and (t.feature.max() >= len(features) or t.feature.min() < 0):
            raise RankerModelError("ranker model splits on a feature it does not name: retrain it")
    return LearnedRanker(trees=trees, features=features, prior_weight=float(prior), meta=dict(data.get("meta") or {}),
                         forest=Forest.of(trees))


@lru_cache(maxsize=4)
def load_ranker(path: Path = MODEL_PATH) -> LearnedRanker:
    """The model at `path` (the shipped one by default), read once per process."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RankerModelError(f"no ranker model at {path}: run `python -m evals.train_ranker` "
                               "or use ranker=rrf") from None
    except (OSError, ValueError) as exc:
        raise RankerModelError(f"cannot read the ranker model {path}: {exc}") from None
    return parse_model(data)
