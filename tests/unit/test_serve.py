"""Issue 25, items 4 and 5: `lotsman serve` refuses a port it cannot use and reports how it stopped."""

from __future__ import annotations

import errno
import signal
import socket
from collections.abc import Iterator

import pytest

import graph.cli as cli
from graph.cli_serve import bind_problem, exit_status, serving_port
from stores.errors import UsageError


@pytest.fixture(autouse=True)
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    from graph.settings import get_settings

    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none?connect_timeout=1")
    get_settings.cache_clear()


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port some other server listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("port", ["99999", "65536", "0", "-1", "http", ""])
def test_a_port_out_of_range_is_a_usage_error(port: str) -> None:
    """`--port 99999` printed a 33-line OverflowError traceback from langgraph-api."""
    with pytest.raises(UsageError, match="expected a port number from 1 to 65535"):
        cli.build_parser().parse_args(["serve", "--port", port])


@pytest.mark.parametrize("port", ["1", "2024", "65535"])
def test_ports_in_range_parse(port: str) -> None:
    assert cli.build_parser().parse_args(["serve", "--port", port]).port == int(port)


def test_a_taken_port_is_refused_with_one_line(taken_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    """langgraph dev moved to a random port without a word while clients kept calling the fixed one."""
    assert cli.main(["serve", "--port", str(taken_port)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: port {taken_port} on 127.0.0.1 is in use (another server?): stop it, "
                                "choose another port with --port N, or add --any-port to take a free one"]


def test_any_port_moves_and_says_so(taken_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    port = serving_port("127.0.0.1", taken_port, any_port=True)
    assert port != taken_port and 1 <= port <= 65535
    assert capsys.readouterr().err == (f"port {taken_port} on 127.0.0.1 is in use: serving on port {port} "
                                       "instead\n")


def test_a_free_port_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    assert serving_port("127.0.0.1", free, any_port=True) == free
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("exc", "says"), [
    (OSError(errno.EADDRINUSE, "Address already in use"), "port 80 on h is in use"),
    (OSError(errno.EACCES, "Permission denied"), "port 80 on h needs privileges"),
    (OSError(errno.EADDRNOTAVAIL, "Cannot assign"), "cannot listen on h: not an address of this machine"),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "cannot listen on h: unknown host"),
    (OSError(errno.EINVAL, "Invalid argument"), "cannot listen on port 80 on h: Invalid argument"),
])
def test_bind_problems_say_what_to_do(exc: OSError, says: str) -> None:
    line = bind_problem("h", 80, exc)
    assert line.startswith(says) and "--" in line and "\n" not in line


def test_an_unknown_host_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--host", "no-such-host.invalid", "--port", "2024"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: cannot listen on no-such-host.invalid: unknown host")


@pytest.mark.parametrize(("returncode", "stop", "status"), [
    (0, signal.SIGTERM, 143),        # stopped as asked: what a shell shows for a process ended by SIGTERM
    (0, signal.SIGINT, 130),         # Ctrl-C, like every other command
    (-signal.SIGTERM, signal.SIGTERM, 143),
    (0, None, 0),                    # the server ended by itself
    (3, None, 3),
    (-signal.SIGKILL, None, 137),    # killed from outside
])
def test_exit_status(returncode: int, stop: int | None, status: int) -> None:
    assert exit_status(returncode, stop) == status
