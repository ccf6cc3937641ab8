"""LangChain v1 agent middleware (langchain 1.5.0, langchain-core 1.8.3): SummarizationMiddleware and
ContextEditingMiddleware with ClearToolUsesEdit (reference/trimming-2026.md §1).

In ``create_agent`` the system prompt is passed separately and is not in ``state["messages"]``, so both default
to ``pin_system=true``. The counter is handed to LangChain as its list token counter: the sum of the messages'
counts plus the counter's per-list tokens.
"""
from __future__ import annotations

import bisect
import json
from operator import attrgetter
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from pydantic import Field

from agents.memory.schema import SYSTEM_ROLES, FunctionCall, Message, ToolCall
from agents.memory.trimming.langchain import _lc_first_max_tokens, _lc_type
from agents.memory.trimming.registry import (
    MEMORY_CARRIED,
    Outcome,
    StrategyParams,
    View,
    keep_all,
    pin_field,
    plural,
    register,
)
from agents.memory.trimming.runs import ReasonRuns, Run, gaps_of, spans_of
from agents.memory.trimming.summaries import (
    SummarizeWith,
    SummaryText,
    summarize_with_field,
    summary_insert,
    summary_text,
    summary_tokens_field,
)
from agents.memory.trimming.tool_names import ToolNames


class LangChainSummarizationParams(StrategyParams):
    pin_system: bool = pin_field(True)
    trigger_tokens: int | None = Field(
        default=None, gt=0,
        description="Summarize when the list counts at least this many tokens (trigger=('tokens', N)). LangChain's "
        "default trigger is None: with neither trigger set it never summarizes.",
    )
    trigger_messages: int | None = Field(
        default=None, gt=0,
        description="Summarize when the list holds at least this many messages (trigger=('messages', N)).",
    )
    trigger_all: bool = Field(
        default=False,
        description="false: either threshold triggers (LangChain's list form); true: both must be reached (the "
        "dict form {'tokens': a, 'messages': b}).",
    )
    keep_messages: int = Field(
        default=20, gt=0,
        description="The newest messages kept after the summary (keep=('messages', N)); ignored when keep_tokens "
        "is set.",
    )
    keep_tokens: int | None = Field(
        default=None, gt=0,
        description="Keep the newest messages that fit this many tokens instead (keep=('tokens', N)).",
    )
    trim_tokens_to_summarize: int | None = Field(
        default=4000, ge=0,
        description="The summarizer reads only the newest summarized messages that fit this many tokens, starting "
        "on a human message (null: it reads them all).",
    )
    summarize_with: SummarizeWith = summarize_with_field()
    summary_tokens: int = summary_tokens_field()


class LangChainClearToolUsesParams(StrategyParams):
    pin_system: bool = pin_field(True)
    trigger: int = Field(
        default=100_000, ge=0,
        description="Clear when the list counts more than this many tokens (LangChain returns when tokens <= "
        "trigger).",
    )
    clear_at_least: int = Field(
        default=0, ge=0,
        description="Stop clearing once this many tokens were reclaimed (0: clear every candidate).",
    )
    keep: int = Field(default=3, ge=0, description="The most recent tool results never cleared.")
    clear_tool_inputs: bool = Field(default=False, description="Also set the cleared calls' arguments to {}.")
    exclude_tools: ToolNames = Field(default=[], description="Tool names never cleared.")
    placeholder: str = Field(default="[cleared]", description="The text that replaces a cleared tool result.")


# ---------------------------------------------------------------------------------------------------------------
# SummarizationMiddleware


def _call_ids(m: Message) -> set[str]:
    return {tc.id for tc in m.tool_calls if tc.id} if m.role == "assistant" else set()


