"""One LLM deadline per request (issue 25, item 6): the budget's decisions, table by table."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from gigachat.exceptions import AuthenticationError, BadRequestError, RateLimitError, ServerError
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from graph.deps import client_limits, make_chat_model
from graph.settings import GigaChatSettings, Settings
from nodes.answer_composition import compose_with_llm
from nodes.answer_composition.llm import llm_answer_wanted
from nodes.context_analysis import analyze
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult
from nodes.llm_budget import (
    MIN_CALL_S,
    LLMBudget,
    LLMUnavailable,
    OfflineCause,
    after_outage,
    allot,
    as_unavailable,
    offline_note,
    start_budget,
    with_offline_note,
)
from nodes.terms import key_terms

ON = LLMBudget(deadline=100.0, seconds=20.0)
"""A budget with the LLM on, ending at monotonic 100 s."""
REQUEST = httpx.Request("POST", "http://127.0.0.1/api/v1/chat/completions")


# --- starting a request -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("configured", "enabled", "offline", "reason"),
    [
        (True, True, None, ""),
        (False, True, OfflineCause.NOT_CONFIGURED, "no chat model configured"),
        (False, False, OfflineCause.NOT_CONFIGURED, "no chat model configured"),
        (True, False, OfflineCause.DISABLED, "use_llm is false for this run"),
    ],
)
def test_a_request_starts_with_the_whole_deadline(configured: bool, enabled: bool, offline: OfflineCause | None,
                                                  reason: str) -> None:
    budget = start_budget(50.0, 20.0, configured=configured, enabled=enabled)
    assert (budget.deadline, budget.seconds) == (70.0, 20.0)
    assert (budget.offline, budget.offline_reason) == (offline, reason)
    assert budget.answer_mode == ("llm" if offline is None else "offline")


# --- each call: min(own limit, time left) ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("budget", "own", "now", "limit", "offline"),
    [
        (ON, 8.0, 80.0, 8.0, None),  # 20 s left: the router's own 8 s
        (ON, 30.0, 80.0, 20.0, None),  # 20 s left: not the answer's own 30 s
        (ON, 30.0, 97.0, 3.0, None),  # what the earlier calls left
        (ON, 30.0, 100.0 - MIN_CALL_S, MIN_CALL_S, None),  # just enough to try
        (ON, 30.0, 99.9, None, OfflineCause.DEADLINE),  # too little to start a call: the rest goes offline
        (ON, 30.0, 130.0, None, OfflineCause.DEADLINE),  # past the deadline
        (ON.going_offline(OfflineCause.TIMEOUT, "no answer within 8s", "intent_routing"), 30.0, 80.0, None,
         OfflineCause.TIMEOUT),  # an earlier call timed out: no call at all, the first cause stays
        (start_budget(80.0, 20.0, configured=False, enabled=True), 30.0, 80.0, None, OfflineCause.NOT_CONFIGURED),
    ],
    ids=["own-limit", "time-left", "what-is-left", "min-call", "too-little", "past", "after-outage", "no-model"],
)
def test_allot(budget: LLMBudget, own: float, now: float, limit: float | None,
               offline: OfflineCause | None) -> None:
    after, got = allot(budget, own, now, "context_analysis")
    assert got == (pytest.approx(limit) if limit is not None else None)
    assert after.offline == offline


def test_a_used_up_deadline_names_the_stage_that_found_it() -> None:
    after, _ = allot(ON, 30.0, 120.0, "answer_composition")
    assert after.offline_reason == "answer_composition: LLM deadline of 20s used up"
    assert after.outage_in("answer_composition") is None, "no call was made: nothing to name in a route"


# --- which failures take the rest of the request offline -------------------------------------------------
@pytest.mark.parametrize(
    ("exc", "cause", "detail"),
    [
        (TimeoutError(), OfflineCause.TIMEOUT, "no answer within 2.9s"),
        (httpx.ReadTimeout("secret body", request=REQUEST), OfflineCause.TIMEOUT, "ReadTimeout"),
        (httpx.ConnectError("secret body", request=REQUEST), OfflineCause.UNREACHABLE, "ConnectError"),
        (httpx.RemoteProtocolError("cut", request=REQUEST), OfflineCause.UNREACHABLE, "RemoteProtocolError"),
        (ConnectionResetError("reset"), OfflineCause.UNREACHABLE, "ConnectionResetError"),
        (AuthenticationError("u", 401, b"secret", None), OfflineCause.REFUSED, "AuthenticationError 401"),
        (RateLimitError("u", 429, b"", None), OfflineCause.REFUSED, "RateLimitError 429"),
        (ServerError("u", 503, b"", None), OfflineCause.REFUSED, "ServerError 503"),
        (BadRequestError("u", 400, b"", None), None, None),  # this request only: the next call may work
        (ValueError("unparseable"), None, None),
    ],
)
def test_as_unavailable(exc: BaseException, cause: OfflineCause | None, detail: str | None) -> None:
    outage = as_unavailable(exc, 2.94468)
    if cause is None:
        assert outage is None
        return
    assert outage is not None and (outage.cause, outage.detail) == (cause, detail)
    assert "secret" not in outage.detail, "provider text never reaches state or logs"


def test_the_first_outage_wins_and_is_named_once() -> None:
    first = after_outage(ON, "intent_routing", LLMUnavailable(OfflineCause.TIMEOUT, "no answer within 8s"))
    second = after_outage(first, "answer_composition", LLMUnavailable(OfflineCause.UNREACHABLE, "ConnectError"))
    assert second == first
    assert (first.answer_mode, first.offline_reason) == ("offline", "intent_routing: no answer within 8s")
    assert first.outage_in("intent_routing") == "no answer within 8s"
    assert first.outage_in("context_analysis") is None


@pytest.mark.parametrize(
    ("cause", "named"),
    [(OfflineCause.TIMEOUT, True), (OfflineCause.UNREACHABLE, True), (OfflineCause.REFUSED, True),
     (OfflineCause.DEADLINE, False)],
)
def test_outage_in_names_what_a_call_met(cause: OfflineCause, named: bool) -> None:
    """The router's fallback says `fallback_llm_error` only when its own call was made and failed."""
    budget = ON.going_offline(cause, "what happened", "intent_routing")
    assert budget.outage_in("intent_routing") == ("what happened" if named else None)


