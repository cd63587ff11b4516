"""Issue 39: the request's LLM deadline holds with a slow local OpenAI-compatible server.

A model on a few CPU cores answers late or trickles its tokens. Whatever the server does, one request waits
at most `GIGACHAT_REQUEST_DEADLINE` seconds for it in total, then answers offline (the extractive answer,
saying so). The bound asserted is the deadline plus `SLACK_S` for everything else (as in
test_llm_deadline.py for GigaChat), not a speed benchmark.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage

from graph.builder import build_graph
from graph.context import Context
from graph.deps import GraphDeps, make_chat_model
from graph.settings import GigaChatSettings, Settings
from tests.e2e.conftest import ROOT, VENV_BIN, covers
from tests.fakes.openai_server import Delay, FakeOpenAIServer, Replay, Reply, Trickle, call_kind, load_fixture

DEADLINE_S = 3.0
SLACK_S = 2.0
QUESTION = "Как настроить CORS в приложении?"
RU_NOTE = "(ответ собран без LLM: модель не ответила вовремя)"
LLM_STAGES = ("conversation_understanding", "intent_routing", "context_analysis", "answer_composition")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def openai_graph(db: Any, server: FakeOpenAIServer, deadline: float = DEADLINE_S) -> Any:
    settings = Settings(llm_provider="openai", openai_base_url=server.base_url, llm_model=server.models[0],
                        gigachat=GigaChatSettings(request_deadline=deadline))
    return build_graph(GraphDeps(settings=settings, db=db, chat_model=make_chat_model(settings)))


async def timed_stream(graph: Any, session: str, **context: Any) -> tuple[dict[str, Any], list[str], float]:
    """The final state, the answer tokens streamed, and the run's wall time."""
    tokens: list[str] = []
    final: dict[str, Any] = {}
    started = time.monotonic()
    async for mode, data in graph.astream({"messages": [HumanMessage(QUESTION)]},
                                          context=Context(rag_session_id=session, **context),
                                          stream_mode=["messages", "values"]):
        if mode == "messages":
            msg, meta = data
            if isinstance(msg, AIMessageChunk) and msg.content and meta.get("langgraph_node") == "answer_composition":
                tokens.append(str(msg.content))
        else:
            final = data
    return final, tokens, time.monotonic() - started


def slow(kinds: dict[str, Callable[[Reply], Reply]]) -> Callable[[dict[str, Any]], Reply]:
    """The clean replies, those of the named calls made slow."""
    clean = Replay(load_fixture("clean"))

    def handler(request: dict[str, Any]) -> Reply:
        reply = clean(request)
        change = kinds.get(call_kind(request))
        return change(reply) if change else reply

    return handler


def assert_offline_extractive(final: dict[str, Any], stage: str) -> None:
    assert final["answer_mode"] == "offline"
    assert final["offline_reason"].startswith(f"{stage}: "), final["offline_reason"]
    assert final["answer"].endswith(RU_NOTE)
    assert final["citations"] and covers(final["citations"], "docs/cors.md", 7)
    assert "`docs/cors.md`" in final["answer"], "the extractive answer"


async def test_a_server_that_sleeps_past_the_deadline_costs_one_deadline(
        db: Any, small_session: str, server: FakeOpenAIServer) -> None:
    server.chat_handler = lambda request: Delay(30, then="{}")
    graph = openai_graph(db, server)
    await timed_stream(graph, small_session, use_llm=False)  # the session's bundle and embedder load here

    final, tokens, elapsed = await timed_stream(graph, small_session)

    assert elapsed < DEADLINE_S + SLACK_S, f"one ask took {elapsed:.1f}s with a {DEADLINE_S:g}s LLM deadline"
    assert len(server.chat_requests) == 1, "after the router's call got no answer, no other call was made"
    assert final["route"]["routing_mode"] == "fallback_llm_error"
    assert_offline_extractive(final, "intent_routing")
    assert final["offline_reason"] == f"intent_routing: no answer within {DEADLINE_S:g}s"
    assert not tokens


async def test_an_answer_trickling_past_the_deadline_is_cut_and_answered_offline(
        db: Any, small_session: str, server: FakeOpenAIServer) -> None:
    """Router and analysis answer at once; the answer streams a chunk every 0.5 s for ~10 s."""
    text = "Чтобы настроить CORS, добавьте `CORSMiddleware` и задайте `allow_origins` в приложении. " * 2
    server.chat_handler = slow({"answer": lambda reply: Trickle(text, chunk_s=0.5)})
    graph = openai_graph(db, server)
    await timed_stream(graph, small_session, use_llm=False)

    final, tokens, elapsed = await timed_stream(graph, small_session)

    assert elapsed < DEADLINE_S + SLACK_S, f"one ask took {elapsed:.1f}s with a {DEADLINE_S:g}s LLM deadline"
    assert tokens, "some tokens streamed before the deadline"
    assert final["route"]["routing_mode"] == "llm_default"
    assert_offline_extractive(final, "answer_composition")


async def test_a_re_ask_gets_only_what_the_deadline_leaves(db: Any, small_session: str,
                                                           server: FakeOpenAIServer) -> None:
    """The wrong-language answer arrives after 1 s; its re-ask sleeps 30 s: the request still ends on time."""
    replay = Replay(load_fixture("answer_wrong_language"))

    def handler(request: dict[str, Any]) -> Reply:
        reply = replay(request)
        answers = replay.kinds.count("answer")
        return Delay(1.0, then=reply) if answers == 1 and replay.kinds[-1] == "answer" else \
            Delay(30, then=reply) if answers == 2 and replay.kinds[-1] == "answer" else reply

    server.chat_handler = handler
    graph = openai_graph(db, server)
    await timed_stream(graph, small_session, use_llm=False)

    final, _, elapsed = await timed_stream(graph, small_session)

    assert elapsed < DEADLINE_S + SLACK_S, f"one ask took {elapsed:.1f}s with a {DEADLINE_S:g}s LLM deadline"
    assert replay.kinds == ["route", "analysis", "answer", "answer"]
    assert final["llm_events"][-1] == "answer_composition: answer in the wrong language, re-asked"
    assert_offline_extractive(final, "answer_composition")


def test_cli_ask_against_a_slow_local_server_ends_within_the_deadline(
        offline_env: Callable[..., dict[str, str]], small_session: str, server: FakeOpenAIServer) -> None:
    """`lotsman ask` as users run it: the provider and the deadline from the environment."""
    server.chat_handler = lambda request: Delay(30, then="{}")
    cmd = [str(VENV_BIN / "lotsman"), "ask", QUESTION, "--session", small_session, "--json"]
    env = offline_env(**server.env(), GIGACHAT_REQUEST_DEADLINE=f"{DEADLINE_S:g}")

    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    llm_stages_s = sum(ms for node, ms in out["timings_ms"].items() if node in LLM_STAGES) / 1000
    assert llm_stages_s < DEADLINE_S + SLACK_S, out["timings_ms"]
    assert out["answer_mode"] == "offline" and out["answer"].endswith(RU_NOTE)
    assert out["route"]["routing_mode"] == "fallback_llm_error"
    assert len(server.chat_requests) == 1
    assert "Traceback" not in proc.stderr
