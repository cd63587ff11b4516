"""Text safe to print on a terminal: file and session names may hold control characters."""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls (0x9b is a one-byte CSI on some terminals); the bidi controls (Arabic
# letter mark, LRM/RLM, the embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069), which
# reorder what follows them (`invoice\u202egpj.exe` shows as `invoiceexe.jpg`); the Unicode line and
# paragraph separators; and lone surrogates: a byte that was not UTF-8 (a file name, argv) reaches Python as
# U+DC80-U+DCFF and would make the print itself fail. Tab and newline are kept only where the caller prints
# multi-line text (answers); a name or an error message is always one line.
_ALWAYS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff"
_CONTROL = re.compile(f"[\t\n{_ALWAYS}]")
_CONTROL_KEEP_LINES = re.compile(f"[{_ALWAYS}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if "\udc80" <= char <= "\udcff":  # surrogateescape: show the byte that could not be decoded
        return f"\\x{ord(char) - 0xdc00:02x}"
    return f"\\u{ord(char):04x}" if ord(char) > 0xff else repr(char)[1:-1]  # '\x1b', '\n', '\u202e'


def printable(text: object, *, multiline: bool = False) -> str:
    """`text` with control characters escaped (`\\x1b`, `\\n`, `\\u202e`), so it cannot forge lines, move
    the cursor or reorder itself, and always encodes as UTF-8.

    Args:
        text: anything; converted with `str`.
        multiline: keep newlines and tabs (answer text); names and messages are escaped to one line.
    """
    pattern = _CONTROL_KEEP_LINES if multiline else _CONTROL
    return pattern.sub(_escape, str(text))


def undecodable(text: str) -> str | None:
    """The first byte of `text` that was not valid UTF-8, escaped (`\\xe9`), or None when there is none.

    Python hands over argv and (with `errors="surrogateescape"`) stdin bytes that are not UTF-8 as lone
    surrogates; PostgreSQL, JSON and the terminal cannot take them, so entry points refuse such text.
    """
    found = _SURROGATE.search(text)
    return _escape(found) if found else None
