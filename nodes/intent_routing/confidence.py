"""Confidence post-processing after the LLM answered (seed 002 §5 routers/confidence.py)."""

from __future__ import annotations

from nodes.intent_routing.features import QueryFeatures

NO_STRONG_ANCHORS_PENALTY = 0.1
SHORT_OR_VAGUE_PENALTY = 0.1
EXPLICIT_SIGNAL_BONUS = 0.05


def adjust_confidence(confidence: float, features: QueryFeatures) -> float:
    """Make the LLM's confidence reflect how strong the query's own signals are.

    Args:
        confidence: The validated LLM confidence.
        features: Signals of the query.

    Returns:
        −0.1 without strong anchors, −0.1 for a short or vague query, +0.05 for an explicit signal
        (file markers, endpoint paths, endpoint markers); clamped to 0.0..1.0 and rounded to 4 places.
    """
    if not features.has_strong_anchors:
        confidence -= NO_STRONG_ANCHORS_PENALTY
    if features.is_short_or_vague:
        confidence -= SHORT_OR_VAGUE_PENALTY
    if features.has_explicit_signal:
        confidence += EXPLICIT_SIGNAL_BONUS
    return round(min(1.0, max(0.0, confidence)), 4)
