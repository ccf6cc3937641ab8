"""What filled the window, as the pages draw it: one call's input as a stacked bar against the agent's context window
(``window_bar``), and how the parts grow over a session as stacked areas (``growth_chart``). Geometry and words
only; the templates draw them as inline SVG (no JS, no library) with each part's figures as text beside it.

The lab's charts (``agents.lab.charts``) draw lines and bars in a 600 × 120 box from module constants; a stacked
area chart needs the parts' lower and upper edges at each point and a taller box, so it has its own few lines here.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from agents.access import User, session_for_user
from agents.ledger.context import (
    GROWTH_SAMPLES,
    PARTS,
    Composition,
    ContextRequestError,
    Growth,
    reply_context,
    session_growth,
)

# What each part is, in the legend's words.
PART_LABELS = {
    "system": "system prompt",
    "memory_blocks": "memory blocks",
    "recalled_memory": "recalled memory",
    "retrieved_documents": "retrieved documents",
    "summary": "summary",
    "history": "history",
    "tool_definitions": "tool definitions",
    "input": "input",
}
PART_HELP = {
    "system": "The leading system and developer messages, less the memory blocks and recalled text inside them",
    "memory_blocks": "Core memory blocks rendered into the system prompt",
    "recalled_memory": "Messages carrying a recall of a memory store, and recalled text in the system prompt",
    "retrieved_documents": "Messages carrying chunks retrieved from a knowledge store",
    "summary": "Messages a framework's compaction inserted to stand for others",
    "history": "Every other message the call was sent",
    "tool_definitions": "The tool schemas sent with the messages",
    "input": "What this call adds: the messages after the last reply it was sent, and the list's priming tokens",
}
# A part's message runs listed as links; the rest are counted.
RANGES_LISTED = 8
BAR_WIDTH = 1000  # the bar's viewBox units
CHART_WIDTH, CHART_HEIGHT = 600, 200


@dataclass(frozen=True)
class RangeLink:
    first: int
    last: int
    href: str

    @property
    def label(self) -> str:
        return f"#{self.first}" if self.first == self.last else f"#{self.first}\u2013#{self.last}"


@dataclass(frozen=True)
class BarPart:
    part: str
    label: str
    help: str
    tokens: int
    share: float  # of the window, in percent
    of_total: float  # of what was sent, in percent
    x: float  # in the bar's viewBox units, against the window (or the total, when larger)
    width: float
    sent_x: float  # the same against what was sent: the second bar, where a small input is still readable
    sent_width: float
    messages: int
    links: list[RangeLink]
    more: int  # its messages not in the runs listed


@dataclass(frozen=True)
class WindowBar:
    total: int
    window: int
    share: float  # the total, in percent of the window
    over: bool
    window_x: float | None  # where the window ends on the bar, when the input is larger
    parts: list[BarPart]  # every part, in PARTS' order (those of no tokens too: the legend says 0)
    width: int = BAR_WIDTH

    @property
    def drawn(self) -> list[BarPart]:
        return [p for p in self.parts if p.tokens > 0]

    @property
    def label(self) -> str:
        said = "; ".join(f"{p.label} {p.tokens:,}" for p in self.parts if p.tokens)
        return f"{self.total:,} of {self.window:,} tokens ({self.share:.1f}% of the window): {said}"

    @property
    def shares_label(self) -> str:
        return "; ".join(f"{p.label} {p.of_total:.1f}%" for p in self.parts if p.tokens)


def _percent(tokens: int, window: int) -> float:
    return round(100 * tokens / window, 1) if window else 0.0


def window_bar(composition: Composition, *, session_url: str) -> WindowBar:
    """The bar of one composition; each part's runs of messages linked to the session page at their first."""
    window, total = composition.window, composition.total
    scale = max(window, total, 1)
    parts: list[BarPart] = []
    x = sent_x = 0.0
    for part in composition.parts:
        tokens = max(part.tokens, 0)
        width, sent_width = BAR_WIDTH * tokens / scale, BAR_WIDTH * tokens / max(total, 1)
        ranges = part.ranges
        links = [RangeLink(first, last, f"{session_url}?at={first}#m-{first}")
                 for first, last in ranges[:RANGES_LISTED]]
        parts.append(BarPart(part=part.part, label=PART_LABELS[part.part], help=PART_HELP[part.part],
                             tokens=part.tokens, share=_percent(part.tokens, window),
                             of_total=_percent(part.tokens, total), x=round(x, 2), width=round(width, 2),
                             sent_x=round(sent_x, 2), sent_width=round(sent_width, 2), messages=part.count,
                             links=links, more=max(0, part.count - sum(r.last - r.first + 1 for r in links))))
        x += width
        sent_x += sent_width
    return WindowBar(total=total, window=window, share=_percent(total, window), over=total > window,
                     window_x=round(BAR_WIDTH * window / scale, 2) if total > window else None, parts=parts)


@dataclass(frozen=True)
class Area:
    part: str
    label: str
    points: str  # polygon points "x,y x,y ...": the upper edge left to right, then the lower edge back
    last: int  # its tokens at the last point


@dataclass(frozen=True)
class GrowthChart:
    width: int
    height: int
    areas: list[Area]  # bottom to top, in PARTS' order; parts of no tokens anywhere left out
    top: int  # tokens at the chart's top edge
    largest: int  # the most any sampled reply was sent
    window: int
    window_y: float | None  # the window's line, when it fits under the top
    first_seq: int
    last_seq: int
    points: int
    sampled: bool
    messages: int

    @property
    def window_share(self) -> float:
        return _percent(self.largest, self.window)

    @property
    def label(self) -> str:
        last = "; ".join(f"{a.label} {a.last:,}" for a in self.areas)
        return (f"Tokens sent at {self.points:,} replies, #{self.first_seq} to #{self.last_seq}, by part, against a "
                f"window of {self.window:,}; at the last: {last}")


