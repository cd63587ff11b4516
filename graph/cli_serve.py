"""`lotsman serve`: the LangGraph dev server on a port the user chose, stopped with its whole process group."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from graph.settings import Settings
from graph.terminal import printable
from stores.errors import LotsmanError, UsageError

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Forwarded to the server's process group: `kill`, Ctrl-C (the server is in its own session, so the
terminal's Ctrl-C reaches only us) and a closed terminal."""
STOP_GRACE_S = 20.0
"""Seconds the server may take to shut down after a stop signal before its group is killed."""


def port_number(value: str) -> int:
    """argparse type: a TCP port, 1 to 65535."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number from 1 to 65535, got {value!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 1 to 65535, got {port}")
    return port


def _bind(host: str, port: int) -> int:
    """Bind a listening-style socket as uvicorn will (IPv6 for a host with `:`, SO_REUSEADDR) and return the
    port bound (the system's choice for 0); raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return int(sock.getsockname()[1])


def bind_problem(host: str, port: int, exc: OSError) -> str:
    """Why the server could not listen on `host:port`, and what to do, as one line."""
    where = f"port {port} on {printable(host)}"
    if isinstance(exc, socket.gaierror):
        return (f"cannot listen on {printable(host)}: unknown host ({exc.strerror}): "
                "give an address, e.g. --host 127.0.0.1")
    if exc.errno == errno.EADDRINUSE:
        return (f"{where} is in use (another server?): stop it, choose another port with --port N, "
                "or add --any-port to take a free one")
    if exc.errno == errno.EACCES:
        return f"{where} needs privileges (ports below 1024 are reserved): choose another with --port N"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {printable(host)}: not an address of this machine: use --host 127.0.0.1 or 0.0.0.0"
    return f"cannot listen on {where}: {printable(exc.strerror or exc)}: choose another with --host or --port"


def serving_port(host: str, port: int, *, any_port: bool) -> int:
    """The port the server will listen on: `port` if it is free, else a free one when `any_port`.

    `langgraph dev` would move to a random port on its own when the requested one is taken, while clients
    keep calling the documented one; checking here turns that into a refusal (or an announced move).
    Raises:
        UsageError: the port (or the host) cannot be used.
    """
    try:
        return _bind(host, port)
    except OSError as exc:
        if not (any_port and exc.errno == errno.EADDRINUSE):
            raise UsageError(bind_problem(host, port, exc)) from None
    free = _bind(host, 0)
    print(f"port {port} on {printable(host)} is in use: serving on port {free} instead", file=sys.stderr)
    return free


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, signum)


def exit_status(returncode: int, stop_signal: int | None) -> int:
    """`lotsman serve`'s exit status: 128 + the signal that stopped it (143 for SIGTERM, 130 for Ctrl-C, as
    a shell reports a process ended by that signal), else the server's own status (128 + N if a signal N
    killed it)."""
    if stop_signal is not None:
        return 128 + stop_signal
    return 128 - returncode if returncode < 0 else returncode


def run_process_group(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> int:
    """Run `cmd` in its own session and process group; forward stop signals to the whole group, wait for
    it, and kill what is left of the group when the command ends.

    Without this, SIGTERM ended `lotsman` only, and the `langgraph dev` child kept listening under init.
    """
    stops: list[int] = []
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: FrameType | None) -> None:
        stops.append(signum)
        if child is not None:
            _stop(child.pid, signum, first=len(stops) == 1)

    previous = {signum: signal.signal(signum, forward) for signum in STOP_SIGNALS}
    try:
        child = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, start_new_session=True,
                                 preexec_fn=_stop_with_parent(os.getpid()))
        if stops:  # a signal that came while the child was being started
            _stop(child.pid, stops[0], first=True)
        returncode = child.wait()  # signal handlers run during the wait (PEP 475 retries it)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if child is not None:
            _signal_group(child.pid, signal.SIGKILL)  # workers the server left behind
    return exit_status(returncode, stops[0] if stops else None)


PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal the kernel sends a process when the thread that started it ends."""


def _stop_with_parent(parent: int) -> Callable[[], None] | None:
    """A `preexec_fn` that makes the server receive SIGTERM when `lotsman serve` itself dies, even by SIGKILL
    (no handler runs then); None where prctl is not available (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _stop(pgid: int, signum: int, *, first: bool) -> None:
    _signal_group(pgid, signum)
    if first:  # a server that ignores the signal is killed after a grace period
        timer = threading.Timer(STOP_GRACE_S, _signal_group, (pgid, signal.SIGKILL))
        timer.daemon = True
        timer.start()


def serve_notes(host: str, port: int, *, token: bool) -> list[str]:
    """What `lotsman serve` says before the server's own banner: where the MCP tools and the page are, and
    who may ask and index (see docs/api/mcp.md)."""
    from graph.server_auth import is_loopback

    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else shown}:{port}"
    notes = [f"MCP tools (list_sessions, ask, search, read): {base}/mcp; web page: {base}/lotsman/"]
    if token:
        notes.append("LOTSMAN_AUTH_TOKEN is set: every request needs Authorization: Bearer <token>; "
                     "its holder may also run the index graph")
    elif is_loopback(host):
        notes.append("no LOTSMAN_AUTH_TOKEN: this machine may ask; nobody may index over HTTP "
                     "(use `lotsman index PATH`)")
    else:  # only with --insecure-no-auth (serve_problem)
        notes.append(f"warning: no LOTSMAN_AUTH_TOKEN and listening on {printable(host)} (--insecure-no-auth): "
                     "anyone who reaches the port may ask about every indexed session and create, change or "
                     "delete threads and assistants; set the token to require it")
    return notes


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    exe = shutil.which("langgraph") or str(Path(sys.executable).parent / "langgraph")
    if not Path(exe).exists():
        raise LotsmanError("langgraph CLI not found: pip install 'langgraph-cli[inmem]'")
    from graph.server_auth import serve_problem

    token = bool(settings.auth_token and settings.auth_token.get_secret_value())
    insecure = args.insecure_no_auth or settings.insecure_no_auth
    port = serving_port(args.host, args.port, any_port=args.any_port)  # an unknown host is that, first
    problem = serve_problem(args.host, token=token, insecure=insecure)
    if problem is not None:
        raise UsageError(problem)
    for note in serve_notes(args.host, port, token=token):
        print(note, file=sys.stderr)
    from stores.database import STOPPED_MESSAGE, stopped_on_purpose

    if not settings.database_url and stopped_on_purpose(settings.data_dir):  # the server will not start it
        print(f"warning: {STOPPED_MESSAGE}: until then every question and the web page answer that",
              file=sys.stderr)
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true"}
    if insecure:  # the server's own guard (graph.http_app.OriginGuard) reads the same choice
        env["LOTSMAN_INSECURE_NO_AUTH"] = "true"
    cmd = [exe, "dev", "--no-browser", "--host", args.host, "--port", str(port)]
    if not args.reload:
        cmd.append("--no-reload")
    return run_process_group(cmd, cwd=Path(__file__).resolve().parent.parent, env=env)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the LangGraph dev server with both graphs")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1); another machine's reach needs LOTSMAN_AUTH_TOKEN")
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="serve a --host other machines can reach without LOTSMAN_AUTH_TOKEN: anyone who reaches "
                        "the port may ask and change threads and assistants")
    p.add_argument("--port", type=port_number, default=2024, help="refused if taken (default 2024)")
    p.add_argument("--any-port", action="store_true", help="if --port is taken, serve on a free port and print it")
    p.add_argument("--reload", action=argparse.BooleanOptionalAction, default=True,
                   help="restart the server when the code changes (default: on)")
    p.set_defaults(handler=_serve)
