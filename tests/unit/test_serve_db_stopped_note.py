"""Issue 37 item 16: `lotsman serve` after `lotsman db stop` says at once that the server will not start the
database, instead of leaving the user to find out from the page's first 503."""

from __future__ import annotations

from pathlib import Path

import pytest

import graph.cli as cli
from stores.database import STOPPED_MARK
from tests.unit.test_server_exposure import free_port, no_server  # noqa: F401 - fixture
from tests.unit.test_settings_env import clean_env  # noqa: F401 - autouse: only the variables a test sets


@pytest.mark.parametrize(("stopped", "external", "warned"), [
    (True, False, True), (False, False, False), (True, True, False),
], ids=["stopped", "running", "external-database"])
def test_serve_warns_when_the_embedded_database_was_stopped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            no_server: list[list[str]],  # noqa: F811
                                                            stopped: bool, external: bool, warned: bool) -> None:
    monkeypatch.setenv("LOTSMAN_DATA_DIR", str(tmp_path))
    if not external:
        monkeypatch.delenv("DATABASE_URL")
    if stopped:
        (tmp_path / STOPPED_MARK).touch()
    assert cli.main(["serve", "--port", str(free_port())]) == 0 and len(no_server) == 1
    err = capsys.readouterr().err
    assert ("warning: the database was stopped with `lotsman db stop`; run `lotsman db start`" in err) is warned, err
