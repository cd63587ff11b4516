"""Query normalization (seed 002 §5 modules/normalizer.py)."""

from __future__ import annotations


def normalize_query(user_query: str) -> str:
    """Collapse runs of whitespace (spaces, tabs, newlines) into single spaces and trim the ends.

    Args:
        user_query: The request as the user wrote it.

    Returns:
        The normalized query; an empty string when the request held only whitespace.
    """
    return " ".join(user_query.split())