# --- what the answer says --------------------------------------------------------------------------------
def _offline(cause: OfflineCause) -> LLMBudget:
    return ON.going_offline(cause, "x", "intent_routing")


@pytest.mark.parametrize(
    ("budget", "language", "note"),
    [
        (ON, "ru", ""),
        (start_budget(0, 20, configured=False, enabled=True), "ru", ""),  # offline by configuration: no note
        (start_budget(0, 20, configured=True, enabled=False), "en", ""),
        (_offline(OfflineCause.TIMEOUT), "ru", "(ответ собран без LLM: модель не ответила вовремя)"),
        (_offline(OfflineCause.DEADLINE), "ru", "(ответ собран без LLM: модель не ответила вовремя)"),
        (_offline(OfflineCause.UNREACHABLE), "ru", "(ответ собран без LLM: модель недоступна)"),
        (_offline(OfflineCause.REFUSED), "ru", "(ответ собран без LLM: модель вернула ошибку)"),
        (_offline(OfflineCause.TIMEOUT), "en", "(answered without the LLM: the model did not answer in time)"),
        (_offline(OfflineCause.UNREACHABLE), "en", "(answered without the LLM: the model could not be reached)"),
        (_offline(OfflineCause.TIMEOUT), "de", "(answered without the LLM: the model did not answer in time)"),
    ],
)
def test_offline_note(budget: LLMBudget, language: str, note: str) -> None:
    assert offline_note(budget, language) == note
    text = with_offline_note("Ответ [docs/a.md:1-2]\n", budget, language)
    assert text == (f"Ответ [docs/a.md:1-2]\n\n{note}" if note else "Ответ [docs/a.md:1-2]\n")


