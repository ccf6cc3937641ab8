"""Google ADK (google-adk 2.13.0): sliding-window events compaction (``EventsCompactionConfig`` with
``compaction_interval`` and ``overlap_size``), replayed invocation by invocation (reference/trimming-2026.md §5).

ADK holds events: a run of consecutive ``tool`` messages is one event; every other message is one event. An
invocation is a user message and everything up to the next one (messages before the first user message form an
invocation of their own). After every invocation ADK may append a summary of a window of invocations; what the
model is sent is every summary that no other contains, each after the last event it covers, and the events no
kept summary covers. Whether a window is worth summarizing compares character sizes of ADK's JSON, so the
placeholder's exact text matters. The instruction is outside the session: ``pin_system`` defaults to true.
"""
from __future__ import annotations

import functools
import itertools
import json
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic import Field

from agents.memory.schema import Message
from agents.memory.trimming.registry import Outcome, StrategyParams, View, keep_all, pin_field, plural, register
from agents.memory.trimming.summaries import (
    SummarizeWith,
    SummaryText,
    summarize_with_field,
    summary_insert,
    summary_text,
    summary_tokens_field,
)

EMPTY_SUMMARY_SIZE = len('{"parts":[],"role":"model"}')  # 27


class AdkCompactionParams(StrategyParams):
    pin_system: bool = pin_field(True)
    compaction_interval: int = Field(
        default=3, gt=0,
        description="Summarize once this many new invocations completed since the last summary. ADK has no "
        "default; memoryviz suggests 3 (the docs' example).",
    )
    overlap_size: int = Field(
        default=1, ge=0,
        description="Invocations before the new ones that the window also covers. ADK has no default; memoryviz "
        "suggests 1 (the docs' example).",
    )
    summarize_with: SummarizeWith = summarize_with_field()
    summary_tokens: int = summary_tokens_field()


@dataclass
class AdkEvent:
    members: list[int]  # view positions
    invocation: int
    size: int  # characters of ADK's JSON of its content
    calls: list[str]
    responses: list[str]


@dataclass
class AdkSummary:
    start: int  # first and last event (their index stands for their timestamp)
    end: int
    summary: SummaryText
    size: int
    covers: list[int]  # view positions of the window's messages


def _json_len(value: Any) -> int:
    return len(pydantic_core.to_json(value).decode())


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def adk_events(view: View) -> list[AdkEvent]:
    messages = view.messages
    names = {tc.id: tc.function.name for m in messages for tc in m.tool_calls}
    events: list[AdkEvent] = []
    invocation = 0
    seen_user = False
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role == "user":
            if seen_user or i > 0:
                invocation += 1
            seen_user = True
        if m.role == "tool":
            j = i
            parts: list[dict[str, Any]] = []
            while j < len(messages) and messages[j].role == "tool":
                r = messages[j]
                response: dict[str, Any] = {"id": r.tool_call_id}
                if names.get(r.tool_call_id or "") is not None:
                    response["name"] = names[r.tool_call_id or ""]
                response["response"] = {"result": r.text}
                parts.append({"function_response": response})
                j += 1
            events.append(AdkEvent(list(range(i, j)), invocation, _json_len({"parts": parts, "role": "user"}), [],
                                   [messages[k].tool_call_id or "" for k in range(i, j)]))
            i = j
            continue
        if m.role == "assistant":
            parts = [{"text": m.text}] if m.text else []
            parts += [{"function_call": {"id": tc.id, "args": _args(tc.function.arguments), "name": tc.function.name}}
                      for tc in m.tool_calls]
            content = {"parts": parts, "role": "model"}
        else:
            content = {"parts": [{"text": m.text}], "role": "user"}
        events.append(AdkEvent([i], invocation, _json_len(content), [tc.id for tc in m.tool_calls], []))
        i += 1
    return events


