"""`IntentRouter`: the seed 002 pipeline, LLM-first with deterministic validation, confidence and fallback."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig

from nodes.intent_routing.aliases import AliasIndex
from nodes.intent_routing.anchors import extract_anchors
from nodes.intent_routing.confidence import adjust_confidence
from nodes.intent_routing.fallback import fallback_route
from nodes.intent_routing.features import QueryFeatures, build_features
from nodes.intent_routing.llm import (
    DEFAULT_TIMEOUT_S,
    LLMRouter,
    LLMRouterUnavailable,
    StructuredMethod,
)
from nodes.intent_routing.models import RouteResult, RoutingMode
from nodes.intent_routing.normalizer import normalize_query
from nodes.intent_routing.prompts import RouterPrompts, build_payload
from nodes.intent_routing.target_terms import extract_target_terms
from nodes.intent_routing.validator import validate_candidate

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

logger = logging.getLogger(__name__)


class IntentRouter:
    """Route a user request to one of the allowed routes (seed 002).

    The LLM chooses the route; the deterministic layer only prepares features, validates the answer,
    adjusts its confidence, and decides alone when there is no LLM, the LLM fails (transport error,
    HTTP error, timeout) or it answers with no JSON, broken JSON or a route outside the catalog.

    Args:
        llm: A LangChain chat model (the app passes `langchain_gigachat.GigaChat(..., streaming=True)`);
            `None` routes with the deterministic fallback alone (`routing_mode="fallback"`).
        aliases: The session's alias index (`InMemoryAliasIndex` or any `AliasIndex`); `None` = no aliases.
        timeout_s: Limit in seconds for one LLM call, enforced around the call (default 8).
        structured_method: `function_calling` (default), `json_schema`, or `text` (JSON in plain text).
        prompts: Prompt contract; the packaged `prompts.yml` by default.
        llm_errors: Exception types that mean "LLM unavailable" (GigaChat, httpx and timeouts by default).
    """

    def __init__(
        self,
        llm: BaseChatModel | None = None,
        aliases: AliasIndex | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        structured_method: StructuredMethod = "function_calling",
        prompts: RouterPrompts | None = None,
        llm_errors: tuple[type[BaseException], ...] | None = None,
    ) -> None:
        self.aliases = aliases
        self.llm_router = (
            LLMRouter(llm, timeout_s=timeout_s, method=structured_method, prompts=prompts, errors=llm_errors)
            if llm is not None
            else None
        )

    def analyze(self, user_query: str) -> QueryFeatures:
        """The deterministic part: normalize, extract target terms and anchors, assemble features."""
        normalized = normalize_query(user_query)
        terms = extract_target_terms(normalized, self.aliases)
        return build_features(normalized, terms, extract_anchors(normalized, terms, self.aliases))

    @property
    def timeout_s(self) -> float:
        """The router's own limit for one LLM call (`GIGACHAT_ROUTER_TIMEOUT` in the app)."""
        return self.llm_router.timeout_s if self.llm_router is not None else DEFAULT_TIMEOUT_S

    def route(self, user_query: str, *, config: RunnableConfig | None = None, timeout_s: float | None = None,
              raise_unavailable: bool = False) -> RouteResult:
        """Route one request.

        Args:
            user_query: The standalone request (after conversation understanding).
            config: Runnable config passed to the chat model (callbacks, tags, tracing).
            timeout_s: Limit of this call instead of the router's own (what the request's deadline leaves).
            raise_unavailable: Raise `LLMUnavailable` when the model does not answer in time or cannot be
                reached, so the caller can run the rest of its request offline (`route_offline` gives the
                route then); other LLM failures still end in the fallback route.

        Returns:
            The route; never raises for LLM failures (unless `raise_unavailable`), which end in the
            fallback route.
        """
        features, decided = self._without_llm(user_query)
        if decided is not None or self.llm_router is None:  # _without_llm decides whenever there is no LLM
            return decided  # type: ignore[return-value]
        try:
            candidate = self.llm_router.choose(build_payload(features), config, timeout_s=timeout_s)
        except LLMRouterUnavailable as exc:
            return self._unavailable(user_query, features, exc, raise_unavailable)
        return self._finish(user_query, features, candidate)

    async def aroute(self, user_query: str, *, config: RunnableConfig | None = None,
                     timeout_s: float | None = None, raise_unavailable: bool = False) -> RouteResult:
        """Async twin of `route` (only the LLM call differs)."""
        features, decided = self._without_llm(user_query)
        if decided is not None or self.llm_router is None:  # _without_llm decides whenever there is no LLM
            return decided  # type: ignore[return-value]
        try:
            candidate = await self.llm_router.achoose(build_payload(features), config, timeout_s=timeout_s)
        except LLMRouterUnavailable as exc:
            return self._unavailable(user_query, features, exc, raise_unavailable)
        return self._finish(user_query, features, candidate)

    def route_offline(self, user_query: str, llm_error: str | None = None) -> RouteResult:
        """The deterministic route, without asking the model: `routing_mode="fallback"`, or
        `fallback_llm_error` naming `llm_error` when the model was asked and did not answer."""
        return self._offline(user_query, self.analyze(user_query), llm_error)

    def _offline(self, user_query: str, features: QueryFeatures, llm_error: str | None) -> RouteResult:
        if llm_error is None or not features.normalized_query:
            return fallback_route(user_query, features, features.anchors, llm_attempted=False)
        return fallback_route(user_query, features, features.anchors, llm_attempted=True,
                              routing_mode=RoutingMode.FALLBACK_LLM_ERROR, note=f"LLM unavailable: {llm_error}")

    def _without_llm(self, user_query: str) -> tuple[QueryFeatures, RouteResult | None]:
        """The request's features, and the route when no LLM call is needed (no model, or nothing to route)."""
        features = self.analyze(user_query)
        if self.llm_router is None or not features.normalized_query:
            return features, fallback_route(user_query, features, features.anchors, llm_attempted=False)
        return features, None

    def _unavailable(
        self, user_query: str, features: QueryFeatures, exc: LLMRouterUnavailable, raise_outage: bool
    ) -> RouteResult:
        if raise_outage and exc.outage is not None:
            raise exc.outage from None  # the caller logs it and routes with `route_offline`
        logger.warning("intent router: LLM unavailable (%s); using the fallback route", exc.kind)
        return self._offline(user_query, features, exc.kind)

    def _finish(
        self, user_query: str, features: QueryFeatures, candidate: dict[str, Any] | None
    ) -> RouteResult:
        validated = validate_candidate(candidate)
        if validated is None:
            logger.warning(
                "intent router: LLM answer invalid (%s); using the fallback route", _shape(candidate)
            )
            note = "LLM answer invalid" if candidate is not None else "LLM answer had no JSON"
            return fallback_route(user_query, features, features.anchors, llm_attempted=True, note=note)
        return RouteResult(
            routing_domain=validated["routing_domain"],
            intent=validated["intent"],
            subintent=validated["subintent"],
            user_query=user_query,
            normalized_query=features.normalized_query,
            target_terms=list(features.target_terms),
            anchors=features.anchors,
            confidence=adjust_confidence(validated["confidence"], features),
            routing_mode=RoutingMode.LLM_DEFAULT.value,
            llm_router_used=True,
            reason_short=validated["reason_short"],
        )


def _shape(candidate: dict[str, Any] | None) -> str:
    """What was wrong, without echoing model text into logs: the keys it sent, or that there was none."""
    return "no JSON object" if candidate is None else f"keys: {', '.join(sorted(map(str, candidate))[:8])}"
