"""The CLI without a database: argument validation, the command plug-in contract, terminal-safe output."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import EntryPoint
from typing import Any

import pytest

import graph.cli as cli
from graph.terminal import printable
from stores.errors import UsageError


@pytest.fixture(autouse=True)
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test must never reach a database: any attempt fails fast on a closed port."""
    from graph.settings import get_settings

    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none?connect_timeout=1")
    get_settings.cache_clear()


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# --- item 9: bad arguments are one line and exit 2, before any database is touched ------------------
@pytest.mark.parametrize("argv", [
    ["index", ".", "--session", ""],
    ["index", ".", "--session", "   "],
    ["ask", "q", "--session", ""],
    ["retrieve", "q", "-k", "-5"],
    ["retrieve", "q", "-k", "0"],
    ["retrieve", "q", "-k", "lots"],
    ["sessions", "--delete", ""],
], ids=["index-empty-session", "index-blank-session", "ask-empty-session", "k-negative", "k-zero", "k-word",
        "delete-empty"])
def test_bad_arguments_are_rejected_by_the_parser(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        cli.build_parser().parse_args(argv)


@pytest.mark.parametrize("argv", [["index", ".", "--session", ""], ["retrieve", "q", "-k", "-5"],
                                  ["no-such-command"]])
def test_bad_arguments_exit_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    line = one_error_line(capsys)
    assert "--help" in line


# --- issue 25, item 3: a name or question that is not UTF-8 is one line and exit 2, before any work ------
NOT_UTF8 = "caf\udce9"
"""`lotsman ... $'caf\\xe9'`: Python hands the undecodable byte over as a lone surrogate."""


@pytest.mark.parametrize("argv", [
    ["ask", "q", "--session", NOT_UTF8],
    ["chat", "--session", "\udcff"],
    ["chat", "--thread", NOT_UTF8],
    ["retrieve", "q", "--session", NOT_UTF8],
    ["index", ".", "--session", NOT_UTF8],
    ["sessions", "--delete", NOT_UTF8],
], ids=["ask", "chat", "chat-thread", "retrieve", "index", "sessions-delete"])
def test_names_that_are_not_utf8_are_rejected_by_the_parser(argv: list[str]) -> None:
    with pytest.raises(UsageError, match=r"not valid UTF-8 \(byte \\x(e9|ff)\)"):
        cli.build_parser().parse_args(argv)


@pytest.mark.parametrize("argv", [
    ["ask", NOT_UTF8], ["ask", "q", "--session", "\udcff"], ["retrieve", NOT_UTF8], ["sessions", "--delete", NOT_UTF8],
], ids=["ask-question", "ask-session", "retrieve-question", "sessions-delete"])
def test_text_that_is_not_utf8_exits_2_before_the_database(argv: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2  # the database of `no_database` would have made it 3
    line = one_error_line(capsys)
    assert "not valid UTF-8" in line and "\\x" in line
    line.encode("utf-8")


def test_valid_arguments_still_parse() -> None:
    args = cli.build_parser().parse_args(["retrieve", "q", "-k", "3", "--session", "s"])
    assert (args.k, args.session) == (3, "s")


# --- the command plug-in contract ----------------------------------------------------------------------
def register_hello(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hello")
    p.set_defaults(handler=lambda args, settings: 7)


def register_raises(sub: argparse._SubParsersAction) -> None:
    raise RuntimeError("plug-in bug\nsecond line")


def _plugins(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> None:
    def fake_entry_points(*, group: str) -> list[EntryPoint]:
        assert group == cli.PLUGIN_GROUP
        return list(eps)

    monkeypatch.setattr(cli, "entry_points", fake_entry_points)


def _ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=cli.PLUGIN_GROUP)


def test_plugins_register_commands_and_a_broken_one_costs_one_warning_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _plugins(monkeypatch, _ep("hello", f"{__name__}:register_hello"),
             _ep("missing", "no_such_module_for_lotsman:register"), _ep("buggy", f"{__name__}:register_raises"))

    assert cli.main(["hello"]) == 7

    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("warning: command plug-in 'missing'") and "ModuleNotFoundError" in warnings[0]
    assert warnings[1].startswith("warning: command plug-in 'buggy'") and warnings[1].endswith("plug-in bug")


def test_a_plugin_reusing_a_command_name_is_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    def register_ask(sub: argparse._SubParsersAction) -> None:
        sub.add_parser("ask")

    monkeypatch.setattr(sys.modules[__name__], "register_ask", register_ask, raising=False)
    _plugins(monkeypatch, _ep("dup", f"{__name__}:register_ask"))
    cli.build_parser()
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("warning: command plug-in 'dup'")


def test_eval_comes_from_the_installed_entry_point() -> None:
    eps = {ep.name: ep.value for ep in cli.entry_points(group=cli.PLUGIN_GROUP)}
    assert eps.get("eval") == "evals.cli:register", "run `make setup` to install the entry point"
    args = cli.build_parser().parse_args(["eval", "d.jsonl", "--corpus", "c", "--limit", "2"])
    assert args.handler.__module__ == "evals.cli" and args.limit == 2


def test_cli_commands_neither_imports_evals_nor_graph_cli() -> None:
    code = ("import sys, graph.cli_commands; "
            "print(sorted(m for m in sys.modules if m == 'graph.cli' or m.split('.')[0] == 'evals'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_building_the_parser_loads_no_stage_or_langchain_module() -> None:
    """`lotsman --help` and every command's start pay for the parser only: the eval plug-in's flag choices
    once pulled in the whole retrieval stack and LangChain (0.15 s → 0.9 s before any work)."""
    code = ("import sys, graph.cli; graph.cli.build_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langchain_core', 'langgraph', 'numpy') "
            "or (m.startswith('nodes.') and m != 'nodes.context_retrieval.choices' "
            "and m != 'nodes.context_retrieval')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- item 7: control characters never reach the terminal raw --------------------------------------------
@pytest.mark.parametrize(("raw", "shown"), [
    ("docs/a\nskipped evil.md: forged.md", "docs/a\\nskipped evil.md: forged.md"),
    ("red\x1b[31m.md", "red\\x1b[31m.md"),
    ("csi\x9b2J.md", "csi\\x9b2J.md"),
    ("bell\x07\x7f\x00.md", "bell\\x07\\x7f\\x00.md"),
    ("обычное имя.md", "обычное имя.md"),
])
def test_printable_escapes_control_characters(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert "\n" not in printable(raw) and "\x1b" not in printable(raw)


def test_printable_multiline_keeps_lines_but_not_escapes() -> None:
    assert printable("a\n\tb\x1b[2J", multiline=True) == "a\n\tb\\x1b[2J"


def test_error_messages_are_escaped_to_one_line(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from stores.errors import IndexingError

    def handler(args: Any, settings: Any) -> int:
        raise IndexingError("path not found: x\nerror: forged\x1b[2J")

    def register(sub: argparse._SubParsersAction) -> None:
        sub.add_parser("boom").set_defaults(handler=handler)

    monkeypatch.setattr(sys.modules[__name__], "register_boom", register, raising=False)
    _plugins(monkeypatch, _ep("boom", f"{__name__}:register_boom"))
    assert cli.main(["boom"]) == 6
    assert one_error_line(capsys) == "error: path not found: x\\nerror: forged\\x1b[2J"


def test_a_database_lost_mid_command_is_exit_3(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Item 2: psycopg errors from a stopped server were `unexpected OperationalError/PoolTimeout`, exit 1."""
    import psycopg
    from psycopg_pool import PoolTimeout

    errors = iter([psycopg.OperationalError("server closed the connection unexpectedly\n\tThis probably means"),
                   PoolTimeout("couldn't get a connection after 30.00 sec")])

    def handler(args: Any, settings: Any) -> int:
        raise next(errors)

    def register(sub: argparse._SubParsersAction) -> None:
        sub.add_parser("lost").set_defaults(handler=handler)

    monkeypatch.setattr(sys.modules[__name__], "register_lost", register, raising=False)
    _plugins(monkeypatch, _ep("lost", f"{__name__}:register_lost"))
    for cause in ("server closed the connection unexpectedly", "no connection could be made in time"):
        assert cli.main(["lost"]) == 3
        line = one_error_line(capsys)
        assert cause in line and "lotsman db status" in line


# --- issue 25, item 9: output nobody can read is not a success --------------------------------------------
class _LeftReader:
    """A stdout whose reader has exited: every write or flush is EPIPE."""

    closed = False

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def _register_printer(monkeypatch: pytest.MonkeyPatch) -> None:
    def register(sub: argparse._SubParsersAction) -> None:
        sub.add_parser("say").set_defaults(handler=lambda args, settings: print("the answer") or 0)

    monkeypatch.setattr(sys.modules[__name__], "register_say", register, raising=False)
    _plugins(monkeypatch, _ep("say", f"{__name__}:register_say"))


def test_a_reader_that_left_is_exit_141(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _register_printer(monkeypatch)
    monkeypatch.setattr(sys, "stdout", _LeftReader())
    assert cli.main(["say"]) == 141
    assert "stdout was closed before all output was written" in one_error_line(capsys)


@pytest.mark.parametrize("argv", [["say"], ["sessions"]])
def test_a_closed_stdout_is_refused_before_any_work(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    _register_printer(monkeypatch)
    monkeypatch.setattr(sys, "stdout", None)  # what Python makes of a closed descriptor 1 (`>&-`)
    assert cli.main(argv) == 2  # `sessions` would have reached the database of `no_database`: exit 3
    assert "stdout is closed" in one_error_line(capsys)