def _lc_safe_cutoff(view: View, cut: int) -> int:
    """``_find_safe_cutoff_point``: a cut on a tool message moves back to the first assistant message (going
    back) whose call ids intersect the ids of the run of tool messages at the cut, or past that run."""
    n = len(view)
    if cut >= n or view.messages[cut].role != "tool":
        return cut
    ids: set[str] = set()
    end = cut
    while end < n and view.messages[end].role == "tool":
        if view.messages[end].tool_call_id:
            ids.add(view.messages[end].tool_call_id or "")
        end += 1
    for a in range(cut - 1, -1, -1):
        if ids & _call_ids(view.messages[a]):
            return a
    return end


def _token_cutoff(view: View, target: int) -> int:
    """``_find_token_based_cutoff``: the smallest c with count(v[c:]) <= target (LangChain binary-searches it),
    else n - 1 (keep at least the last message), moved to a safe point; 0 for one message that does not fit."""
    n = len(view)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + view.counts[i]
    # suffix is non-increasing; the first c with suffix[c] + per_list <= target.
    c = bisect.bisect_left([-s for s in suffix[:n]], -(target - view.per_list))
    if c >= n:
        if n == 1:
            return 0
        c = n - 1
    return _lc_safe_cutoff(view, c)


def _lines(text: str) -> list[str]:
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def _lc_first_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    for block in content or []:
        if isinstance(block, str):
            return block
        if isinstance(block, dict) and block.get("type") == "text":
            return block.get("text")
    return None


class _Read:
    """What the summarizer reads of the summarized messages (LangChain's trim_messages with strategy='last',
    start_on='human', include_system=True, allow_partial=True)."""

    def __init__(self) -> None:
        self.whole: list[int] = []  # view positions, ascending
        self.partial: tuple[int, Message, str] | None = None  # position, the part read, how much

    def messages(self, view: View) -> list[Message]:
        out = {i: view.messages[i] for i in self.whole}
        if self.partial:
            out[self.partial[0]] = self.partial[1]
        return [out[i] for i in sorted(out)]


def _summarizer_reads(view: View, cut: int, max_tokens: int | None) -> _Read:
    read = _Read()
    if max_tokens is None:
        read.whole = list(range(cut))
        return read
    count, per_list = view.counter.count, view.per_list
    start = 0
    remaining = max_tokens
    if cut and _lc_type(view.messages[0]) == "system":
        read.whole.append(0)
        start = 1
        remaining = max(0, max_tokens - (view.counts[0] + per_list))
    order = list(range(cut - 1, start - 1, -1))  # newest first
    fit, _ = _lc_first_max_tokens(view, order, remaining, None)
    chosen = order[:fit]
    partial: tuple[int, Message, str] | None = None
    if fit < len(order):
        i = order[fit]
        m = view.messages[i]
        base = sum(view.counts[k] for k in chosen)  # + per_list: the count of the list chosen so far
        content = m.content
        if isinstance(content, list):
            blocks = list(reversed(content))
            for _ in range(1, len(blocks)):
                blocks = blocks[:-1]
                candidate = m.model_copy(update={"content": list(reversed(blocks))})
                if base + count(candidate) + per_list <= remaining:
                    partial = (i, candidate, f"its last {plural(len(blocks), 'content block')} of {len(content)}")
                    break
            if partial is None and content:
                content = [blocks[0]] if blocks else []
        if partial is None:
            text = _lc_first_text(content)
            if text:
                splits = list(reversed(_lines(text)))
                lo, hi = 0, len(splits)
                while lo < hi:  # the most lines (newest first) that fit, as LangChain's binary search finds
                    mid = (lo + hi + 1) // 2
                    candidate = m.model_copy(update={"content": "".join(splits[:mid])})
                    if base + per_list + count(candidate) + per_list <= remaining:
                        lo = mid
                    else:
                        hi = mid - 1
                if lo > 0:
                    part = m.model_copy(update={"content": "".join(reversed(splits[:lo]))})
                    partial = (i, part, f"its last {plural(lo, 'line')} of {len(splits)}")
    # start_on='human': drop the oldest read messages (the partial one first) until one is a human message.
    sequence: list[tuple[int, Message | None]] = [(i, None) for i in chosen]
    if partial is not None:
        sequence.append((partial[0], partial[1]))
    while sequence and _lc_type(view.messages[sequence[-1][0]]) != "human":
        sequence.pop()
    for i, piece in sequence:
        if piece is None:
            read.whole.append(i)
        else:
            read.partial = partial
    read.whole.sort()
    return read


