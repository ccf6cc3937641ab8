"""Small inline SVG charts for the lab: the geometry only (the templates draw it; no JS, no library).

- ``replay_chart``: tokens sent at each call of a replay (a line), what an untrimmed call would have sent (a
  fainter line), and marks where a call broke the protocol or lost the question. A run of thousands of calls is
  drawn with at most ``MAX_POINTS`` points per line: each point is the largest value of its bucket, so a peak is
  never smoothed away.
- ``savings_chart``: one bar per strategy, the share of the tokens it saved across a report.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.memory.replay import ReplayStep, step_column

WIDTH = 600
HEIGHT = 120
PAD = 4
MAX_POINTS = 300
MAX_MARKS = 200


@dataclass(frozen=True)
class Mark:
    x: float
    y: float
    kind: str  # "violation" or "question"
    step: int  # position in the replay's steps
    call: int


@dataclass(frozen=True)
class ReplayChart:
    width: int
    height: int
    sent: str  # polyline points "x,y x,y ..."
    untrimmed: str
    marks: list[Mark]
    max_tokens: int
    calls: int
    cursor_x: float | None  # where the chosen step is

    @property
    def label(self) -> str:
        return f"Tokens sent at each of {self.calls:,} calls (up to {self.max_tokens:,})"


def _x(k: int, n: int) -> float:
    return PAD + (WIDTH - 2 * PAD) * (k / (n - 1) if n > 1 else 0.5)


def _y(value: int, top: int) -> float:
    return HEIGHT - PAD - (HEIGHT - 2 * PAD) * (value / top if top else 0)


def _points(values: Sequence[int], top: int) -> str:
    n = len(values)
    if n == 0:
        return ""
    buckets = min(n, MAX_POINTS)
    out = []
    for b in range(buckets):
        lo, hi = b * n // buckets, max(b * n // buckets + 1, (b + 1) * n // buckets)
        k = max(range(lo, hi), key=values.__getitem__)
        out.append(f"{_x(k, n):.1f},{_y(values[k], top):.1f}")
    return " ".join(out)


def replay_chart(steps: Sequence[ReplayStep], *, chosen: int | None = None) -> ReplayChart:
    n = len(steps)
    # Read by column (a long run's steps are held so: replay.Steps); a step is made only for a mark.
    sent, untrimmed, errors, lost, calls = (
        step_column(steps, name) for name in ("tokens", "tokens_input", "errors", "question_lost", "call")
    )
    top = max(max(sent, default=0), max(untrimmed, default=0))
    marks: list[Mark] = []
    for k in range(n):
        if len(marks) >= MAX_MARKS:
            break
        kind = "violation" if errors[k] else "question" if lost[k] else ""
        if kind:
            marks.append(Mark(_x(k, n), _y(sent[k], top), kind, k, calls[k]))
    return ReplayChart(
        width=WIDTH,
        height=HEIGHT,
        sent=_points(sent, top),
        untrimmed=_points(untrimmed, top),
        marks=marks,
        max_tokens=top,
        calls=n,
        cursor_x=_x(chosen, n) if chosen is not None and 0 <= chosen < n else None,
    )


@dataclass(frozen=True)
class Bar:
    label: str
    saved: float  # share of the tokens saved, 0..1 (negative when a strategy sends more, e.g. a summary)
    width: float  # bar length in the chart's units
    y: float


@dataclass(frozen=True)
class SavingsChart:
    width: int
    height: int
    bars: list[Bar]
    bar_height: int


def savings_chart(rows: Sequence[tuple[str, int, int]]) -> SavingsChart:
    """``rows``: (label, tokens before, tokens after) per strategy, summed over the report's sessions."""
    bar_height, gap, label_width = 18, 6, 220
    bars = []
    for k, (label, before, after) in enumerate(rows):
        saved = (before - after) / before if before else 0.0
        bars.append(Bar(label, saved, max(0.0, saved) * (WIDTH - label_width - 60), k * (bar_height + gap)))
    return SavingsChart(WIDTH, max(1, len(rows)) * (bar_height + gap), bars, bar_height)
