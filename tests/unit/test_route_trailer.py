"""The line after an offline answer says what happened in the user's words (issue 37, newcomer friction):
"via fallback" on every offline answer read like an error."""

from __future__ import annotations

import pytest

from graph.cli_commands import route_trailer


@pytest.mark.parametrize(("mode", "reason", "expected"), [
    ("fallback", "no chat model configured",
     "[DOC_EXPLAIN/SUMMARY, routed by rules; 12 ms; answered offline: no chat model configured]"),
    ("llm_default", "", "[DOC_EXPLAIN/SUMMARY, routed by the LLM; 12 ms]"),
    ("fallback_llm_error", "router: timeout",
     "[DOC_EXPLAIN/SUMMARY, routed by rules (the LLM call failed); 12 ms; answered offline: router: timeout]"),
    ("fallback_llm_invalid", "", "[DOC_EXPLAIN/SUMMARY, routed by rules (the LLM's route was unusable); 12 ms]"),
])
def test_trailer_words(mode: str, reason: str, expected: str) -> None:
    out = {"route": {"intent": "DOC_EXPLAIN", "subintent": "SUMMARY", "routing_mode": mode},
           "timings_ms": {"a": 5.0, "b": 7.0}, "offline_reason": reason}
    assert route_trailer(out) == expected
    assert "fallback" not in route_trailer(out)
