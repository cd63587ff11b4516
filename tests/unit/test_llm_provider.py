"""Issue 39, item 1: a second chat provider, any OpenAI-compatible endpoint (`LOTSMAN_LLM_PROVIDER=openai`).

The switch is read at start-up (a bad value is one line, exit 2), the model is LangChain's `ChatOpenAI` with
the limits GigaChat gets, and the router, analysis and answer calls reach a fake OpenAI-compatible server
on 127.0.0.1 through the real SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph.deps import OPENAI_NO_KEY, client_limits, make_chat_model
from graph.settings import GigaChatSettings, Settings, SettingsError, get_settings
from nodes.intent_routing import IntentRouter
from nodes.llm_budget import LLMUnavailable, OfflineCause
from tests.fakes.gigachat_server import Delay, Fail, RecordedRequest
from tests.fakes.openai_server import FakeOpenAIServer, Text, ToolCall, make_fake_openai_chat
from tests.unit.test_settings_env import ENV_PREFIXES, clean_env  # noqa: F401 - autouse: only the variables a test sets

ROOT = Path(__file__).resolve().parents[2]
ROUTE = {"routing_domain": "DOCS", "intent": "DOC_EXPLAIN", "subintent": "SUMMARY", "confidence": 0.8,
         "reason_short": "how to configure"}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-local-test-key") as srv:
        yield srv


def auth_header(request: RecordedRequest) -> str | None:
    return next((v for k, v in request.headers.items() if k.lower() == "authorization"), None)


def openai_settings(server: FakeOpenAIServer, **gigachat: float) -> Settings:
    return Settings(llm_provider="openai", openai_base_url=server.base_url, llm_model=server.models[0],
                    openai_api_key=server.api_key, gigachat=GigaChatSettings(**gigachat))


# --- the switch, read at start-up ---------------------------------------------------------------------------
def test_gigachat_stays_the_default_and_offline_without_credentials() -> None:
    settings = get_settings()
    assert settings.llm_provider == "gigachat"
    assert make_chat_model(settings) is None


@pytest.mark.parametrize(("env", "says"), [
    ({"LOTSMAN_LLM_PROVIDER": "ollama"}, "LOTSMAN_LLM_PROVIDER: Input should be 'gigachat' or 'openai' (got 'ollama')"),
    ({"LOTSMAN_LLM_PROVIDER": "openai"}, "openai needs OPENAI_BASE_URL and LOTSMAN_LLM_MODEL set"),
    ({"LOTSMAN_LLM_PROVIDER": "openai", "LOTSMAN_LLM_MODEL": "qwen"}, "openai needs OPENAI_BASE_URL set"),
    ({"LOTSMAN_LLM_PROVIDER": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "LOTSMAN_LLM_MODEL": " "},
     "openai needs LOTSMAN_LLM_MODEL set"),
    ({"LOTSMAN_LLM_PROVIDER": "openai", "OPENAI_BASE_URL": "127.0.0.1:8000", "LOTSMAN_LLM_MODEL": "qwen"},
     "OPENAI_BASE_URL: must be an http:// or https:// URL"),
])
def test_a_provider_that_cannot_be_used_is_named_at_start_up(monkeypatch: pytest.MonkeyPatch,
                                                              env: dict[str, str], says: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as info:
        get_settings()
    assert says in str(info.value) and "\n" not in str(info.value)


def test_the_provider_name_is_read_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOTSMAN_LLM_PROVIDER", " OpenAI ")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("LOTSMAN_LLM_MODEL", "qwen2.5-0.5b-instruct")
    settings = get_settings()
    assert (settings.llm_provider, settings.llm_model) == ("openai", "qwen2.5-0.5b-instruct")


def test_cli_says_a_bad_provider_in_one_line_with_exit_2() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env.update(LOTSMAN_LLM_PROVIDER="openai", LOTSMAN_LLM_MODEL="qwen", LOTSMAN_DATA_DIR="/nonexistent/lotsman")
    proc = subprocess.run([sys.executable, "-m", "graph.cli", "ask", "How do I configure CORS?"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: LOTSMAN_LLM_PROVIDER: openai needs OPENAI_BASE_URL set: fix or unset the variable"]


# --- the model: LangChain's ChatOpenAI with GigaChat's limits ---------------------------------------------------
def test_the_openai_provider_builds_a_streaming_chat_openai_within_the_deadline(server: FakeOpenAIServer) -> None:
    from langchain_openai import ChatOpenAI

    settings = openai_settings(server, timeout=30.0, max_retries=3, request_deadline=20.0)
    model = make_chat_model(settings)

    assert isinstance(model, ChatOpenAI)
    assert model.streaming is True and model.model_name == server.models[0]
    assert model.openai_api_base == server.base_url
    assert (model.request_timeout, model.max_retries) == client_limits(30.0, 3, 20.0) == (20.0, 0)


def test_without_a_key_a_placeholder_is_sent_and_a_keyless_server_answers() -> None:
    with FakeOpenAIServer() as keyless:
        settings = Settings(llm_provider="openai", openai_base_url=keyless.base_url, llm_model="m")
        model = make_chat_model(settings)
        assert model is not None
        assert model.invoke("hi").content == "OK"
        assert auth_header(keyless.chat_requests[0]) == f"Bearer {OPENAI_NO_KEY}"


def test_a_wrong_key_is_a_refusal_that_takes_the_request_offline(server: FakeOpenAIServer) -> None:
    settings = openai_settings(server).model_copy(update={"openai_api_key": None})
    model = make_chat_model(settings)
    assert model is not None
    router = IntentRouter(llm=model)

    with pytest.raises(LLMUnavailable) as info:
        asyncio.run(router.aroute("Как настроить CORS?", raise_unavailable=True))
    assert info.value.cause == OfflineCause.REFUSED and "401" in info.value.detail


def test_router_calls_the_route_function_through_the_sdk(server: FakeOpenAIServer) -> None:
    server.script_chat([ToolCall(ROUTE)])
    router = IntentRouter(llm=make_chat_model(openai_settings(server)))

    route = asyncio.run(router.aroute("Как настроить CORS в приложении?"))

    assert (route.routing_mode, route.intent, route.subintent) == ("llm_default", "DOC_EXPLAIN", "SUMMARY")
    request = server.chat_requests[0].json
    assert request["tools"][0]["function"]["name"] == "choose_route"
    assert request["tool_choice"]["function"]["name"] == "choose_route"
    assert request["model"] == server.models[0] and request["stream"] is True
    assert auth_header(server.chat_requests[0]) == "Bearer sk-local-test-key"


@pytest.mark.parametrize(("reply", "cause"), [
    (Fail(503), OfflineCause.REFUSED), (Fail(429), OfflineCause.REFUSED)], ids=["503", "429"])
def test_provider_errors_are_outages_like_gigachat_ones(server: FakeOpenAIServer, reply: Fail,
                                                        cause: OfflineCause) -> None:
    server.script_chat([reply])
    router = IntentRouter(llm=make_chat_model(openai_settings(server)))
    with pytest.raises(LLMUnavailable) as info:
        asyncio.run(router.aroute("Как настроить CORS?", raise_unavailable=True))
    assert info.value.cause == cause


def test_an_unreachable_server_is_unreachable_not_a_crash() -> None:
    with FakeOpenAIServer() as gone:
        settings = Settings(llm_provider="openai", openai_base_url=gone.base_url, llm_model="m")
    router = IntentRouter(llm=make_chat_model(settings))  # nothing listens on its port any more
    with pytest.raises(LLMUnavailable) as info:
        asyncio.run(router.aroute("Как настроить CORS?", raise_unavailable=True))
    assert info.value.cause == OfflineCause.UNREACHABLE and info.value.detail.endswith("ConnectionError")
    route = router.route("Как настроить CORS?")  # without raise_unavailable: the fallback route, no exception
    assert route.routing_mode == "fallback_llm_error"


def test_the_answer_streams_token_by_token(server: FakeOpenAIServer) -> None:
    server.script_chat([Text("Добавьте `CORSMiddleware` и задайте `allow_origins` в приложении.")])
    model = make_chat_model(openai_settings(server))
    assert model is not None

    async def chunks() -> list[str]:
        return [str(c.content) async for c in model.astream("Как настроить CORS?")]

    parts = [p for p in asyncio.run(chunks()) if p]
    assert len(parts) >= 5 and "".join(parts).startswith("Добавьте")
    assert json.loads(server.chat_requests[0].body)["stream"] is True


def test_the_clients_own_timeout_is_an_outage_too(server: FakeOpenAIServer) -> None:
    """The `openai` SDK's timeout (`APITimeoutError`, not httpx's or ours) takes the request offline, as a
    GigaChat timeout does: the client's limit is shorter than the call's here."""
    server.script_chat([Delay(3.0, then=ToolCall(ROUTE))])
    router = IntentRouter(llm=make_fake_openai_chat(server, timeout=0.5))

    with pytest.raises(LLMUnavailable) as info:
        asyncio.run(router.aroute("Как настроить CORS?", timeout_s=5.0, raise_unavailable=True))
    assert info.value.cause == OfflineCause.TIMEOUT and info.value.detail.endswith("TimeoutError")


def test_the_model_answers_in_every_event_loop_it_is_called_from(server: FakeOpenAIServer) -> None:
    """`lotsman eval --llm` runs each corpus in its own `asyncio.run` with one chat model: ChatOpenAI's cached
    async HTTP client kept a connection of the first loop, and the second loop's first call died with
    `RuntimeError: Event loop is closed` (seen on the second corpus of a real run)."""
    server.script_chat([Text("first"), Text("second"), Text("third")])
    model = make_chat_model(openai_settings(server))
    assert model is not None

    assert [asyncio.run(model.ainvoke(q)).content for q in ("a", "b", "c")] == ["first", "second", "third"]
