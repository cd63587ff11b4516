"""A local fake GigaChat HTTP server that speaks the real protocol, so tests drive the real SDK end to end.

Shapes follow the installed `gigachat` SDK (`gigachat/models/*`, `gigachat/api/*`): OAuth form POST with Basic
auth, `POST /chat/completions` (JSON or SSE), `POST /embeddings`, `POST /tokens/count`, `GET /models`.

Usage::

    with FakeGigaChatServer() as server:
        server.script_chat(['{"routing_domain": "DOCS", ...}', "broken", Fail(500)])
        chat = make_fake_gigachat_chat(server, timeout=2)
        ...
        assert server.chat_requests[0].json["messages"]

or as a fixture: `pytest_plugins = ["tests.fakes.gigachat_server"]`, then ask for `fake_gigachat_server`.
A scripted queue is consumed one reply per request; when it is empty, `chat_handler` (if set) or
`default_reply` answers. This file is bigger than our usual module: the protocol fake is one unit on purpose.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs

import pytest

DEFAULT_CREDENTIALS = base64.b64encode(b"fake-client-id:fake-client-secret-9f3a").decode()
DEFAULT_SCOPE = "GIGACHAT_API_PERS"
DEFAULT_MODEL = "GigaChat-2"
API_PREFIX = "/api/v1"
_HANDLED = object()
AUTH_PATH = "/api/v2/oauth"


@dataclass(frozen=True)
class Fail:
    """Answer with an HTTP error status (401, 429, 500, ...) and a GigaChat-style JSON error body."""

    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` (e.g. longer than the client's timeout), then answer with `then`."""

    seconds: float
    then: Reply = "OK"


@dataclass(frozen=True)
class Disconnect:
    """Drop the connection: after `after_chunks` SSE chunks when streaming, before any byte otherwise."""

    after_chunks: int = 1


@dataclass(frozen=True)
class Text:
    """Plain assistant text, even when the request offered functions."""

    content: str


@dataclass(frozen=True)
class FunctionCall:
    """An assistant `function_call`; `name=None` means the forced (or first) function of the request."""

    arguments: dict[str, Any]
    name: str | None = None


Reply = str | Text | FunctionCall | Fail | Delay | Disconnect
"""A plain `str` becomes a function call when the request offers functions and the text is a JSON object."""
ChatHandler = Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, kept for assertions."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


class ServedFake:
    """A fake HTTP API on 127.0.0.1 (a random free port) served from a background thread: the lifecycle the
    GigaChat and OpenAI-compatible fakes share. A subclass names its handler class and its thread."""

    thread_name = "fake-api"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        handler = type("_BoundHandler", (self.handler_class(),), {"fake": self})
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        # A short poll interval keeps `stop()` (and so every test's teardown) fast.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping in a Delay
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])


