"""Issue 27 item 3: the graph as agent-chat-ui and LangGraph Studio use it, on a real `langgraph dev` whose
chat model is the real GigaChat SDK against the scripted fake GigaChat.

What a chat UI does: create a thread, send a human message whose content is a list of blocks, stream with
`messages-tuple`, render the thread's last AIMessage as Markdown. And what `lotsman assistants` adds: one
assistant per session, so the UI picks a repository by picking an assistant.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage
from langgraph_sdk import get_client

from graph.builder import build_graph
from graph.cli_assistants import assistant_id
from graph.context import Context
from graph.deps import GraphDeps
from graph.settings import Settings
from tests.e2e.conftest import ROOT, VENV_BIN, DevServer, running_dev_server
from tests.e2e.test_gigachat_path import INVENTED, QUESTION, Script
from tests.fakes.gigachat_server import FakeGigaChatServer, make_fake_gigachat_chat

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def blocks(text: str) -> dict[str, Any]:
    """A turn as agent-chat-ui sends it: content blocks, an attached image among them."""
    return {"messages": [{"type": "human", "content": [{"type": "text", "text": text}, IMAGE]}]}


@pytest.fixture(scope="module")
def chat_server(offline_env: Callable[..., dict[str, str]], scripted_gigachat: FakeGigaChatServer,
                tmp_path_factory: pytest.TempPathFactory, small_session: str) -> Iterator[DevServer]:
    env = offline_env(LOTSMAN_EMBEDDER="use", LOTSMAN_LOG_QUESTIONS="true", **scripted_gigachat.env())
    with running_dev_server(env, tmp_path_factory.mktemp("chat-ui-dev")) as server:
        yield server


def lotsman(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "lotsman"), *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)


async def stream_messages(client: Any, thread_id: str | None, assistant: str, **run: Any
                          ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    events = []
    async for part in client.runs.stream(thread_id, assistant, stream_mode="messages-tuple", **run):
        if part.event == "messages":
            message, metadata = part.data
            events.append((message, metadata))
    return events


# --- messages-tuple: only the answer streams --------------------------------------------------------------
async def test_messages_tuple_streams_only_answer_tokens(chat_server: DevServer, small_session: str,
                                                         scripted_gigachat: FakeGigaChatServer) -> None:
    script = Script()
    scripted_gigachat.chat_handler = script
    client = get_client(url=chat_server.url)
    thread = await client.threads.create()

    events = await stream_messages(client, thread["thread_id"], "lotsman", input=blocks(QUESTION),
                                   context={"rag_session_id": small_session})

    assert script.kinds == ["route", "analysis", "answer"], "the router and the analysis asked the model too"
    nodes = {metadata.get("langgraph_node") for _, metadata in events}
    assert nodes == {"answer_composition"}, f"internal LLM calls leaked into the stream: {nodes}"
    chunks = [m for m, _ in events if m["type"] == "AIMessageChunk"]
    assert len(chunks) >= 5, "the answer arrives token by token"
    assert not any(m.get("tool_calls") or m.get("tool_call_chunks") or m.get("additional_kwargs") for m in chunks)
    streamed = "".join(m["content"] for m in chunks)
    assert streamed.startswith("Чтобы настроить CORS") and INVENTED in streamed

    state = await client.threads.get_state(thread["thread_id"])
    messages = state["values"]["messages"]
    human, answer = messages[-2], messages[-1]
    assert human["content"][0]["text"] == QUESTION
    assert answer["type"] == "ai" and answer["id"] == chunks[0]["id"], \
        "the checked answer replaces the streamed message in place (same id)"
    cite = state["values"]["citations"][0]
    link = (f"[docs/cors.md:{cite['start_line']}-{cite['end_line']}](/lotsman/read?session={small_session}"
            f"&path=docs/cors.md&start={cite['start_line']}&end={cite['end_line']})")
    assert link in answer["content"], answer["content"]
    assert INVENTED not in answer["content"], "a citation outside the evidence is not linked, it is removed"
    plain = state["values"]["answer"]
    assert f"[docs/cors.md:{cite['start_line']}-{cite['end_line']}]" in plain and "/lotsman/read" not in plain


async def test_offline_answer_arrives_as_one_linked_message(chat_server: DevServer, small_session: str) -> None:
    """`use_llm: false` (or no model): the extractive answer is one message event, already linked."""
    client = get_client(url=chat_server.url)
    events = await stream_messages(client, None, "lotsman", input=blocks(QUESTION),
                                   context={"rag_session_id": small_session, "use_llm": False})
    assert len(events) == 1
    message, metadata = events[0]
    assert metadata["langgraph_node"] == "answer_composition" and message["type"] == "ai"
    assert f"](/lotsman/read?session={small_session}&path=docs/cors.md&start=" in message["content"]


# --- in process: every internal call is tagged ------------------------------------------------------------
async def test_internal_llm_calls_stay_out_of_the_messages_stream(db, small_session: str) -> None:
    """A follow-up makes all four LLM calls (rewrite, router, analysis, answer); only the answer streams."""
    from langgraph.checkpoint.memory import InMemorySaver

    with FakeGigaChatServer() as server:
        script = Script(rewrite="Как отключить CORS в приложении?")
        server.chat_handler = script
        model = make_fake_gigachat_chat(server, timeout=3.0)
        graph = build_graph(GraphDeps(settings=Settings(), db=db, chat_model=model), checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "nostream"}}
        events = []
        for question in (QUESTION, "А как это отключить?"):
            async for message, metadata in graph.astream({"messages": [HumanMessage(question)]}, config,
                                                         context=Context(rag_session_id=small_session),
                                                         stream_mode="messages"):
                events.append((message, metadata))
    assert script.kinds == ["route", "analysis", "answer", "rewrite", "route", "analysis", "answer"]
    assert {m["langgraph_node"] for _, m in events} == {"answer_composition"}
    assert all(isinstance(m, AIMessageChunk) and not m.tool_call_chunks for m, _ in events)


# --- lotsman assistants -----------------------------------------------------------------------------------
async def test_one_assistant_per_session(chat_server: DevServer, small_session: str,
                                         offline_env: Callable[..., dict[str, str]],
                                         scripted_gigachat: FakeGigaChatServer) -> None:
    env = offline_env()
    made = lotsman(env, "assistants", "create", "--session", small_session, "--url", chat_server.url)
    assert made.returncode == 0, made.stderr
    ident = assistant_id(small_session)
    assert made.stdout.strip() == \
        f"assistant {ident} answers from session '{small_session}' on {chat_server.url}"
    again = lotsman(env, "assistants", "create", "--session", small_session, "--url", chat_server.url)
    assert again.returncode == 0 and again.stdout == made.stdout

    listed = lotsman(env, "assistants", "list", "--url", chat_server.url)
    assert listed.returncode == 0, listed.stderr
    assert sum(ident in line and small_session in line for line in listed.stdout.splitlines()) == 1

    client = get_client(url=chat_server.url)
    found = await client.assistants.search(graph_id="lotsman", limit=100)
    assert [a["assistant_id"] for a in found].count(ident) == 1, "create twice keeps one assistant"

    # A UI picks the repository by picking the assistant: no context in the run.
    scripted_gigachat.chat_handler = Script()
    out = await client.runs.wait(None, ident, input=blocks(QUESTION))
    assert out["citations"] and not out["abstained"]
    last = out["messages"][-1]["content"]
    assert f"]({chat_server.url}/lotsman/read?session={small_session}&path=docs/cors.md&start=" in last


@pytest.mark.parametrize(("args", "message"), [
    (("create", "--session", "no-such-session"), "error: no session 'no-such-session'"),
    (("create", "--session", "{session}", "--url", "http://127.0.0.1:9"),
     "error: cannot reach a LangGraph server at http://127.0.0.1:9"),
    (("list", "--url", "http://127.0.0.1:9"), "error: cannot reach a LangGraph server at http://127.0.0.1:9"),
    (("list", "--url", "nonsense"), "error: not a server URL: nonsense"),
])
def test_assistants_bad_input_is_one_line(offline_env: Callable[..., dict[str, str]], small_session: str,
                                          args: tuple[str, ...], message: str) -> None:
    proc = lotsman(offline_env(), "assistants", *(a.format(session=small_session) for a in args))
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr


# --- the question log -------------------------------------------------------------------------------------
async def test_server_turns_are_logged_with_the_servers_run_id(chat_server: DevServer, small_session: str,
                                                                scripted_gigachat: FakeGigaChatServer, db) -> None:
    """With LOTSMAN_LOG_QUESTIONS on the server, a turn is logged once, as `server`, under the run id the client
    got (what a vote on the answer names)."""
    scripted_gigachat.chat_handler = Script()
    client = get_client(url=chat_server.url)
    thread = await client.threads.create()
    question = f"{QUESTION} {uuid.uuid4().hex[:6]}"
    run = await client.runs.create(thread["thread_id"], "lotsman", input=blocks(question),
                                   context={"rag_session_id": small_session})
    await client.runs.join(thread["thread_id"], run["run_id"])
    with db.connection() as conn:
        rows = conn.execute("SELECT source, run_id FROM rag_question_log WHERE question = %s",
                            (question,)).fetchall()
    assert [(source, str(run_id)) for source, run_id in rows] == [("server", run["run_id"])]
