"""The GigaChat path end to end: the real `langchain_gigachat.GigaChat(streaming=True)` on the fake server.

Retrieval runs on the small corpus in the test database; the fake server answers the router's function
call with a route and the answer call with streamed text citing a `<document>` it was actually given.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import build_graph
from graph.context import Context
from graph.deps import GraphDeps
from graph.settings import Settings
from nodes.conversation_understanding.messages import unlink_citations
from tests.e2e.conftest import CORS_DISABLE_LINES, covers
from tests.fakes.gigachat_server import (
    Delay,
    Disconnect,
    Fail,
    FakeGigaChatServer,
    Reply,
    Text,
    make_fake_gigachat_chat,
)

DOC_TAG = re.compile(r'<document path="([^"]+)" lines="(\d+)-(\d+)"')
ROUTE = {"routing_domain": "DOCS", "intent": "DOC_EXPLAIN", "subintent": "SUMMARY", "confidence": 0.9,
         "reason_short": "объяснение настройки CORS"}
QUESTION = "Как настроить CORS в приложении?"
INVENTED = "[docs/secret.md:1-99]"
PARTIAL = "a partial answer that never ends"  # what the fake streams before a Disconnect


def documents(request: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The `(path, start, end)` of every fenced document in the answer request."""
    text = request["messages"][-1]["content"]
    return [(m[1], int(m[2]), int(m[3])) for m in DOC_TAG.finditer(text)]


class Script:
    """Chat handler: route JSON for the router's function call, a passage choice for the analysis call, a
    rewrite for rewrite prompts, `answer` for answers."""

    def __init__(self, answer: Reply | None = None, rewrite: str = "") -> None:
        self.answer = answer
        self.rewrite = rewrite
        self.kinds: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        names = [f.get("name") for f in request.get("functions") or []]
        if "choose_passages" in names:  # the LLM variant of context_analysis: keep the first two passages
            self.kinds.append("analysis")
            return json.dumps({"passages": [1, 2], "sufficient": True, "conflicts": []})
        if names:
            self.kinds.append("route")
            return json.dumps(ROUTE)
        docs = documents(request)
        if not docs:
            self.kinds.append("rewrite")
            return Text(self.rewrite)
        self.kinds.append("answer")
        if self.answer is not None:
            return self.answer
        path, start, end = next(d for d in docs if d[0] == "docs/cors.md")
        return Text(f"Чтобы настроить CORS, добавьте `CORSMiddleware` и задайте `allow_origins` "
                    f"[{path}:{start}-{end}]. Ещё есть секретный файл {INVENTED}.")


@pytest.fixture
def server() -> Iterator[FakeGigaChatServer]:
    with FakeGigaChatServer() as srv:
        yield srv


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def make_graph(db, server: FakeGigaChatServer, checkpointer: Any = None, **chat: Any) -> Any:
    model = make_fake_gigachat_chat(server, **{"timeout": 3.0, **chat})
    return build_graph(GraphDeps(settings=Settings(), db=db, chat_model=model), checkpointer=checkpointer)


async def stream(graph: Any, question: str, session: str, config: dict[str, Any] | None = None,
                 **context: Any) -> tuple[list[tuple[Any, dict]], dict[str, Any]]:
    """Run with stream_mode messages+values; return the message events and the final state."""
    events: list[tuple[Any, dict]] = []
    final: dict[str, Any] = {}
    async for mode, data in graph.astream({"messages": [HumanMessage(question)]}, config,
                                          context=Context(rag_session_id=session, **context),
                                          stream_mode=["messages", "values"]):
        if mode == "messages":
            events.append(data)
        else:
            final = data
    return events, final


def answer_tokens(events: list[tuple[Any, dict]]) -> list[str]:
    return [msg.content for msg, meta in events
            if isinstance(msg, AIMessageChunk) and meta.get("langgraph_node") == "answer_composition"
            and msg.content]


def assert_no_secrets(server: FakeGigaChatServer, logs: pytest.LogCaptureFixture, *things: Any) -> None:
    secrets = [server.credentials, base64.b64decode(server.credentials).decode().split(":", 1)[1],
               *server.issued_tokens]
    texts = [logs.text, *(r.getMessage() for r in logs.records),
             *(json.dumps(t, default=str, ensure_ascii=False) for t in things)]
    for secret in secrets:
        assert not any(secret in text for text in texts), "a GigaChat credential leaked"


