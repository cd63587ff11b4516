"""One LLM deadline per request: how long each LLM call may take, and when the rest runs offline.

A request makes up to four LLM calls (follow-up rewrite, router, analysis, answer). Against an endpoint
that accepts connections and never answers, per-call limits added up to 70 s for one `ask` (8 + 30 + 30 s
and start-up); so the request gets one deadline, each call gets min(its own limit, the time left), and the
first call that times out, cannot reach the model or is refused by it takes the rest of the request offline
at once.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

MIN_CALL_S = 0.5
"""A call is not started with less time left than this: no GigaChat answer arrives that fast, and starting
one only delays the offline answer."""

AnswerMode = Literal["llm", "offline"]

NOSTREAM = "nostream"
"""LangGraph's tag (`langgraph.constants.TAG_NOSTREAM`) that keeps a model call out of the messages stream:
every call but the answer's carries it (rewrite, router, analysis), so a chat UI streaming `messages-tuple`
sees the answer's tokens only."""


class OfflineCause(StrEnum):
    """Why a request ran without the LLM."""

    NOT_CONFIGURED = "not_configured"
    """No chat model (no `GIGACHAT_CREDENTIALS`): offline by design."""
    DISABLED = "disabled"
    """The run's context says `use_llm: false`."""
    TIMEOUT = "timeout"
    """An LLM call did not answer within its time limit."""
    UNREACHABLE = "unreachable"
    """An LLM call failed to reach the model (connection refused, reset, dropped stream)."""
    REFUSED = "refused"
    """The provider refused a call in a way the next call would meet too: credentials (401, 403), rate
    limit (429), server error (5xx, after the client's own retries)."""
    DEADLINE = "deadline"
    """The request's LLM deadline was used up before a call could start."""


DEGRADED = frozenset({OfflineCause.TIMEOUT, OfflineCause.UNREACHABLE, OfflineCause.REFUSED, OfflineCause.DEADLINE})
"""Causes where the LLM was expected and did not answer: the answer text says so."""

OFFLINE_NOTES: dict[str, dict[str, str]] = {
    "ru": {
        OfflineCause.TIMEOUT: "(ответ собран без LLM: модель не ответила вовремя)",
        OfflineCause.DEADLINE: "(ответ собран без LLM: модель не ответила вовремя)",
        OfflineCause.UNREACHABLE: "(ответ собран без LLM: модель недоступна)",
        OfflineCause.REFUSED: "(ответ собран без LLM: модель вернула ошибку)",
    },
    "en": {
        OfflineCause.TIMEOUT: "(answered without the LLM: the model did not answer in time)",
        OfflineCause.DEADLINE: "(answered without the LLM: the model did not answer in time)",
        OfflineCause.UNREACHABLE: "(answered without the LLM: the model could not be reached)",
        OfflineCause.REFUSED: "(answered without the LLM: the model returned an error)",
    },
}


REFUSING_STATUSES = frozenset({401, 403, 429})
"""HTTP statuses (besides 5xx) that every later call of the request would get too."""


class LLMUnavailable(Exception):
    """An LLM call got no answer: our time limit passed, the model could not be reached, or the provider
    refused it (`REFUSING_STATUSES`, 5xx).

    Raised by the stages' LLM calls when asked to (`raise_unavailable=True`); other failures (a 400 for
    this one request, a reply that does not parse, citations that do not verify) stay local to the call
    that met them: the model is there, the next call may well succeed.
    """

    def __init__(self, cause: OfflineCause, detail: str) -> None:
        super().__init__(detail)
        self.cause = cause
        self.detail = detail


def as_unavailable(exc: BaseException, timeout_s: float) -> LLMUnavailable | None:
    """The outage an exception of an LLM call means, or None when it is not one.

    Only the type is read: provider messages may carry response bodies, which are never logged or shown.
    """
    if isinstance(exc, LLMUnavailable):
        return exc
    import httpx  # here: an offline ask never calls this, and httpx brings rich, click and pygments (~50 ms)

    if isinstance(exc, httpx.TimeoutException):  # the client's own limit (a subclass of TransportError)
        return LLMUnavailable(OfflineCause.TIMEOUT, type(exc).__name__)
    if isinstance(exc, TimeoutError):  # our limit around the call (asyncio.wait_for)
        return LLMUnavailable(OfflineCause.TIMEOUT, f"no answer within {round(timeout_s, 1):g}s")
    if isinstance(exc, httpx.TransportError | ConnectionError):  # the SDK raises httpx's bare (SPEC §2.2)
        return LLMUnavailable(OfflineCause.UNREACHABLE, type(exc).__name__)
    openai = sys.modules.get("openai")  # loaded with `ChatOpenAI`: an error of it can only come once it is
    if openai is not None:  # the `openai` provider's SDK wraps httpx's errors in its own
        if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: asked first
            return LLMUnavailable(OfflineCause.TIMEOUT, type(exc).__name__)
        if isinstance(exc, openai.APIConnectionError):
            return LLMUnavailable(OfflineCause.UNREACHABLE, type(exc).__name__)
    status = getattr(exc, "status_code", None)  # GigaChat's ResponseError, and most providers' errors
    if isinstance(status, int) and (status in REFUSING_STATUSES or status >= 500):
        return LLMUnavailable(OfflineCause.REFUSED, f"{type(exc).__name__} {status}")
    return None


