"""Semantic Kernel Python 1.45's ChatHistoryTruncationReducer.
"""
from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from agents.memory.schema import SYSTEM_ROLES, Message
from agents.memory.trimming.registry import (
    MEMORY_CARRIED,
    Outcome,
    StrategyParams,
    View,
    is_call,
    keep_all,
    outcome,
    register,
)


class SKTruncationParams(StrategyParams):
    target_count: int = Field(
        default=20, gt=0,
        description="Messages to keep, the first system message included. Semantic Kernel requires it; memoryviz "
        "suggests 20.",
    )
    threshold_count: int = Field(
        default=0, ge=0,
        description="Extra messages tolerated before reducing; the cut prefers a user message within them.",
    )


# ---------------------------------------------------------------------------------------------------------------
# Semantic Kernel


def _sk_function_content(m: Message) -> bool:
    return m.role == "tool" or is_call(m)


def _sk_locate_safe_reduction_index(
    msgs: Sequence[Message], target_count: int, threshold_count: int, has_system_message: bool
) -> int | None:
    """``locate_safe_reduction_index`` of semantic-kernel 1.45 (offset_count 0)."""
    if has_system_message:
        target_count -= 1
        if target_count <= 0:
            return len(msgs)
    threshold_index = len(msgs) - threshold_count - target_count
    if threshold_index <= 0:
        return None
    i = len(msgs) - target_count
    while i >= 0:
        if msgs[i].role in SYSTEM_ROLES:
            break
        if not _sk_function_content(msgs[i]):
            break
        if i - 1 < 0 or not _sk_function_content(msgs[i - 1]):
            break
        i -= 1
    target_index = i
    while i >= threshold_index:
        if msgs[i].role == "user":
            return i
        i -= 1
    return target_index


@register(
    "sk_truncation", SKTruncationParams,
    "Keeps the last target_count messages, walking back to keep tool calls with their results; keeps the first "
    "system message.",
    "Semantic Kernel Python ChatHistoryTruncationReducer (semantic-kernel 1.45)",
    # reduce() truncates the history object itself, so the next call reduces what is left plus what came since.
    memory=MEMORY_CARRIED,
    reads_text=False,
)
def _sk_truncation(view: View, p: SKTruncationParams) -> Outcome:
    msgs = view.messages
    if len(msgs) <= p.target_count + p.threshold_count:
        return keep_all(view, "within target_count + threshold_count: Semantic Kernel does not reduce")
    sys_index = next((i for i, m in enumerate(msgs) if m.role in SYSTEM_ROLES), None)
    would_truncate = sys_index is not None and sys_index < len(msgs) - p.target_count
    idx = _sk_locate_safe_reduction_index(msgs, p.target_count, p.threshold_count, would_truncate)
    if idx is None:
        return keep_all(view, "Semantic Kernel finds no reduction point")
    kept = list(range(idx, len(msgs)))
    if sys_index is not None and sys_index < idx:
        kept.insert(0, sys_index)
    out = outcome(
        view, kept,
        lambda i: f"before Semantic Kernel's truncation point (message {view.offset + idx}) for "
        f"target_count={p.target_count}",
        f"from Semantic Kernel's truncation point (message {view.offset + idx}) on",
    )
    if sys_index is not None and sys_index < idx:
        out.kept_reasons[sys_index] = "the first system message, which Semantic Kernel always keeps"
    if idx == len(msgs):
        out.notes.append(
            "target_count after accounting for the system message is 0: Semantic Kernel keeps only the system message."
        )
    elif len(kept) > p.target_count:
        out.notes.append(
            f"Semantic Kernel keeps {len(kept)} messages for target_count={p.target_count}: it walks back so that "
            f"tool calls stay with their results."
        )
    first_dialogue = next((i for i in kept if i != sys_index), None)
    if first_dialogue is not None and msgs[first_dialogue].role == "assistant":
        out.notes.append("The kept history starts with an assistant message, without the user message before it.")
    return out
