"""A local fake OpenAI-compatible chat server (what vLLM, llama.cpp's server, Ollama and gateways speak), so
tests drive LangChain's real `ChatOpenAI` and the `openai` SDK end to end.

Shapes follow the OpenAI chat completions API as the installed `openai` SDK reads it: `GET /v1/models`,
`POST /v1/chat/completions` as one JSON body or as SSE (`data: {chunk}` lines, `data: [DONE]`), with
`tool_calls` when the request offers tools, `finish_reason` (`stop`, `tool_calls`, `length`), and usage in a
last, choice-less chunk when the request asks for it (`stream_options.include_usage`).

Usage::

    with FakeOpenAIServer() as server:
        server.chat_handler = replay(load_fixture("route_json_in_fence"))
        chat = make_fake_openai_chat(server, timeout=2)

Replies: `Text` (or a plain `str`), `ToolCall`, `Trickle` (a slow stream), and `Fail`, `Delay`, `Disconnect`
of the GigaChat fake. A
scripted queue (`script_chat`) is consumed one reply per request, then `chat_handler`, then `default_reply`.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.gigachat_server import Delay, Disconnect, Fail, FakeAPIHandler, RecordedRequest, ServedFake

DEFAULT_MODEL = "fake-local-model"
API_PREFIX = "/v1"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llm_outputs"
"""One JSON file per recorded (or recorded-style) model output case, replayed by `replay`."""
_HANDLED = object()


@dataclass(frozen=True)
class Text:
    """Assistant text; `finish_reason="length"` is an answer cut at the server's token limit."""

    content: str
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ToolCall:
    """An assistant tool call; `arguments` as a dict (sent as its JSON) or a raw string (possibly broken);
    `name=None` means the request's forced (or first) tool."""

    arguments: dict[str, Any] | str
    name: str | None = None
    repeat_name: bool = False
    """Send the name in every streamed chunk, as llama-cpp-python's server does (LangChain then joins them)."""


@dataclass(frozen=True)
class Trickle:
    """Stream `text` one chunk every `chunk_s` seconds: a local model on a slow CPU, answering but slowly."""

    text: str
    chunk_s: float


Reply = str | Text | ToolCall | Trickle | Fail | Delay | Disconnect
ChatHandler = Callable[[dict[str, Any]], Reply]


class FakeOpenAIServer(ServedFake):
    """OpenAI-compatible chat API on 127.0.0.1 (random free port) served from a background thread.

    Args:
        api_key: The bearer key every request must carry; None accepts any (local servers do).
        models: What `GET /v1/models` lists.
        default_reply: Chat reply when neither the script nor `chat_handler` has one.
        stream_chunk_chars: Characters of content per SSE chunk.
    """

    def __init__(self, *, api_key: str | None = None, models: tuple[str, ...] = (DEFAULT_MODEL,),
                 default_reply: Reply = "OK", stream_chunk_chars: int = 12) -> None:
        super().__init__()
        self.api_key = api_key
        self.models = models
        self.default_reply = default_reply
        self.stream_chunk_chars = stream_chunk_chars
        self.chat_handler: ChatHandler | None = None
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()

    thread_name = "fake-openai"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    def env(self) -> dict[str, str]:
        """The settings that point Lotsman at this server (`LOTSMAN_LLM_PROVIDER=openai`)."""
        env = {"LOTSMAN_LLM_PROVIDER": "openai", "OPENAI_BASE_URL": self.base_url,
               "LOTSMAN_LLM_MODEL": self.models[0]}
        return {**env, "OPENAI_API_KEY": self.api_key} if self.api_key else env

    def script_chat(self, replies: Iterable[Reply]) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.chat_handler(request) if self.chat_handler else self.default_reply

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)


