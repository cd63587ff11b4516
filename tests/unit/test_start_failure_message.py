"""Issue 25: the one line of a failed embedded start names the log only when this start wrote it, and a
permission failure says which user must own the data dir and how (`start_failure_message`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.database import start_failure_message

PG = Path("/data/lotsman/pg")


@pytest.mark.parametrize(("cause", "log_written", "user", "present", "absent"), [
    # The reported case: PostgreSQL could not create its log, and the line sent the user to it.
    ("cannot create /data/lotsman/pg/log: Permission denied", False, "pgserver",
     ["Permission denied", "user 'pgserver'", "`chown -R pgserver /data/lotsman/pg && chmod -R u+w /data/lotsman/pg`",
      "LOTSMAN_DATA_DIR"], ["Details in"]),
    # Not root: our own mkdir of the data dir failed; the user is the caller.
    ("PermissionError: [Errno 13] Permission denied: '/data/lotsman'", False, "alice",
     ["user 'alice'", "LOTSMAN_DATA_DIR"], ["Details in", "pgserver"]),
    # A start that did write its log: the log holds the details.
    ("could not bind IPv4 address", True, "pgserver", ["Details in /data/lotsman/pg/log;", "DATABASE_URL"], ["chown"]),
    # A failure before the server ran: no log to point to.
    ("RuntimeError: initdb failed", False, "pgserver", ["fix the cause and retry"], ["Details in", "chown"]),
])
def test_start_failure_message(cause: str, log_written: bool, user: str, present: list[str],
                               absent: list[str]) -> None:
    line = start_failure_message(PG, cause, log_written=log_written, server_user=user)

    assert "\n" not in line
    assert line.startswith(f"could not start the embedded PostgreSQL in {PG}: {cause}")
    for text in present:
        assert text in line, line
    for text in absent:
        assert text not in line, line
