"""The one source of truth for allowed routes (seed 002 §3, §5 routers/route_catalog.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from nodes.intent_routing.models import Intent, RoutingDomain, Subintent


@dataclass(frozen=True)
class Route:
    """One allowed `routing_domain / intent / subintent` combination."""

    routing_domain: str
    intent: str
    subintent: str


GENERAL_QA = Route(RoutingDomain.GENERAL.value, Intent.GENERAL_QA.value, Subintent.SUMMARY.value)
DOC_SUMMARY = Route(RoutingDomain.DOCS.value, Intent.DOC_EXPLAIN.value, Subintent.SUMMARY.value)
DOC_FIND_FILES = Route(RoutingDomain.DOCS.value, Intent.DOC_EXPLAIN.value, Subintent.FIND_FILES.value)
ALLOWED_ROUTES: tuple[Route, ...] = (GENERAL_QA, DOC_SUMMARY, DOC_FIND_FILES)


def allowed_routes() -> list[dict[str, str]]:
    """Allowed routes as plain dicts, the form the LLM payload carries."""
    return [asdict(route) for route in ALLOWED_ROUTES]


def is_allowed(routing_domain: str, intent: str, subintent: str) -> bool:
    """Whether the combination is one of the allowed routes (exact, case-sensitive enum values)."""
    return Route(routing_domain, intent, subintent) in ALLOWED_ROUTES