class _Handler(FakeAPIHandler):
    """Routes one OpenAI-compatible request to the fake."""

    fake: FakeOpenAIServer

    def _dispatch(self, body: bytes) -> None:
        path = self.path.split("?", 1)[0]
        self.fake.record(RecordedRequest(self.command, path, dict(self.headers.items()), body))
        if self.fake.api_key is not None and self.headers.get("Authorization") != f"Bearer {self.fake.api_key}":
            return self._error(401, "Incorrect API key provided", "invalid_request_error")
        if (self.command, path) == ("GET", f"{API_PREFIX}/models"):
            return self._json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "local"} for m in self.fake.models]})
        if (self.command, path) == ("POST", f"{API_PREFIX}/chat/completions"):
            return self._chat(json.loads(body or b"{}"))
        return self._error(404, "not found", "invalid_request_error")

    def _chat(self, data: dict[str, Any]) -> None:
        stream = bool(data.get("stream"))
        reply: Any = self.fake.next_reply(data)
        while isinstance(reply, Delay):
            self.fake.sleep(reply.seconds)
            reply = reply.then
        if isinstance(reply, Fail):
            return self._error(reply.status, reply.message, "server_error")
        if isinstance(reply, Disconnect) and not stream:
            return self._drop()
        cut = reply if isinstance(reply, Disconnect) else None
        pause = reply.chunk_s if isinstance(reply, Trickle) else 0.0
        if isinstance(reply, Trickle):
            reply = Text(reply.text)
        message, finish = _assistant_message(Text("a partial answer that never ends") if cut else reply, data)
        if stream:
            return self._sse(message, finish, data, cut, pause)
        self.fake.sleep(pause * len(list(_deltas(message, self.fake.stream_chunk_chars))))
        self._json(200, {**_head(data, "chat.completion"), "choices": [
            {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": _usage(data, message)})

    def _sse(self, message: dict[str, Any], finish: str, data: dict[str, Any], cut: Disconnect | None,
             pause: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        head = _head(data, "chat.completion.chunk")
        for sent, delta in enumerate(_deltas(message, self.fake.stream_chunk_chars)):
            if cut is not None and sent >= cut.after_chunks:
                self.wfile.write(b"400\r\ndata: {")  # announce more bytes than ever arrive
                self.wfile.flush()
                return self._drop()
            if pause and sent:
                self.fake.sleep(pause)
            self._event({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        self._event({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (data.get("stream_options") or {}).get("include_usage"):
            self._event({**head, "choices": [], "usage": _usage(data, message)})
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _event(self, chunk: dict[str, Any]) -> None:
        self._write_chunk(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())

    def _error(self, status: int, message: str, kind: str) -> None:
        self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})


def _head(data: dict[str, Any], kind: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": kind, "created": int(time.time()),
            "model": data.get("model", DEFAULT_MODEL)}


def _tool_name(request: dict[str, Any]) -> str:
    forced = request.get("tool_choice")
    if isinstance(forced, dict):
        return str(forced["function"]["name"])
    return str(request["tools"][0]["function"]["name"])


def _assistant_message(reply: Reply, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The assistant message and its finish reason; a plain `str` that is a JSON object becomes a tool call
    when the request offers tools (as a model that follows the schema answers)."""
    if isinstance(reply, str) and request.get("tools"):
        try:
            parsed = json.loads(reply)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            reply = ToolCall(arguments=parsed)
    if isinstance(reply, ToolCall):
        args = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments,
                                                                                   ensure_ascii=False)
        call = {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                "function": {"name": reply.name or _tool_name(request), "arguments": args}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return ({**message, "repeat_name": True} if reply.repeat_name else message), "tool_calls"
    text = reply if isinstance(reply, Text) else Text(str(reply))
    return {"role": "assistant", "content": text.content}, text.finish_reason


def _deltas(message: dict[str, Any], size: int) -> Iterator[dict[str, Any]]:
    if message.get("tool_calls"):
        call = message["tool_calls"][0]
        args = call["function"]["arguments"]
        yield {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"],
                                                                           "arguments": ""}}]}
        name = {"name": call["function"]["name"]} if message.get("repeat_name") else {}
        for i in range(0, len(args), size):
            yield {"tool_calls": [{"index": 0, "function": {**name, "arguments": args[i : i + size]}}]}
        return
    text = message["content"] or ""
    yield {"role": "assistant", "content": ""}
    for i in range(0, len(text), size):
        yield {"content": text[i : i + size]}


def _usage(request: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    prompt = max(1, math.ceil(len(json.dumps(request.get("messages", []), ensure_ascii=False)) / 4))
    completion = max(1, math.ceil(len(json.dumps(message, ensure_ascii=False)) / 4))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


# --- which call a request is, and replaying recorded outputs -------------------------------------------------
DOC_TAG = re.compile(r'<document path="([^"]+)" lines="(\d+)-(\d+)"[^>]*>(.*?)</document>', re.DOTALL)


def call_kind(request: dict[str, Any]) -> str:
    """`route`, `analysis`, `answer` or `rewrite`: which of Lotsman's LLM calls a chat request is."""
    tools = [t.get("function", {}).get("name") for t in request.get("tools") or []]
    if "choose_passages" in tools:
        return "analysis"
    if tools:
        return "route"
    text = json.dumps(request.get("messages", []), ensure_ascii=False)
    if "<router_input>" in text:
        return "route"
    if "<passages>" in text:
        return "analysis"
    return "answer" if "<documents>" in text else "rewrite"


def documents(request: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The `(path, start, end)` of every fenced document in an answer request."""
    return [(path, start, end) for path, start, end, _ in shown_documents(request)]


def shown_documents(request: dict[str, Any]) -> list[tuple[str, int, int, str]]:
    """`(path, start, end, text)` of every fenced document in an answer request."""
    text = request["messages"][-1]["content"]
    return [(m[1], int(m[2]), int(m[3]), m[4]) for m in DOC_TAG.finditer(text)]


_CODE = re.compile(r"`([^`]+)`")


_PLACEHOLDER = re.compile(r"\{(doc|start|end):([^{}]+)\}")


def fill(text: str, request: dict[str, Any]) -> str:
    """A recorded answer's `{doc:PATH}` (`PATH:start-end`), `{start:PATH}`, `{end:PATH}` filled from the document
    of PATH the request showed that holds most of the answer's `code` names (the first one on a tie): what a
    model copying the `lines` attribute of the passage it took its words from writes."""
    shown = shown_documents(request) if "<documents>" in json.dumps(request.get("messages", [])) else []
    names = set(_CODE.findall(text))

    def one(match: re.Match[str]) -> str:
        of_path = [d for d in shown if d[0] == match[2]]
        if not of_path:
            return match[0]
        path, start, end, _ = max(of_path, key=lambda d: sum(name in d[3] for name in names))
        return {"doc": f"{path}:{start}-{end}", "start": str(start), "end": str(end)}[match[1]]

    return _PLACEHOLDER.sub(one, text)


def load_fixture(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


class Replay:
    """Chat handler replaying a fixture: `replies[kind]` is one reply or a list answered in turn (the last one
    repeats), each `{"text": ..., "finish_reason": ...}` or `{"tool": {...} | "raw arguments"}`; a kind
    the fixture does not name gets `defaults[kind]`. `kinds` lists the calls seen, in order."""

    def __init__(self, fixture: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
        self.replies = {**(defaults or {}), **fixture.get("replies", {})}
        self.kinds: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        kind = call_kind(request)
        seen = self.kinds.count(kind)
        self.kinds.append(kind)
        entry = self.replies.get(kind)
        if entry is None:
            return Text("")
        if isinstance(entry, list):
            entry = entry[min(seen, len(entry) - 1)]
        if "delay" in entry:
            return Delay(float(entry["delay"]), then=self._reply(entry, request))
        return self._reply(entry, request)

    def _reply(self, entry: dict[str, Any], request: dict[str, Any]) -> Reply:
        if "tool" in entry:
            return ToolCall(arguments=entry["tool"], repeat_name=bool(entry.get("repeat_name")))
        return Text(fill(str(entry["text"]), request), entry.get("finish_reason", "stop"))


def make_fake_openai_chat(server: FakeOpenAIServer, **kwargs: Any) -> Any:
    """LangChain's `ChatOpenAI` (streaming, as `make_chat_model` builds it) pointed at `server`."""
    from langchain_openai import ChatOpenAI

    settings: dict[str, Any] = {"model": server.models[0], "base_url": server.base_url,
                                "api_key": server.api_key or "no-key", "streaming": True, "max_retries": 0,
                                "timeout": 5.0}
    settings.update(kwargs)
    return ChatOpenAI(**settings)


@pytest.fixture
def fake_openai_server() -> Iterator[FakeOpenAIServer]:
    """A started fake OpenAI-compatible server, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server
