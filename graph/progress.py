"""A dependency-free progress bar for `lotsman index` (stderr; a line per 10% when not a terminal)."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """`progress(stage, done, total)` callback drawing one bar per stage."""

    def __init__(self, stream=None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self._last: dict[str, int] = {}
        self._t0 = time.perf_counter()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if total <= 0 or stage == "parse" and total < 20:
            return
        pct = int(100 * done / total)
        if self.tty:
            filled = int(self.width * done / total)
            bar = "#" * filled + "." * (self.width - filled)
            end = "\n" if done >= total else ""
            elapsed = time.perf_counter() - self._t0
            self.stream.write(f"\r{stage:<6} [{bar}] {done}/{total} {pct:3d}% {elapsed:5.1f}s{end}")
            self.stream.flush()
        elif pct // 10 > self._last.get(stage, -1) or done >= total:
            self._last[stage] = pct // 10
            self.stream.write(f"{stage}: {done}/{total} ({pct}%)\n")
            self.stream.flush()
