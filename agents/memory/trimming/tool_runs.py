"""A list as AutoGen and Strands hold it: a run of consecutive tool results is one message (AutoGen's
FunctionExecutionResultMessage, Strands' user message of toolResult blocks), every other message is one.

Both frameworks get that list already grouped and slice it; memoryviz groups an OpenAI list itself. Reading a role
costs 80 to 200 ns a message on the bench machine (the message objects are spread over memory), and a Python loop
over the messages as much again, so the roles are read into a string of one character per message, at C speed
(``codes``: each role's last letter, which tells a tool result, ``l``, and an assistant message, ``t``, from the
others, ``m`` or ``r``), and units are counted and found in that string with ``str.count`` and regular expressions:
nothing runs per message in Python.
"""
from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import compress, islice, repeat
from operator import attrgetter, itemgetter, ne
from typing import Any

_ROLE = attrgetter("role")
_LAST = itemgetter(-1)  # the five roles end in m, r, r, t, l: a tool result and an assistant message stand out
TOOL = "l"  # tool
ASSISTANT = "t"  # assistant (system: m, developer and user: r)


class Grouped(tuple[Any, ...]):
    """Messages held grouped: a history as AutoGen and Strands hold theirs, whose grouping is known before any trim
    runs (AutoGen groups a call's results into one message when they are added). Its roles are read once
    (``codes``) and its units found once (``starts``: where each unit starts), so a window finds its ends without
    reading a role. It is a tuple, so neither goes stale, and ``trim`` shares it instead of copying it. A stored
    session's outlines are held so (stored.StoredMessages): the strategies of a compare, a report or the lab then
    read the session's grouping once, not once each."""

    codes: str
    starts: array[int]

    def __new__(cls, messages: Iterable[Any]) -> Grouped:
        self = super().__new__(cls, messages)
        self.codes = _read_codes(self)
        self.starts = array("q", _unit_starts(self.codes))
        return self


def codes(messages: Sequence[Any], start: int = 0, stop: int | None = None, *, backwards: bool = False) -> str:
    """One character per message of ``messages[start:stop]`` (TOOL, ASSISTANT, or another letter), in order or,
    ``backwards``, from the last to the first. A ``Grouped`` list's are sliced from the ones it holds."""
    n = len(messages)
    stop = n if stop is None else min(stop, n)
    start = max(0, min(start, stop))
    if isinstance(messages, Grouped):
        part_codes = messages.codes[start:stop]
        return part_codes[::-1] if backwards else part_codes
    if backwards:
        if stop == n and isinstance(messages, list):
            part: Any = islice(reversed(messages), stop - start)
        else:
            part = reversed(messages[start:stop])
    elif start == 0 and stop == n:
        part = messages
    else:
        part = messages[start:stop]
    return _read_codes(part)


def last_of_role(messages: Sequence[Any], role: str) -> int | None:
    """The index of the last message of ``messages`` with this role, or None. A ``Grouped`` list's codes are
    searched from the end at C speed (a code stands for a role or two: each hit's role is checked)."""
    if isinstance(messages, Grouped):
        letter, end = role[-1:], len(messages)
        while (at := messages.codes.rfind(letter, 0, end)) >= 0:
            if messages[at].role == role:
                return at
            end = at
        return None
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == role), None)


def _read_codes(messages: Iterable[Any]) -> str:
    return "".join(map(_LAST, map(_ROLE, messages)))


def unit_count(c: str) -> int:
    """The units of ``c`` (a whole list's codes): each message but a tool result right after another."""
    return len(c) - c.count("l") + (c[:1] == "l") + c.count("ml") + c.count("rl") + c.count("tl")


@lru_cache(maxsize=64)
def _units_pattern(count: int) -> re.Pattern[str]:
    # Possessive: a run of tool results is one unit, never split to make up the count.
    return re.compile(f"(?:l++|[^l]){{{count}}}")


def units_end(c: str, count: int, at: int = 0) -> int | None:
    """Where the ``count`` units of ``c`` that start at ``at`` end (None: fewer than ``count`` are left)."""
    if count <= 0:
        return at
    found = _units_pattern(count).match(c, at)
    return found.end() if found else None


def run_end(c: str, at: int) -> int:
    """The end of the unit of ``c`` that starts at ``at``: past a run of tool results, or one message."""
    if c[at:at + 1] != "l":
        return at + 1
    found = _TOOL_RUN.match(c, at)
    assert found is not None
    return found.end()


_TOOL_RUN = re.compile("l+")


def last_units_start(messages: Sequence[Any], count: int) -> int:
    """Where the last ``count`` units of ``messages`` start (0 when it has fewer), reading the roles of the end of
    the list only: a little more than the window, then twice as much until the window is found. ``messages`` may
    be a list's codes already (a str)."""
    n = len(messages)
    if count <= 0:
        return n
    take = count + count // 4 + 8
    while True:
        lo = max(0, n - take)
        back = messages[lo:n][::-1] if isinstance(messages, str) else codes(messages, lo, n, backwards=True)
        end = units_end(back, count)
        if end is not None and (end < len(back) or lo == 0 or back[-1] != "l"):
            return n - end  # a run of tool results cut by the read would have reached the end of what was read
        if lo == 0:
            return 0
        take *= 2


def unit_starts(c: str) -> list[int]:
    """The position where each unit of ``c`` starts (a whole list's codes)."""
    return list(_unit_starts(c))


def _unit_starts(c: str) -> Iterable[int]:
    marked = _CONTINUED.sub("x", c)  # a tool result right after another continues its unit
    return compress(range(len(c)), map(ne, marked, repeat("x")))


_CONTINUED = re.compile("(?<=l)l")
