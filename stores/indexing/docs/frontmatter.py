"""YAML frontmatter: split it off a markdown file, parse it safely, and make it JSON-safe."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

_OPEN = "---"
_CLOSE = ("---", "...")
_MAX_FRONTMATTER_LINES = 300
_KEY_LINE = re.compile(r"^[A-Za-z_][\w-]*\s*:")


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """The parsed frontmatter of one file (empty when absent or broken)."""

    data: dict[str, Any] = field(default_factory=dict)
    """JSON-safe mapping (dates become ISO strings)."""
    body_start: int = 1
    """First line of the markdown body (after the closing `---`)."""
    warning: str | None = None
    """`broken frontmatter: ...` when a block was found but could not be used."""


def split_frontmatter(text: str) -> Frontmatter:
    """Parse a leading `---` YAML block.

    A broken block (invalid YAML, not a mapping, never closed) yields empty data and a warning; its lines
    are still treated as frontmatter so the body is indexed as usual.

    Args:
        text: File text with `\\n` newlines.

    Returns:
        The frontmatter with the first body line.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != _OPEN:
        return Frontmatter()
    close = next(
        (i for i, line in enumerate(lines[1:_MAX_FRONTMATTER_LINES], start=1) if line.rstrip() in _CLOSE),
        None,
    )
    if close is None:
        # A lone leading `---` is a thematic break unless YAML-looking keys follow it.
        if len(lines) > 1 and _KEY_LINE.match(lines[1]):
            return Frontmatter(warning="broken frontmatter: no closing '---' line; indexed without it")
        return Frontmatter()
    block = "\n".join(lines[1:close])
    try:
        loaded = yaml.safe_load(block)
    except yaml.YAMLError as error:
        return Frontmatter(body_start=close + 2, warning=f"broken frontmatter: {_describe(error)}")
    if loaded is None:
        return Frontmatter(body_start=close + 2)
    if not isinstance(loaded, dict):
        warning = f"broken frontmatter: expected a mapping, got {type(loaded).__name__}"
        return Frontmatter(body_start=close + 2, warning=warning)
    return Frontmatter(data=json_safe(loaded), body_start=close + 2)


def json_safe(value: Any) -> Any:
    """Convert YAML values to what `json.dumps` accepts (dates to ISO strings, keys to str)."""
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [json_safe(item) for item in value]
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def string_list(value: Any) -> list[str]:
    """Normalize a frontmatter list field: a YAML list, a comma-separated string, or mappings with a name."""
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    result: list[str] = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("name") or item.get("id") or item.get("path") or ""
        text = str(item).strip()
        if text and text not in result:
            result.append(text)
    return result


def _describe(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).split("\n")[0]
    # +2: the mark counts from 0 inside the block, and the block starts after the opening `---` line.
    return f"{problem} at line {mark.line + 2}" if mark is not None else str(problem)
