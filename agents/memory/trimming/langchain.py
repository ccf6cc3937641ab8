"""LangChain's trim_messages (langchain-core 1.8.3), strategies "last" and "first", with a list token counter.
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import accumulate
from typing import Literal

from pydantic import Field

from agents.memory.schema import Message
from agents.memory.trimming.registry import (
    ORPHAN_AT_START,
    Outcome,
    StrategyParams,
    View,
    is_call,
    register,
)
from agents.memory.trimming.runs import ReasonRuns

LangChainType = Literal["system", "human", "ai", "tool"]


class LangChainLastParams(StrategyParams):
    max_tokens: int = Field(
        default=4000, ge=0,
        description="Token budget in the counter's units (required by LangChain; memoryviz suggests 4000).",
    )
    include_system: bool = Field(
        default=False,
        description="Always keep a system message at index 0, even when it alone exceeds max_tokens.",
    )
    start_on: LangChainType | list[LangChainType] | None = Field(
        default=None,
        description="Drop the oldest kept messages until the first one is of this type: system, human, ai, tool "
        "(or one of several: human,ai removes leading tool results). Several: comma-separated (human,ai), a "
        "JSON list ([\"human\", \"ai\"]) or, in the API, the parameter repeated (start_on=human&start_on=ai).",
    )
    end_on: LangChainType | list[LangChainType] | None = Field(
        default=None,
        description="First drop trailing messages until the last one is of this type: system, human, ai, tool "
        "(or one of several). Several: comma-separated (human,ai), a "
        "JSON list ([\"human\", \"ai\"]) or, in the API, the parameter repeated (end_on=human&end_on=ai).",
    )


class LangChainFirstParams(StrategyParams):
    max_tokens: int = Field(
        default=4000, ge=0,
        description="Token budget in the counter's units (required by LangChain; memoryviz suggests 4000).",
    )
    end_on: LangChainType | list[LangChainType] | None = Field(
        default=None,
        description="Drop trailing kept messages until the last one is of this type: system, human, ai, tool "
        "(or one of several). Several: comma-separated (human,ai), a "
        "JSON list ([\"human\", \"ai\"]) or, in the API, the parameter repeated (end_on=human&end_on=ai).",
    )


# ---------------------------------------------------------------------------------------------------------------
# LangChain


def _lc_type(m: Message) -> str:
    return {"system": "system", "developer": "system", "user": "human", "assistant": "ai", "tool": "tool"}[m.role]


def _lc_matches(m: Message, types: str | Sequence[str]) -> bool:
    return _lc_type(m) in ([types] if isinstance(types, str) else types)


def _lc_types_text(types: str | Sequence[str]) -> str:
    return types if isinstance(types, str) else " or ".join(types)


def _lc_first_max_tokens(
    view: View, order: Sequence[int], max_tokens: int, end_on: str | Sequence[str] | None
) -> tuple[int, int]:
    """LangChain's ``_first_max_tokens`` on view positions ``order`` with a list counter (sum + per_list).

    Returns (fit, kept): the prefix length that fits the budget, and the length left after ``end_on``.
    """
    if not order:
        return 0, 0
    counts = view.counts
    prefix = list(accumulate(map(counts.__getitem__, order), initial=0))
    if prefix[-1] + view.per_list <= max_tokens:
        idx = fit = len(order)
    else:
        # LangChain binary-searches the longest prefix whose count fits; counts are sums of non-negative
        # numbers, so that is the largest k with prefix[k] + per_list <= max_tokens (never k = 0 evaluated).
        idx = fit = bisect.bisect_right(prefix, max_tokens - view.per_list, lo=1) - 1
        idx = fit = max(idx, 0)
    if end_on:
        while idx > 0 and not _lc_matches(view.messages[order[idx - 1]], end_on):
            idx -= 1
    return fit, idx


def _lc_orphan_notes(view: View, kept: list[int]) -> list[str]:
    notes: list[str] = []
    if kept and view.messages[kept[0]].role == "tool":
        notes.append(
            f"LangChain leaves {ORPHAN_AT_START} (langchain-ai/langchain#33245); start_on=['human', 'ai'] avoids it."
        )
    if kept and is_call(view.messages[kept[-1]]):
        notes.append("LangChain keeps a tool call at the end whose results were cut; providers reject it.")
    return notes


@register(
    "langchain_last", LangChainLastParams,
    "Keeps the newest messages that fit max_tokens (trim_messages strategy='last').",
    "LangChain trim_messages(strategy='last') (langchain-core 1.8.3)",
    reads_text=False,
)
def _langchain_last(view: View, p: LangChainLastParams) -> Outcome:
    # Whole ranges drop for one reason each: the outcome holds them as runs (runs.py), nothing per message.
    notes: list[str] = []
    n = end = len(view)
    if p.end_on:
        while end > 0 and not _lc_matches(view.messages[end - 1], p.end_on):
            end -= 1
    start = 0
    system: int | None = None
    remaining = p.max_tokens
    if p.include_system and end > 0 and _lc_type(view.messages[0]) == "system":
        system, start = 0, 1
        system_tokens = view.counts[0] + view.per_list
        remaining = max(0, p.max_tokens - system_tokens)
        if system_tokens > p.max_tokens:
            notes.append(
                f"include_system keeps the system message although it alone counts {system_tokens:,} tokens, "
                f"more than max_tokens={p.max_tokens:,}."
            )
    order = range(end - 1, start - 1, -1)  # newest first, as LangChain reverses the list
    fit, kept_n = _lc_first_max_tokens(view, order, remaining, p.start_on)
    budget = f"{p.max_tokens:,} tokens"
    # order[fit:] is start..end-fit-1, order[kept_n:fit] is end-fit..end-kept_n-1, what end_on cut is end..n-1.
    runs = [
        (start, end - fit, f"outside the newest messages that fit {budget}"),
        (end - fit, end - kept_n, f"dropped so the list starts on a {_lc_types_text(p.start_on or [])} message "
                                  "(start_on)"),
        (end, n, f"after the last {_lc_types_text(p.end_on or [])} message (end_on drops trailing messages first)"),
    ]
    kept = ([system] if system is not None else []) + list(range(end - kept_n, end))
    notes += _lc_orphan_notes(view, [i for i in kept if i != system])
    out = Outcome(kept=kept, dropped=ReasonRuns(runs), kept_reason=f"among the newest messages that fit {budget}")
    if system is not None:
        out.kept_reasons[system] = "include_system: the system message at index 0 is always kept"
    out.notes = notes
    return out


@register(
    "langchain_first", LangChainFirstParams,
    "Keeps the oldest messages that fit max_tokens (trim_messages strategy='first').",
    "LangChain trim_messages(strategy='first') (langchain-core 1.8.3)",
    reads_text=False,
)
def _langchain_first(view: View, p: LangChainFirstParams) -> Outcome:
    order = range(len(view))
    fit, kept_n = _lc_first_max_tokens(view, order, p.max_tokens, p.end_on)
    budget = f"{p.max_tokens:,} tokens"
    # Two ranges drop for one reason each: held as runs (runs.py), nothing per message.
    runs = [
        (kept_n, fit, f"dropped so the list ends on a {_lc_types_text(p.end_on or [])} message (end_on)"),
        (fit, len(view), f"beyond the oldest messages that fit {budget}"),
    ]
    kept = list(range(kept_n))
    out = Outcome(kept=kept, dropped=ReasonRuns(runs), kept_reason=f"among the oldest messages that fit {budget}")
    out.notes = _lc_orphan_notes(view, kept)
    return out
