"""Deterministic validation of the LLM's candidate route (seed 002 §5 routers/validator.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nodes.intent_routing.route_catalog import is_allowed

ROUTE_FIELDS = ("routing_domain", "intent", "subintent")
MAX_REASON_CHARS = 200


def validate_candidate(candidate: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Check an LLM candidate route and normalize its values.

    Args:
        candidate: The parsed LLM answer, or `None` when there was none.

    Returns:
        `{"routing_domain", "intent", "subintent", "confidence", "reason_short"}` with upper-cased enum
        values, confidence in 0.0..1.0 and a reason of at most 200 characters; `None` when a route field
        is missing, the combination is not in the route catalog, or confidence is not a finite number.
    """
    if not isinstance(candidate, Mapping):
        return None
    domain, intent, subintent = (_enum_value(candidate.get(name)) for name in ROUTE_FIELDS)
    if not (domain and intent and subintent) or not is_allowed(domain, intent, subintent):
        return None
    confidence = coerce_confidence(candidate.get("confidence"))
    if confidence is None:
        return None
    reason = candidate.get("reason_short")
    reason_short = " ".join(reason.split())[:MAX_REASON_CHARS] if isinstance(reason, str) else ""
    route = {"routing_domain": domain, "intent": intent, "subintent": subintent}
    return {**route, "confidence": confidence, "reason_short": reason_short}


def coerce_confidence(value: Any) -> float | None:
    """Turn a confidence into 0.0..1.0: numbers or numeric strings; 1 < x <= 100 is read as a percentage."""
    if isinstance(value, bool):
        return None  # bool is an int subclass, but `true` is not a confidence
    try:
        number = float(str(value).strip().rstrip("%")) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    if 1.0 < number <= 100.0:
        number /= 100.0
    return min(1.0, max(0.0, number))


def _enum_value(value: Any) -> str | None:
    return value.strip().upper() if isinstance(value, str) and value.strip() else None
