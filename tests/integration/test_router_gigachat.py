"""The router through the real GigaChat SDK (`langchain-gigachat`) against the local fake GigaChat server."""

from __future__ import annotations

import base64
import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gigachat.exceptions import AuthenticationError
from langchain_gigachat import GigaChat, GigaChatEmbeddings

from nodes.intent_routing import AliasEntry, InMemoryAliasIndex, IntentRouter, RouteResult, RoutingMode
from tests.fakes import gigachat_server as fake
from tests.fakes.gigachat_server import (
    Delay,
    Disconnect,
    Fail,
    FakeGigaChatServer,
    FunctionCall,
    Text,
    make_fake_gigachat_chat,
)

fake_gigachat_server = fake.fake_gigachat_server  # the exported fixture, used as-is

INDEX = InMemoryAliasIndex(
    [AliasEntry("cors", ["docs/ru/docs/tutorial/cors.md"], "middleware")],
    {"/health": ["docs/api/health.md"]},
)
QUERY = "В каком файле описан CORS?"
FIND_FILES = {
    "routing_domain": "DOCS",
    "intent": "DOC_EXPLAIN",
    "subintent": "FIND_FILES",
    "confidence": 0.9,
    "reason_short": "ищет файл про CORS",
}
SUMMARY = {**FIND_FILES, "subintent": "SUMMARY", "confidence": 0.7, "reason_short": "объяснение"}
TIMEOUT_S = 1.0


@pytest.fixture
def server() -> Iterator[FakeGigaChatServer]:
    with FakeGigaChatServer() as srv:
        yield srv


def router(server: FakeGigaChatServer, **chat_kwargs: Any) -> IntentRouter:
    return IntentRouter(make_fake_gigachat_chat(server, **chat_kwargs), INDEX, timeout_s=TIMEOUT_S)


def secrets_of(server: FakeGigaChatServer) -> list[str]:
    client_secret = base64.b64decode(server.credentials).decode().split(":", 1)[1]
    return [server.credentials, client_secret, *server.issued_tokens]


def assert_no_secrets(server: FakeGigaChatServer, caplog: pytest.LogCaptureFixture, *texts: str) -> None:
    logged = [caplog.text, *(r.getMessage() for r in caplog.records), *texts]
    for secret in secrets_of(server):
        assert not any(secret in text for text in logged), "a credential leaked into logs or messages"


