"""The folders a walk visits, as `stores.indexing.files` walks them: for tests that measure how far the
folder-size guard counts before it refuses (`check_folder_size` stops at the limit + 1)."""

from __future__ import annotations

import os

import pytest

import stores.indexing.files as files


def count_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace `os.walk` as files.py sees it with one that records each folder it yields; returns the list."""
    seen: list[str] = []
    real_walk = os.walk

    def counting_walk(top, *args, **kwargs):  # type: ignore[no-untyped-def]
        for entry in real_walk(top, *args, **kwargs):
            seen.append(entry[0])
            yield entry

    monkeypatch.setattr(files.os, "walk", counting_walk)
    return seen