# The chart's top is the window when the largest reply was sent at least 1/WINDOW_SHOWN_FROM of it.
WINDOW_SHOWN_FROM = 4


def _rounded_up(tokens: int) -> int:
    """``tokens`` rounded up to 1, 2 or 5 times a power of ten (at least 10)."""
    step = 10
    while True:
        for k in (1, 2, 5):
            if tokens <= k * step:
                return k * step
        step *= 10


def growth_chart(growth: Growth) -> GrowthChart | None:
    """Stacked areas of the parts at each sampled reply, x by the reply's seq, y in tokens up to the larger of the
    window and the largest total; None when the session has no reply."""
    points = growth.points
    if not points:
        return None
    largest = max(p.total for p in points)
    # Up to the window when the replies come near it; else up to the largest, the window off the chart and said so,
    # so that the parts of a session far under its window can still be told apart.
    top = max(growth.window, largest, 1) if largest * WINDOW_SHOWN_FROM >= growth.window else _rounded_up(largest)
    first, last = points[0].seq, points[-1].seq
    span = last - first

    def x_of(seq: int) -> float:
        return CHART_WIDTH * (seq - first) / span if span else 0.0

    def y_of(tokens: int) -> float:
        return round(CHART_HEIGHT * (1 - tokens / top), 2)

    xs = [round(x_of(p.seq), 2) for p in points]
    if len(points) == 1:  # one reply: a band across the chart
        points, xs = [points[0], points[0]], [0.0, float(CHART_WIDTH)]
    below = [0] * len(points)
    areas = []
    for part in PARTS:
        values = [p.tokens.get(part, 0) for p in points]
        if not any(values):
            continue
        above = [b + v for b, v in zip(below, values, strict=True)]
        upper = [f"{x},{y_of(v)}" for x, v in zip(xs, above, strict=True)]
        lower = [f"{x},{y_of(v)}" for x, v in zip(reversed(xs), reversed(below), strict=True)]
        areas.append(Area(part=part, label=PART_LABELS[part], points=" ".join(upper + lower), last=values[-1]))
        below = above
    return GrowthChart(width=CHART_WIDTH, height=CHART_HEIGHT, areas=areas, top=top, largest=largest,
                       window=growth.window,
                       window_y=y_of(growth.window) if growth.window <= top else None, first_seq=first,
                       last_seq=last, points=len(growth.points), sampled=growth.sampled,
                       messages=growth.session.message_count)


# --- the pages: one reply's bar, a session's growth ------------------------------------------------------------


@dataclass
class WindowPage:
    """What the window bar's page (and its htmx fragment) renders, or the error that says what was wrong with the
    request (``status`` 400)."""

    context: dict[str, object]
    status: int = 200


def _whole(name: str, value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise ContextRequestError(f"{name}: {value[:40]!r} is not a whole number") from None
    if number < 0:
        raise ContextRequestError(f"{name}: {number} is negative")
    return number


def window_page(*, user: User, session_id: int, seq: str | None, call: str | None) -> WindowPage:
    """The bar of the reply at ``seq`` (or of the captured call ``call``) of a session the user sees (404 for
    another project's, 400 with the reason for a seq or call that names no reply)."""
    try:
        seq_n, call_n = _whole("seq", seq), _whole("call", call)
        composition = reply_context(user=user, session_id=session_id, seq=seq_n, call_id=call_n,
                                    runs=RANGES_LISTED)
    except ContextRequestError as exc:
        session = session_for_user(user, session_id)  # another project's session: 404 before saying what was wrong
        return WindowPage({"session": session, "seq": None, "call": None, "bar": None, "error": str(exc),
                           "key": "error"}, status=400)
    return WindowPage(composition_context(composition))


def composition_context(composition: Composition) -> dict[str, object]:
    """What the bar's partial needs (the captured call's page renders it too)."""
    session = composition.session
    call = composition.call
    query = f"call={call.pk}" if call else f"seq={composition.seq}"
    return {"session": session, "seq": composition.seq, "call": call, "error": "",
            "key": f"call-{call.pk}" if call else str(composition.seq),
            "bar": window_bar(composition, session_url=session.get_absolute_url()),
            "api_url": f"{reverse('api:session_context', args=[session.pk])}?{query}",
            "page_url": f"{reverse('agents:session_window', args=[session.pk])}?{query}"}


def growth_page(*, user: User, session_id: int) -> dict[str, object]:
    """The growth chart of a session the user sees (404 for another project's)."""
    growth = session_growth(user=user, session_id=session_id)
    session = growth.session
    url = session.get_absolute_url()
    return {"session": session, "growth": growth, "chart": growth_chart(growth),
            "samples": min(session.message_count, GROWTH_SAMPLES),
            # Figures written here: 200 rows of nine through ``intcomma`` cost tens of milliseconds.
            "rows": [{"seq": p.seq, "total": f"{p.total:,}", "parts": [f"{p.tokens[name]:,}" for name in PARTS],
                      "href": f"{url}?at={p.seq}#m-{p.seq}"} for p in growth.points],
            "part_labels": [PART_LABELS[name] for name in PARTS],
            "api_url": reverse("api:session_context_growth", args=[session.pk])}
