"""Issue 25, items 3 and 10: text printed on a terminal cannot reorder itself or carry undecodable bytes."""

from __future__ import annotations

import pytest

from graph.terminal import printable, undecodable

BIDI = ["\u061c", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
        "\u2066", "\u2067", "\u2068", "\u2069"]
"""Every bidi control: the Arabic letter mark, LRM/RLM, the embeddings and overrides, the isolates."""


@pytest.mark.parametrize("control", BIDI, ids=[f"U+{ord(c):04X}" for c in BIDI])
@pytest.mark.parametrize("multiline", [False, True], ids=["one-line", "multiline"])
def test_bidi_controls_are_escaped(control: str, multiline: bool) -> None:
    shown = printable(f"docs/evil{control}dm.exe.md", multiline=multiline)
    assert shown == f"docs/evil\\u{ord(control):04x}dm.exe.md"


@pytest.mark.parametrize(("raw", "shown"), [
    ("invoice\u202egpj.exe", "invoice\\u202egpj.exe"),       # the classic: shows as `invoiceexe.jpg`
    ("a\u2028b\u2029c", "a\\u2028b\\u2029c"),                # line and paragraph separators forge lines too
    ("caf\udce9.md", "caf\\xe9.md"),                         # an undecodable byte (surrogate escape) shows as itself
    ("half\ud800pair", "half\\ud800pair"),                   # a lone surrogate that is no escaped byte
    ("עברית and العربية", "עברית and العربية"),              # right-to-left letters themselves are text
    ("emoji 👍 and ё", "emoji 👍 and ё"),
    ("zero\u200bwidth", "zero\u200bwidth"),                  # not a bidi control: left as it is
])
def test_printable_table(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_printable_output_always_encodes_as_utf8() -> None:
    printable("caf\udce9 \ud800 \u202e").encode("utf-8")  # a lone surrogate would raise UnicodeEncodeError


@pytest.mark.parametrize(("text", "bad"), [
    ("café", None),
    ("", None),
    ("caf\udce9", "\\xe9"),
    ("\udcff", "\\xff"),
    ("ok\udcc3\udca9then\udcff", "\\xc3"),   # the first one is named
    ("\ud800", "\\ud800"),
])
def test_undecodable_names_the_first_bad_byte(text: str, bad: str | None) -> None:
    assert undecodable(text) == bad