def langchain_buffer_string(messages: list[Message]) -> str:
    """``get_buffer_string(messages, format="xml")`` for text content and tool calls."""
    out = []
    for m in messages:
        kind = _lc_type(m)
        content = m.content
        if isinstance(content, str):
            parts = [escape(content)] if content else []
        else:
            parts = []
            for block in content or []:
                if isinstance(block, str):
                    if block:
                        parts.append(escape(block))
                elif isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                    parts.append(escape(block["text"]))
        if m.role == "assistant" and m.tool_calls:
            lines = [f"<message type={quoteattr(kind)}>"]
            if parts:
                lines.append(f"  <content>{' '.join(parts)}</content>")
            for tc in m.tool_calls:
                shown = tc.id if len(tc.id) <= 64 else tc.id[:64] + "..."
                args = json.dumps(_lc_args(tc.function.arguments), ensure_ascii=False)
                lines.append(f"  <tool_call id={quoteattr(shown)} name={quoteattr(tc.function.name)}>"
                             f"{escape(args)}</tool_call>")
            lines.append("</message>")
            out.append("\n".join(lines))
        else:
            out.append(f"<message type={quoteattr(kind)}>{' '.join(parts)}</message>")
    return "\n".join(out)


def _lc_args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
LANGCHAIN_TOO_LONG = "Previous conversation was too long to summarize."

# langchain.agents.middleware.summarization.DEFAULT_SUMMARY_PROMPT (langchain 1.5.0), used as LangChain uses it.
LANGCHAIN_SUMMARY_PROMPT = """<role>
Context Extraction Assistant
</role>

<primary_objective>
Your sole objective in this task is to extract the highest quality/most relevant context from the conversation history below.
</primary_objective>

<objective_information>
You're nearing the total number of input tokens you can accept, so you must extract the highest quality/most relevant pieces of information from your conversation history.
This context will then overwrite the conversation history presented below. Because of this, ensure the context you extract is only the most important information to continue working toward your overall goal.
</objective_information>

<instructions>
The conversation history below will be replaced with the context you extract in this step.
You want to ensure that you don't repeat any actions you've already completed, so the context you extract from the conversation history should be focused on the most important information to your overall goal.

You should structure your summary using the following sections. Each section acts as a checklist - you must populate it with relevant information or explicitly state "None" if there is nothing to report for that section:

## SESSION INTENT

What is the user's primary goal or request? What overall task are you trying to accomplish? This should be concise but complete enough to understand the purpose of the entire session.

## SUMMARY

Extract and record all of the most important context from the conversation history. Include important choices, conclusions, or strategies determined during this conversation. Include the reasoning behind key decisions. Document any rejected options and why they were not pursued.

## ARTIFACTS

What artifacts, files, or resources were created, modified, or accessed during this conversation? For file modifications, list specific file paths and briefly describe the changes made to each. This section prevents silent loss of artifact information.

## NEXT STEPS

What specific tasks remain to be completed to achieve the session intent? What should you do next?

</instructions>

The user will message you with the full message history from which you'll extract context to create a replacement. Carefully read through it all and think deeply about what information is most important to your overall goal and should be saved:

With all of this in mind, please carefully read over the entire conversation history, and extract the most important and relevant context to replace it so that you can free up space in the conversation history.
Respond ONLY with the extracted context. Do not include any additional information, or text before or after the extracted context.

<messages>
Messages to summarize:
{messages}
</messages>"""  # noqa: E501


def langchain_summary_prompt(read: list[Message]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": LANGCHAIN_SUMMARY_PROMPT.format(messages=langchain_buffer_string(read)).rstrip()}
    ]


