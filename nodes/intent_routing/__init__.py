"""Intent routing (seed 002): LLM-first router with deterministic features, validation and fallback."""

from nodes.intent_routing.aliases import AliasEntry, AliasIndex, AliasMatch, InMemoryAliasIndex
from nodes.intent_routing.models import (
    Intent,
    RouteAnchors,
    RouteResult,
    RoutingDomain,
    RoutingMode,
    Subintent,
)
from nodes.intent_routing.router import IntentRouter

__all__ = [
    "AliasEntry",
    "AliasIndex",
    "AliasMatch",
    "InMemoryAliasIndex",
    "Intent",
    "IntentRouter",
    "RouteAnchors",
    "RouteResult",
    "RoutingDomain",
    "RoutingMode",
    "Subintent",
]
