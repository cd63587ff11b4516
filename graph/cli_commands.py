"""Commands that need the indexing and QA stacks (registered into `graph.cli`)."""

from __future__ import annotations