def assert_extractive(final: dict[str, Any]) -> None:
    assert final["answer"].strip() and final["abstained"] is False
    assert final["citations"] and covers(final["citations"], "docs/cors.md", 7), final["citations"]
    assert PARTIAL not in final["answer"]
    last = final["messages"][-1]
    assert isinstance(last, AIMessage) and unlink_citations(last.content) == final["answer"]
    # Extractive answers quote the evidence: the lead line names the main source.
    assert "`docs/cors.md`" in final["answer"]


# --- the happy path -------------------------------------------------------------------------------------
async def test_streams_llm_answer_tokens_and_keeps_only_verified_citations(
        db, small_session: str, server: FakeGigaChatServer, logs: pytest.LogCaptureFixture) -> None:
    script = Script()
    server.chat_handler = script
    graph = make_graph(db, server)

    events, final = await stream(graph, QUESTION, small_session)

    assert script.kinds == ["route", "analysis", "answer"]
    tokens = answer_tokens(events)
    assert len(tokens) >= 5, "the answer arrives token by token (streaming=True)"
    streamed = "".join(tokens)
    assert INVENTED in streamed  # what the model said ...
    assert INVENTED not in final["answer"]  # ... and what survived citation verification
    assert any("docs/secret.md" in c for c in final["citations_removed"]), "the output says what was removed"
    assert final["citations"] and all(c["path"] == "docs/cors.md" for c in final["citations"])
    [cite] = final["citations"]
    assert f"[docs/cors.md:{cite['start_line']}-{cite['end_line']}]" in final["answer"]
    assert final["abstained"] is False
    assert final["route"]["routing_mode"] == "llm_default" and final["route"]["llm_router_used"] is True
    assert (final["answer_mode"], final["offline_reason"]) == ("llm", ""), "the LLM path stays the LLM path"
    assert "без LLM" not in final["answer"]

    # The requests the real SDK sent: a function call for the router, a streamed answer with fenced docs.
    route_req, _analysis_req, answer_req = (r.json for r in server.chat_requests)
    assert route_req["functions"] and route_req["function_call"]
    assert answer_req["stream"] is True and "<documents>" in answer_req["messages"][-1]["content"]
    assert any(p == "docs/cors.md" and s <= cite["start_line"] and cite["end_line"] <= e
               for p, s, e in documents(answer_req)), "the kept citation lies inside a document sent"
    # the model reads the whole evidence pack within the cap, not only the passages the rules picked
    evidence_files = {row.path for row in final["evidence"]}
    assert len(evidence_files) > 1 and evidence_files <= {p for p, _, _ in documents(answer_req)}
    assert_no_secrets(server, logs, final, events)


async def test_follow_up_is_rewritten_by_the_llm(db, small_session: str, server: FakeGigaChatServer,
                                                 logs: pytest.LogCaptureFixture) -> None:
    script = Script(rewrite="Как отключить CORS в приложении?")
    server.chat_handler = script
    graph = make_graph(db, server, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "gigachat-follow-up"}}

    await stream(graph, QUESTION, small_session, config)

    def answer_from_disable_lines(request: dict[str, Any]) -> Reply:
        reply = script(request)
        if script.kinds[-1] != "answer":
            return reply
        path, start, end = next(d for d in documents(request)
                                if d[0] == "docs/cors.md" and d[1] <= CORS_DISABLE_LINES[0] <= d[2])
        return Text(f"Удалите `CORSMiddleware` [{path}:{start}-{end}].")

    server.chat_handler = answer_from_disable_lines
    _, final = await stream(graph, "А как это отключить?", small_session, config)

    assert script.kinds[3:] == ["rewrite", "route", "analysis", "answer"]
    rewrite_req = server.chat_requests[2].json
    assert "Как настроить CORS" in json.dumps(rewrite_req["messages"], ensure_ascii=False)
    state = (await graph.aget_state(config)).values
    assert state["request"].text == "Как отключить CORS в приложении?" and state["request"].rewritten_by_llm
    assert covers(final["citations"], "docs/cors.md", CORS_DISABLE_LINES[0])
    assert_no_secrets(server, logs, state)


# --- failures fall back ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("failure", "reason", "note"),
    [(Disconnect(after_chunks=2), "answer_composition: RemoteProtocolError", "модель недоступна"),
     (Fail(500), "answer_composition: ServerError 500", "модель вернула ошибку")],
    ids=["disconnect", "http-500"])
