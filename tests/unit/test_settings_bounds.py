"""Numeric settings have upper bounds too: a value no real deployment uses (LOTSMAN_TOKEN_CAP=10**12, a timeout
of `inf`) is one line at start-up, not a server that accepts it and fails later (or never)."""

from __future__ import annotations

import pytest

import graph.cli as cli
from graph.settings import SettingsError, get_settings
from tests.unit.test_settings_env import clean_env  # noqa: F401 - autouse: only the variables a test sets


@pytest.mark.parametrize(("name", "value", "limit"), [
    ("LOTSMAN_TOKEN_CAP", str(10**12), "131072"),
    ("LOTSMAN_TOKEN_CAP", "131073", "131072"),
    ("LOTSMAN_EMBED_BATCH_SIZE", "1000000", "1024"),
    ("LOTSMAN_PARSE_WORKERS", "100000", "64"),
    ("LOTSMAN_DB_POOL_SIZE", "100000", "256"),
    ("LOTSMAN_MAX_FILE_BYTES", str(10**12), "100000000"),
    ("LOTSMAN_LANE_BUDGET_MS", "3000000000", "600000"),  # PostgreSQL's statement_timeout stops at 2^31 - 1
    ("LOTSMAN_WATCH_DEBOUNCE_MS", str(10**12), "600000"),
    ("GIGACHAT_TIMEOUT", "inf", "600"),
    ("GIGACHAT_TIMEOUT", "1e9", "600"),
    ("GIGACHAT_ROUTER_TIMEOUT", "100000", "600"),
    ("GIGACHAT_REQUEST_DEADLINE", "inf", "600"),
    ("GIGACHAT_MAX_RETRIES", "1000", "10"),
])
def test_a_value_past_the_upper_bound_names_its_variable_and_the_bound(monkeypatch: pytest.MonkeyPatch, name: str,
                                                                        value: str, limit: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as info:
        get_settings()
    message = str(info.value)
    assert message == (f"{name}: Input should be less than or equal to {limit} (got {value!r}): "
                       "fix or unset the variable")
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("name", "value", "field"), [
    ("LOTSMAN_TOKEN_CAP", "131072", "token_cap"),
    ("LOTSMAN_EMBED_BATCH_SIZE", "1024", "embed_batch_size"),
    ("LOTSMAN_PARSE_WORKERS", "64", "parse_workers"),
    ("LOTSMAN_DB_POOL_SIZE", "256", "db_pool_size"),
    ("LOTSMAN_MAX_FILE_BYTES", "100000000", "max_file_bytes"),
    ("LOTSMAN_LANE_BUDGET_MS", "600000", "lane_budget_ms"),
    ("LOTSMAN_WATCH_DEBOUNCE_MS", "600000", "watch_debounce_ms"),
])
def test_the_bound_itself_is_accepted(monkeypatch: pytest.MonkeyPatch, name: str, value: str, field: str) -> None:
    monkeypatch.setenv(name, value)
    assert getattr(get_settings(), field) == int(value)


@pytest.mark.parametrize(("name", "value", "field"), [
    ("GIGACHAT_TIMEOUT", "600", "timeout"),
    ("GIGACHAT_ROUTER_TIMEOUT", "600", "router_timeout"),
    ("GIGACHAT_REQUEST_DEADLINE", "600", "request_deadline"),
    ("GIGACHAT_MAX_RETRIES", "10", "max_retries"),
])
def test_the_gigachat_bound_itself_is_accepted(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                               field: str) -> None:
    monkeypatch.setenv(name, value)
    assert getattr(get_settings().gigachat, field) == float(value)


# serve on an address this machine does not have (TEST-NET-3): if the settings passed, it would stop there
@pytest.mark.parametrize("argv", [["ask", "Как настроить CORS?"], ["serve", "--host", "203.0.113.1"]])
def test_the_cli_refuses_a_huge_token_cap_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    monkeypatch.setenv("LOTSMAN_TOKEN_CAP", str(10**12))
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: LOTSMAN_TOKEN_CAP: Input should be less than or equal to 131072 (got '1000000000000'): "
        "fix or unset the variable"]
