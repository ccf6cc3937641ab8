"""memoryviz's recommendation: drop the oldest whole units until everything sent fits; never break the protocol.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import Field

from agents.memory.schema import Message
from agents.memory.trimming.registry import (
    Outcome,
    StrategyParams,
    View,
    is_call,
    outcome,
    pin_field,
    register,
)


class SafeTokenBudgetParams(StrategyParams):
    pin_system: bool = pin_field(
        True,
        "Set leading system/developer messages aside, trim the rest, put them back in front. They are always sent, "
        "so they count against max_tokens.",
    )
    max_tokens: int = Field(
        default=4000, gt=0,
        description="Budget for everything sent, pinned system messages and reply priming included, in the "
        "counter's units.",
    )


# ---------------------------------------------------------------------------------------------------------------
# memoryviz's recommendation


def _arguments_ok(m: Message) -> bool:
    # Providers want a JSON object; an empty string stands for {} (as chain.py's check says).
    for tc in m.tool_calls:
        text = tc.function.arguments.strip()
        if not text:
            continue
        try:
            if not isinstance(json.loads(text), dict):
                return False
        except ValueError:
            return False
    return True


def _is_empty_assistant(m: Message) -> bool:
    # Blank text is no content; a non-text part (an image) is, as chain.py's empty_assistant check says.
    if m.role != "assistant" or m.tool_calls:
        return False
    if isinstance(m.content, list):
        return not any(
            not isinstance(p, dict) or p.get("type", "text") != "text" or str(p.get("text") or "").strip()
            for p in m.content
        )
    return not (m.content or "").strip()


def _safe_units(msgs: Sequence[Message]) -> list[range]:
    """Every message in exactly one candidate unit, in order: a call message with the tool messages right after
    it, or one message alone (a tool message alone is a result without its call). Ranges: nothing per message."""
    units: list[range] = []
    i = 0
    while i < len(msgs):
        j = i + 1
        if is_call(msgs[i]):
            while j < len(msgs) and msgs[j].role == "tool":
                j += 1
        units.append(range(i, j))
        i = j
    return units


def _check_unit(
    msgs: Sequence[Message], unit: Sequence[int], newer_ids: set[str]
) -> tuple[Sequence[int], str, list[int]]:
    """(the messages the unit sends, why it cannot be sent ("" when it can), tool messages it must leave out)."""
    first = msgs[unit[0]]
    if first.role == "tool":
        return unit, "tool result without its call right before it: dropped, providers reject it", []
    if not is_call(first):
        if _is_empty_assistant(first):
            return unit, "assistant message with neither content nor tool calls: dropped, providers reject it", []
        return unit, "", []
    ids = [tc.id for tc in first.tool_calls]
    answered: dict[str, int] = {}
    extra: list[int] = []
    for k in unit[1:]:
        cid = msgs[k].tool_call_id or ""
        if cid in ids and cid not in answered:
            answered[cid] = k
        else:
            extra.append(k)
    members = [unit[0], *sorted(answered.values())]
    problem = ""
    if len(set(ids)) != len(ids):
        problem = "its calls share an id"
    elif len(answered) < len(ids):
        missing = [c for c in ids if c not in answered]
        pending = not answered and unit[-1] == len(msgs) - 1
        problem = "its call has no result yet (pending)" if pending else f"call {', '.join(missing)} has no result"
    elif not _arguments_ok(first):
        problem = "its arguments are not a JSON object"
    elif newer_ids.intersection(ids):
        problem = f"a newer exchange reuses its call id {sorted(newer_ids.intersection(ids))[0]}"
    if problem:
        return members, f"tool exchange dropped whole: {problem}, which providers reject", extra
    return members, "", extra


@register(
    "safe_token_budget", SafeTokenBudgetParams,
    "Drops the oldest whole units (user message, assistant message, tool exchange) until everything sent, pinned "
    "system included, fits; never breaks the tool protocol. The newest user message is always kept; inside its "
    "turn the oldest steps go first like any other unit, so a long single-turn agent loop keeps its newest steps. "
    "Over budget only when the pinned messages, the newest user message and the newest unit alone exceed it.",
    "memoryviz's own recommendation",
    reads_text=False,
)
def _safe_token_budget(view: View, p: SafeTokenBudgetParams) -> Outcome:
    msgs = view.messages
    budget = p.max_tokens
    units = _safe_units(msgs)
    newest_user = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].role == "user"), None)
    user_unit = next(u for u, unit in enumerate(units) if unit[0] == newest_user) if newest_user is not None else None
    reasons: dict[int, str] = {}
    kept_units: list[Sequence[int]] = []
    # Everything sent counts, pinned system messages included; the newest user message is always sent, so it is
    # counted first and the rest competes for what is left.
    total = view.pinned_tokens + view.per_list + (view.counts[newest_user] if newest_user is not None else 0)
    newer_ids: set[str] = set()
    newest_kept: Sequence[int] | None = None  # the newest unit kept besides the newest user message
    to_fit: list[int] = []  # unit numbers dropped to fit the budget
    full = False
    # From the newest unit back: keep what fits. The first unit that does not fit fills the budget: every older
    # unit is dropped (the newest user message excepted), so what is kept is the newest user message plus the
    # longest run of newest units that fits: the oldest units go first, inside the newest turn too.
    for u_no in range(len(units) - 1, -1, -1):
        if u_no == user_unit:
            kept_units.append(units[u_no])
            continue
        if full:
            to_fit.append(u_no)
            continue
        members, problem, extra = _check_unit(msgs, units[u_no], newer_ids)
        for k in extra:
            reasons[k] = "tool result that answers no call of the message before it: dropped, providers reject it"
        if problem:
            for k in members:
                reasons[k] = problem
            continue
        size = sum(view.counts[k] for k in members)
        # The newest unit that can be sent is kept with the newest user message whatever it costs, when it comes
        # after it (the agent's latest step); without a user message, it is kept alone.
        floor = newest_kept is None and (user_unit is None or u_no > user_unit)
        if not floor and total + size > budget:
            full = True
            to_fit.append(u_no)
            continue
        total += size
        kept_units.append(members)
        if newest_kept is None:
            newest_kept = members
        if is_call(msgs[members[0]]):
            newer_ids.update(tc.id for tc in msgs[members[0]].tool_calls)
    # One reason for all the units dropped to fit (one for those inside the newest turn), not one per unit: a
    # long session's dropped messages then read as one or two runs (TrimResult.dropped_runs).
    older = f"oldest whole units dropped to fit {budget:,} tokens (a tool exchange goes with its results)"
    in_turn = (
        f"oldest steps of the newest turn dropped to fit {budget:,} tokens (a tool exchange goes with its results)"
    )
    for u_no in to_fit:
        why = in_turn if user_unit is not None and u_no > user_unit else older
        for k in units[u_no]:
            reasons[k] = why
    kept = sorted(k for unit in kept_units for k in unit)
    out = outcome(view, kept, reasons.__getitem__, f"newest whole units that fit {budget:,} tokens")
    if newest_user is not None:
        out.kept_reasons[newest_user] = "the newest user message: always kept"
    if total > budget:
        # Only the floors can overflow: once they exceed the budget nothing else fits, so they are all that is kept.
        out.budget_exceeded = True
        parts = []
        if newest_user is not None:
            parts.append(f"the newest user message (message {view.offset + newest_user})")
            out.kept_reasons[newest_user] = "the newest user message, kept although the budget is exceeded"
        if newest_kept is not None:
            first = msgs[newest_kept[0]]
            what = "tool exchange" if is_call(first) else f"{first.role} message"
            a, b = view.offset + newest_kept[0], view.offset + newest_kept[-1]
            span = f"message {a}" if a == b else f"messages {a}-{b}"
            parts.append(f"the newest {what}{' after it' if newest_user is not None else ''} ({span})")
            for k in newest_kept:
                out.kept_reasons[k] = f"the newest {what}, kept although the budget is exceeded"
        what = " and ".join(parts) if parts else "the pinned system messages"
        out.notes.append(
            f"Budget exceeded: {what} need{'s' if len(parts) < 2 else ''} {total:,} tokens with the pinned system "
            f"messages, more than max_tokens={budget:,}; kept anyway rather than sending the request without them."
        )
    return out