# --- the GigaChat client's own limits -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("timeout", "retries", "deadline", "expected"),
    [
        (30.0, 1, 20.0, (20.0, 0)),  # the defaults: one attempt, at most the deadline
        (5.0, 1, 20.0, (5.0, 1)),  # two attempts of 5 s fit in 20 s
        (5.0, 5, 20.0, (5.0, 3)),  # four attempts fit, not six
        (10.0, 0, 20.0, (10.0, 0)),
        (30.0, 2, 3.0, (3.0, 0)),
        (30.0, 1, 0.0, (30.0, 0)),  # no LLM time: the graph makes no call
    ],
)
def test_client_limits_fit_in_the_deadline(timeout: float, retries: int, deadline: float,
                                           expected: tuple[float, int]) -> None:
    got = client_limits(timeout, retries, deadline)
    assert got == expected
    if deadline > 0:
        assert (got[1] + 1) * got[0] <= deadline


def test_the_production_chat_model_gets_the_fitted_limits() -> None:
    settings = Settings(gigachat=GigaChatSettings(credentials="a2V5", model="GigaChat-2", timeout=30.0,
                                                  max_retries=1, request_deadline=20.0))
    model: Any = make_chat_model(settings)
    assert (model.timeout, model.max_retries, model.streaming) == (20.0, 0, True)


# --- the answer call reports an outage when asked ------------------------------------------------------------
class NeverAnswers(GenericFakeChatModel):
    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        await asyncio.sleep(5)
        yield ChatGenerationChunk(message=AIMessageChunk(content="late"))


class Refused(GenericFakeChatModel):
    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        raise AuthenticationError("u", 401, b"", None)
        yield  # pragma: no cover


ROWS = [EvidenceRow(id="c", path="docs/cors.md", layer="D0_DOC_CHUNKS", span_start=1, span_end=3,
                    content="# CORS\n\nДобавьте `CORSMiddleware` и задайте `allow_origins`.\n")]
QUESTION = "Как настроить CORS?"
SUMMARY = RouteResult(user_query="q", intent="DOC_EXPLAIN", subintent="SUMMARY")
FIND = RouteResult(user_query="q", intent="DOC_EXPLAIN", subintent="FIND_FILES")


@pytest.mark.parametrize(
    ("model", "cause"),
    [(NeverAnswers(messages=iter([])), OfflineCause.TIMEOUT), (Refused(messages=iter([])), OfflineCause.REFUSED)],
    ids=["timeout", "refused"],
)
async def test_compose_with_llm_raises_an_outage_only_when_asked(model: GenericFakeChatModel,
                                                                 cause: OfflineCause) -> None:
    analysis = analyze(QUESTION, key_terms(QUESTION), ROWS, True, SUMMARY)
    assert await compose_with_llm(model, QUESTION, analysis, ROWS, SUMMARY, 0.2) is None
    with pytest.raises(LLMUnavailable) as raised:
        await compose_with_llm(model, QUESTION, analysis, ROWS, SUMMARY, 0.2, raise_unavailable=True)
    assert raised.value.cause == cause


@pytest.mark.parametrize(
    ("relevant", "rows", "route", "wanted"),
    [(True, ROWS, SUMMARY, True), (False, ROWS, SUMMARY, False), (True, ROWS, FIND, False),
     (True, [], SUMMARY, False), (True, ROWS, None, True)],
    ids=["summary", "insufficient", "find-files", "no-evidence", "no-route"],
)
def test_the_answer_is_the_models_to_write(relevant: bool, rows: list[EvidenceRow], route: RouteResult | None,
                                           wanted: bool) -> None:
    """No call, so no deadline spent (or found used up), when the deterministic answer is the right one."""
    analysis = analyze(QUESTION, key_terms(QUESTION), ROWS, relevant, SUMMARY)
    assert llm_answer_wanted(analysis, rows, route) is wanted
