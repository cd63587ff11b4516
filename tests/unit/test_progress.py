"""`ProgressBar`: rate-based ETA per stage, one line per 10% when not a terminal."""

from __future__ import annotations

import io

from graph.progress import ProgressBar, eta_text


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_eta_text_formats_seconds_minutes_hours() -> None:
    assert eta_text(None) == ""
    assert eta_text(42.2) == "eta 42s"
    assert eta_text(192) == "eta 3m12s"
    assert eta_text(3900) == "eta 1h05m"


def test_ten_thousand_files_show_progress_and_an_eta_from_the_stage_rate() -> None:
    clock, out = _Clock(), io.StringIO()
    bar = ProgressBar(stream=out, clock=clock)
    bar("embed", 0, 10_000)  # the stage starts
    for done in range(100, 10_001, 100):
        clock.now += 1.0  # 100 files a second
        bar("embed", done, 10_000)
    lines = out.getvalue().splitlines()
    assert len(lines) == 11  # 0%, then one line per 10%
    assert lines[1] == "embed: 1000/10000 (10%) eta 1m30s"  # 9000 left at 100/s
    assert lines[-1] == "embed: 10000/10000 (100%)"
