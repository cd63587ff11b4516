"""The learned lead (issue 29 item 2): its features, when it decides, and a model that does not fit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nodes.context_analysis.analyze import lead_first, rule_lead_scores
from nodes.context_analysis.lead_model import (
    LEAD_FEATURES,
    LEAD_MODEL_PATH,
    has_ranker_scores,
    lead_features,
    load_lead_model,
)
from nodes.context_analysis.passages import Candidate
from nodes.context_analysis.scoring import Scored
from nodes.context_retrieval.learned_ranker import MODEL_FORMAT, RankerModelError, parse_model
from nodes.evidence import EvidenceRow


def scored(rid: str, path: str, score: float, kind: str = "prose", text: str = "some words here and more",
           learned: float | None = None, distance: float | None = None) -> Scored:
    scores: dict[str, float] = {}
    if learned is not None:
        scores["learned"] = learned
    if distance is not None:
        scores["distance"] = distance
    row = EvidenceRow(id=rid, path=path, layer="D0_DOC_CHUNKS", content=text, span_start=1, span_end=3, scores=scores)
    return Scored(candidate=Candidate(row=row, kind=kind, text=text, start_line=1, end_line=3), score=score,
                  terms=[], lexical=score, features={"terms": 0.5, "identifiers": 0.25, "heading": 1.0})


def model_preferring(feature: str, gain: float = 10.0) -> dict[str, Any]:
    """A one-split model: candidates whose `feature` exceeds 0.5 score `gain` more."""
    return {"format": MODEL_FORMAT, "features": list(LEAD_FEATURES), "prior_weight": 0.0, "meta": {},
            "trees": [{"feature": [LEAD_FEATURES.index(feature)], "threshold": [0.5], "left": [~0], "right": [~1],
                       "value": [0.0, gain]}]}


def test_features_read_the_scoring_parts_the_kind_and_the_file_rank() -> None:
    items = [scored("a", "docs/a.md", 0.8, learned=2.0, distance=0.3),
             scored("b", "src/b.py", 0.4, kind="source", learned=0.5),
             scored("c", "docs/c.md", 0.2)]
    file_rank = {"docs/a.md": 1, "src/b.py": 2, "docs/c.md": 3}
    x = lead_features(items, file_rank, rule_lead_scores(items, file_rank))
    assert x.shape == (3, len(LEAD_FEATURES))
    col = {name: x[:, i].tolist() for i, name in enumerate(LEAD_FEATURES)}
    assert col["terms"] == [0.5] * 3 and col["heading"] == [1.0] * 3
    assert col["kind_prose"] == [1.0, 0.0, 1.0] and col["kind_source"] == [0.0, 1.0, 0.0]
    assert col["first_file"] == [1.0, 0.0, 0.0]
    assert "row_ranker_gap" not in col  # the ranker's row scores made every setting lose somewhere
    assert col["base"] == pytest.approx(rule_lead_scores(items, file_rank))


def test_the_model_chooses_the_lead_only_over_rows_the_learned_ranker_scored() -> None:
    model = parse_model(model_preferring("kind_source"), expected=LEAD_FEATURES)
    file_rank = {"docs/a.md": 1, "src/b.py": 2}
    ranked = [scored("a", "docs/a.md", 0.8, learned=1.0), scored("b", "src/b.py", 0.1, kind="source", learned=0.2)]
    assert [s.candidate.row.id for s in lead_first(ranked, file_rank, model)] == ["b", "a"]
    assert [s.candidate.row.id for s in lead_first(ranked, file_rank)] == ["a", "b"]  # no model: the rule
    plain = [scored("a", "docs/a.md", 0.8), scored("b", "src/b.py", 0.1, kind="source")]
    assert not has_ranker_scores(plain)
    assert [s.candidate.row.id for s in lead_first(plain, file_rank, model)] == ["a", "b"]  # ranker=rrf: the rule


def test_a_model_trained_on_other_features_is_refused_with_the_command_that_rebuilds_it() -> None:
    data = model_preferring("base")
    data["features"] = list(LEAD_FEATURES[:-1])
    with pytest.raises(RankerModelError, match="python -m evals.train_lead"):
        parse_model(data, expected=LEAD_FEATURES, trainer="python -m evals.train_lead")


def test_the_shipped_model_fits_the_features_when_there_is_one() -> None:
    model = load_lead_model()
    if not LEAD_MODEL_PATH.exists():
        assert model is None  # the rule leads alone
        return
    assert model is not None and model.features == LEAD_FEATURES and model.forest is not None
    x = np.zeros((2, len(LEAD_FEATURES)))
    assert model.forest.predict(x).shape == (2,)


@pytest.mark.parametrize(("scores", "base", "margin", "lead"), [
    ([0.0, 2.0, 1.0], [3.0, 1.0, 2.0], 0.0, 1),  # margin 0: the model alone
    ([0.0, 2.0, 1.0], [3.0, 1.0, 2.0], 2.0, 1),  # exactly the margin above the rule's pick: the model's
    ([0.0, 2.0, 1.0], [3.0, 1.0, 2.0], 2.5, 0),  # less than the margin: the rule's
    ([1.0, 1.0, 0.0], [0.0, 2.0, 2.0], 0.5, 1),  # the model agrees with the rule's pick: no override
    ([1.0, 1.0], [2.0, 2.0], 0.0, 0),  # ties go to the earliest
], ids=["margin-0", "at-margin", "below-margin", "agree", "ties"])
def test_model_overrides_the_rule_only_by_its_margin(scores: list[float], base: list[float], margin: float,
                                                      lead: int) -> None:
    from nodes.context_analysis.lead_model import overriding_lead

    assert overriding_lead(scores, base, margin) == lead


def _table(gains: dict[str, tuple[float, float]]) -> dict[str, dict[str, float]]:
    rows = {c: {"questions": 10.0, "rule": 0.5, "learned": 0.5 + kf, "rule_gold": 0.5, "learned_gold": 0.5 + g}
            for c, (kf, g) in gains.items()}
    rows["macro"] = {k: float(np.mean([r[k] for r in rows.values()])) for k in rows["a"]}
    return rows


@pytest.mark.parametrize(("tables", "chosen"), [
    # the largest macro gain where no corpus loses, not the largest macro gain
    ({(4, 60, 0.0): _table({"a": (0.2, 0.2), "b": (-0.02, 0.0)}),
      (4, 60, 0.5): _table({"a": (0.05, 0.05), "b": (0.0, 0.0)}),
      (2, 40, 0.5): _table({"a": (0.01, 0.0), "b": (0.0, 0.0)})}, (4, 60, 0.5)),
    # every setting loses somewhere or gains nothing: no model
    ({(4, 60, 0.0): _table({"a": (0.2, 0.2), "b": (0.0, -0.05)}),
      (4, 60, 1.0): _table({"a": (0.0, 0.0), "b": (0.0, 0.0)})}, None),
    # equal gains: the larger margin (closer to the rule)
    ({(4, 60, 0.1): _table({"a": (0.1, 0.0), "b": (0.0, 0.0)}),
      (4, 60, 0.5): _table({"a": (0.1, 0.0), "b": (0.0, 0.0)})}, (4, 60, 0.5)),
], ids=["no-corpus-loses", "none", "tie-larger-margin"])
def test_trainer_chooses_a_setting_no_corpus_loses_on(tables: dict[Any, Any], chosen: Any) -> None:
    from evals.train_lead import choose

    assert choose(tables) == chosen
