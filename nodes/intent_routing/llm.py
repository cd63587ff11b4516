"""The LLM router (seed 002 §5 routers/llm.py): asks the chat model for a raw candidate route."""

from __future__ import annotations

import ast
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

from nodes import llm_events
from nodes.intent_routing.prompts import RouterPrompts, load_prompts, render_messages, route_function
from nodes.intent_routing.route_catalog import ALLOWED_ROUTES
from nodes.intent_routing.validator import ROUTE_FIELDS, validate_candidate
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
        return checked_route(output)

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
        return checked_route(output)


def describe_error(exc: BaseException, timeout_s: float) -> str:
    """Error type and HTTP status only: SDK messages may carry response bodies, which we never log."""
    if type(exc) is TimeoutError:
        return f"timeout after {round(timeout_s, 1):g}s"
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__} {status}" if isinstance(status, int) else type(exc).__name__


ReplyShape = Literal["tool call", "json", "json repaired", "no json"]
"""How a structured reply came: a tool (function) call, clean JSON text, JSON that needed repair (code fences,
prose around it, trailing commas, Python literals), or nothing usable."""


def checked_route(output: Any) -> dict[str, Any] | None:
    """The router's candidate from the model's output, repaired where that is safe, with what it needed
    noted (`nodes.llm_events`): its shape, and whether its route had to be completed or lay outside the
    catalog (the router then falls back to the rules)."""
    candidate, shape = read_candidate(output)
    llm_events.note(f"route {shape}")
    if candidate is None:
        return None
    if validate_candidate(candidate) is not None:
        return candidate
    repaired = repair_route(candidate)
    if repaired is not None:
        llm_events.note(llm_events.ROUTE_FIELDS_REPAIRED)
        return repaired
    fields = [candidate.get(name) for name in ROUTE_FIELDS]
    named = all(isinstance(f, str) and f.strip() for f in fields[1:])
    llm_events.note(llm_events.ROUTE_OUTSIDE_CATALOG if named else llm_events.ROUTE_INVALID)
    return candidate


def repair_route(candidate: Mapping[str, Any]) -> dict[str, Any] | None:
    """A candidate whose route the catalog pins down although the model spelled it short or joined: the
    domain left out (`DOC_EXPLAIN` lives in `DOCS` only), the subintent left out of `GENERAL_QA` (it has
    one), or the whole route in one field (`DOCS/DOC_EXPLAIN/SUMMARY`, `DOC_EXPLAIN.FIND_FILES`). None
    when a word is not the catalog's or more than one route fits: a route outside it is never guessed."""
    words = {w for name in ROUTE_FIELDS for w in re.split(r"[^A-Z_]+", str(candidate.get(name) or "").upper()) if w}
    routes = [(r.routing_domain, r.intent, r.subintent) for r in ALLOWED_ROUTES]
    known = {w for route in routes for w in route}
    if not words or not words <= known:
        return None
    fitting = [r for r in routes if r[1] in words and words <= set(r)]
    if len(fitting) != 1:
        return None
    domain, intent, subintent = fitting[0]
    repaired = {**candidate, "routing_domain": domain, "intent": intent, "subintent": subintent}
    return repaired if validate_candidate(repaired) is not None else None


def parse_candidate(output: Any) -> dict[str, Any] | None:
    """Pull a candidate dict out of structured output, a tool call, or JSON text; `None` if there is none."""
    return read_candidate(output)[0]


def read_candidate(output: Any) -> tuple[dict[str, Any] | None, ReplyShape]:
    """The candidate dict in structured output, a tool call or JSON text, and how it came (`ReplyShape`)."""
    if isinstance(output, Mapping) and "raw" in output and "parsed" in output:
        if isinstance(output.get("parsed"), Mapping):
            return dict(output["parsed"]), "tool call"
        output = output.get("raw")  # the model may answer in text instead of calling the function
    if isinstance(output, BaseMessage):
        for call in getattr(output, "tool_calls", None) or []:
            if isinstance(call.get("args"), Mapping) and call["args"]:
                return dict(call["args"]), "tool call"
        for call in getattr(output, "invalid_tool_calls", None) or []:  # arguments that are not JSON as sent
            found, _ = read_json_object(str(call.get("args") or ""))
            if found is not None:
                return found, "json repaired"
        return read_json_object(_message_text(output))
    if isinstance(output, Mapping):
        return dict(output), "tool call"
    return read_json_object(output) if isinstance(output, str) else (None, "no json")


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in `text` (code fences and surrounding prose tolerated), else `None`."""
    return read_json_object(text)[0]


def read_json_object(text: str) -> tuple[dict[str, Any] | None, ReplyShape]:
    """The JSON object in `text` and whether it had to be repaired: the text itself, else the content of a
    code fence, else the first object that decodes from a `{` on (prose around it), each also tried with
    trailing commas dropped and as Python literals (`True`, single quotes)."""
    stripped = text.strip()
    value = _object(stripped)
    if value is not None:
        return value, "json"
    candidates = [m.group(1) for m in _FENCED_JSON.finditer(stripped)]
    candidates.append(_FENCE_RE.sub("", stripped))
    candidates += [stripped[i:] for i in (m.start() for m in re.finditer(r"\{", stripped))][:20]
    for candidate in candidates:
        value = _object(candidate, lenient=True)
        if value is not None:
            return value, "json repaired"
    return None, "no json"


_FENCED_JSON = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _object(text: str, *, lenient: bool = False) -> dict[str, Any] | None:
    """`text` as one JSON object; leniently, its first object (text after it ignored), trailing commas
    dropped, or a Python dict literal."""
    text = text.strip()
    if not lenient:
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    for attempt in (text, _TRAILING_COMMA.sub(r"\1", text)):
        try:
            value, _ = json.JSONDecoder().raw_decode(attempt)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    end = text.rfind("}")
    if text.startswith("{") and end > 0:
        try:
            value = ast.literal_eval(_TRAILING_COMMA.sub(r"\1", text[: end + 1]))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        return value if isinstance(value, dict) else None
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
