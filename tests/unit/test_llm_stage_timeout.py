"""GIGACHAT_TIMEOUT also sets how long `ask` and `eval --llm` wait for a stage's model answer (issue 39): a slow
local model needed a code change to raise `Context.llm_timeout_s`."""

from __future__ import annotations

import pytest

from evals.wiring import eval_context
from graph.settings import Settings


def test_eval_waits_as_long_as_the_settings_say(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIGACHAT_TIMEOUT", "150")
    settings = Settings()
    assert eval_context("s", "full", settings).llm_timeout_s == 150.0
