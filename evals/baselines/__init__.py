"""Baselines the Lotsman figures are compared with (issue 38): plain pipelines run on the same corpora, the
same dev cases and the same matcher (`evals.facts.fact_in_text`). `llamaindex` is the LlamaIndex one
(docs/evals/baseline.md); `scoring` holds the pure scoring helpers they share."""
