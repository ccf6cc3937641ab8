"""The OpenAI Agents cookbook's TrimmingSession: keep the last user turns, whole.
"""
from __future__ import annotations

from pydantic import Field

from agents.memory.schema import SYSTEM_ROLES
from agents.memory.trimming.registry import (
    MEMORY_IDEMPOTENT,
    Outcome,
    StrategyParams,
    View,
    outcome,
    pin_field,
    plural,
    register,
)


class LastTurnsParams(StrategyParams):
    pin_system: bool = pin_field(True)
    max_turns: int = Field(
        default=8, ge=1,
        description="User turns kept (a user message and everything after it up to the next one). The cookbook "
        "clamps smaller values to 1.",
    )


# ---------------------------------------------------------------------------------------------------------------
# OpenAI Agents cookbook


@register(
    "last_turns", LastTurnsParams,
    "Keeps the last max_turns user turns, whole.",
    "OpenAI Agents cookbook TrimmingSession (examples/agents_sdk/session_memory.ipynb)",
    memory=MEMORY_IDEMPOTENT,  # trims what it stores on add and get; the last N turns of the last N are the same
    reads_text=False,
)
def _last_turns(view: View, p: LastTurnsParams) -> Outcome:
    start = 0
    seen = 0
    for i in range(len(view) - 1, -1, -1):
        if view.messages[i].role == "user":
            seen += 1
            if seen == p.max_turns:
                start = i
                break
    turns = plural(p.max_turns, "user turn")
    out = outcome(view, range(start, len(view)), lambda i: f"before the last {turns}", f"in the last {turns}")
    if any(view.messages[i].role in SYSTEM_ROLES for i in out.dropped):
        out.notes.append(
            "The system message is in the session here (pin_system is off), so it was trimmed with the old turns."
        )
    return out
