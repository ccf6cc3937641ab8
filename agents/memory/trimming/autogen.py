"""AutoGen's model contexts (autogen-core 0.7.5): unbounded, buffered, head and tail, token limited, and the
reasoning-model example that strips thoughts.

AutoGen stores the results of one call message as one FunctionExecutionResultMessage, so these strategies count
a run of tool results as one message, as AutoGen does.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from agents.memory.schema import Message
from agents.memory.trimming.registry import (
    NoParams,
    Outcome,
    StrategyParams,
    View,
    is_call,
    keep_all,
    outcome,
    pin_field,
    plural,
    register,
    split_exchanges,
)
from agents.memory.trimming.runs import Positions, ReasonRuns


class BufferedParams(StrategyParams):
    pin_system: bool = pin_field(True)
    buffer_size: int = Field(
        default=10, gt=0,
        description="Messages AutoGen keeps, counting a run of tool results as one message. AutoGen has no "
        "default; memoryviz suggests 10.",
    )


class HeadAndTailParams(StrategyParams):
    pin_system: bool = pin_field(True)
    head_size: int = Field(
        default=1, gt=0,
        description="Oldest messages kept. AutoGen has no default; memoryviz suggests 1 (the task).",
    )
    tail_size: int = Field(
        default=10, gt=0,
        description="Newest messages kept. AutoGen has no default; memoryviz suggests 10.",
    )


class TokenLimitedParams(StrategyParams):
    pin_system: bool = pin_field(True)
    token_limit: int = Field(
        default=4000, gt=0,
        description="Token budget in the counter's units. AutoGen's default (None) means the model's whole "
        "context window; memoryviz needs a number and suggests 4000.",
    )


def _autogen_units(view: View) -> list[list[int]]:
    """Group the view as AutoGen stores it: a run of tool results (answering one call message) is one
    FunctionExecutionResultMessage; every other message is one message."""
    units: list[list[int]] = []
    for i, m in enumerate(view.messages):
        if m.role == "tool" and units and view.messages[units[-1][-1]].role == "tool":
            units[-1].append(i)
        else:
            units.append([i])
    return units


def _unit_count(view: View) -> int:
    """``len(_autogen_units(view))`` without building them (every role read, at C speed: tool_runs)."""
    return view.unit_count()


def _is_ferm(view: View, unit: list[int]) -> bool:
    return view.messages[unit[0]].role == "tool"


def _unit_count_note(view: View, units: int, kept: Sequence[int]) -> list[str]:
    # Only worth saying when something was cut: it is why the window holds more OpenAI messages than its size.
    if len(kept) == len(view) or units == len(view):
        return []
    return [
        f"AutoGen stores the results of one call message as one message: {len(view):,} messages here are "
        f"{units:,} AutoGen messages."
    ]


@register(
    "unbounded", NoParams,
    "Keeps every message.",
    "AutoGen UnboundedChatCompletionContext (autogen-core 0.7.5)",
    reads_text=False,
)
def _unbounded(view: View, p: NoParams) -> Outcome:
    return keep_all(view, "AutoGen's unbounded context keeps every message")


@register(
    "buffered", BufferedParams,
    "Keeps the last buffer_size messages, then removes one leading tool result.",
    "AutoGen BufferedChatCompletionContext (autogen-core 0.7.5)",
    reads_text=False,
)
def _buffered(view: View, p: BufferedParams) -> Outcome:
    size, n = p.buffer_size, len(view)
    # AutoGen slices its list: the window is found in a Grouped list's unit starts, or else only the window's roles
    # are read (tool_runs.last_units_start).
    start = view.last_units_start(size)
    runs = [(0, start, f"outside the last {plural(size, 'message')} of AutoGen's buffer")]
    notes: list[str] = []
    first = start
    if start < n and view.messages[start].role == "tool":
        first = start + 1
        while first < n and view.messages[first].role == "tool":
            first += 1
        runs.append((start, first, (
            "leading tool result removed, as AutoGen removes one"
            + (" (AutoGen holds these results as one message)" if first - start > 1 else "")
        )))
        if first == n:
            notes.append("AutoGen returns an empty context: its buffer held only a tool result, which it removes.")
    kept = range(first, n)
    out = Outcome(kept=kept, dropped=ReasonRuns(runs),
                  kept_reason=f"within the last {plural(size, 'message')} of AutoGen's buffer")
    # The note counts AutoGen's messages over the whole list: made when the notes are first read.
    out.later_notes = lambda: _unit_count_note(view, _unit_count(view), kept) + notes
    return out


@register(
    "head_and_tail", HeadAndTailParams,
    "Keeps the first head_size and last tail_size messages with a 'Skipped N messages.' placeholder between.",
    "AutoGen HeadAndTailChatCompletionContext (autogen-core 0.7.5)",
    reads_text=False,
)
def _head_and_tail(view: View, p: HeadAndTailParams) -> Outcome:
    # AutoGen's placeholder says how many of its messages it skipped: the length of its grouped list. A Grouped
    # list knows its units; a plain list's roles are all read to count them (at C speed, tool_runs).
    units = view.unit_count()
    h, t = p.head_size, p.tail_size
    num_skipped = units - h - t
    if num_skipped <= 0:
        # AutoGen returns the whole history, without applying its boundary guards.
        return keep_all(view, f"AutoGen keeps everything: at most {h} + {t} messages")
    n = len(view)
    head_end = view.units_end(h)
    tail_start = view.last_units_start(t)
    assert head_end is not None and head_end < tail_start  # more than h + t units
    notes: list[str] = []
    runs = [(head_end, tail_start, f"skipped in the middle: AutoGen keeps the first {h} and the last {t} "
             "messages")]
    guarded = 0
    head_keep, tail_keep = head_end, tail_start
    # The head's last unit is one message unless it is a run of tool results (then no call).
    if view.messages[head_end - 1].role != "tool" and is_call(view.messages[head_end - 1]):
        head_keep -= 1
        guarded += 1
        runs.insert(0, (head_keep, head_end, (
            "tool call at the end of the head removed, as AutoGen removes one (its results are not in the head)"
        )))
    if view.messages[tail_start].role == "tool":
        tail_keep = tail_start + 1  # past the run of tool results (one AutoGen message)
        while tail_keep < n and view.messages[tail_keep].role == "tool":
            tail_keep += 1
        guarded += 1
        runs.append((tail_start, tail_keep, "leading tool result of the tail removed, as AutoGen removes one" + (
            " (AutoGen holds these results as one message)" if tail_keep - tail_start > 1 else ""
        )))
    text = f"Skipped {num_skipped} messages."
    placeholder = Message(role="user", name="System", content=text)
    omitted_units = num_skipped + guarded
    omitted_messages = n - head_keep - (n - tail_keep)
    reason = f"AutoGen's placeholder for the skipped middle: a user message from 'System' saying '{text}'"
    if guarded:
        notes.append(
            f"AutoGen's placeholder undercounts: it says '{text}' but {plural(omitted_units, 'AutoGen message')} "
            f"were left out, because its count ignores what its boundary guards remove "
            f"(microsoft/autogen PR #8070)."
        )
    if omitted_messages != omitted_units:
        notes.append(f"In OpenAI messages, {plural(omitted_messages, 'message')} were left out.")
    kept = Positions([(0, head_keep), (tail_keep, n)])
    notes = _unit_count_note(view, units, kept) + notes
    out = Outcome(kept=kept, dropped=ReasonRuns(runs), kept_reason="")
    out.kept_reasons = ReasonRuns([(0, head_keep, f"in the first {plural(h, 'message')}"),
                                   (tail_keep, n, f"in the last {plural(t, 'message')}")])
    out.inserted = [(head_keep, placeholder, reason)]
    out.notes = notes
    return out


def _middle_out_kept(sizes: Sequence[int], per_list: int, limit: int) -> tuple[int, int]:
    """AutoGen's ``while count(msgs) > limit and msgs: msgs.pop(len(msgs)//2)`` without its quadratic cost.

    After k pops the removed messages are always one contiguous block: the pops alternate between the last of
    the left part and the first of the right part, so the list is ``units[:ceil((m-k)/2)] + units[m-floor((m-k)/2):]``.
    The count only falls as k grows, so a binary search over k finds the first k that fits.
    Returns (left, right_start): keep units [0, left) and [right_start, m).
    """
    m = len(sizes)
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)

    def split(k: int) -> tuple[int, int]:
        rest = m - k
        return (rest + 1) // 2, m - rest // 2

    def fits(k: int) -> bool:
        left, right = split(k)
        return prefix[left] + prefix[m] - prefix[right] + per_list <= limit

    lo, hi = 0, m  # k = m means everything was popped (the loop also stops there)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return split(lo)


@register(
    "token_limited", TokenLimitedParams,
    "Removes the middle message until the list fits token_limit, then one leading tool result.",
    "AutoGen TokenLimitedChatCompletionContext (autogen-core 0.7.5)",
    reads_text=False,
)
def _token_limited(view: View, p: TokenLimitedParams) -> Outcome:
    units = _autogen_units(view)
    sizes = [sum(view.counts[i] for i in u) for u in units]
    left, right = _middle_out_kept(sizes, view.per_list, p.token_limit)
    notes: list[str] = []
    reasons: dict[int, str] = {}
    limit = f"{p.token_limit:,} tokens"
    middle = f"removed from the middle to fit {limit} (AutoGen pops the middle message until the list fits)"
    for u in units[left:right]:
        for i in u:
            reasons[i] = middle
    window = units[:left] + units[right:]
    if window and _is_ferm(view, window[0]):
        u = window.pop(0)
        for i in u:
            reasons[i] = "leading tool result removed, as AutoGen removes one"
    kept = [i for u in window for i in u]
    notes = _unit_count_note(view, len(units), kept) + notes
    if not kept and len(view):
        notes.append(f"Nothing fits in {limit}: AutoGen returns an empty context.")
    orphans, cut_calls = split_exchanges(view, kept)
    if orphans:
        notes.append(
            f"AutoGen removed the tool call but kept its {plural(len(orphans), 'result')} in the middle of the list "
            f"(message {', '.join(str(view.offset + i) for i in orphans)}); it only repairs index 0 "
            f"(microsoft/autogen#7955)."
        )
    if cut_calls:
        notes.append(
            f"AutoGen removed the results but kept the tool call (message "
            f"{', '.join(str(view.offset + i) for i in cut_calls)}): popping the middle splits the exchange, and "
            f"providers reject a call without its results."
        )
    users = [i for i in range(len(view)) if view.messages[i].role == "user"]
    if users and users[-1] not in set(kept) and any(i < users[-1] for i in kept):
        notes.append("Middle-out removal dropped the newest user message while keeping older messages.")
    out = outcome(view, kept, reasons.__getitem__, f"fits in {limit} after AutoGen's middle-out removal")
    out.notes = notes
    return out


# ---------------------------------------------------------------------------------------------------------------
# AutoGen reasoning-model example


@register(
    "strip_thoughts", NoParams,
    "Keeps every message but removes reasoning/thought text from assistant messages.",
    "AutoGen's reasoning-model context example (autogen-core 0.7.5 docs: thought set to None)",
)
def _strip_thoughts(view: View, p: NoParams) -> Outcome:
    out = keep_all(view, "kept unchanged")
    for i, m in enumerate(view.messages):
        if m.role != "assistant":
            continue
        # AutoGen stores the text sent with tool calls in AssistantMessage.thought, so the example drops it too.
        drop_text = bool(m.tool_calls) and m.content not in (None, "", [])
        if m.reasoning is None and not drop_text:
            continue
        update: dict[str, Any] = {"reasoning": None}
        what = ["reasoning"] if m.reasoning is not None else []
        if drop_text:
            update["content"] = None
            what.append("the text sent with the tool calls (AutoGen keeps it as the thought)")
        out.replaced[i] = m.model_copy(update=update)
        out.kept_reasons[i] = f"kept; removed {' and '.join(what)}"
    return out
