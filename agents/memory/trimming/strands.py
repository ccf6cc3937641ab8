"""Strands Agents (strands-agents 1.62.0): SlidingWindowConversationManager and SummarizingConversationManager
(reference/trimming-2026.md §3).

Strands holds Bedrock messages: a run of consecutive ``tool`` messages is one user message holding all their
results (Strands writes the results of one cycle that way); every other message is one message, and a
system/developer message left in the view is a plain user message. Window sizes and ratios count those. The system
prompt is ``Agent.system_prompt``, outside ``agent.messages``, so ``pin_system`` defaults to true.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from pydantic import Field

from agents.memory.schema import Message
from agents.memory.trimming.registry import (
    MEMORY_AFTER_TURN,
    Outcome,
    StrategyParams,
    View,
    keep_all,
    pin_field,
    plural,
    register,
)
from agents.memory.trimming.runs import Positions, ReasonRuns, gaps_of, spans_of
from agents.memory.trimming.summaries import (
    SummarizeWith,
    summarize_with_field,
    summary_insert,
    summary_text,
    summary_tokens_field,
)
from agents.memory.trimming.tool_runs import ASSISTANT, TOOL, run_end, unit_count, unit_starts, units_end

UNABLE = "Unable to trim conversation context!"
ONE_RUN = ("The preview is one run on the stored list; Strands runs its window after every invocation, so a history "
           "trimmed turn by turn can have kept another state (an earlier trim where this run finds no trim point).")


class StrandsSlidingWindowParams(StrategyParams):
    pin_system: bool = pin_field(True)
    window_size: int = Field(
        default=40, ge=0,
        description="Strands messages kept (a run of tool results is one); 0 removes every unpinned message.",
    )
    pin_first: int | None = Field(
        default=None, ge=0, description="The first N Strands messages are pinned (with their tool-pair partners).",
    )
    should_truncate_results: bool = Field(
        default=True,
        description="On a context overflow, first shorten the oldest tool results (first and last 200 characters).",
    )
    context_overflow: bool = Field(
        default=False,
        description="memoryviz's switch: show the reduction after a context-overflow error (reduce_context) instead "
        "of the routine window applied after each invocation.",
    )


class StrandsSummarizingParams(StrategyParams):
    pin_system: bool = pin_field(True)
    summary_ratio: float = Field(
        default=0.3, description="The share of the oldest messages summarized (Strands clamps it to 0.1-0.8).",
    )
    preserve_recent_messages: int = Field(default=10, ge=0, description="Recent Strands messages never summarized.")
    pin_first: int | None = Field(
        default=None, ge=0, description="The first N Strands messages are pinned and kept in front of the summary.",
    )
    summarize_with: SummarizeWith = summarize_with_field()
    summary_tokens: int = summary_tokens_field()


# ---------------------------------------------------------------------------------------------------------------
# Strands messages


class Members(Sequence[range]):
    """``members[u]``: the view positions of Strands message u, a range (its messages are consecutive), made
    when read from where each Strands message starts."""

    __slots__ = ("_starts", "_end")

    def __init__(self, starts: list[int], end: int) -> None:
        self._starts = starts
        self._end = end

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, u: int) -> range: ...

    @overload
    def __getitem__(self, u: slice) -> list[range]: ...

    def __getitem__(self, u: int | slice) -> range | list[range]:
        if isinstance(u, slice):
            return [self[v] for v in range(*u.indices(len(self)))]
        starts = self._starts
        if u < 0:
            u += len(starts)
        return range(starts[u], starts[u + 1] if u + 1 < len(starts) else self._end)


class Units:
    """The view in Strands messages: ``members[u]`` are the view positions of Strands message u.

    Strands gets its list already grouped; here every role is read once, at C speed, into a string of one
    character per message (tool_runs.codes), and a Strands message's start is found in it when asked for (the
    whole list of starts only when something needs them all)."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.codes = view.codes()
        self.count = unit_count(self.codes)
        self._starts: list[int] | None = None
        self._found = {0: 0}  # unit -> position, of the units start() found

    @property
    def starts(self) -> list[int]:
        """The view position where each Strands message starts."""
        if self._starts is None:
            self._starts = unit_starts(self.codes)
        return self._starts

    @property
    def members(self) -> Members:
        return Members(self.starts, len(self.view.messages))

    def __len__(self) -> int:
        return self.count

    def start(self, u: int) -> int:
        """Where Strands message u starts: read on from the nearest one found before it (a window asks for a few,
        near its cut), or, once many were asked for, from the list of all of them."""
        if self._starts is not None:
            return self._starts[u]
        if not 0 <= u < self.count:
            raise IndexError(u)
        found = self._found
        at = found.get(u)
        if at is None:
            if len(found) > 32:  # asked for many: all of them at once (C speed) rather than one scan each
                return self.starts[u]
            v = max(w for w in found if w < u)  # read on from the nearest unit found before it
            end = units_end(self.codes, u - v, found[v])
            assert end is not None  # u < count
            at = found[u] = end
        return at

    def stop(self, u: int) -> int:
        """Where Strands message u ends (the position after its last message)."""
        if u + 1 in self._found or (self._starts is not None and u + 1 < self.count):
            return self.start(u + 1)
        return len(self.codes) if u == self.count - 1 else run_end(self.codes, self.start(u))

    def first(self, u: int) -> Message:
        return self.view.messages[self.start(u)]

    def has_results(self, u: int) -> bool:
        return self.codes[self.start(u)] == TOOL

    def has_calls(self, u: int) -> bool:
        i = self.start(u)
        return self.codes[i] == ASSISTANT and bool(self.view.messages[i].tool_calls)

    def is_user(self, u: int) -> bool:
        return self.codes[self.start(u)] != ASSISTANT  # results, user, and system/developer left in the view

    def ids(self, u: int) -> set[str]:
        m = self.first(u)
        if m.role == "tool":
            return {self.view.messages[i].tool_call_id or "" for i in range(self.start(u), self.stop(u))} - {""}
        return {tc.id for tc in m.tool_calls if tc.id}

    def pinned(self, pin_first: int | None) -> list[bool]:
        """``is_pinned``: the first pin_first messages, and a message sharing a tool id with a pinned neighbour."""
        n = len(self)
        first = min(pin_first or 0, n)
        flagged = [True] * first + [False] * (n - first)
        out = list(flagged)
        # Only the message right after the first pin_first has a flagged neighbour that is not itself flagged.
        for u in range(first, min(first + 1, n)):
            mine = self.ids(u)
            out[u] = bool(mine) and any(0 <= v < n and flagged[v] and mine & self.ids(v) for v in (u - 1, u + 1))
        return out

    def positions(self, units: Sequence[int]) -> Sequence[int]:
        """The view positions of ``units`` (ascending): a contiguous run of units is one range of positions."""
        if not units:
            return []
        if units[-1] - units[0] + 1 == len(units):
            return range(self.start(units[0]), self.stop(units[-1]))
        return [i for u in units for i in self.members[u]]


