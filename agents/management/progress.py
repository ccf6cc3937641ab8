"""A progress bar on stderr for the long-running commands (import_history, export_history).

Shown only when stderr is a terminal or when asked (--progress), so that scripts reading stdout and logs are
never cluttered. No dependency: one line redrawn with a carriage return, at most a few times a second.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(
        self, label: str, *, unit: str = "items", total: int | None = None, enabled: bool = True,
        stream: TextIO | None = None, interval: float = 0.2,
    ) -> None:
        self.label = label
        self.unit = unit
        self.total = total
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.count = 0
        self.drawn = False

    def update(self, count: int) -> None:
        self.count = count
        now = time.monotonic()
        if self.enabled and now - self.last_draw >= self.interval:
            self.last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.count / elapsed
        if self.total:
            frac = min(self.count / self.total, 1.0)
            filled = int(frac * 30)
            bar = "[" + "#" * filled + "-" * (30 - filled) + f"] {frac:6.1%} "
            text = f"{self.label} {bar}{self.count:,}/{self.total:,} {self.unit} ({rate:,.0f}/s)"
        else:
            text = f"{self.label}: {self.count:,} {self.unit} ({rate:,.0f}/s, {elapsed:.0f}s)"
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.enabled and (self.drawn or self.count):
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
