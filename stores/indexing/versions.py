"""Pipeline versions: part of the parse cache key and of every job's recorded tree (`unchanged.py`).

A module of constants only, so that the no-op check of `lotsman index` can read them without importing the
pipelines (numpy, the parsers).
"""

from __future__ import annotations

DOCS_PIPELINE_VERSION = "docs-10"
"""Bump whenever the rows the docs pipeline produces for the same text change."""
CODE_PIPELINE_VERSION = "code-5"
"""Bump whenever the rows the code pipeline produces for the same text change (code-2: C3 entrypoints carry
request/response models, auth, task queues and schedules, CLI options; issue 30; code-3: C7 code facts,
issue 38; code-4: a command's decorator options are its own, environment writes are not reads, only declarative
classes have required fields, type variables are not constants, a module too deep to walk keeps its rows;
code-5: a Celery task's C3 row says it is a background task, in both languages, issue 41)."""
PIPELINE_VERSION = f"{DOCS_PIPELINE_VERSION}+{CODE_PIPELINE_VERSION}+1"
"""The parse cache key's version: old cache entries stop matching when a pipeline's output changes, and a
session whose last job ran another version is re-indexed even when no file changed."""
