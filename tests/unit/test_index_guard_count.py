"""Issue 37 item 2b without a database: the folder-size guard every index path goes through.

`files.check_folder_size` is what `index_repository(allow_large=False)` (the CLI, the index graph, watch,
hooks) asks before anything is created or read; its count stops at the limit + 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.index_graph import IndexRequest
from stores.errors import IndexingError, InvalidInputError
from stores.indexing.files import TooManyFilesError, check_folder_size
from tests.walkcount import count_walks


def _tree(root: Path, dirs: int, per_dir: int) -> Path:
    for d in range(dirs):
        (root / f"d{d:02d}").mkdir(parents=True)
        for i in range(per_dir):
            (root / f"d{d:02d}" / f"m{i}.py").write_bytes(b"")
    return root


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return count_walks(monkeypatch)


def test_a_folder_above_the_limit_is_refused_after_limit_plus_one_files(tmp_path: Path, walked: list[str]) -> None:
    root = _tree(tmp_path, dirs=30, per_dir=10)  # 300 candidates, limit 100

    with pytest.raises(TooManyFilesError) as refused:
        check_folder_size(root, limit=100, hint="pass --yes (`lotsman index PATH --yes`)")

    assert isinstance(refused.value, IndexingError) and refused.value.exit_code == 6
    message = str(refused.value)
    assert "\n" not in message and "more than 100 .md/.py files" in message
    assert message.endswith("to index it anyway pass --yes (`lotsman index PATH --yes`)")
    assert "allow_large" not in message  # the hint is the caller's (review of issue 37: one hint fitted all)
    assert len(walked) == 1 + 11  # the root and 11 folders of 10: stopped at 101 candidates, not 31 folders


def test_at_the_limit_allowed_or_the_sessions_own_folder_it_passes(tmp_path: Path, walked: list[str]) -> None:
    root = _tree(tmp_path, dirs=10, per_dir=10)

    check_folder_size(root, limit=100)  # exactly the limit
    walked.clear()
    check_folder_size(root, limit=10, allow_large=True)
    check_folder_size(root, limit=10, known_root=True)
    assert walked == []  # neither counts at all


def test_the_index_graph_input_takes_allow_large_as_a_boolean() -> None:
    assert IndexRequest.from_state({"path": "/srv/repo"}).allow_large is False
    assert IndexRequest.from_state({"path": "/srv/repo", "allow_large": True}).allow_large is True
    with pytest.raises(InvalidInputError, match="allow_large"):
        IndexRequest.from_state({"path": "/srv/repo", "allow_large": "yes"})  # type: ignore[typeddict-item]