# --- the LLM route is used ----------------------------------------------------------------------------
def test_valid_route_through_streaming_function_call(server: FakeGigaChatServer) -> None:
    server.script_chat([json.dumps(FIND_FILES)])
    result = router(server).route(QUERY)

    assert result.routing_mode == RoutingMode.LLM_DEFAULT
    assert result.llm_router_used is True
    assert result.route_label == "DOC_EXPLAIN/FIND_FILES"
    assert result.confidence == pytest.approx(0.95)  # +0.05: file markers are an explicit signal
    assert result.reason_short == "ищет файл про CORS"
    assert result.anchors.target_doc_hints == ["docs/ru/docs/tutorial/cors.md"]

    auth, chat = server.requests
    assert auth.path == "/api/v2/oauth" and auth.form == {"scope": server.scope}
    assert auth.headers["Authorization"] == f"Basic {server.credentials}"
    body = chat.json
    assert body["stream"] is True
    assert body["function_call"] == {"name": "choose_route"}
    assert [f["name"] for f in body["functions"]] == ["choose_route"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "<router_input>" in body["messages"][1]["content"]
    assert QUERY in body["messages"][1]["content"]


def test_valid_route_without_streaming(server: FakeGigaChatServer) -> None:
    server.script_chat([FunctionCall(SUMMARY)])
    result = router(server, streaming=False).route("Как настроить CORS?")

    assert (result.routing_mode, result.route_label) == ("llm_default", "DOC_EXPLAIN/SUMMARY")
    assert "stream" not in server.chat_requests[0].json


def test_text_answer_instead_of_a_function_call_is_parsed(server: FakeGigaChatServer) -> None:
    server.script_chat([Text("Вот маршрут:\n```json\n" + json.dumps(SUMMARY) + "\n```")])
    result = router(server).route("Как настроить CORS?")

    assert result.routing_mode == "llm_default"
    assert result.route_label == "DOC_EXPLAIN/SUMMARY"


def test_json_schema_method_sends_response_format(server: FakeGigaChatServer) -> None:
    server.script_chat([json.dumps(SUMMARY)])
    routed = IntentRouter(make_fake_gigachat_chat(server), INDEX, structured_method="json_schema")
    result = routed.route("Как настроить CORS?")

    assert result.routing_mode == "llm_default"
    response_format = server.chat_requests[0].json["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["schema"]["properties"]["subintent"]["enum"] == ["FIND_FILES", "SUMMARY"]


async def test_valid_route_async(server: FakeGigaChatServer) -> None:
    server.script_chat([json.dumps(SUMMARY)])
    result = await router(server).aroute("Как настроить CORS?")

    assert result.routing_mode == "llm_default"
    assert result.llm_router_used is True


def test_sdk_reads_settings_from_env(server: FakeGigaChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    server.script_chat([json.dumps(SUMMARY)])

    result = IntentRouter(GigaChat(streaming=True), INDEX, timeout_s=TIMEOUT_S).route("Как настроить CORS?")

    assert result.routing_mode == "llm_default"


# --- every failure ends in the fallback route, in time, without leaking credentials --------------------
FAILURES = {
    "broken_json": ([Text('{"routing_domain": "DOCS", "intent": ')], RoutingMode.FALLBACK_LLM_INVALID),
    "not_json": ([Text("broken")], RoutingMode.FALLBACK_LLM_INVALID),
    "route_outside_catalog": (
        [json.dumps({**FIND_FILES, "subintent": "EXPLAIN_CODE"})],
        RoutingMode.FALLBACK_LLM_INVALID,
    ),
    "http_401_twice": ([Fail(401), Fail(401)], RoutingMode.FALLBACK_LLM_ERROR),
    "http_429": ([Fail(429, headers={"Retry-After": "30"})], RoutingMode.FALLBACK_LLM_ERROR),
    "http_500": ([Fail(500)], RoutingMode.FALLBACK_LLM_ERROR),
    "disconnect_mid_stream": ([Disconnect(after_chunks=1)], RoutingMode.FALLBACK_LLM_ERROR),
    "timeout": ([Delay(10, json.dumps(FIND_FILES))], RoutingMode.FALLBACK_LLM_ERROR),
}


def assert_fallback(result: RouteResult, mode: RoutingMode, elapsed: float) -> None:
    assert result.routing_mode == mode
    assert result.llm_router_used is False
    assert result.route_label == "DOC_EXPLAIN/FIND_FILES"
    assert result.anchors.matched_aliases == ["cors"]
    assert elapsed < TIMEOUT_S + 0.75  # the limit plus scheduling slack on a busy CI machine


@pytest.mark.parametrize(("script", "mode"), FAILURES.values(), ids=FAILURES.keys())
def test_failures_fall_back_sync(
    server: FakeGigaChatServer, caplog: pytest.LogCaptureFixture, script: list[Any], mode: RoutingMode
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script_chat(script)
    start = time.monotonic()
    result = router(server).route(QUERY)

    assert_fallback(result, mode, time.monotonic() - start)
    assert_no_secrets(server, caplog, result.reason_short)


@pytest.mark.parametrize(("script", "mode"), FAILURES.values(), ids=FAILURES.keys())
async def test_failures_fall_back_async(
    server: FakeGigaChatServer, caplog: pytest.LogCaptureFixture, script: list[Any], mode: RoutingMode
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script_chat(script)
    start = time.monotonic()
    result = await router(server).aroute(QUERY)

    assert_fallback(result, mode, time.monotonic() - start)
    assert_no_secrets(server, caplog, result.reason_short)


def test_oauth_rejects_credentials(server: FakeGigaChatServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = base64.b64encode(b"fake-client-id:wrong-secret-77").decode()
    start = time.monotonic()
    result = router(server, credentials=wrong).route(QUERY)

    assert_fallback(result, RoutingMode.FALLBACK_LLM_ERROR, time.monotonic() - start)
    assert "AuthenticationError 401" in result.reason_short
    assert server.chat_requests == []
    for text in (caplog.text, result.reason_short):
        assert wrong not in text and "wrong-secret-77" not in text


def test_scripted_oauth_failure(server: FakeGigaChatServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server.script_auth([Fail(401)])
    result = router(server).route(QUERY)

    assert result.routing_mode == "fallback_llm_error"
    assert_no_secrets(server, caplog, result.reason_short)


def test_connection_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    credentials = base64.b64encode(b"id:refused-secret-31").decode()
    chat = GigaChat(
        base_url=f"http://127.0.0.1:{port}/api/v1",
        auth_url=f"http://127.0.0.1:{port}/api/v2/oauth",
        credentials=credentials,
        model="GigaChat-2",
        verify_ssl_certs=False,
        streaming=True,
        max_retries=0,
    )
    start = time.monotonic()
    result = IntentRouter(chat, INDEX, timeout_s=TIMEOUT_S).route(QUERY)

    assert_fallback(result, RoutingMode.FALLBACK_LLM_ERROR, time.monotonic() - start)
    assert "ConnectError" in result.reason_short
    assert credentials not in caplog.text and "refused-secret-31" not in caplog.text


def test_sdk_exception_messages_carry_no_credentials(server: FakeGigaChatServer) -> None:
    server.script_auth([Fail(401)])
    with pytest.raises(AuthenticationError) as caught:
        make_fake_gigachat_chat(server).invoke("hi")

    for secret in secrets_of(server):
        assert secret not in str(caught.value) and secret not in repr(caught.value)


# --- the fake speaks the rest of the protocol the app uses ---------------------------------------------
def test_streaming_text_arrives_in_chunks_and_usage_merges(server: FakeGigaChatServer) -> None:
    server.script_chat(["Зависимости объявляются через Depends и вызываются на каждый запрос."])
    chunks = list(make_fake_gigachat_chat(server).stream("Что такое Depends?"))

    assert len(chunks) > 3
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.content.startswith("Зависимости объявляются")
    assert (
        merged.usage_metadata is not None and merged.usage_metadata["input_token_details"]["cache_read"] == 0
    )


def test_embeddings_tokens_and_models(server: FakeGigaChatServer) -> None:
    embeddings = GigaChatEmbeddings(**server.sdk_kwargs())
    vectors = embeddings.embed_documents(["a", "b", "a"])
    chat = make_fake_gigachat_chat(server, use_api_for_tokens=True)

    assert [len(v) for v in vectors] == [1024, 1024, 1024]
    assert vectors[0] == vectors[2] and vectors[0] != vectors[1]
    assert chat.get_num_tokens("четыре слова здесь вот") > 0
    assert [m.id_ for m in chat.get_models().data] == ["GigaChat", "GigaChat-2"]
    paths = [r.path for r in server.requests]
    assert {"/api/v1/embeddings", "/api/v1/tokens/count", "/api/v1/models"} <= set(paths)


def test_embedding_dimension_is_configurable() -> None:
    with FakeGigaChatServer(embedding_dim=384) as srv:
        assert len(GigaChatEmbeddings(**srv.sdk_kwargs()).embed_query("x")) == 384


def test_chat_handler_callback_sees_each_request(server: FakeGigaChatServer) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: dict[str, Any]) -> str:
        seen.append(request)
        return json.dumps(SUMMARY)

    server.chat_handler = handler
    routed = router(server)
    results = [routed.route("Как настроить CORS?"), routed.route("Что такое CORS?")]

    assert [r.routing_mode for r in results] == ["llm_default", "llm_default"]
    assert len(seen) == 2


def test_exported_fixture(fake_gigachat_server: FakeGigaChatServer) -> None:
    fake_gigachat_server.script_chat(["pong"])
    assert make_fake_gigachat_chat(fake_gigachat_server).invoke("ping").content == "pong"
