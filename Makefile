# Targets match the README. Everything runs from a local virtualenv built from the pinned constraints.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
QUESTION ?= Как Lotsman выбирает профиль retrieval для вопроса про API?

export LANGGRAPH_CLI_NO_ANALYTICS = 1
export LANGGRAPH_NO_VERSION_CHECK = true

.PHONY: setup demo test test-unit bench lint eval clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
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

clean:
	rm -rf $(VENV) .data out
