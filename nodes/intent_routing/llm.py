"""The LLM router (seed 002 §5 routers/llm.py): asks the chat model for a raw candidate route."""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from nodes.intent_routing.prompts import RouterPrompts, load_prompts, render_messages, route_function
from nodes.llm_budget import NOSTREAM, LLMUnavailable, as_unavailable

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

DEFAULT_TIMEOUT_S = 8.0
def default_llm_errors() -> tuple[type[BaseException], ...]:
    """The errors a router call falls back on. The GigaChat SDK and httpx are imported here, when a router is
    built with a chat model, not with this module: an offline `lotsman ask` paid ~55 ms for the SDK and
    ~30 ms for httpx (its package loads its command line's rich, click and pygments). The `openai` SDK's
    errors (`LOTSMAN_LLM_PROVIDER=openai`) are added once it is loaded: only `ChatOpenAI` raises them."""
    import httpx
    from gigachat.exceptions import GigaChatException

    errors: tuple[type[BaseException], ...] = (GigaChatException, httpx.HTTPError, TimeoutError)
    openai = sys.modules.get("openai")
    return (*errors, openai.OpenAIError) if openai is not None else errors
"""GigaChat API errors, httpx transport/status errors (the SDK raises these bare), the `openai` SDK's, timeouts."""
StructuredMethod = Literal["function_calling", "json_schema", "text"]
_FENCE_RE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
T = TypeVar("T")


class LLMRouterUnavailable(Exception):
    """The model could not be asked. Carries only a safe description (error type and HTTP status), and
    `outage` when it did not answer in time or could not be reached (not for an HTTP error status)."""

    def __init__(self, kind: str, outage: LLMUnavailable | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.outage = outage


class LLMRouter:
    """Ask a LangChain chat model to pick a route, within a time limit.

    It makes no routing decision of its own: it returns what the model said (`None` when nothing parseable
    came back) and raises `LLMRouterUnavailable` when the model could not be reached in time.

    Args:
        llm: Any `BaseChatModel`; the app passes `langchain_gigachat.GigaChat(..., streaming=True)`.
        timeout_s: Wall-clock limit for one call, enforced around the model call.
        method: `function_calling` (GigaChat default), `json_schema`, or `text` (JSON in plain text).
        prompts: The prompt contract; the packaged `prompts.yml` by default.
        errors: Exception types that mean "LLM unavailable"; add your provider's when not on GigaChat.
    """

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        method: StructuredMethod = "function_calling",
        prompts: RouterPrompts | None = None,
        errors: tuple[type[BaseException], ...] | None = None,
    ) -> None:
        self.prompts = prompts or load_prompts()
        self.timeout_s = timeout_s
        errors = errors if errors is not None else default_llm_errors()
        self.errors = errors
        self._caught: tuple[type[BaseException], ...] = (TimeoutError, *errors)  # our own limit, always
        # "nostream": the router's function-call chunks are an internal step, not the answer; LangGraph's
        # stream_mode="messages" (a chat UI's messages-tuple) forwards only untagged model calls.
        self._runnable = _structured(llm, route_function(self.prompts), method).with_config(tags=[NOSTREAM])

    def choose(self, payload: dict[str, Any], config: RunnableConfig | None = None, *,
               timeout_s: float | None = None) -> dict[str, Any] | None:
        """Return the model's raw candidate route, or `None` if its answer held no JSON object.

        `timeout_s` replaces the router's own limit for this call (the graph passes what its request's
        LLM deadline leaves, never more than the router's own limit).
        """
        messages = render_messages(payload, self.prompts)
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            output = _call_in_thread(self._runnable.invoke, messages, config, limit)
        except self._caught as exc:
            raise LLMRouterUnavailable(describe_error(exc, limit), as_unavailable(exc, limit)) from None
        return parse_candidate(output)

    async def achoose(
        self, payload: dict[str, Any], config: RunnableConfig | None = None, *, timeout_s: float | None = None
    ) -> dict[str, Any] | None:
        """Async twin of `choose`."""
        messages = render_messages(payload, self.prompts)
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            output = await asyncio.wait_for(self._runnable.ainvoke(messages, config), timeout=limit)
        except self._caught as exc:
            raise LLMRouterUnavailable(describe_error(exc, limit), as_unavailable(exc, limit)) from None
        return parse_candidate(output)


def describe_error(exc: BaseException, timeout_s: float) -> str:
    """Error type and HTTP status only: SDK messages may carry response bodies, which we never log."""
    if type(exc) is TimeoutError:
        return f"timeout after {round(timeout_s, 1):g}s"
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__} {status}" if isinstance(status, int) else type(exc).__name__


def parse_candidate(output: Any) -> dict[str, Any] | None:
    """Pull a candidate dict out of structured output, a tool call, or JSON text; `None` if there is none."""
    if isinstance(output, Mapping) and "raw" in output and "parsed" in output:
        if isinstance(output.get("parsed"), Mapping):
            return dict(output["parsed"])
        output = output.get("raw")  # GigaChat may answer in text instead of calling the function
    if isinstance(output, BaseMessage):
        for call in getattr(output, "tool_calls", None) or []:
            if isinstance(call.get("args"), Mapping) and call["args"]:
                return dict(call["args"])
        return parse_json_object(_message_text(output))
    if isinstance(output, Mapping):
        return dict(output)
    return parse_json_object(output) if isinstance(output, str) else None


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in `text` (code fences and surrounding prose tolerated), else `None`."""
    text = _FENCE_RE.sub("", text.strip())
    candidates = [text]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _structured(llm: BaseChatModel, function: dict[str, Any], method: StructuredMethod) -> Runnable[Any, Any]:
    if method == "text":
        return llm
    schema = (
        function if method == "function_calling" else {"title": function["name"], **function["parameters"]}
    )
    try:
        return llm.with_structured_output(schema, method=method, include_raw=True)
    except NotImplementedError:  # chat models without tool support still get JSON-in-text
        return llm


def _call_in_thread(
    fn: Callable[..., T], messages: Any, config: RunnableConfig | None, timeout_s: float
) -> T:
    """Run `fn` in a daemon thread and wait at most `timeout_s`.

    A daemon thread (not a pool) so a call stuck past the limit never blocks interpreter exit; the copied
    context keeps LangChain callbacks and LangSmith tracing attached to the caller's run.
    """
    future: Future[T] = Future()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            future.set_result(context.run(fn, messages, config))
        except BaseException as exc:  # handed to the waiting caller, which decides what it means
            future.set_exception(exc)

    threading.Thread(target=target, name="intent-router-llm", daemon=True).start()
    return future.result(timeout=timeout_s)


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        p if isinstance(p, str) else str(p.get("text", "")) for p in content if isinstance(p, (str, dict))
    )
