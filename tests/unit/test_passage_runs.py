"""Issue 25 item 8: a long run of code between definitions whose head hides the asked-about names.

The gate passed a row of a 50,000-line module for "what is x49999?"; the analysis cut the row's run of
`xN = N` at its first 14 lines and found nothing to quote, so `ask` abstained where `retrieve` said relevant.
"""

from __future__ import annotations

import pytest

from nodes.context_analysis.analyze import analyze
from nodes.context_analysis.passages import MAX_CODE_LINES, code_candidates
from nodes.evidence import EvidenceRow


def _row(lines: list[str], start: int = 1) -> EvidenceRow:
    return EvidenceRow(id="r1", path="big.py", layer="C0_SOURCE_CHUNKS", content="\n".join(lines),
                       span_start=start, span_end=start + len(lines) - 1)


CONSTANTS = [f"x{i} = {i}" for i in range(100, 150)]
TABLE = ["ROUTES = {", *[f'    "r{i}": {i},' for i in range(40)], '    "target_route": 99,', "}"]


@pytest.mark.parametrize(("lines", "wanted", "shown", "not_shown"), [
    # the asked-about line past the head: the run's first line, then the lines that use the name
    (CONSTANTS, {"x149"}, ["x100 = 100", "x149 = 149"], ["x101 = 101"]),
    # inside the head: the head, as before
    (CONSTANTS, {"x105"}, [f"x{i} = {i}" for i in range(100, 100 + MAX_CODE_LINES)], ["x149 = 149"]),
    # no line uses a wanted name: the head, as before
    (CONSTANTS, {"nothing"}, ["x100 = 100"], ["x149 = 149"]),
    # an entry of a long literal: the literal's opening line and the entry
    (TABLE, {"targetroute"}, ["ROUTES = {", '"target_route": 99,'], ['"r20": 20,']),
], ids=["past-head", "in-head", "no-use", "table-entry"])
def test_long_run_cut_at_use_quotes_the_used_lines(lines: list[str], wanted: set[str], shown: list[str],
                                                   not_shown: list[str]) -> None:
    (candidate,) = code_candidates(_row(lines), wanted, runs_at_use=True)
    for text in shown:
        assert text in candidate.text
    for text in not_shown:
        assert text not in candidate.text
    assert len(candidate.text.split("\n")) <= MAX_CODE_LINES + 1  # + one `...` marker
    assert 1 <= candidate.start_line <= candidate.end_line <= len(lines)


def test_long_run_is_cut_at_its_head_by_default() -> None:
    (candidate,) = code_candidates(_row(CONSTANTS), {"x149"})
    assert candidate.text.split("\n") == CONSTANTS[:MAX_CODE_LINES]


def test_long_run_line_numbers_follow_the_shown_lines() -> None:
    (candidate,) = code_candidates(_row(CONSTANTS, start=49_951), {"x149"}, runs_at_use=True)
    assert (candidate.start_line, candidate.end_line) == (49_951, 50_000)
    assert candidate.text.split("\n")[-1] == "x149 = 149"


BIG_ROW = _row([f"x{i} = {i}" for i in range(49_950, 50_000)], start=49_951)
DOC_ROW = EvidenceRow(id="d1", path="docs/x.md", layer="D0_DOC_CHUNKS", span_start=1, span_end=3,
                      content="# Values\n\nThe value x49999 is the last one.\n")


def test_a_gated_row_with_the_name_past_its_head_is_sufficient() -> None:
    """The gate passed the row because it holds the name; the analysis must quote it, not abstain."""
    analysis = analyze("what is x49999?", ["x49999"], [BIG_ROW], relevant=True)
    assert analysis.sufficient
    assert "x49999 = 49999" in analysis.spans[0].text
    assert analysis.spans[0].citation == "big.py:49951-50000"


@pytest.mark.parametrize(("rows", "relevant", "head_kept"), [
    ([BIG_ROW], False, True),  # the gate refused: nothing to quote, nothing re-cut
    ([DOC_ROW, BIG_ROW], True, True),  # a passage already carries the key term: runs keep their head
    ([BIG_ROW], True, False),
], ids=["not-relevant", "term-elsewhere", "only-the-run"])
def test_runs_are_cut_at_use_only_when_nothing_else_answers(rows: list[EvidenceRow], relevant: bool,
                                                            head_kept: bool) -> None:
    analysis = analyze("what is x49999?", ["x49999"], rows, relevant=relevant)
    code = [p for p in analysis.passages if p.path == "big.py"] or [None]
    assert (code[0] is None or "x49999 = 49999" not in code[0].text) is head_kept
