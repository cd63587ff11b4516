"""Text safe to print on a terminal: file and session names may hold control characters."""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls (0x9b is a one-byte CSI on some terminals). Tab and newline are kept
# only where the caller prints multi-line text (answers); a name or an error message is always one line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_KEEP_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # '\x1b', '\n', '\t': visible, and unambiguous


def printable(text: object, *, multiline: bool = False) -> str:
    """`text` with control characters escaped (`\\x1b`, `\\n`), so it cannot forge lines or move the cursor.

    Args:
        text: anything; converted with `str`.
        multiline: keep newlines and tabs (answer text); names and messages are escaped to one line.
    """
    pattern = _CONTROL_KEEP_LINES if multiline else _CONTROL
    return pattern.sub(_escape, str(text))