class FakeGigaChatServer(ServedFake):
    """GigaChat API fake on 127.0.0.1 (random free port) served from a background thread.

    Args:
        credentials: Base64 authorization data the OAuth endpoint accepts.
        scope: Scope the OAuth endpoint accepts.
        embedding_dim: Length of the deterministic embedding vectors.
        default_reply: Chat reply when neither the script nor `chat_handler` has one.
        stream_chunk_chars: Characters of content per SSE chunk.
    """

    def __init__(
        self,
        *,
        credentials: str = DEFAULT_CREDENTIALS,
        scope: str = DEFAULT_SCOPE,
        embedding_dim: int = 1024,
        default_reply: Reply = "OK",
        stream_chunk_chars: int = 12,
    ) -> None:
        super().__init__()
        self.credentials = credentials
        self.scope = scope
        self.embedding_dim = embedding_dim
        self.default_reply = default_reply
        self.stream_chunk_chars = stream_chunk_chars
        self.chat_handler: ChatHandler | None = None
        self._queues: dict[str, deque[Reply]] = {"chat": deque(), "auth": deque(), "embeddings": deque()}
        self._requests: list[RecordedRequest] = []
        self._tokens: set[str] = set()
        self._lock = threading.Lock()

    thread_name = "fake-gigachat"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    # -- addresses and SDK settings --------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    @property
    def auth_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{AUTH_PATH}"

    def sdk_kwargs(self) -> dict[str, Any]:
        """Constructor arguments for `gigachat.GigaChat` / `langchain_gigachat.GigaChat`."""
        return {
            "base_url": self.base_url,
            "auth_url": self.auth_url,
            "credentials": self.credentials,
            "scope": self.scope,
            "model": DEFAULT_MODEL,
            "verify_ssl_certs": False,
        }

    def env(self) -> dict[str, str]:
        """The same settings as `GIGACHAT_*` environment variables."""
        return {f"GIGACHAT_{k.upper()}": str(v) for k, v in self.sdk_kwargs().items()}

    # -- scripting and records -------------------------------------------------------------------------
    def script_chat(self, replies: Iterable[Reply]) -> None:
        """Queue replies for the next chat requests, one per request."""
        self._script("chat", replies)

    def script_auth(self, replies: Iterable[Fail | Delay | Disconnect]) -> None:
        """Queue failures for the next OAuth requests (anything else there means "issue a token")."""
        self._script("auth", replies)

    def script_embeddings(self, replies: Iterable[Fail | Delay | Disconnect]) -> None:
        """Queue failures for the next embeddings requests."""
        self._script("embeddings", replies)

    def _script(self, kind: str, replies: Iterable[Reply]) -> None:
        with self._lock:
            self._queues[kind].extend(replies)

    def next_reply(self, kind: str, request: dict[str, Any]) -> Reply | None:
        with self._lock:
            if self._queues[kind]:
                return self._queues[kind].popleft()
        if kind != "chat":
            return None
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

    def issue_token(self) -> str:
        token = f"fake-token-{uuid.uuid4().hex}"
        with self._lock:
            self._tokens.add(token)
        return token

    @property
    def issued_tokens(self) -> list[str]:
        """Access tokens handed out so far (secrets too: tests assert they never reach a log line)."""
        with self._lock:
            return sorted(self._tokens)

    def token_valid(self, header: str) -> bool:
        with self._lock:
            return header.startswith("Bearer ") and header[len("Bearer ") :] in self._tokens

    def sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)


