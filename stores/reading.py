"""Reading a session's indexed lines back: what a cited `path:start-end` says, from the index, not the disk."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

from stores.errors import UsageError
from stores.indexing.files import BACKSLASH_IS_SEPARATOR
from stores.layers import Layer
from stores.sessions import RagSession, get_session
from stores.statements import escape_like, normalize_path

MAX_READ_LINES = 400
"""Most lines one read returns: a cited passage is tens of lines (doc chunks ≤ ~1200 chars, code chunks
≤ 150 lines); a whole large file in one call would flood an agent's context."""
MAX_PATH_CHARS = 1000

VERBATIM_LAYERS = (Layer.D0_DOC_CHUNKS.value, Layer.C0_SOURCE_CHUNKS.value)
"""Layers whose `content` is the file's own lines `span_start..span_end` (code chunks may start with a
comment line naming their class, which `assemble_lines` drops). The other layers are derived text."""


@dataclass(frozen=True)
class IndexedLines:
    """Lines `start_line..end_line` of one file as the session's current index holds them."""

    session: str
    """The session's name."""
    path: str
    """The file, relative to the indexed root, as the index spells it."""
    start_line: int
    """First line returned (1-based)."""
    end_line: int
    """Last line returned (inclusive): the requested end, or the file's last indexed line if that is earlier."""
    lines: tuple[str, ...]
    """One string per line of `start_line..end_line`; a line no indexed passage holds is `""` and listed in
    `missing_lines` (blank lines between sections, comments between definitions)."""
    last_line: int
    """The file's last line known to the index."""
    missing_lines: tuple[int, ...] = ()
    """Line numbers in the range that no indexed passage covers."""
    commit: str | None = None
    """The git commit the session was indexed from, when it recorded one."""

    @property
    def text(self) -> str:
        """The lines joined with newlines."""
        return "\n".join(self.lines)