def _valid_trim_point(units: Units, start: int) -> int:
    """``find_valid_trim_point``: the first user message at or after start that holds no tool results."""
    for u in range(start, len(units)):
        if units.is_user(u) and not units.has_results(u):
            return u
    return len(units)


def _tool_pair_trim_point(units: Units, start: int) -> int | None:
    for u in range(start, len(units) - 1):
        if units.has_calls(u) and units.has_results(u + 1):
            return u
    return None


# ---------------------------------------------------------------------------------------------------------------
# SlidingWindowConversationManager

PRESERVE = 200
MARKER = "... [truncated:"


def truncated_result(text: str) -> str | None:
    """``_truncate_tool_results`` on one text: None when Strands leaves it as it is."""
    if MARKER in text or len(text) <= 2 * PRESERVE:
        return None
    removed = len(text) - 2 * PRESERVE
    return f"{text[:PRESERVE]}...\n\n... [truncated: {removed} chars removed] ...\n\n...{text[-PRESERVE:]}"


def _error(view: View, text: str, why: str) -> Outcome:
    out = keep_all(view, f"kept: Strands raised instead of trimming ({why})")
    out.notes = [f"Strands raises ContextWindowOverflowException('{text}'): {why}. Nothing is removed."]
    return out


@register(
    "strands_sliding_window", StrandsSlidingWindowParams,
    "Keeps the last window_size Strands messages, cutting only before a plain user message (or a complete tool "
    "pair); on a context overflow first shortens the oldest tool results.",
    "Strands Agents SlidingWindowConversationManager (strands-agents 1.62.0)",
    # apply_management runs at the end of every invocation and removes messages from agent.messages.
    memory=MEMORY_AFTER_TURN,
)
def _strands_sliding_window(view: View, p: StrandsSlidingWindowParams) -> Outcome:
    units = Units(view)
    n = len(units)
    notes = [ONE_RUN] if not p.context_overflow else []
    if not p.context_overflow and n <= p.window_size:
        out = keep_all(view, f"kept: {plural(n, 'Strands message')}, within window_size={p.window_size}")
        out.notes = notes
        return out
    pinned = units.pinned(p.pin_first)
    pin_reason = f"pinned: among the first {plural(p.pin_first or 0, 'message')} (pin_first) or paired with one"
    if p.window_size == 0:
        keep_units = [u for u in range(n) if pinned[u]]
        out = _units_outcome(units, keep_units, "window_size=0 removes every unpinned message", pin_reason, pinned)
        out.notes = notes
        return out
    if p.context_overflow:
        oldest = next((u for u in range(n) if not pinned[u] and units.has_results(u)), None)
        if oldest is not None and p.should_truncate_results:
            out = keep_all(
                view, "kept unchanged: Strands shortened the oldest tool results instead of removing messages"
            )
            longer = []
            for i in units.members[oldest]:
                new = truncated_result(view.messages[i].text)
                if new is None:
                    continue
                out.replaced[i] = view.messages[i].model_copy(update={"content": new})
                out.kept_reasons[i] = (
                    f"result truncated to its first and last {PRESERVE} characters ({len(view.messages[i].text):,} "
                    "characters): the oldest message with tool results, shortened on a context overflow")
                if len(new) > len(view.messages[i].text):
                    longer.append(i)
            if out.replaced:
                if longer:
                    out.notes.append(
                        f"Strands' truncation made {plural(len(longer), 'result')} longer (message "
                        f"{', '.join(str(view.offset + i) for i in longer)}): a result of 401 to 446 characters grows, "
                        "as the marker is longer than what it removes.")
                return out
            bigger = [u for u in range(oldest + 1, n) if units.has_results(u) and not pinned[u]
                      and any(truncated_result(view.messages[i].text) for i in units.members[u])]
            if bigger:
                notes.append(
                    "Strands tries only the oldest message with tool results; it had nothing to shorten, so Strands "
                    f"removes messages while newer large results stay (message "
                    f"{', '.join(str(view.offset + units.members[u][0]) for u in bigger)}; "
                    "strands-agents/harness-sdk#4341).")
        start = 2 if n <= p.window_size else n - p.window_size
    else:
        start = n - p.window_size
    t = _valid_trim_point(units, start)
    fallback = False
    if t >= n:
        pair = _tool_pair_trim_point(units, start)
        if pair is None:
            if p.context_overflow:
                out = _error(view, UNABLE, "no user message and no complete tool pair to cut before")
                out.notes = notes + out.notes
                return out
            out = keep_all(view, f"kept: no trim point in the last {plural(p.window_size, 'Strands message')}")
            out.notes = notes + [
                f"Strands finds no plain user message and no complete tool pair in the last "
                f"{plural(p.window_size, 'message')}, so it only logs 'unable to trim conversation context' and the "
                f"history stays over the window ({plural(n, 'Strands message')})."]
            return out
        t, fallback = pair, True
    remove = [u for u in range(t) if not pinned[u]]
    if not remove:
        if p.context_overflow:
            out = _error(view, UNABLE, "every message before the trim point is pinned")
            out.notes = notes + out.notes
            return out
        out = keep_all(view, "kept: every message before the trim point is pinned")
        out.notes = notes + ["All messages before the trim point are pinned: Strands only logs a warning."]
        return out
    keep_units = [u for u in range(n) if u >= t or pinned[u]]
    where = ("a complete tool pair (no plain user message in the window)" if fallback else "a plain user message")
    drop_reason = (f"before the window of the last {plural(p.window_size, 'Strands message')}, cut before {where}"
                   if n > p.window_size else f"removed on a context overflow, cut before {where}")
    out = _units_outcome(units, keep_units, drop_reason, pin_reason, pinned)
    if fallback and not pinned[t]:
        first_kept = next(u for u in keep_units if not pinned[u])
        if units.has_calls(first_kept):
            notes.append("The fallback starts the history on an assistant tool call; Gemini rejected such histories "
                         "(strands-agents/harness-sdk#1749).")
    kept_count = len(keep_units)
    if kept_count > p.window_size and not p.context_overflow:
        notes.append(f"{plural(kept_count, 'Strands message')} stay, more than window_size={p.window_size}: the cut "
                     "waits for a user message (or pinned messages stay).")
    out.notes = notes
    return out


