"""The shipped ranker is what `make ranker` writes (issue 41, item 5): trained from a recorded feature file, on
one thread, its prior weight chosen by leave-one-corpus-out — never pinned by hand."""

from __future__ import annotations

import json

from nodes.context_retrieval.learned_ranker import MODEL_PATH


def test_the_shipped_model_is_reproducible_by_make_ranker() -> None:
    meta = json.loads(MODEL_PATH.read_text(encoding="utf-8"))["meta"]
    assert len(meta["features_sha256"]) == 64
    assert meta["params"]["num_threads"] == 1 and meta["params"]["deterministic"] is True
    assert "prior_weight_pinned" not in meta and len(meta["prior_weights"]) > 1
    assert set(meta["leave_one_corpus_out"]) >= {*meta["corpora"], "macro"}
