"""`parse_files`: worker processes give the same outcomes, in the same order, as parsing inline."""

from __future__ import annotations

from pathlib import Path

from stores.indexing import parsing
from stores.indexing.files import SourceFile, git_blob_sha


def _source(i: int) -> SourceFile:
    if i % 7 == 3:
        path, text = f"pkg/broken_{i}.py", "def broken(:\n"
    elif i % 2:
        path, text = f"pkg/mod_{i}.py", f'"""Module {i}."""\n\n\ndef f{i}(x):\n    """Double x."""\n    return 2 * x\n'
    else:
        path, text = f"docs/page_{i}.md", f"# Page {i}\n\nSome text about feature {i}.\n"
    return SourceFile(path=path, abs_path=Path("/nonexistent") / path, text=text,
                      blob_sha=git_blob_sha(text.encode()))


def test_workers_match_inline_parsing_in_order() -> None:
    sources = [_source(i) for i in range(parsing.INLINE_MAX_FILES + 10)]
    inline = list(parsing.parse_files(sources, workers=0))
    pooled = list(parsing.parse_files(sources, workers=2))
    assert pooled == inline
    assert [o.skip_reason is not None for o in pooled] == [i % 7 == 3 for i in range(len(sources))]
    assert all(r.path == s.path for s, o in zip(sources, pooled, strict=True) for r in o.records)