def _units_outcome(units: Units, keep_units: list[int], drop_reason: str, pin_reason: str, pinned: list[bool]
                   ) -> Outcome:
    kept = units.positions(sorted(set(keep_units)))
    out = Outcome(kept=kept, dropped=ReasonRuns.over(gaps_of(spans_of(kept), len(units.view)), drop_reason),
                  kept_reason="kept: within the window")
    for u in keep_units:
        if pinned[u]:
            for i in units.members[u]:
                out.kept_reasons[i] = pin_reason
    return out


# ---------------------------------------------------------------------------------------------------------------
# SummarizingConversationManager

# strands.agent.conversation_manager.compression.context_compression.DEFAULT_SUMMARIZATION_PROMPT (1.62.0).
STRANDS_SUMMARY_PROMPT = """You are a conversation summarizer. Provide a concise summary of the conversation \
history.

Format Requirements:
- You MUST create a structured and concise summary in bullet-point format.
- You MUST NOT respond conversationally.
- You MUST NOT address the user directly.
- You MUST NOT comment on tool availability.

Assumptions:
- You MUST NOT assume tool executions failed unless otherwise stated.

Task:
Your task is to create a structured summary document:
- It MUST contain bullet points with key topics and questions covered
- It MUST contain bullet points for all significant tools executed and their results
- It MUST contain bullet points for any code or technical information shared
- It MUST contain a section of key insights gained
- It MUST format the summary in the third person

Example format:

## Conversation Summary
* Topic 1: Key information
* Topic 2: Key information

## Tools Executed
* Tool X: Result Y"""


