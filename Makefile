# Targets match the README. Everything runs from a local virtualenv built from the pinned constraints.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
QUESTION ?= Как Lotsman выбирает профиль retrieval для вопроса про API?

export LANGGRAPH_CLI_NO_ANALYTICS = 1
export LANGGRAPH_NO_VERSION_CHECK = true

.PHONY: setup demo test test-unit bench lint eval ranker units clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev,baseline]'
	touch $(STAMP)

setup: $(STAMP)

# The web page's e2e test drives Debian's Chromium (Playwright with executable_path; no browser download).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)

# The main job: index this repository on the embedded defaults and answer a question with citations.
demo: setup
	$(BIN)/lotsman index . --session lotsman
	$(BIN)/lotsman ask "$(QUESTION)" --session lotsman

test: setup $(CHROMIUM)
	$(BIN)/pytest -q

test-unit: setup
	$(BIN)/pytest -q tests/unit

bench: setup
	$(BIN)/python -m evals.bench

lint: setup
	$(BIN)/ruff check graph nodes stores evals tests
	$(BIN)/mypy graph nodes stores

eval: setup
	$(BIN)/lotsman eval evals/datasets/lotsman_self.jsonl --corpus . --out out/eval-self.json

# The learned ranker (nodes/context_retrieval/ranker_model.json), reproduced byte for byte from the pinned
# corpora's dev splits (evals/train_ranker.py): index the corpora and write every dev question's candidate
# features to RANKER_FEATURES (minutes: indexing), then train from that file alone (fixed seeds, the prior
# weight chosen by leave-one-corpus-out). CORPORA=DIR reads corpora assembled there (default:
# <LOTSMAN_DATA_DIR>/corpora, assembled on demand by the suites' scripts).
RANKER_FEATURES ?= out/ranker-features.jsonl.gz
RANKER_OUT ?= nodes/context_retrieval/ranker_model.json
CORPORA ?=
ranker: setup
	$(BIN)/python -m evals.train_ranker --collect $(RANKER_FEATURES) $(if $(CORPORA),--corpora-dir $(CORPORA))
	$(BIN)/python -m evals.train_ranker --features $(RANKER_FEATURES) --seeds 7,11,23 --out $(RANKER_OUT)

# The learned unit scorer of the evidence pack (issue 38): retrieval over every dev case writes UNIT_CASES (the
# eval sessions must be indexed: run `make ranker` or an eval first), then training from that file alone gives
# the same bytes every time (nodes/context_retrieval/unit_model.json).
UNIT_CASES ?= out/unit-cases.json.gz
units: setup
	$(BIN)/python -m evals.train_units --collect $(UNIT_CASES)
	$(BIN)/python -m evals.train_units --cases $(UNIT_CASES)

clean:
	rm -rf $(VENV) .data out
