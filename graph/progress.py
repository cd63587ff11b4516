"""A dependency-free progress bar for `lotsman index` (stderr; a line per 10% when not a terminal).

Each stage shows its rate and an ETA from that rate (`eta 3m12s`): on a repository of 10⁴ files the
embedding stage runs for many minutes, and a bare percentage does not say whether to wait or come back.
"""

from __future__ import annotations

import sys
import time


def eta_text(seconds: float | None) -> str:
    """`eta 42s`, `eta 3m12s`, `eta 1h05m` (empty while unknown)."""
    if seconds is None:
        return ""
    s = int(round(seconds))
    if s < 60:
        return f"eta {s}s"
    if s < 3600:
        return f"eta {s // 60}m{s % 60:02d}s"
    return f"eta {s // 3600}h{(s % 3600) // 60:02d}m"


class ProgressBar:
    """`progress(stage, done, total)` callback drawing one bar per stage."""

    def __init__(self, stream=None, width: int = 30, clock=time.perf_counter) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self.clock = clock
        self._last: dict[str, int] = {}
        self._started: dict[str, float] = {}
        self._t0 = clock()

    def eta(self, stage: str, done: int, total: int) -> float | None:
        """Seconds left at the stage's average rate so far (None before the first item)."""
        elapsed = self.clock() - self._started.get(stage, self._t0)
        if done <= 0 or elapsed <= 0:
            return None
        return max(0.0, (total - done) * elapsed / done)

    def __call__(self, stage: str, done: int, total: int) -> None:
        self._started.setdefault(stage, self.clock())
        if total <= 0 or stage == "parse" and total < 20:
            return
        pct = int(100 * done / total)
        eta = "" if done >= total else eta_text(self.eta(stage, done, total))
        if self.tty:
            filled = int(self.width * done / total)
            bar = "#" * filled + "." * (self.width - filled)
            end = "\n" if done >= total else ""
            elapsed = self.clock() - self._t0
            self.stream.write(f"\r{stage:<6} [{bar}] {done}/{total} {pct:3d}% {elapsed:5.1f}s {eta:<11}{end}")
            self.stream.flush()
        elif pct // 10 > self._last.get(stage, -1) or done >= total:
            self._last[stage] = pct // 10
            self.stream.write(f"{stage}: {done}/{total} ({pct}%){' ' + eta if eta else ''}\n")
            self.stream.flush()