def strands_summary_prompt(messages: list[Message]) -> list[dict[str, Any]]:
    """Strands' summarization call: its system prompt, the summarized messages (a system message left in the view
    is a user message to Strands), and ``Please summarize this conversation.``"""
    body = [{**m.to_openai(), "role": "user"} if m.role in ("system", "developer") else m.to_openai() for m in messages]
    return [{"role": "system", "content": STRANDS_SUMMARY_PROMPT}, *body,
            {"role": "user", "content": "Please summarize this conversation."}]


@register(
    "strands_summarizing", StrandsSummarizingParams,
    "On a context overflow, replaces the oldest summary_ratio of the Strands messages with a summary (a user "
    "message), keeping preserve_recent_messages and never splitting a tool pair.",
    "Strands Agents SummarizingConversationManager (strands-agents 1.62.0)",
)
def _strands_summarizing(view: View, p: StrandsSummarizingParams) -> Outcome:
    units = Units(view)
    n = len(units)
    ratio = max(0.1, min(0.8, p.summary_ratio))
    k = min(max(1, int(n * ratio)), n - p.preserve_recent_messages)
    if k <= 0:
        return _error(view, "Cannot summarize: insufficient messages for summarization",
                      f"{plural(n, 'Strands message')} leave nothing to summarize with preserve_recent_messages="
                      f"{p.preserve_recent_messages}")
    first_k = k
    if k < n:
        while k < n and (units.has_results(k) or (units.has_calls(k) and k + 1 < n and not units.has_results(k + 1))):
            k += 1
        if k >= n:
            return _error(view, UNABLE, "no split point that keeps every tool call with its results")
    pinned = units.pinned(p.pin_first)
    edge = min(k, (p.pin_first or 0) + 1)  # pinned: the first pin_first, and at most the one after them
    protected = [u for u in range(edge) if pinned[u]]
    summarized_units: Sequence[int] = (
        [u for u in range(edge) if not pinned[u]] + list(range(edge, k)) if protected else range(k)
    )
    if not summarized_units:
        return _error(view, "Cannot summarize: all messages in summarize range are pinned",
                      "every message in the summarized range is pinned")
    covers = units.positions(summarized_units)
    notes: list[str] = []
    summary = summary_text(
        n=len(covers), params=p, framework="Strands",
        prompt=lambda: strands_summary_prompt([view.messages[i] for i in covers]),
    )
    if summary.note:
        notes.append(summary.note)
    protected_at = units.positions(protected)
    kept = Positions([*spans_of(protected_at), *spans_of(units.positions(range(k, n)))])
    reason = (f"summarized: among the oldest {plural(k, 'Strands message')} (summary_ratio={ratio:g} of "
              f"{plural(n, 'message')}, split moved past tool pairs)" if k != first_k else
              f"summarized: among the oldest {plural(k, 'Strands message')} (summary_ratio={ratio:g} of "
              f"{plural(n, 'message')})")
    out = Outcome(kept=kept, dropped=ReasonRuns.over(spans_of(covers), reason), kept_reason="kept after the summary")
    for i in protected_at:
        out.kept_reasons[i] = "pinned (pin_first): kept in front of the summary"
    out.inserted = [summary_insert(
        view, p, position=len(protected_at), role="user", summary=summary, covers=covers,
        reason=f"Strands' summary of {plural(len(covers), 'message')}: a user message (Strands re-roles the model's "
               "reply, PR #698)",
    )]
    if k > first_k:
        notes.append(
            f"The split moved from {first_k} to {k} Strands messages so as not to split a tool pair: more than "
            f"summary_ratio is summarized" + (
                f", and only {plural(n - k, 'message')} stay after it, fewer than preserve_recent_messages="
                f"{p.preserve_recent_messages}." if n - k < p.preserve_recent_messages else "."))
    if k < n and units.is_user(k) and not units.has_results(k):
        notes.append("The summary (a user message) is followed by a user message: two user messages in a row.")
    notes.append("Strands summarizes only on a context overflow (or proactive compression); this is that one "
                 "reduction.")
    out.notes = notes
    return out
