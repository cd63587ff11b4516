"""Parsing files for an index job: in worker processes when there are many, inline when there are few.

The pipelines are pure, CPU-bound Python. On the job's own thread they held the GIL that the embedding
thread needs for its Python parts: on the standard library (729 files) the embedder had finished 32 of
~20k texts when parsing ended 40 s later. In a worker process the parse costs CPU but never the GIL.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Generator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from stores.indexing.code_pipeline import CodeParseError, index_python
from stores.indexing.docs_pipeline import index_markdown
from stores.indexing.files import SourceFile
from stores.indexing.records import ChunkRecord

INLINE_MAX_FILES = 40
"""Fewer files than this are parsed inline: starting a worker (~0.5 s of imports) would cost more."""
CHUNK_FILES = 4
"""Files handed to a worker at a time (fewer round trips; order is kept)."""


@dataclass(frozen=True)
class ParseOutcome:
    """One file's records and warnings, or why it was skipped."""

    records: list[ChunkRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skip_reason: str | None = None


def parse_file(source: SourceFile) -> tuple[list[ChunkRecord], list[str]]:
    """Run the pipeline that fits the file; raises `CodeParseError` for broken Python."""
    index = index_python if source.path.endswith(".py") else index_markdown
    result = index(source.path, source.text)
    return list(result.records), list(result.warnings)


def parse_outcome(source: SourceFile) -> ParseOutcome:
    """`parse_file` with the expected failures turned into a skip reason (what a worker returns)."""
    try:
        records, warnings = parse_file(source)
    except CodeParseError as exc:
        return ParseOutcome(skip_reason=str(exc))
    except RecursionError:
        return ParseOutcome(skip_reason="too deeply nested to parse")
    return ParseOutcome(records=records, warnings=warnings)


def default_workers() -> int:
    """One core is left to the embedder (it uses two threads itself); at most four workers."""
    return max(1, min(4, (os.cpu_count() or 1) - 1))


def parse_files(sources: Sequence[SourceFile], workers: int | None = None) -> Generator[ParseOutcome, None, None]:
    """Parse outcomes in the order of `sources`, as they complete. Closing the generator early drops the
    files no worker has started on (a cancelled job does not wait for the whole repository to be parsed).

    Args:
        workers: worker processes; None → `default_workers()`; 0 (or few files) → inline on this thread.
    """
    workers = default_workers() if workers is None else workers
    if workers <= 0 or len(sources) < INLINE_MAX_FILES:
        yield from map(parse_outcome, sources)
        return
    # spawn, not fork: the job's process already runs threads (the embedder, the connection pool), and a
    # forked child of a threaded process can deadlock on a lock some other thread held.
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        try:
            yield from pool.map(parse_outcome, sources, chunksize=CHUNK_FILES)
        finally:  # closed early (a cancelled or failed job): the files not yet handed out are dropped
            pool.shutdown(wait=True, cancel_futures=True)