def _trigger_text(p: LangChainSummarizationParams) -> str:
    parts = []
    if p.trigger_tokens is not None:
        parts.append(f"{p.trigger_tokens:,} tokens")
    if p.trigger_messages is not None:
        parts.append(plural(p.trigger_messages, "message"))
    return (" and " if p.trigger_all else " or ").join(parts)


@register(
    "langchain_summarization", LangChainSummarizationParams,
    "Past a trigger, replaces the older messages with a summary (a user message first in the list), keeping "
    "the newest keep_messages (or keep_tokens) without splitting a call from its results.",
    "LangChain SummarizationMiddleware (langchain 1.5.0)",
    # The middleware replaces the state's messages (RemoveMessage(REMOVE_ALL_MESSAGES), the summary, the kept
    # ones): the next call summarizes from there, the summary included.
    memory=MEMORY_CARRIED,
)
def _langchain_summarization(view: View, p: LangChainSummarizationParams) -> Outcome:
    n = len(view)
    total = sum(view.counts) + view.per_list
    notes: list[str] = []
    if any(map(attrgetter("usage"), view.messages)):
        notes.append(
            "LangChain also triggers on the total_tokens its provider reported for the last AI message; memoryviz "
            "does not use stored usage, so only the counter's count triggers here."
        )
    if p.trigger_tokens is None and p.trigger_messages is None:
        out = keep_all(view, "kept: no trigger is set")
        out.notes = notes + [
            "LangChain's default trigger is None: SummarizationMiddleware never summarizes until trigger_tokens or "
            "trigger_messages is set."
        ]
        return out
    checks = []
    if p.trigger_tokens is not None:
        checks.append(total >= p.trigger_tokens)
    if p.trigger_messages is not None:
        checks.append(n >= p.trigger_messages)
    fires = all(checks) if p.trigger_all else any(checks)
    if not fires:
        out = keep_all(view, f"kept: the list ({total:,} tokens, {plural(n, 'message')}) is below the trigger "
                             f"({_trigger_text(p)})")
        out.notes = notes
        return out

    if p.keep_tokens is not None:
        keep_text = f"the newest messages that fit keep_tokens={p.keep_tokens:,}"
        if total <= p.keep_tokens or n == 0:
            cut = 0
        else:
            cut = _token_cutoff(view, p.keep_tokens)
    else:
        keep_text = f"the newest {plural(p.keep_messages, 'message')} (keep_messages)"
        cut = 0 if n <= p.keep_messages else _lc_safe_cutoff(view, n - p.keep_messages)
    if cut <= 0:
        out = keep_all(view, f"kept: triggered, but {keep_text} already hold every message")
        out.notes = notes
        return out

    read = _summarizer_reads(view, cut, p.trim_tokens_to_summarize)
    read_messages = read.messages(view)
    if read_messages:
        summary = summary_text(
            n=cut, params=p, prompt=lambda: langchain_summary_prompt(read_messages), framework="LangChain",
            shape=lambda text: LANGCHAIN_SUMMARY_PREFIX + text,
        )
    else:
        summary = SummaryText(LANGCHAIN_SUMMARY_PREFIX + LANGCHAIN_TOO_LONG, placeholder=False, note=None)
        notes.append(
            f"Nothing of the summarized messages fits trim_tokens_to_summarize={p.trim_tokens_to_summarize:,} "
            f"starting on a human message, so LangChain writes '{LANGCHAIN_TOO_LONG}' without asking a model."
        )
    if summary.note:
        notes.append(summary.note)

    limit = (f"trim_tokens_to_summarize={p.trim_tokens_to_summarize:,}"
             if p.trim_tokens_to_summarize is not None else "")
    # What the summarizer reads is a few messages: the rest of the summarized ones go as runs (runs.py).
    whole = sorted({i for i in read.whole if 0 <= i < cut})
    runs: list[Run] = [(a, b, f"summarized: older than {keep_text}; the summarizer reads it whole")
                       for a, b in spans_of(whole)]
    if read.partial is not None and 0 <= read.partial[0] < cut and read.partial[0] not in set(whole):
        runs.append((read.partial[0], read.partial[0] + 1, f"summarized: older than {keep_text}; the summarizer reads "
                     f"only {read.partial[2]} (allow_partial, within {limit})"))
    unread = (f"summarized: older than {keep_text}; the summarizer does not read it (outside the newest {limit} "
              "starting on a human message)")
    read_at = sorted(i for a, b, _ in runs for i in range(a, b))
    runs += [(a, b, unread) for a, b in gaps_of(spans_of(read_at), cut)]
    out = Outcome(
        kept=list(range(cut, n)), dropped=ReasonRuns(sorted(runs)),
        kept_reason=f"kept after the summary: {keep_text}, without splitting a call from its results",
    )
    out.inserted = [summary_insert(
        view, p, position=0, role="user", summary=summary, covers=range(cut),
        reason=f"LangChain's summary of {plural(cut, 'message')}: a HumanMessage first in the list",
    )]

    target = (n - p.keep_messages) if p.keep_tokens is None else None
    messages = view.messages
    kept_ids = {tc.id for m in messages[cut:] if m.role == "assistant" for tc in m.tool_calls if tc.id}
    unanswered_here = {m.tool_call_id for m in messages[cut:] if m.role == "tool"} - kept_ids
    summarized_ids = {tc.id for m in messages[:cut] if m.role == "assistant" for tc in m.tool_calls
                      if tc.id and tc.id in unanswered_here} if unanswered_here else set()
    orphans = [i for i in range(cut, n) if messages[i].role == "tool"
               and messages[i].tool_call_id in summarized_ids and messages[i].tool_call_id not in kept_ids]
    if orphans:
        notes.append(
            f"LangChain kept {plural(len(orphans), 'tool result')} whose call was summarized (message "
            f"{', '.join(str(view.offset + i) for i in orphans)}): its safe cutoff stops at the first AI message whose "
            "call ids intersect those of the results at the cut (langchain-ai/langchain#38352)."
        )
    if cut == n:
        notes.append("The cut fell on tool results whose call LangChain could not find, so it summarized them too: "
                     "every message went into the summary.")
    elif target is not None and cut < target:
        notes.append(
            f"The cut fell on a tool result, so LangChain moved it back to the call's AI message: "
            f"{plural(n - cut, 'message')} are kept, more than keep_messages={p.keep_messages}."
        )
    if cut < n and view.messages[cut].role == "user":
        notes.append("The kept part starts with a user message, so two user messages follow each other (the "
                     "summary is one).")
    if p.keep_tokens is not None:
        kept_tokens = sum(view.counts[cut:]) + view.per_list
        if kept_tokens > p.keep_tokens:
            notes.append(
                f"The kept messages count {kept_tokens:,} tokens, more than keep_tokens={p.keep_tokens:,}: LangChain "
                "keeps at least the last message, and a cut moved back to an AI message keeps its whole exchange."
            )
    if p.pin_system is False and any(view.messages[i].role in SYSTEM_ROLES for i in range(cut)):
        notes.append("The system message is in the list here (pin_system is off), so it was summarized like any "
                     "message.")
    out.notes = notes
    return out