def _self_contained(events: list[AdkEvent], window: list[int], newest: int, answered_anywhere: set[str]) -> list[int]:
    """``_longest_self_contained_prefix`` with its second pass over provably dead call ids."""

    def run(dead: set[str]) -> int:
        open_ids: set[str] = set()
        safe = 0
        for k, e in enumerate(window):
            open_ids -= set(events[e].responses)
            open_ids |= {c for c in events[e].calls if c} - dead
            if not open_ids:
                safe = k + 1
        return safe

    safe = run(set())
    if safe == len(window):
        return window
    if safe > 0 and events[window[safe - 1]].invocation != events[window[safe]].invocation:
        return window[:safe]
    dead = {c for e in window if events[e].invocation != newest for c in events[e].calls
            if c and c not in answered_anywhere}
    if not dead:
        return window[:safe]
    return window[: max(safe, run(dead))]


@register(
    "adk_compaction", AdkCompactionParams,
    "Replays ADK's sliding-window compaction after each invocation: every compaction_interval new invocations "
    "(plus overlap_size before them) become a summary, which replaces them in what the model is sent.",
    "Google ADK EventsCompactionConfig sliding-window compaction (google-adk 2.13.0)",
)
def _adk_compaction(view: View, p: AdkCompactionParams) -> Outcome:
    events = adk_events(view)
    if not events:
        return keep_all(view, "kept: nothing to compact")
    invocations: list[list[int]] = []
    for e, ev in enumerate(events):
        if ev.invocation == len(invocations):
            invocations.append([])
        invocations[ev.invocation].append(e)
    summaries: list[AdkSummary] = []
    declined = 0
    notes: list[str] = []
    # The kept (non-contained) summaries, sorted by start; their ends then increase too. Kept incrementally, with
    # a covered flag per event, so a replay over n events stays about linear.
    r_starts: list[int] = []
    r_ends: list[int] = []
    r_ids: list[int] = []
    covered = [False] * len(events)
    latest: int | None = None  # the kept summary appended last (ADK's "previous summary")
    last_ends = [inv[-1] for inv in invocations]
    answered: set[str] = set()
    for k in range(len(invocations)):
        for e in invocations[k]:
            answered.update(events[e].responses)
        last_end = summaries[-1].end if summaries else -1
        first_new = bisect_right(last_ends, last_end, 0, k + 1)
        if k + 1 - first_new < p.compaction_interval:
            continue
        start_inv = max(0, first_new - p.overlap_size)
        window = list(range(invocations[start_inv][0], invocations[k][-1] + 1))
        window = _self_contained(events, window, k, answered)
        if not window:
            continue
        start, end = window[0], window[-1]
        pos = bisect_right(r_starts, start) - 1
        inside = pos >= 0 and r_ends[pos] >= end and not (r_starts[pos] == start and r_ends[pos] == end)
        first = bisect_right(r_starts, start - 1)
        last = first
        while last < len(r_starts) and r_ends[last] <= end:
            last += 1
        if inside:
            removable = 0  # a kept summary already contains this range: nothing changes
        else:
            raw = sum(events[e].size for e in window if not covered[e])
            contained = sum(summaries[r_ids[j]].size for j in range(first, last))
            removable = raw + contained - EMPTY_SUMMARY_SIZE
        previous = summaries[latest].size if latest is not None else 0
        if removable <= previous:
            declined += 1
            continue
        covers = [i for e in window for i in events[e].members]
        summary = summary_text(
            n=len(covers), params=p, framework="ADK",
            prompt=functools.partial(adk_summary_prompt, view, [events[e] for e in window]),
        )
        summaries.append(AdkSummary(start, end, summary, 36 + _json_len(summary.text), covers))
        if summary.note and summary.note not in notes:
            notes.append(summary.note)
        if not inside:
            r_starts[first:last] = [start]
            r_ends[first:last] = [end]
            r_ids[first:last] = [len(summaries) - 1]
            latest = len(summaries) - 1
            for e in window:
                covered[e] = True
            for e in range(start, end + 1):
                covered[e] = True

    if not summaries:
        out = keep_all(view, "kept: no compaction ran")
        out.notes = [
            f"{plural(len(invocations), 'invocation')}: fewer than compaction_interval={p.compaction_interval} "
            "new ones ever completed, or no window was worth a summary."
        ] + notes
        return out
    retained = sorted(r_ids)
    covered_by: dict[int, int] = {}
    for s in r_ids:
        for e in range(summaries[s].start, summaries[s].end + 1):
            covered_by.setdefault(e, s)
    dropped: dict[int, str] = {}
    for e, ev in enumerate(events):
        if covered[e]:
            owner = covered_by.get(e)
            for i in ev.members:
                dropped[i] = (f"summarized: in the window of an ADK summary (invocations up to the "
                              f"{_ordinal(events[summaries[owner].end].invocation + 1)})" if owner is not None else
                              "summarized: within the summaries' coverage")
    out = Outcome(kept=[i for i in range(len(view)) if i not in dropped], dropped=dropped,
                  kept_reason="kept: no kept summary covers it")
    # Each kept summary goes after the last event it covers: count the kept messages before that point.
    kept_sorted = out.kept
    pointer = 0
    for n, s in enumerate(sorted(retained, key=lambda s: (summaries[s].end, s))):
        held = summaries[s]
        last = events[held.end].members[-1]
        while pointer < len(kept_sorted) and kept_sorted[pointer] <= last:
            pointer += 1
        first_inv = events[held.start].invocation + 1
        last_inv = events[held.end].invocation + 1
        out.inserted.append(
            summary_insert(
                view,
                p,
                position=pointer + n,
                role="assistant",
                summary=held.summary,
                covers=held.covers,
                reason=f"ADK's summary of {plural(len(held.covers), 'message')} "
                f"(invocations {first_inv} to {last_inv}): an assistant message after the last event it covers",
            )
        )
    if len(retained) < len(summaries):
        notes.append(f"{plural(len(summaries) - len(retained), 'earlier summary')} contained in a later one: not "
                     "sent.")
    overlapping = [(a, b) for a, b in itertools.pairwise(retained)
                   if summaries[b].start <= summaries[a].end]
    if overlapping:
        notes.append(
            "Partly overlapping summaries both stay, so the overlapped invocations reach the model twice (noted in "
            "google/adk-go#1232's review).")
    if declined:
        notes.append(f"{plural(declined, 'window')} not summarized: ADK judged the summary would not be smaller than "
                     "what it replaces (character sizes of its JSON).")
    notes.append("ADK's token-threshold trigger (token_threshold, event_retention_size) is not emulated.")
    out.notes = notes
    return out


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


