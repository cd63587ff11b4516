"""Issue 25, items 4 and 5: the real `lotsman serve` stops with its whole process tree and keeps its port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import ROOT, VENV_BIN

LOTSMAN = VENV_BIN / "lotsman"
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid` (from /proc), zombies excluded."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] != "Z":
                children.setdefault(stat[1], []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        text = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Serve:
    """A `lotsman serve` process, its log, and every process it started (to clean up whatever happens)."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc, self.log, self.tree = proc, log, set[int]()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, port: int) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            self.tree |= _descendants(self.proc.pid)
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ok", timeout=2).status_code == 200:
                    self.tree |= _descendants(self.proc.pid)
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        pytest.fail(f"lotsman serve not ready on {port} (exit {self.proc.poll()}):\n{self.log_text()}")

    def kill_everything(self) -> None:
        self.tree |= _descendants(self.proc.pid)
        for pid in [self.proc.pid, *self.tree]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.fixture
def serve(offline_env: Callable[..., dict[str, str]], tmp_path: Path) -> Iterator[Callable[..., Serve]]:
    started: list[Serve] = []

    def start(*args: str) -> Serve:
        log = tmp_path / f"serve-{len(started)}.log"
        with log.open("wb") as out:
            # Not a new session: the test signals `lotsman` alone, as `kill PID` or a supervisor would.
            # --no-reload: other people edit the repo while tests run.
            proc = subprocess.Popen([str(LOTSMAN), "serve", "--no-reload", *args], cwd=ROOT, env=offline_env(),
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        started.append(Serve(proc, log))
        return started[-1]

    yield start
    for server in started:
        server.kill_everything()


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_stops_the_whole_server(serve: Callable[..., Serve], stop: signal.Signals,
                                              status: int) -> None:
    """SIGTERM to `lotsman serve` ended lotsman alone; `langgraph dev` kept the port open under init."""
    port = _free_port()
    server = serve("--port", str(port))
    server.wait_ready(port)
    assert server.tree, "lotsman serve runs the server as a child process"

    server.proc.send_signal(stop)
    assert server.proc.wait(timeout=STOP_TIMEOUT_S) == status, server.log_text()

    assert not _listening(port), f"port {port} still open after {stop.name}"
    left = [pid for pid in server.tree if _alive(pid)]
    assert left == [], f"processes left after {stop.name}: {left}\n{server.log_text()}"
    assert "Traceback" not in server.log_text()


def test_a_taken_port_is_refused_or_moved_when_asked(serve: Callable[..., Serve]) -> None:
    """A taken port used to move the server to a random port without a word."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]

        refused = serve("--port", str(taken))
        assert refused.proc.wait(timeout=STOP_TIMEOUT_S) == 2
        assert refused.log_text().splitlines() == [
            f"error: port {taken} on 127.0.0.1 is in use (another server?): stop it, choose another port with "
            "--port N, or add --any-port to take a free one"]

        moved = serve("--port", str(taken), "--any-port")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline and "serving on port" not in moved.log_text():
            time.sleep(0.1)
        first = moved.log_text().splitlines()[0]
        prefix = f"port {taken} on 127.0.0.1 is in use: serving on port "
        assert first.startswith(prefix) and first.endswith(" instead"), first
        port = int(first.removeprefix(prefix).removesuffix(" instead"))
        moved.wait_ready(port)
        assert f"127.0.0.1:{port}" in moved.log_text()  # langgraph dev's own banner agrees

    moved.proc.send_signal(signal.SIGTERM)
    assert moved.proc.wait(timeout=STOP_TIMEOUT_S) == 143
    assert not _listening(port)


def test_a_port_out_of_range_is_one_line(serve: Callable[..., Serve]) -> None:
    refused = serve("--port", "99999")
    assert refused.proc.wait(timeout=STOP_TIMEOUT_S) == 2
    assert refused.log_text().splitlines() == [
        "error: argument --port: expected a port number from 1 to 65535, got 99999 (see `lotsman serve --help`)"]


def test_a_killed_lotsman_takes_the_server_with_it(serve: Callable[..., Serve]) -> None:
    """`kill -9` runs no handler: the kernel's parent-death signal (prctl) stops the server instead."""
    port = _free_port()
    server = serve("--port", str(port))
    server.wait_ready(port)

    server.proc.kill()
    server.proc.wait(timeout=10)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while (_listening(port) or any(_alive(pid) for pid in server.tree)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _listening(port), f"port {port} still open after lotsman was killed"
    assert [pid for pid in server.tree if _alive(pid)] == [], server.log_text()
