"""The index graph's request checks session names and refs as the CLI, MCP and run context do (issue 37, item 8):
a NUL byte reached PostgreSQL and came back as "unexpected DataError"."""

from __future__ import annotations

import pytest

from graph.index_graph import IndexRequest
from stores.errors import InvalidInputError


@pytest.mark.parametrize(("field", "value", "says"), [
    ("session", "docs\x00x", "control character"),
    ("ref", "v1\x00", "control character"),
    ("session", "a" * 300, "at most 256"),
    ("ref", "main\nrm -rf", "control character"),
])
def test_unstorable_names_are_one_line(field: str, value: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        IndexRequest.from_state({"path": "/tmp", field: value})  # type: ignore[arg-type]
    message = str(caught.value)
    assert says in message and "\n" not in message and "DataError" not in message


def test_ordinary_names_pass() -> None:
    request = IndexRequest.from_state({"path": "/tmp", "session": "docs-1.2", "ref": "v1.4"})  # type: ignore[arg-type]
    assert (request.session, request.ref) == ("docs-1.2", "v1.4")
