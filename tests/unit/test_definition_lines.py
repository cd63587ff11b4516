"""Issue 29 item 2: a long definition is quoted by the lines that answer, not by its signature alone.

A definition longer than MAX_CODE_LINES is shown as its header (signature, docstring's first paragraph) and
the lines that matter. An eleven-line parameter list used to fill the budget, and a default stated in other
words than the question's (`max_width = 80` for "how wide is the help?") was never shown.
"""

from __future__ import annotations

import pytest

from nodes.context_analysis.passages import MAX_CODE_LINES, code_candidates
from nodes.evidence import EvidenceRow


def _row(lines: list[str]) -> EvidenceRow:
    return EvidenceRow(id="r1", path="mod.py", layer="C0_SOURCE_CHUNKS", content="\n".join(lines),
                       span_start=1, span_end=len(lines))


LONG_SIGNATURE = [
    "def edit(",
    "    text: str | None = None,",
    "    editor: str | None = None,",
    "    env: dict | None = None,",
    "    require_save: bool = True,",
    '    extension: str = ".txt",',
    "    filename: str | None = None,",
    ") -> str | None:",
    '    """Edits the given text in the defined editor."""',
    "    from ._termui_impl import Editor",
    "",
    "    ed = Editor(editor=editor, env=env, require_save=require_save, extension=extension)",
    "    if filename is None:",
    "        return ed.edit(text)",
    "    if isinstance(filename, str):",
    "        filename = (filename,)",
    "    # versionchanged 8.2.0: several files at once",
    "    ed.edit_files(filename)",
    "    return None",
]

UNNAMED_DEFAULT = [
    "def __init__(",
    "    self,",
    "    indent_increment: int = 2,",
    "    width: int | None = None,",
    "    max_width: int | None = None,",
    ") -> None:",
    "    import shutil",
    "",
    "    self.indent_increment = indent_increment",
    "    if max_width is None:",
    "        max_width = 80",
    "    if width is None:",
    "        width = FORCED_WIDTH",
    "        if width is None:",
    "            width = max(min(shutil.get_terminal_size().columns, max_width) - 2, 50)",
    "    self.width = width",
    "    self.current_indent = 0",
    "    self.buffer = []",
]


@pytest.mark.parametrize(("lines", "wanted", "shown", "not_shown"), [
    # a long signature keeps its first and last lines and the parameters that use an asked-about name,
    # and leaves room for the body's lines that use them
    (LONG_SIGNATURE, {"filename", "versi"}, ["def edit(", "filename: str | None = None,", ") -> str | None:",
                                             "# versionchanged 8.2.0: several files at once",
                                             "ed.edit_files(filename)"],
     ["editor: str | None = None,", "require_save: bool = True,"]),
    # a value stated under another name than the question's words is shown once the used lines are in
    (UNNAMED_DEFAULT, {"ширин", "справ"}, ["def __init__(", "max_width = 80"], []),
], ids=["long-signature", "unnamed-default"])
def test_long_definition_shows_the_lines_that_answer(lines: list[str], wanted: set[str], shown: list[str],
                                                     not_shown: list[str]) -> None:
    (candidate,) = code_candidates(_row(lines), wanted)
    text = candidate.text.split("\n")
    for line in shown:
        assert any(t.strip() == line.strip() for t in text), line
    for line in not_shown:
        assert all(t.strip() != line.strip() for t in text), line
    assert len(text) <= 2 * MAX_CODE_LINES  # shown lines plus `...` markers


def test_short_signature_is_kept_whole() -> None:
    lines = ["def f(", "    a: int = 1, b: int = 2,", ") -> int:", *[f"    x{i} = a + b + {i}" for i in range(14)]]
    (candidate,) = code_candidates(_row(lines), {"nothing"})
    assert candidate.text.split("\n")[:3] == lines[:3]


def test_a_signature_of_more_than_ten_lines_is_compacted_too() -> None:
    # cut at ten header lines, the closing `) -> None:` was never reached and every parameter was shown
    lines = ["def f(", *[f"    p{i}: int = {i}," for i in range(9)], "    timeout: float = 5.0,", ") -> None:",
             '    """Doc."""', *[f"    s{i} = g({i})" for i in range(30)], "    timeout = DEFAULT_TIMEOUT"]
    row = EvidenceRow(id="r", path="m.py", layer="C0_SOURCE_CHUNKS", content="\n".join(lines),
                      span_start=1, span_end=len(lines))
    text = code_candidates(row, {"timeo"})[0].text
    assert "p0: int = 0," not in text
    assert "timeout = DEFAULT_TIMEOUT" in text