def check_range(start_line: int, end_line: int, *, max_lines: int = MAX_READ_LINES) -> None:
    """Refuse a line range that cannot be read, before any SQL.

    Raises:
        UsageError: a non-integer or non-positive line, start after end, or more than `max_lines` lines.
    """
    for name, value in (("start_line", start_line), ("end_line", end_line)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{name} must be a line number (an integer from 1), got {value!r}")
        if value < 1:
            raise UsageError(f"{name} must be 1 or more (lines are numbered from 1), got {value}")
    if start_line > end_line:
        raise UsageError(f"start_line {start_line} is after end_line {end_line}: give the first line, then the last")
    if end_line - start_line + 1 > max_lines:
        raise UsageError(f"lines {start_line}-{end_line} are {end_line - start_line + 1} lines: read at most "
                         f"{max_lines} at a time")


def clean_path(path: str, root_path: str | None = None, *, backslash_separator: bool = True) -> str:
    """The session-relative form of a user's path (`./a.md`, `a\\b.py`, or an absolute path under the
    session's root); raises `UsageError` for an empty or absurdly long one. With `backslash_separator=False`
    a `\\` stays a name character (a POSIX file may hold one, and the index stores it as it is)."""
    if not isinstance(path, str):
        raise UsageError(f"path must be a file path as the index lists it, got {path!r}")
    if len(path) > MAX_PATH_CHARS:
        raise UsageError(f"path is {len(path)} characters long: give a file path as the index lists it")
    raw = path.replace("\x00", "").strip()
    root = (root_path or "").rstrip("/")
    if backslash_separator:
        raw, root = raw.replace("\\", "/"), root.replace("\\", "/").rstrip("/")
    if root and raw.startswith(root + "/"):
        raw = raw[len(root) + 1:]
    cleaned = normalize_path(raw)
    if not cleaned:
        raise UsageError("path is empty: give a file path as the index lists it, e.g. docs/index.md")
    return cleaned


def _row_lines(group: Sequence[Mapping[str, Any]]) -> list[str] | None:
    """The file lines of one passage (the rows that share one span: a one-line part too long for one row is
    stored cut by characters, in `chunk_index` order); None when the text does not fit the span."""
    first = group[0]
    span = int(first["span_end"]) - int(first["span_start"]) + 1
    text = "".join(str(r["content"]) for r in sorted(group, key=lambda r: int(r.get("chunk_index") or 0)))
    lines = text.split("\n")
    if len(lines) < span:
        return None
    return lines[len(lines) - span:]  # a code chunk's leading `# class X(...)` comment is not a file line


def assemble_lines(rows: Iterable[Mapping[str, Any]], start_line: int, end_line: int
                   ) -> tuple[list[str], list[int]]:
    """Rebuild lines `start_line..end_line` from verbatim passages (dicts with `layer`, `span_start`,
    `span_end`, `content`, optional `chunk_index`).

    Returns:
        The lines (`""` where no passage covers one) and the numbers of the uncovered lines.
    """
    groups: dict[tuple[str, int, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((str(row["layer"]), int(row["span_start"]), int(row["span_end"])), []).append(row)
    found: dict[int, str] = {}
    for (_, span_start, span_end), group in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        lines = _row_lines(group)
        if lines is None:
            continue
        for number in range(max(span_start, start_line), min(span_end, end_line) + 1):
            found.setdefault(number, lines[number - span_start])
    numbers = range(start_line, end_line + 1)
    return [found.get(n, "") for n in numbers], [n for n in numbers if n not in found]


_READ_SQL = """
WITH g AS (SELECT active_generation, commit_sha FROM rag_sessions WHERE rag_session_id = %(sid)s),
r AS (SELECT c.layer, c.span_start, c.span_end, c.content, c.metadata_json->>'chunk_index' AS chunk_index
      FROM "{table}" c JOIN g ON c.generation = g.active_generation
      WHERE c.rag_session_id = %(sid)s AND c.path = %(path)s)
SELECT (SELECT max(span_end) FROM r) AS last_line, (SELECT commit_sha FROM g) AS commit_sha,
       coalesce((SELECT json_agg(json_build_object('layer', layer, 'span_start', span_start, 'span_end', span_end,
                                                   'content', content, 'chunk_index', chunk_index))
                 FROM r WHERE layer = ANY(%(layers)s) AND span_end >= %(start)s AND span_start <= %(end)s),
                '[]'::json) AS rows
"""
"""One statement, so the file's extent and its passages come from one snapshot of one generation, even while a
re-index switches the session to the next."""


def read_indexed_lines(conn: psycopg.Connection, session_name: str, path: str, start_line: int,
                       end_line: int) -> IndexedLines:
    """Lines `start_line..end_line` of `path` from the session's current index generation.

    An `end_line` past the file's last indexed line is cut to it; everything else that is wrong is refused
    before any passage is read.

    Args:
        conn: A connection to the Lotsman database.
        session_name: The session's name (or id).
        path: The file as the index lists it (`docs/x.md`; `./docs/x.md` and an absolute path under the
            session's root are accepted too).
        start_line: First line, from 1.
        end_line: Last line (inclusive); at most `MAX_READ_LINES` lines in all.

    Raises:
        SessionNotFoundError: no such session.
        UsageError: a bad range, a path the session does not hold, or a start past the file's end.
    """
    check_range(start_line, end_line)
    session = get_session(conn, session_name)
    # the path as written first (`back\\slash.md` is a POSIX name), then with `\\` as a separator (a Windows user)
    spellings = dict.fromkeys([clean_path(path, session.root_path, backslash_separator=BACKSLASH_IS_SEPARATOR),
                               clean_path(path, session.root_path)])
    for rel in spellings:
        with conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(_READ_SQL.format(table=session.table), {
                "sid": session.rag_session_id, "path": rel, "layers": list(VERBATIM_LAYERS),
                "start": start_line, "end": end_line}).fetchone()
        if row is not None and row["last_line"] is not None:
            break
    else:
        rel = next(iter(spellings))
    last_line = row["last_line"] if row else None
    if row is None or last_line is None:
        raise UsageError(_not_in_session(conn, session, rel))
    if start_line > last_line:
        raise UsageError(f"lines {start_line}-{end_line} are outside {rel}: it has {last_line} lines in session "
                         f"'{session.name}'")
    end = min(end_line, int(last_line))
    lines, missing = assemble_lines(row["rows"], start_line, end)
    return IndexedLines(session=session.name, path=rel, start_line=start_line, end_line=end, lines=tuple(lines),
                        last_line=int(last_line), missing_lines=tuple(missing), commit=row["commit_sha"])


def _not_in_session(conn: psycopg.Connection, session: RagSession, rel: str) -> str:
    """The message for a path the session does not hold, with files of the same name when there are some."""
    name = rel.rsplit("/", 1)[-1]
    with conn.cursor() as cur:
        similar = [r[0] for r in cur.execute(
            f'SELECT DISTINCT path FROM "{session.table}" WHERE rag_session_id = %s AND generation = '
            "(SELECT active_generation FROM rag_sessions WHERE rag_session_id = %s) AND (path = %s OR path LIKE %s) "
            "ORDER BY path LIMIT 3",
            (session.rag_session_id, session.rag_session_id, name, "%/" + escape_like(name))).fetchall()]
    hint = f": did you mean {', '.join(similar)}?" if similar else \
        ": use a path as `search` or a citation gives it (relative to the indexed root)"
    return f"{rel} is not in session '{session.name}'{hint}"


@dataclass(frozen=True)
class SessionRevision:
    """The git revision a session was indexed from, when `lotsman index --ref` recorded one."""

    git_ref: str | None = None
    commit: str | None = None


def session_revisions(conn: psycopg.Connection) -> dict[str, SessionRevision]:
    """Each session's recorded revision, by session name (sessions indexed from a plain folder have none)."""
    rows = conn.execute("SELECT name, git_ref, commit_sha FROM rag_sessions").fetchall()
    return {name: SessionRevision(git_ref, commit) for name, git_ref, commit in rows}
