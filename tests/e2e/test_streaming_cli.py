"""Issue 27 item 4: `lotsman ask` and `chat` stream the LLM answer (the real CLI entry point in process, the real
GigaChat SDK against the scripted fake GigaChat, the test database)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from graph import cli
from graph.settings import get_settings
from tests.e2e.test_gigachat_path import INVENTED, QUESTION, Script
from tests.fakes.gigachat_server import FakeGigaChatServer
from tests.unit.test_streaming_answers import Recorder as Terminal  # stdout that keeps each write


@pytest.fixture
def lotsman(monkeypatch: pytest.MonkeyPatch, offline_env: Callable[..., dict[str, str]],
            scripted_gigachat: FakeGigaChatServer) -> Callable[..., tuple[int, Terminal, str]]:
    """`lotsman(*args, stdin=...)` → (exit code, stdout, stderr) of the real `main` with GigaChat configured."""
    for key, value in offline_env(**scripted_gigachat.env()).items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()

    def run(*args: str, stdin: str = "") -> tuple[int, Terminal, str]:
        out, err = Terminal(), io.StringIO()
        monkeypatch.setattr("sys.stdout", out)
        monkeypatch.setattr("sys.stderr", err)
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        scripted_gigachat.chat_handler = Script()
        code = cli.main(list(args))
        return code, out, err.getvalue()

    yield run
    get_settings.cache_clear()


def answer_writes(out: Terminal, answer: str) -> list[str]:
    return [w for w in out.writes if w.strip() and w.strip() in answer]


def test_ask_streams_the_answer_and_prints_the_checked_one(lotsman: Any, small_session: str) -> None:
    code, as_json, err = lotsman("ask", QUESTION, "--session", small_session, "--json")
    assert code == 0, err
    checked = json.loads(as_json.getvalue())
    assert checked["answer_mode"] == "llm" and INVENTED not in checked["answer"]
    assert len(as_json.writes) <= 2, "--json is one document, printed once"

    code, out, err = lotsman("ask", QUESTION, "--session", small_session)

    assert code == 0, err
    assert out.getvalue() == checked["answer"] + "\n", "what ends up printed is the non-streamed answer"
    assert len(answer_writes(out, checked["answer"])) > 3, "the answer is printed in pieces as it streams"
    assert "secret" not in out.getvalue(), "a citation that fails the check is never printed"
    assert "note:" not in err and "routed by the LLM" in err


def test_offline_ask_prints_at_once(monkeypatch: pytest.MonkeyPatch, offline_env: Callable[..., dict[str, str]],
                                    small_session: str) -> None:
    for key, value in offline_env().items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    out = Terminal()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    try:
        assert cli.main(["ask", QUESTION, "--session", small_session]) == 0
    finally:
        get_settings.cache_clear()
    assert [w for w in out.writes if w.strip()] == [out.getvalue().rstrip("\n")]


def test_chat_streams_each_turn(lotsman: Any, small_session: str) -> None:
    code, out, err = lotsman("chat", "--session", small_session, stdin=f"{QUESTION}\n\n")
    assert code == 0, err
    text = out.getvalue()
    assert text.startswith("you> Чтобы настроить CORS") and text.endswith("\nyou> ")
    assert len([w for w in out.writes if w.strip() and w != "you> "]) > 3
    assert "secret" not in text
