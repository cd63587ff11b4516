"""`scope_after_match`: which sessions check their scope after the GIN match (issue 13 at 1M rows)."""

import pytest

from graph.deps import scope_after_match


@pytest.mark.parametrize(("session_rows", "table_rows", "expected"), [
    (996_478, 1_077_506, True),    # the bench's 1M session: 93% of the table
    (100_521, 177_767, False),     # the bench's 100k session: 56%, but its bitmap is cheap (both plans even)
    (4_741, 1_077_506, False),     # a small session beside a large one: the AND narrows its matches
    (300_000, 1_000_000, False),   # large, but most of the table's matches are other sessions'
    (600_000, 1_000_000, True),
    (0, 0, False),                 # a table not analysed yet: the planner's plan
])
def test_large_sessions_that_are_most_of_their_table(session_rows: int, table_rows: int, expected: bool) -> None:
    assert scope_after_match(session_rows, table_rows) is expected