class LLMBudget(BaseModel):
    """The LLM time of one request: set by its first node, read and narrowed by every node after it."""

    model_config = ConfigDict(frozen=True)

    deadline: float
    """`time.monotonic()` by which every LLM call of the request has ended."""
    seconds: float
    """The whole budget (`GIGACHAT_REQUEST_DEADLINE`), for messages."""
    offline: OfflineCause | None = None
    """Set once the request runs without the LLM; never cleared within the request."""
    offline_stage: str = ""
    """The stage whose call took the request offline ("" when it was offline from the start)."""
    offline_detail: str = ""
    """What happened, without provider text (`no answer within 3s`, `ConnectError`)."""
    events: tuple[str, ...] = ()
    """What the request's LLM replies needed, `stage: event` in call order (`nodes.llm_events`): the run's
    `llm_events`."""

    @property
    def answer_mode(self) -> AnswerMode:
        return "llm" if self.offline is None else "offline"

    @property
    def offline_reason(self) -> str:
        """`stage: detail` (`intent_routing: no answer within 3s`); "" while the LLM is on."""
        return f"{self.offline_stage}: {self.offline_detail}" if self.offline_stage else self.offline_detail

    def going_offline(self, cause: OfflineCause, detail: str, stage: str = "") -> LLMBudget:
        """The budget with the rest of the request offline; the first cause is kept."""
        if self.offline is not None:
            return self
        return self.model_copy(update={"offline": cause, "offline_stage": stage, "offline_detail": detail})

    def noting(self, stage: str, events: list[str]) -> LLMBudget:
        """The budget with what a call of `stage` met added to `events`."""
        if not events:
            return self
        return self.model_copy(update={"events": (*self.events, *(f"{stage}: {e}" for e in events))})

    def outage_in(self, stage: str) -> str | None:
        """What happened when a call of `stage` was made and got no answer; None otherwise."""
        asked = self.offline in (OfflineCause.TIMEOUT, OfflineCause.UNREACHABLE, OfflineCause.REFUSED)
        return self.offline_detail if asked and self.offline_stage == stage else None


def start_budget(now: float, seconds: float, *, configured: bool, enabled: bool) -> LLMBudget:
    """A fresh budget for one request, offline from the start when there is no LLM to ask."""
    budget = LLMBudget(deadline=now + seconds, seconds=seconds)
    if not configured:
        return budget.going_offline(OfflineCause.NOT_CONFIGURED, "no chat model configured")
    if not enabled:
        return budget.going_offline(OfflineCause.DISABLED, "use_llm is false for this run")
    return budget


def allot(budget: LLMBudget, own_timeout_s: float, now: float, stage: str) -> tuple[LLMBudget, float | None]:
    """The time limit of one LLM call of `stage`: min(its own limit, the time left).

    None means "make no call": the request is already offline, or less than `MIN_CALL_S` is left (which
    takes the rest of the request offline, cause DEADLINE).
    """
    if budget.offline is not None:
        return budget, None
    left = budget.deadline - now
    if left < MIN_CALL_S:
        return budget.going_offline(OfflineCause.DEADLINE, f"LLM deadline of {budget.seconds:g}s used up",
                                    stage), None
    return budget, min(own_timeout_s, left)


def after_outage(budget: LLMBudget, stage: str, outage: LLMUnavailable) -> LLMBudget:
    """The budget once a call of `stage` got no answer: the rest of the request runs offline."""
    return budget.going_offline(outage.cause, outage.detail, stage)


def offline_note(budget: LLMBudget, language: str) -> str:
    """The line the answer ends with when the LLM was expected and did not answer ("" otherwise: with no
    model configured or `use_llm: false`, offline is what was asked for)."""
    if budget.offline is None or budget.offline not in DEGRADED:
        return ""
    notes = OFFLINE_NOTES.get(language, OFFLINE_NOTES["en"])
    return notes[budget.offline]


def with_offline_note(text: str, budget: LLMBudget, language: str) -> str:
    """The answer text, ending with the offline note (in the answer's language) when there is one."""
    note = offline_note(budget, language)
    return f"{text.rstrip()}\n\n{note}" if note else text