class _QuietServer(ThreadingHTTPServer):
    """Threaded server whose handler threads never block shutdown and never print client disconnects."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, dropped stream) is expected here; anything else is a fake bug.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeAPIHandler(BaseHTTPRequestHandler):
    """What every fake API's handler does alike: HTTP/1.1 (so SSE uses chunked encoding and can be cut
    mid-body), no access log, GET and POST handed to `_dispatch(body)`, JSON and chunked writes, a drop."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the stdlib access log (it would print request lines to stderr)."""

    def do_GET(self) -> None:
        self._dispatch(b"")

    def do_POST(self) -> None:
        self._dispatch(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _dispatch(self, body: bytes) -> None:
        raise NotImplementedError

    def _write_chunk(self, payload: bytes) -> None:
        self.wfile.write(f"{len(payload):X}\r\n".encode() + payload + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client may already be gone
            self.connection.shutdown(socket.SHUT_RDWR)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", str(uuid.uuid4()))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


class _Handler(FakeAPIHandler):
    """Routes one GigaChat request to the fake."""

    fake: FakeGigaChatServer

    def _dispatch(self, body: bytes) -> None:
        path = self.path.split("?", 1)[0]
        request = RecordedRequest(self.command, path, dict(self.headers.items()), body)
        self.fake.record(request)
        if path == AUTH_PATH and self.command == "POST":
            return self._oauth(request.form)
        if not path.startswith(API_PREFIX):
            return self._error(404, "not found")
        if not self.fake.token_valid(self.headers.get("Authorization", "")):
            return self._error(401, "invalid token")
        route = (self.command, path[len(API_PREFIX) :])
        if route == ("POST", "/chat/completions"):
            return self._chat(json.loads(body or b"{}"))
        if route == ("POST", "/embeddings"):
            return self._embeddings(json.loads(body or b"{}"))
        if route == ("POST", "/tokens/count"):
            data = json.loads(body or b"{}")
            counts = [{"object": "tokens", "tokens": _tokens(t), "characters": len(t)} for t in data["input"]]
            return self._json(200, counts)
        if route == ("GET", "/models"):
            return self._json(
                200, {"object": "list", "data": [_model(m) for m in ("GigaChat", DEFAULT_MODEL)]}
            )
        if self.command == "GET" and route[1].startswith("/models/"):
            return self._json(200, _model(route[1].rsplit("/", 1)[1]))
        return self._error(404, "not found")

    # -- endpoints -------------------------------------------------------------------------------------
    def _oauth(self, form: dict[str, str]) -> None:
        if self._resolve(self.fake.next_reply("auth", {}), stream=False) is _HANDLED:
            return
        if self.headers.get("Authorization") != f"Basic {self.fake.credentials}":
            return self._error(401, "credentials doesn't match db data")
        if form.get("scope") != self.fake.scope:
            return self._error(400, "scope from db not fully includes consumed scope")
        expires_at = int(time.time() * 1000) + 30 * 60 * 1000
        self._json(200, {"access_token": self.fake.issue_token(), "expires_at": expires_at})

    def _embeddings(self, data: dict[str, Any]) -> None:
        if self._resolve(self.fake.next_reply("embeddings", data), stream=False) is _HANDLED:
            return
        rows = [
            {
                "object": "embedding",
                "embedding": _vector(text, self.fake.embedding_dim),
                "index": i,
                "usage": {"prompt_tokens": _tokens(text)},
            }
            for i, text in enumerate(data.get("input", []))
        ]
        self._json(200, {"object": "list", "data": rows, "model": data.get("model", "Embeddings")})

    def _chat(self, data: dict[str, Any]) -> None:
        stream = bool(data.get("stream"))
        reply = self._resolve(self.fake.next_reply("chat", data), stream=stream)
        if reply is _HANDLED:
            return
        if isinstance(reply, Disconnect):
            return self._sse(
                {"role": "assistant", "content": "a partial answer that never ends"}, data, reply
            )
        message = _assistant_message(reply, data)
        if stream:
            return self._sse(message, data)
        finish = "function_call" if "function_call" in message else "stop"
        self._json(
            200,
            {
                "choices": [{"message": message, "index": 0, "finish_reason": finish}],
                "created": int(time.time()),
                "model": data.get("model", DEFAULT_MODEL),
                "object": "chat.completion",
                "usage": _usage(data, message),
            },
        )

    # -- reply plumbing --------------------------------------------------------------------------------
    def _resolve(self, reply: Reply | None, *, stream: bool) -> Reply | None | object:
        """Apply Delay, Fail and (non-streaming) Disconnect; `_HANDLED` means the request is done with."""
        while isinstance(reply, Delay):
            self.fake.sleep(reply.seconds)
            reply = reply.then
        if isinstance(reply, Fail):
            self._error(reply.status, reply.message, reply.headers)
            return _HANDLED
        if isinstance(reply, Disconnect) and not stream:
            self._drop()
            return _HANDLED
        return reply

    def _sse(self, message: dict[str, Any], data: dict[str, Any], cut: Disconnect | None = None) -> None:
        cut_after = cut.after_chunks if cut else None
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", str(uuid.uuid4()))
        self.end_headers()
        for sent, chunk in enumerate(_stream_chunks(message, data, self.fake.stream_chunk_chars)):
            if cut_after is not None and sent >= cut_after:
                self.wfile.write(b"400\r\ndata: {")  # announce more bytes than ever arrive
                self.wfile.flush()
                return self._drop()
            self._write_chunk(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        # Real GigaChat errors carry {"status", "message"}; never echo request headers (they hold secrets).
        self._json(status, {"status": status, "message": message}, headers)


def _assistant_message(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    if isinstance(reply, str) and request.get("functions") and request.get("function_call") != "none":
        try:
            parsed = json.loads(reply)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            reply = FunctionCall(arguments=parsed)
    if isinstance(reply, FunctionCall):
        forced = request.get("function_call")
        name = reply.name or (forced["name"] if isinstance(forced, dict) else request["functions"][0]["name"])
        call = {"name": name, "arguments": reply.arguments}
        return {
            "role": "assistant",
            "content": "",
            "function_call": call,
            "functions_state_id": str(uuid.uuid4()),
        }
    content = reply.content if isinstance(reply, Text) else str(reply)
    return {"role": "assistant", "content": content}


def _stream_chunks(message: dict[str, Any], request: dict[str, Any], size: int) -> Iterator[dict[str, Any]]:
    base = {
        "created": int(time.time()),
        "model": request.get("model", DEFAULT_MODEL),
        "object": "chat.completion",
    }
    if "function_call" in message:
        deltas = [message]
        finish = "function_call"
    else:
        text = message["content"]
        deltas = [{"role": "assistant", "content": text[i : i + size]} for i in range(0, len(text), size)]
        deltas = deltas or [{"role": "assistant", "content": ""}]
        finish = "stop"
    for i, delta in enumerate(deltas):
        choice: dict[str, Any] = {"delta": delta, "index": 0}
        chunk = {**base, "choices": [choice]}
        if i == len(deltas) - 1:
            choice["finish_reason"] = finish
            # langchain-core merges usage dicts across chunks: precached_prompt_tokens must be an int here.
            chunk["usage"] = _usage(request, message)
        yield chunk


def _usage(request: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    prompt = _tokens(json.dumps(request.get("messages", []), ensure_ascii=False))
    completion = _tokens(message.get("content") or json.dumps(message.get("function_call")))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "precached_prompt_tokens": 0,
    }


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _vector(text: str, dim: int) -> list[float]:
    """Deterministic unit vector: the same text always embeds to the same point."""
    seed = hashlib.sha256(text.encode()).digest()
    raw = [((seed[i % 32] ^ (i * 131 % 256)) / 255.0) - 0.5 for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def _model(name: str) -> dict[str, str]:
    return {"id": name, "object": "model", "owned_by": "salutedevices", "type": "chat"}


class SilentServer:
    """A TCP endpoint on 127.0.0.1 that accepts every connection and never sends a byte.

    The worst GigaChat outage for a client: connecting succeeds, so only read timeouts (and our own time
    limits) end a call. Point `base_url` (and `auth_url`, if you like) at it; `accepted` counts connections.
    """

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-gigachat", daemon=True)

    def _accept(self) -> None:
        self._sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)  # kept open, never read from, never answered

    @property
    def accepted(self) -> int:
        return len(self._held)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    @property
    def auth_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{AUTH_PATH}"

    def start(self) -> SilentServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in [*self._held, self._sock]:
            with contextlib.suppress(OSError):
                conn.close()

    def __enter__(self) -> SilentServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def make_fake_gigachat_chat(server: FakeGigaChatServer, **kwargs: Any) -> Any:
    """Build the app's chat model (`langchain_gigachat.GigaChat`, streaming) pointed at `server`.

    Args:
        server: A started fake server.
        **kwargs: Overrides, e.g. `timeout=2`, `streaming=False`, `credentials="..."`.

    Returns:
        A `langchain_gigachat.GigaChat` instance.
    """
    from langchain_gigachat import GigaChat

    settings: dict[str, Any] = {**server.sdk_kwargs(), "streaming": True, "max_retries": 0, "timeout": 5.0}
    settings.update(kwargs)
    return GigaChat(**settings)


@pytest.fixture
def fake_gigachat_server() -> Iterator[FakeGigaChatServer]:
    """A started fake GigaChat server, stopped after the test."""
    with FakeGigaChatServer() as server:
        yield server
