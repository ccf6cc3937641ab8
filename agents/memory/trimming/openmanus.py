"""OpenManus' Memory (snapshot 52a13f2a): a slice of the last messages, taken on every write.
"""
from __future__ import annotations

from pydantic import Field

from agents.memory.trimming.registry import (
    MEMORY_IDEMPOTENT,
    Outcome,
    StrategyParams,
    View,
    keep_all,
    leading_tool_note,
    outcome,
    pin_field,
    plural,
    register,
)


class OpenManusParams(StrategyParams):
    pin_system: bool = pin_field(True)
    max_messages: int = Field(
        default=100, ge=0,
        description="Keep messages[-max_messages:]; 0 means no trimming (OpenManus' slice of -0). OpenManus' "
        "default is 100. Negative values, which empty OpenManus' memory, are not offered.",
    )


# ---------------------------------------------------------------------------------------------------------------
# OpenManus


@register(
    "openmanus_window", OpenManusParams,
    "Keeps the last max_messages messages, tool results included even when their call is cut.",
    "OpenManus Memory (snapshot 52a13f2a): messages[-max_messages:] on every write",
    memory=MEMORY_IDEMPOTENT,  # the slice deletes for good, but slicing a slice again is the same slice
    reads_text=False,
)
def _openmanus_window(view: View, p: OpenManusParams) -> Outcome:
    size = p.max_messages
    if size == 0:
        return keep_all(view, "max_messages=0: OpenManus' slice messages[-0:] keeps everything")
    start = max(0, len(view) - size)
    out = outcome(
        view, range(start, len(view)),
        lambda i: f"outside the last {plural(size, 'message')} (OpenManus keeps messages[-{size}:])",
        f"within the last {plural(size, 'message')}",
    )
    out.notes = leading_tool_note(
        view, out.kept, "OpenManus", "FoundationAgents/OpenManus#23; the fix, PR #1116, is open"
    )
    return out
