"""Anthropic API context editing (beta ``context-management-2025-06-27``): ``clear_tool_uses_20250919`` and
``clear_thinking_20251015`` (reference/trimming-2026.md §2).

These edits run on Anthropic's servers, so they are emulated from the documentation only: what the documentation
does not say is marked [unverified] where a result depends on it. The client keeps the full history; the
response reports ``applied_edits``, which the notes show. The system prompt counts as input tokens, so
``pin_system`` defaults to false.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agents.memory.schema import FunctionCall, Message, ToolCall
from agents.memory.trimming.registry import Outcome, StrategyParams, View, keep_all, plural, register
from agents.memory.trimming.tool_names import BoolOrToolNames, ToolNames

DOC = "Anthropic's servers apply this edit; memoryviz follows the context-editing documentation"
CLEARED_RESULT = "[tool result cleared]"
CLEARED_INPUT = "{}"


class AnthropicClearToolUsesParams(StrategyParams):
    trigger_input_tokens: int = Field(
        default=100_000, ge=0,
        description="Clear when the request counts more than this many input tokens (trigger: input_tokens).",
    )
    trigger_tool_uses: int | None = Field(
        default=None, ge=0,
        description="Clear when there are more than this many tool uses instead (trigger: tool_uses); replaces the "
        "token trigger when set.",
    )
    keep_tool_uses: int = Field(default=3, ge=0, description="The most recent tool uses never cleared.")
    clear_at_least: int | None = Field(
        default=None, ge=0,
        description="Apply the edit only if clearing frees at least this many tokens (otherwise nothing is cleared).",
    )
    exclude_tools: ToolNames = Field(default=[], description="Tool names whose uses are never cleared.")
    clear_tool_inputs: BoolOrToolNames = Field(
        default=False,
        description="Also clear the cleared calls' inputs: true for every tool, or a list of tool names.",
    )


class AnthropicClearThinkingParams(StrategyParams):
    keep_thinking_turns: Annotated[int, Field(ge=1)] | Literal["all"] = Field(
        default=1,
        description="The most recent assistant turns with thinking that keep it (a number of at least 1, or all). "
        "The API keeps only the last turn's thinking by default.",
    )


def _tool_uses(view: View) -> list[tuple[int, int, list[int]]]:
    """Each call as (assistant position, call position, the positions of the tool messages answering it)."""
    results: dict[str, list[int]] = {}
    for i, m in enumerate(view.messages):
        if m.role == "tool" and m.tool_call_id:
            results.setdefault(m.tool_call_id, []).append(i)
    uses = []
    for i, m in enumerate(view.messages):
        if m.role == "assistant":
            for k, tc in enumerate(m.tool_calls):
                uses.append((i, k, [r for r in results.get(tc.id, []) if r > i]))
    return uses


@register(
    "anthropic_clear_tool_uses", AnthropicClearToolUsesParams,
    "Past a trigger, replaces the results (and optionally inputs) of all but the newest keep_tool_uses tool "
    "uses; messages are never dropped. From Anthropic's documentation.",
    "Anthropic API context editing clear_tool_uses_20250919 [doc]",
)
def _anthropic_clear_tool_uses(view: View, p: AnthropicClearToolUsesParams) -> Outcome:
    uses = _tool_uses(view)
    tokens = sum(view.counts) + view.per_list
    if p.trigger_tool_uses is not None:
        fires = len(uses) > p.trigger_tool_uses
        trigger = f"{plural(len(uses), 'tool use')} (trigger_tool_uses={p.trigger_tool_uses:,})"
    else:
        fires = tokens > p.trigger_input_tokens
        trigger = f"{tokens:,} input tokens (trigger_input_tokens={p.trigger_input_tokens:,})"
    if not fires:
        return keep_all(view, f"kept unchanged: {trigger}, not above the trigger")
    older = uses[: max(0, len(uses) - p.keep_tool_uses)]
    excluded = set(p.exclude_tools)
    candidates = [u for u in older if view.messages[u[0]].tool_calls[u[1]].function.name not in excluded]
    input_tools = set(p.clear_tool_inputs) if isinstance(p.clear_tool_inputs, list) else set()

    def inputs_for(name: str) -> bool:
        return p.clear_tool_inputs is True or name in input_tools

    edited: dict[int, Message] = {}
    what: dict[int, list[str]] = {}
    cleared_uses = 0
    for a, k, result_positions in candidates:
        tc = view.messages[a].tool_calls[k]
        for r in result_positions:
            edited[r] = view.messages[r].model_copy(update={"content": CLEARED_RESULT})
            what.setdefault(r, []).append(f"result of {tc.id} ({tc.function.name}) cleared")
        if inputs_for(tc.function.name):
            message = edited.get(a, view.messages[a])
            calls = [
                ToolCall(id=c.id, type=c.type, function=FunctionCall(name=c.function.name, arguments=CLEARED_INPUT))
                if j == k
                else c
                for j, c in enumerate(message.tool_calls)
            ]
            edited[a] = message.model_copy(update={"tool_calls": calls})
            what.setdefault(a, []).append(f"input of {tc.id} ({tc.function.name}) cleared to {CLEARED_INPUT}")
        cleared_uses += 1
    freed = sum(view.counts[i] - view.counter.count(m) for i, m in edited.items())
    out = keep_all(view, "kept unchanged")
    notes = [f"{DOC}. [unverified] The documentation does not publish the text of a cleared result (memoryviz "
             f"shows '{CLEARED_RESULT}'), what a cleared input becomes (memoryviz shows {CLEARED_INPUT}), or whether "
             "excluded tools count toward keep_tool_uses (memoryviz keeps the newest uses of any tool)."]
    if p.clear_at_least is not None and freed < p.clear_at_least:
        out.kept_reason = (f"kept unchanged: clearing would free {freed:,} tokens, less than clear_at_least="
                           f"{p.clear_at_least:,}, so the edit is not applied")
        out.notes = notes
        return out
    for i, m in edited.items():
        out.replaced[i] = m
        out.kept_reasons[i] = "; ".join(what[i]) + (
            f": {trigger} is above the trigger, and it is older than the newest "
            f"{plural(p.keep_tool_uses, 'tool use')} [unverified text]")
    for _a, _k, result_positions in uses[len(older):]:
        for r in result_positions:
            out.kept_reasons.setdefault(r, f"kept unchanged: among the newest {plural(p.keep_tool_uses, 'tool use')}")
    for a, k, result_positions in older:
        name = view.messages[a].tool_calls[k].function.name
        if name in excluded:
            for r in result_positions:
                out.kept_reasons[r] = f"kept unchanged: tool {name} is in exclude_tools"
    notes.insert(0, f"applied_edits: clear_tool_uses_20250919, cleared_tool_uses={cleared_uses}, "
                    f"cleared_input_tokens={freed:,} (in the counter's units).")
    out.notes = notes
    return out


@register(
    "anthropic_clear_thinking", AnthropicClearThinkingParams,
    "Removes the thinking (reasoning) of all but the newest keep_thinking_turns assistant turns; messages stay. "
    "From Anthropic's documentation.",
    "Anthropic API context editing clear_thinking_20251015 [doc]",
)
def _anthropic_clear_thinking(view: View, p: AnthropicClearThinkingParams) -> Outcome:
    turns: list[list[int]] = []  # the assistant messages of each turn (a user message starts a turn)
    current: list[int] = []
    for i, m in enumerate(view.messages):
        if m.role == "user":
            if current:
                turns.append(current)
            current = []
        elif m.role == "assistant":
            current.append(i)
    if current:
        turns.append(current)
    thinking = [t for t in turns if any(view.messages[i].reasoning for i in t)]
    out = keep_all(view, "kept unchanged")
    keep = len(thinking) if p.keep_thinking_turns == "all" else p.keep_thinking_turns
    cleared = thinking[: max(0, len(thinking) - keep)]
    kept_text = "all thinking turns" if p.keep_thinking_turns == "all" else \
        f"the newest {plural(keep, 'thinking turn')}"
    for turn in cleared:
        for i in turn:
            if view.messages[i].reasoning:
                out.replaced[i] = view.messages[i].model_copy(update={"reasoning": None})
                out.kept_reasons[i] = f"thinking removed: its assistant turn is older than {kept_text}"
    for turn in thinking[len(cleared):]:
        for i in turn:
            if view.messages[i].reasoning:
                out.kept_reasons[i] = f"kept with its thinking: within {kept_text}"
    out.notes = [
        f"{DOC}. [unverified] Whether turns without thinking count toward keep_thinking_turns: memoryviz counts only "
        "the turns that have thinking (the documentation calls them thinking turns)."
    ]
    if cleared:
        out.notes.insert(0, f"applied_edits: clear_thinking_20251015, cleared_thinking_turns={len(cleared)}.")
    return out
