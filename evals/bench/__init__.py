"""The performance benchmark behind `make bench` (`python -m evals.bench`); see `evals/bench/__main__.py`."""
