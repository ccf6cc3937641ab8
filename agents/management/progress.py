"""A progress bar on stderr for the long-running commands (import_history, export_history).

Shown only when stderr is a terminal or when asked (--progress), so that scripts reading stdout and logs are
never cluttered. No dependency: on a terminal, one line redrawn with a carriage return (and erased to its end
with ``ESC [K``), at most five times a second; elsewhere (--progress into a log or a pipe) plain lines, at most
one every two seconds, since control codes would be litter there. With a total (bytes of the file read, or
messages to write) it draws a bar; without one, a counter and a rate.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO


class ProgressBar:
    def __init__(
        self,
        label: str,
        *,
        stream: TextIO,
        unit: str = "messages",
        total: int | None = None,
        enabled: bool = True,
        position: Callable[[], int] | None = None,
        interval: float | None = None,
    ) -> None:
        """``total`` with ``position`` (e.g. a file's size and its read offset) measures the bar in bytes while the
        count stays in ``unit``; ``total`` alone measures it in ``unit``."""
        self.label = label
        self.stream = stream
        self.unit = unit
        self.total = total
        self.enabled = enabled
        self.position = position
        self.terminal = _is_terminal(stream)
        self.interval = interval if interval is not None else (0.2 if self.terminal else 2.0)
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.count = 0
        self.drawn = False
        self.last_line = ""  # what was drawn last, less the rate and time (a log gets no repeated line)

    def update(self, count: int) -> None:
        self.count = count
        now = time.monotonic()
        if self.enabled and now - self.last_draw >= self.interval:
            self.last_draw = now
            self._draw(now)

    def _fraction(self) -> float | None:
        if not self.total:
            return None
        done = self.position() if self.position is not None else self.count
        return min(max(done / self.total, 0.0), 1.0)

    def _draw(self, now: float, final: bool = False) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.count / elapsed
        frac = 1.0 if final and self.total else self._fraction()
        done = f"{self.count:,} {self.unit}"
        if frac is None:
            line = f"{self.label}: {done}"
        else:
            filled = int(frac * 30)
            line = f"{self.label} [{'#' * filled}{'-' * (30 - filled)}] {frac:6.1%} {done}"
        if not self.terminal and final and line == self.last_line:
            return  # the closing line would say again what the last line said
        self.last_line = line
        text = f"{line} ({rate:,.0f}/s, {elapsed:.0f}s)"
        if self.terminal:
            self.stream.write("\r" + text + "\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.drawn = True

    def close(self, *, completed: bool = True) -> None:
        if self.enabled and (self.drawn or self.count):
            self._draw(time.monotonic(), final=completed)
            if self.terminal:
                self.stream.write("\n")
            self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
