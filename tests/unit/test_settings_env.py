"""Issue 25, item 9: an environment value Lotsman cannot use is named in one line at start-up (exit 2)."""

from __future__ import annotations

import pytest

import graph.cli as cli
from graph.settings import SettingsError, get_settings

ENV_PREFIXES = ("LOTSMAN_", "GIGACHAT_", "LANGSMITH_", "OPENAI_")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the variables a test sets; a database on a closed port, so reaching it would be exit 3."""
    import os

    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none?connect_timeout=1")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.parametrize(("name", "value", "says"), [
    ("LOTSMAN_TOP_K", "abc", "Input should be a valid integer"),
    ("LOTSMAN_TOP_K", "0", "greater than or equal to 1"),
    ("LOTSMAN_TOP_K", "500", "less than or equal to 200"),  # the run context's own limit
    ("LOTSMAN_LANE_BUDGET_MS", "-5", "greater than or equal to 0"),
    ("LOTSMAN_TOKEN_CAP", "0", "greater than or equal to 1"),
    ("LOTSMAN_EMBED_BATCH_SIZE", "0", "greater than or equal to 1"),
    ("LOTSMAN_DB_POOL_SIZE", "-1", "greater than or equal to 1"),
    ("LOTSMAN_MAX_FILE_BYTES", "0", "greater than or equal to 1"),
    ("LOTSMAN_PARSE_WORKERS", "-2", "greater than or equal to 0"),
    ("LOTSMAN_DEFAULT_SESSION", " ", "must name a session"),
    ("GIGACHAT_TIMEOUT", "abc", "Input should be a valid number"),
    ("GIGACHAT_TIMEOUT", "0", "greater than 0"),
    ("GIGACHAT_ROUTER_TIMEOUT", "-1", "greater than 0"),
    ("GIGACHAT_REQUEST_DEADLINE", "0", "greater than 0"),
    ("GIGACHAT_MAX_RETRIES", "-1", "greater than or equal to 0"),
    ("GIGACHAT_VERIFY_SSL_CERTS", "maybe", "Input should be a valid boolean"),
    ("LANGSMITH_TRACING", "maybe", "Input should be a valid boolean"),
])
def test_a_bad_value_names_its_variable(monkeypatch: pytest.MonkeyPatch, name: str, value: str, says: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as info:
        get_settings()
    message = str(info.value)
    assert message.startswith(f"{name}: ") and says in message, message
    assert f"(got {value!r})" in message and "\n" not in message
    assert info.value.exit_code == 2


def test_every_bad_variable_is_named_in_the_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOTSMAN_TOP_K", "abc")
    monkeypatch.setenv("GIGACHAT_TIMEOUT", "-1")
    monkeypatch.setenv("LOTSMAN_LANE_BUDGET_MS", "-5")
    with pytest.raises(SettingsError) as info:
        get_settings()
    message = str(info.value)
    assert [part.split(":")[0] for part in message.split("; ")] == [
        "GIGACHAT_TIMEOUT", "LOTSMAN_TOP_K", "LOTSMAN_LANE_BUDGET_MS"], message


@pytest.mark.parametrize(("name", "value", "field", "expected"), [
    ("LOTSMAN_LANE_BUDGET_MS", "0", "lane_budget_ms", 0),  # 0 means no budget
    ("LOTSMAN_PARSE_WORKERS", "0", "parse_workers", 0),    # 0 means on the indexing thread
    ("LOTSMAN_TOP_K", "200", "top_k", 200),
])
def test_documented_edge_values_are_accepted(monkeypatch: pytest.MonkeyPatch, name: str, value: str, field: str,
                                             expected: int) -> None:
    monkeypatch.setenv(name, value)
    assert getattr(get_settings(), field) == expected


def test_secret_values_are_never_echoed() -> None:
    from pydantic import SecretStr

    from graph.settings import GigaChatSettings, Settings

    secrets = [name for model in (Settings, GigaChatSettings) for name, field in model.model_fields.items()
               if "SecretStr" in str(field.annotation)]
    # any string is valid: they cannot fail validation
    assert secrets == ["openai_api_key", "langsmith_api_key", "auth_token", "credentials"]
    assert GigaChatSettings(credentials=SecretStr("x")).enabled


@pytest.mark.parametrize("argv", [["sessions"], ["ask", "Как настроить CORS?"], ["serve", "--port", "1"]])
def test_the_cli_prints_one_line_and_exits_2_before_any_work(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             argv: list[str]) -> None:
    monkeypatch.setenv("LOTSMAN_TOP_K", "abc")
    assert cli.main(argv) == 2  # the database on a closed port would have made it 3
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "error: LOTSMAN_TOP_K: Input should be a valid integer, unable to parse string as an integer (got 'abc'): "
        "fix or unset the variable"], err