ADK_PROMPT = (
    'The following is a conversation history between a user and an AI agent.'
    ' It may or may not start from a compacted history. Please identify and'
    ' reiterate the user request, summarize the context so far, focusing on'
    ' key decisions made and information obtained, as well as any unresolved'
    ' questions or tasks. '
    'CRITICAL INSTRUCTIONS: '
    '1. Explicitly identify and state the primary language used by the user '
    'at the top of your summary (e.g., "Conversation Language: English"). '
    '2. If the agent called any tools, accurately list the exact tool names '
    'used to maintain tool grounding. '
    'The rest of the summary should be concise and capture the'
    ' essence of the interaction.\n\n{conversation_history}'
)
ADK_TOOL_CAP = 2000


def _cap(text: str) -> str:
    if len(text) <= ADK_TOOL_CAP:
        return text
    return f"{text[:ADK_TOOL_CAP]}... [truncated {len(text) - ADK_TOOL_CAP} chars]"


def adk_summary_prompt(view: View, events: list[AdkEvent], agent: str = "agent") -> list[dict[str, Any]]:
    """The ``LlmEventSummarizer`` request: its template with ``author: text``, ``author called tool: name(args)``
    and ``Tool response from name: {'result': …}`` lines (tool text capped at 2,000 characters)."""
    names = {tc.id: tc.function.name for m in view.messages for tc in m.tool_calls}
    lines: list[str] = []
    for ev in events:
        for i in ev.members:
            m: Message = view.messages[i]
            author = "user" if m.role not in ("assistant", "tool") else agent
            if m.role == "tool":
                lines.append(f"Tool response from {names.get(m.tool_call_id or '')}: {_cap(str({'result': m.text}))}")
                continue
            if m.text:
                lines.append(f"{author}: {m.text}")
            for tc in m.tool_calls:
                lines.append(f"{author} called tool: {tc.function.name}({_cap(str(_args(tc.function.arguments)))})")
    return [{"role": "user", "content": ADK_PROMPT.format(conversation_history="\n".join(lines))}]
