"""Issue 37 item 15: an unusable LOTSMAN_AUTH_TOKEN is one line at start-up, not a server nobody can use."""

from __future__ import annotations

import pytest

import graph.cli as cli
from graph.settings import MIN_AUTH_TOKEN_CHARS, SettingsError, get_settings
from tests.unit.test_settings_env import clean_env  # noqa: F401 - autouse: only the variables a test sets

GOOD = "k3y-" + "x" * (MIN_AUTH_TOKEN_CHARS - 4)


@pytest.mark.parametrize(("value", "says"), [
    ("", "is blank"),
    ("   ", "is blank"),
    ("\t\n", "is blank"),
    ("short", f"is 5 characters long: use at least {MIN_AUTH_TOKEN_CHARS}"),
    ("x" * (MIN_AUTH_TOKEN_CHARS - 1), f"use at least {MIN_AUTH_TOKEN_CHARS}"),
    ("  " + "x" * 10 + "  ", f"is 10 characters long: use at least {MIN_AUTH_TOKEN_CHARS}"),
    ("токен-" + "x" * 20, "printable ASCII"),
    ("x" * 10 + " " + "x" * 10, "printable ASCII"),
    ("x" * 20 + "\x7f", "printable ASCII"),
], ids=["empty", "spaces", "tab-newline", "short", "one-short", "short-inside-spaces", "cyrillic", "inner-space",
        "control"])
def test_an_unusable_token_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch, value: str,
                                                           says: str) -> None:
    monkeypatch.setenv("LOTSMAN_AUTH_TOKEN", value)
    with pytest.raises(SettingsError) as info:
        get_settings()
    message = str(info.value)
    assert message.startswith("LOTSMAN_AUTH_TOKEN: ") and says in message, message
    assert "\n" not in message and info.value.exit_code == 2
    if value.strip():
        assert value.strip() not in message, "a secret is never echoed"


@pytest.mark.parametrize(("value", "kept"), [
    (GOOD, GOOD),
    (f"  {GOOD}\n", GOOD),  # a file's trailing newline: the header can never carry it, so it is not part of it
    ("A" * 200, "A" * 200),
], ids=["exact", "surrounding-whitespace", "long"])
def test_a_usable_token_is_kept(monkeypatch: pytest.MonkeyPatch, value: str, kept: str) -> None:
    monkeypatch.setenv("LOTSMAN_AUTH_TOKEN", value)
    token = get_settings().auth_token
    assert token is not None and token.get_secret_value() == kept


def test_unset_means_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_settings().auth_token is None


@pytest.mark.parametrize("argv", [["serve", "--port", "1"], ["sessions"]])
def test_the_cli_refuses_a_blank_token_before_starting_anything(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str],
                                                              argv: list[str]) -> None:
    monkeypatch.setenv("LOTSMAN_AUTH_TOKEN", " ")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: LOTSMAN_AUTH_TOKEN: is blank"), err
