"""A hand-written agent loop's short-term memory: its _trim (safe window) and its /clear command.

Both come from the article memoryviz grew from, which builds an agent loop by hand (no framework); users meet them
as that loop's strategies, so the text they read names the loop, not the article.
"""
from __future__ import annotations

from pydantic import Field

from agents.memory.schema import SYSTEM_ROLES
from agents.memory.trimming.registry import (
    NoParams,
    Outcome,
    StrategyParams,
    View,
    outcome,
    plural,
    register,
)


class SafeWindowParams(StrategyParams):
    max_messages: int = Field(
        default=40, ge=1,
        description="Most messages kept, system messages included; the oldest non-system message goes first, "
        "with the tool messages right after it.",
    )


# ---------------------------------------------------------------------------------------------------------------
# The hand-written agent loop: safe window and /clear


@register(
    "safe_window", SafeWindowParams,
    "Drops the oldest non-system message and the tool messages right after it until max_messages fit.",
    "a hand-written agent loop without a framework: its short-term memory _trim (the safe window)",
    reads_text=False,
)
def _safe_window(view: View, p: SafeWindowParams) -> Outcome:
    # The loop deletes from the front; the same result in one pass.
    remaining = len(view)
    reasons: dict[int, str] = {}
    # One reason for every message the window drops (not "dropped with message N"), so that a long session's
    # dropped messages read as one run (TrimResult.dropped_runs) instead of one entry each.
    why = (
        f"oldest non-system messages dropped to keep at most {plural(p.max_messages, 'message')} "
        "(the tool messages right after a dropped message go with it)"
    )
    i = 0
    while remaining > p.max_messages and i < len(view):
        m = view.messages[i]
        if m.role in SYSTEM_ROLES:
            i += 1
            continue
        reasons[i] = why
        remaining -= 1
        j = i + 1
        while j < len(view) and view.messages[j].role == "tool":
            reasons[j] = why
            remaining -= 1
            j += 1
        i = j
    kept = [k for k in range(len(view)) if k not in reasons]
    out = outcome(view, kept, reasons.__getitem__, f"within the newest {plural(p.max_messages, 'message')}")
    for k in kept:
        if view.messages[k].role in SYSTEM_ROLES:
            out.kept_reasons[k] = "system message: never dropped"
    if remaining > p.max_messages:
        out.notes.append(f"Only system messages are left and there are more than {p.max_messages}.")
    return out


@register(
    "clear_non_system", NoParams,
    "Keeps system and developer messages only, as /clear does.",
    "a hand-written agent loop without a framework: its /clear command",
    reads_text=False,
)
def _clear_non_system(view: View, p: NoParams) -> Outcome:
    return outcome(
        view, [i for i, m in enumerate(view.messages) if m.role in SYSTEM_ROLES],
        lambda i: "/clear keeps only system messages", "system message: /clear keeps it",
    )
