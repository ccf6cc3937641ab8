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
from collections.abc import Sequence
from functools import lru_cache
from itertools import compress, islice, repeat
from operator import attrgetter, itemgetter, ne
from typing import Any

_ROLE = attrgetter("role")
_LAST = itemgetter(-1)  # the five roles end in m, r, r, t, l: a tool result and an assistant message stand out
TOOL = "l"  # tool
ASSISTANT = "t"  # assistant (system: m, developer and user: r)


def codes(messages: Sequence[Any], start: int = 0, stop: int | None = None, *, backwards: bool = False) -> str:
    """One character per message of ``messages[start:stop]`` (TOOL, ASSISTANT, or another letter), in order or,
    ``backwards``, from the last to the first."""
    n = len(messages)
    stop = n if stop is None else min(stop, n)
    start = max(0, min(start, stop))
    if backwards:
        if stop == n and isinstance(messages, list):
            part: Any = islice(reversed(messages), stop - start)
        else:
            part = reversed(messages[start:stop])
    elif start == 0 and stop == n:
        part = messages
    else:
        part = messages[start:stop]
    return "".join(map(_LAST, map(_ROLE, part)))


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
    the list only: a little more than the window, then twice as much until the window is found."""
    n = len(messages)
    if count <= 0:
        return n
    take = count + count // 4 + 8
    while True:
        lo = max(0, n - take)
        back = codes(messages, lo, n, backwards=True)
        end = units_end(back, count)
        if end is not None and (end < len(back) or lo == 0 or back[-1] != "l"):
            return n - end  # a run of tool results cut by the read would have reached the end of what was read
        if lo == 0:
            return 0
        take *= 2


def unit_starts(c: str) -> list[int]:
    """The position where each unit of ``c`` starts (a whole list's codes)."""
    marked = _CONTINUED.sub("x", c)  # a tool result right after another continues its unit
    return list(compress(range(len(c)), map(ne, marked, repeat("x"))))


_CONTINUED = re.compile("(?<=l)l")