async def test_failure_mid_answer_gives_the_extractive_answer(
        db, small_session: str, server: FakeGigaChatServer, logs: pytest.LogCaptureFixture,
        failure: Reply, reason: str, note: str) -> None:
    script = Script(answer=failure)
    server.chat_handler = script
    graph = make_graph(db, server)

    events, final = await stream(graph, QUESTION, small_session)

    assert script.kinds == ["route", "analysis", "answer"]
    assert final["route"]["routing_mode"] == "llm_default", "the router call itself succeeded"
    assert_extractive(final)
    assert (final["answer_mode"], final["offline_reason"]) == ("offline", reason)
    assert final["answer"].endswith(f"(ответ собран без LLM: {note})"), "the answer says it was made offline"
    if isinstance(failure, Disconnect):
        assert answer_tokens(events), "some tokens were streamed before the connection dropped"
    assert_no_secrets(server, logs, final, events)


@pytest.mark.parametrize("refusal", [Fail(429), Fail(503)], ids=["rate-limit", "server-error"])
async def test_a_refused_router_call_takes_the_rest_of_the_request_offline(
        db, small_session: str, server: FakeGigaChatServer, refusal: Fail) -> None:
    script = Script()
    server.chat_handler = script
    server.script_chat([refusal])  # the router's call; analysis and answer would get the script
    graph = make_graph(db, server)

    _, final = await stream(graph, QUESTION, small_session)

    assert len(server.chat_requests) == 1 and script.kinds == [], "no LLM call after the refusal"
    assert final["route"]["routing_mode"] == "fallback_llm_error"
    assert final["offline_reason"].startswith("intent_routing: ") and str(refusal.status) in final["offline_reason"]
    assert_extractive(final)
    assert final["answer"].endswith("(ответ собран без LLM: модель вернула ошибку)")


async def test_stalled_answer_gives_the_extractive_answer_within_the_run_timeout(
        db, small_session: str, server: FakeGigaChatServer) -> None:
    server.chat_handler = Script(answer=Delay(10, then=Text("too late [docs/cors.md:1-13]")))
    graph = make_graph(db, server, timeout=30.0)

    started = time.perf_counter()
    _, final = await stream(graph, QUESTION, small_session, llm_timeout_s=1.0)

    assert time.perf_counter() - started < 8, "Context.llm_timeout_s bounds the answer call"
    assert_extractive(final)
    assert "too late" not in final["answer"]
    assert final["offline_reason"] == "answer_composition: no answer within 1s"
    assert final["answer"].endswith("(ответ собран без LLM: модель не ответила вовремя)")


async def test_unreachable_gigachat_falls_back_everywhere(db, small_session: str, server: FakeGigaChatServer,
                                                          logs: pytest.LogCaptureFixture) -> None:
    graph = make_graph(db, server)
    server.stop()  # nothing listens on its port any more

    started = time.perf_counter()
    events, final = await stream(graph, QUESTION, small_session)

    assert time.perf_counter() - started < 15
    assert final["route"]["routing_mode"].startswith("fallback"), final["route"]
    assert final["route"]["llm_router_used"] is False
    assert_extractive(final)
    assert not answer_tokens(events)
    assert (final["answer_mode"], final["offline_reason"]) == ("offline", "intent_routing: ConnectError")
    assert final["answer"].endswith("(ответ собран без LLM: модель недоступна)")
    assert_no_secrets(server, logs, final, events)


async def test_unreachable_gigachat_on_a_follow_up(db, small_session: str,
                                                   server: FakeGigaChatServer) -> None:
    """The LLM rewrite fails too: the deterministic carry-over still resolves the follow-up."""
    server.chat_handler = Script()
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "gigachat-down-follow-up"}}
    await stream(make_graph(db, server, checkpointer=saver), QUESTION, small_session, config)
    server.stop()
    # A fresh client: the stopped fake still serves connections kept alive from the first turn.
    graph = make_graph(db, server, checkpointer=saver)

    _, final = await stream(graph, "А как это отключить?", small_session, config)

    assert final["route"]["routing_mode"].startswith("fallback")
    assert final["abstained"] is False
    assert covers(final["citations"], "docs/cors.md", CORS_DISABLE_LINES[0]), final["answer"]
