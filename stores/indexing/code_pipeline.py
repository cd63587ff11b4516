"""Code indexing pipeline: one Python file in, rows of the code layers (C0–C3, C7) out (pure, no I/O)."""

from __future__ import annotations

import ast
import warnings

from stores.indexing.code.chunks import chunk_records
from stores.indexing.code.dependencies import dependency_records
from stores.indexing.code.entrypoints import entrypoint_records, find_entrypoints
from stores.indexing.code.facts import fact_records
from stores.indexing.code.module import build_context
from stores.indexing.code.symbols import collect_symbols, symbol_records
from stores.indexing.files import normalize_newlines
from stores.indexing.records import PipelineResult
from stores.indexing.versions import CODE_PIPELINE_VERSION  # noqa: E402,F401 - re-exported: the parse cache key


class CodeParseError(ValueError):
    """A Python file that `ast` cannot parse; the indexing job reports it as a skipped file."""

    def __init__(self, path: str, line: int | None, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        where = f"syntax error at line {line}" if line else "syntax error"
        super().__init__(f"{where}: {detail}" if detail else where)


CodeResult = PipelineResult
"""Rows produced for one Python file plus non-fatal problems to report."""


def index_python(path: str, text: str) -> CodeResult:
    """Turn one Python file into C0–C3 and C7 rows (and D2 endpoint facts for its HTTP routes).

    Args:
        path: Path relative to the indexed root, with forward slashes.
        text: The file's source (any newline style).

    Returns:
        Rows in layer order: C1 symbols, C0 chunks, C2 edges, C3 entrypoints, D2 endpoint facts, C7 facts.

    Raises:
        CodeParseError: The source is not valid Python (message: `syntax error at line N: ...`).
    """
    text = normalize_newlines(text.removeprefix("\ufeff"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # e.g. invalid escapes in old code
            tree = ast.parse(text, filename=path, type_comments=False)
    except SyntaxError as error:
        raise CodeParseError(path, error.lineno, error.msg) from error
    except (ValueError, RecursionError, MemoryError) as error:  # NUL bytes, absurd nesting
        raise CodeParseError(path, None, str(error) or type(error).__name__) from error
    context = build_context(path, text, tree)
    symbols = collect_symbols(context)
    entries = find_entrypoints(context, symbols)
    handlers = {entry.handler for entry in entries if entry.handler}
    entry_rows = entrypoint_records(context, symbols, entries)
    records = [
        *symbol_records(context, symbols, handlers),
        *chunk_records(context, symbols),
        *dependency_records(context, symbols),
        *entry_rows,
        *fact_records(context),
    ]
    return CodeResult(records=records)
