"""The learned lead: which passage opens the answer (issue 29, "answer lines, not card lines").

The same kind of model as the learned ranker (LambdaRank trees exported to JSON, scored in numpy by
`learned_ranker.Forest`), trained by `python -m evals.train_lead` on the dev splits of the pinned corpora
(labels: see the trainer). It reads each candidate passage's scoring parts (key terms, identifiers, heading,
meaning), its kind, its file's rank and its length, plus the hand-set lead score (`base`), which it corrects
rather than replaces, and its choice replaces the rule's only by the margin the trainer chose. The ranker's
own row scores are not features: with them, every setting lost on some held-out corpus (issue 29, session
12). It was trained on evidence the learned ranker ordered: under `ranker=rrf` the rule
(`analyze.lead_first`) chooses the lead alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from nodes.context_analysis.scoring import KIND_FACTOR, SHORT_CHARS, Scored, file_weight
from nodes.context_retrieval.learned_ranker import LearnedRanker, RankerModelError, parse_model

LEAD_MODEL_PATH = Path(__file__).with_name("lead_model.json")
"""The shipped model, reproduced by `python -m evals.train_lead` from the pinned eval corpora."""
KINDS = tuple(KIND_FACTOR)
"""The passage kinds the hand-set score weighs apart (any other kind is a synthesized row)."""
LEAD_FEATURES: tuple[str, ...] = (
    "terms", "identifiers", "heading", "meaning", "embedded",
    *(f"kind_{k}" for k in KINDS), "kind_synthesized", "short",
    "file_weight", "first_file", "log_chars", "base",
)


def lead_features(scored: Sequence[Scored], file_rank: Mapping[str, int], base: Sequence[float]) -> np.ndarray:
    """One row of `LEAD_FEATURES` per candidate (pure); `base` is the rule's lead score of each."""
    out = np.zeros((len(scored), len(LEAD_FEATURES)))
    for i, s in enumerate(scored):
        c, f = s.candidate, s.features
        rank = file_rank.get(c.row.path, len(file_rank) + 1)
        out[i] = [
            f.get("terms", 0.0), f.get("identifiers", 0.0), f.get("heading", 0.0), f.get("meaning", 0.0),
            f.get("embedded", 0.0),
            *(1.0 if c.kind == k else 0.0 for k in KINDS), 0.0 if c.kind in KINDS else 1.0,
            1.0 if c.kind in ("prose", "item") and len(c.text.strip()) < SHORT_CHARS else 0.0,
            file_weight(rank), 1.0 if rank == 1 else 0.0, math.log1p(len(c.text)) / 8, base[i],
        ]
    return out


def has_ranker_scores(scored: Sequence[Scored]) -> bool:
    """The learned ranker ordered these rows (the model was trained on its scores)."""
    return any("learned" in s.candidate.row.scores for s in scored)


def overriding_lead(scores: Sequence[float], base: Sequence[float], margin: float) -> int:
    """Index of the lead: the model's best passage (`scores`, the earliest on a tie) when it scores at least
    `margin` above the rule's best (`base`), else the rule's (pure)."""
    rule = max(range(len(base)), key=lambda i: (base[i], -i))
    best = int(np.argmax(scores))
    return best if scores[best] - scores[rule] >= margin else rule


def learned_lead(model: LearnedRanker, scored: Sequence[Scored], file_rank: Mapping[str, int],
                 base: Sequence[float]) -> int:
    """Index in `scored` of the lead: the model's choice where it overrides the rule's (`overriding_lead`,
    by the margin the trainer chose, `meta["override_margin"]`)."""
    scores = model.forest.predict(lead_features(scored, file_rank, base)) if model.forest else np.zeros(len(scored))
    return overriding_lead(list(scores), base, float(model.meta.get("override_margin", 0.0)))


@lru_cache(maxsize=2)
def load_lead_model(path: Path = LEAD_MODEL_PATH) -> LearnedRanker | None:
    """The model at `path`, read once per process; None when there is none (the rule leads alone)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RankerModelError(f"cannot read the lead model {path}: {exc}") from None
    return parse_model(data, expected=LEAD_FEATURES, trainer="python -m evals.train_lead")
