"""The embedded server's status without a server: stale pid files, zombies, library warnings (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stores.database import embedded_status

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def zombie() -> Iterator[int]:
    """The pid of a child that exited and was not reaped yet: what a SIGKILLed postmaster becomes when its
    parent (a container's PID 1) does not reap it."""
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{child.pid}/stat").read_text().split()[2] != "Z":
        time.sleep(0.02)
    yield child.pid
    child.wait()


def _postmaster_pid_file(data_dir: Path, pid: int) -> None:
    pgdata = data_dir / "pg"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("18\n")
    lines = [str(pid), str(pgdata), str(int(time.time())), "5432", str(pgdata), "", "0 0", "ready"]
    (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")


def test_a_zombie_postmaster_is_not_running(tmp_path: Path, zombie: int) -> None:
    """Item 10: `db status` reported the killed postmaster's pid as running."""
    _postmaster_pid_file(tmp_path, zombie)

    status = embedded_status(tmp_path)

    assert status.initialized and not status.running and status.pid is None


def test_db_status_of_a_killed_server_names_no_database_url(tmp_path: Path, zombie: int) -> None:
    _postmaster_pid_file(tmp_path, zombie)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["LOTSMAN_DATA_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "graph.cli", "db", "status"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "running: False" in proc.stdout
    assert "DATABASE_URL" not in proc.stdout + proc.stderr


def test_pgserver_import_warns_nobody_even_when_the_host_resets_warning_filters(tmp_path: Path) -> None:
    """platformdirs' RuntimeDirWarning (XDG_RUNTIME_DIR unset in containers) must not reach users, even in a
    host (pytest, a server) that replaces the warning filters after importing us."""
    code = ("import pathlib, sys, warnings; import stores.database as d; warnings.simplefilter('error'); "
            f"d.stop_embedded(pathlib.Path({str(tmp_path)!r}))")
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "PYTHONWARNINGS")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