# ---------------------------------------------------------------------------------------------------------------
# ContextEditingMiddleware + ClearToolUsesEdit


@register(
    "langchain_clear_tool_uses", LangChainClearToolUsesParams,
    "Past a trigger, replaces older tool results with a placeholder (and optionally their calls' arguments "
    "with {}), keeping the newest keep results; messages are never dropped.",
    "LangChain ContextEditingMiddleware with ClearToolUsesEdit (langchain 1.5.0)",
)
def _langchain_clear_tool_uses(view: View, p: LangChainClearToolUsesParams) -> Outcome:
    out = keep_all(view, "kept unchanged")
    tokens = sum(view.counts) + view.per_list
    if tokens <= p.trigger:
        out.kept_reason = f"kept unchanged: the list counts {tokens:,} tokens, not more than trigger={p.trigger:,}"
        return out
    tools = [i for i, m in enumerate(view.messages) if m.role == "tool"]
    if p.keep >= len(tools):
        candidates: list[int] = []
    elif p.keep:
        candidates = tools[: -p.keep]
    else:
        candidates = tools
    protected = set(tools) - set(candidates)
    counts = list(view.counts)
    current: dict[int, Message] = {}  # the edited copies so far
    reclaimed = 0
    excluded = set(p.exclude_tools)
    last_ai: int | None = None
    nearest_ai: list[int | None] = []
    for m_i, m in enumerate(view.messages):
        nearest_ai.append(last_ai)
        if m.role == "assistant":
            last_ai = m_i
    skipped_split: list[int] = []
    stopped_at: int | None = None
    cleared_inputs: dict[int, list[str]] = {}
    for k, t in enumerate(candidates):
        tool = view.messages[t]
        a = nearest_ai[t]
        if a is None:
            out.kept_reasons[t] = "kept unchanged: no AI message before it, so LangChain does not clear it"
            continue
        ai = current.get(a, view.messages[a])
        call = next((tc for tc in ai.tool_calls if tc.id == tool.tool_call_id), None)
        if call is None:
            skipped_split.append(t)
            out.kept_reasons[t] = (
                "kept unchanged: its call is not in the nearest AI message before it, so LangChain does not clear it"
            )
            continue
        name = tool.name or call.function.name
        if name in excluded:
            out.kept_reasons[t] = f"kept unchanged: tool {name} is in exclude_tools"
            continue
        cleared = tool.model_copy(update={"content": p.placeholder})
        current[t] = cleared
        out.replaced[t] = cleared
        new_count = view.counter.count(cleared)
        reclaimed += counts[t] - new_count
        counts[t] = new_count
        out.kept_reasons[t] = (
            f"result cleared: replaced by '{p.placeholder}' (the list counted {tokens:,} tokens, more than "
            f"trigger={p.trigger:,}; older than the newest {plural(p.keep, 'tool result')})"
        )
        if p.clear_tool_inputs:
            calls = [
                ToolCall(id=tc.id, type=tc.type, function=FunctionCall(name=tc.function.name, arguments="{}"))
                if tc.id == tool.tool_call_id else tc
                for tc in ai.tool_calls
            ]
            edited_ai = ai.model_copy(update={"tool_calls": calls})
            current[a] = edited_ai
            out.replaced[a] = edited_ai
            new_count = view.counter.count(edited_ai)
            reclaimed += counts[a] - new_count
            counts[a] = new_count
            cleared_inputs.setdefault(a, []).append(call.id)
            out.kept_reasons[a] = (
                f"arguments cleared to {{}} for {', '.join(cleared_inputs[a])} (clear_tool_inputs: their results were "
                "cleared)"
            )
        if p.clear_at_least > 0 and max(0, reclaimed) >= p.clear_at_least:
            stopped_at = k
            break
    for t in protected:
        out.kept_reasons[t] = f"kept unchanged: among the newest {plural(p.keep, 'tool result')} (keep)"
    if stopped_at is not None:
        for t in candidates[stopped_at + 1:]:
            out.kept_reasons[t] = (
                f"kept unchanged: {reclaimed:,} tokens were reclaimed already, at least clear_at_least="
                f"{p.clear_at_least:,}"
            )
    if skipped_split:
        out.notes.append(
            f"{plural(len(skipped_split), 'tool result')} (message "
            f"{', '.join(str(view.offset + i) for i in skipped_split)}) stay uncleared: LangChain looks for the call "
            "only in the nearest AI message before a result, and these calls sit in an earlier one."
        )
    if out.replaced:
        out.notes.append(
            "LangChain clears a copy before every model call and never stores the edit, so every call clears again "
            "from the full history (langchain-ai/langchain#37815)."
        )
    return out

