"""The OpenAI Agents SDK (openai-agents 0.24.0): a session's ``limit`` with the run-time repair, and the
``ToolOutputTrimmer`` model-input filter (reference/trimming-2026.md §6).

The SDK keeps Responses items, not chat messages (§0): an assistant message's text (when not empty) is one
``message`` item, then one ``function_call`` item per call; each tool message is one ``function_call_output``;
each user/system/developer message is one ``message`` item. Both strategies work on those items and show the result
per message: a message whose items all go is dropped, one that loses some (its text, a call) is sent edited.
Agent instructions are not in the session, so ``pin_system`` defaults to true.
"""
from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from agents.memory.schema import Message
from agents.memory.trimming.registry import Outcome, StrategyParams, View, pin_field, plural, register
from agents.memory.trimming.tool_names import ToolNames


class OpenAISessionLimitParams(StrategyParams):
    pin_system: bool = pin_field(True)
    limit: int | None = Field(
        default=None, ge=0,
        description="The newest session items sent (SessionSettings(limit) / get_items(limit)); null: all of them, "
        "0: none. Items, not messages: an assistant message is its text plus one item per call.",
    )


class OpenAIToolOutputTrimmerParams(StrategyParams):
    pin_system: bool = pin_field(True)
    recent_turns: int = Field(
        default=2, ge=1,
        description="Tool outputs at or after the recent_turns-th user message from the end are never trimmed.",
    )
    max_output_chars: int = Field(default=500, ge=1, description="Older outputs longer than this are trimmed.")
    preview_chars: int = Field(default=200, ge=0, description="The characters of a trimmed output kept as a preview.")
    trimmable_tools: ToolNames | None = Field(
        default=None, description="Only these tools' outputs are trimmed (null: every tool's).",
    )


@dataclass(frozen=True)
class Item:
    message: int  # view position
    kind: str  # text (an assistant message's text) | call | output | message (a user/system message)
    call: int = -1  # the call's position in the message's tool_calls (kind call)
    call_id: str = ""


def responses_items(view: View) -> list[Item]:
    items: list[Item] = []
    for i, m in enumerate(view.messages):
        if m.role == "assistant":
            if m.text:
                items.append(Item(i, "text"))
            items.extend(Item(i, "call", k, tc.id) for k, tc in enumerate(m.tool_calls))
        elif m.role == "tool":
            items.append(Item(i, "output", call_id=m.tool_call_id or ""))
        else:
            items.append(Item(i, "message"))
    return items


NO_ITEM = "an assistant message with neither text nor calls has no Responses item, so the SDK never sends it"


def _regroup(view: View, items: list[Item], gone: dict[int, str], replaced_calls: dict[tuple[int, int], Message]
             ) -> Outcome:
    """Messages from the surviving items: kept whole, sent edited (some items gone), or dropped (all gone)."""
    by_message: dict[int, list[tuple[int, Item]]] = {}
    for k, item in enumerate(items):
        by_message.setdefault(item.message, []).append((k, item))
    out = Outcome(kept=[], dropped={}, kept_reason="kept: all its items are sent")
    for i, m in enumerate(view.messages):
        own = by_message.get(i, [])
        if not own:
            out.dropped[i] = NO_ITEM
            continue
        lost = [(k, item) for k, item in own if k in gone]
        if len(lost) == len(own):
            out.dropped[i] = gone[lost[0][0]]
            continue
        out.kept.append(i)
        changed = [(k, item) for k, item in own if (item.message, item.call) in replaced_calls and k not in gone]
        if not lost and not changed:
            continue
        update: dict[str, object] = {}
        what = []
        if any(item.kind == "text" for _, item in lost):
            update["content"] = None
            what.append(f"its text ({gone[next(k for k, it in lost if it.kind == 'text')]})")
        calls = []
        for k, item in own:
            if item.kind != "call" or k in gone:
                continue
            source = replaced_calls.get((item.message, item.call))
            calls.append(source.tool_calls[0] if source is not None else m.tool_calls[item.call])
        for k, item in lost:
            if item.kind == "call":
                what.append(f"call {item.call_id} ({gone[k]})")
        for _, item in changed:
            what.append(f"call {item.call_id} with the later call's name and arguments (the SDK keeps the latest "
                        "value of a duplicated call id at its first place)")
        if m.role == "assistant":
            update["tool_calls"] = calls
        out.replaced[i] = m.model_copy(update=update)
        out.kept_reasons[i] = "sent without " + "; without ".join(what) if lost else "sent with " + "; ".join(
            what)
    return out


@register(
    "openai_session_limit", OpenAISessionLimitParams,
    "Sends the newest limit session items, then drops function calls without their outputs (and, with a "
    "limit, outputs without their calls), as the SDK's run-time repair does.",
    "OpenAI Agents SDK SessionSettings(limit) with drop_orphan_function_calls (openai-agents 0.24.0)",
)
def _openai_session_limit(view: View, p: OpenAISessionLimitParams) -> Outcome:
    items = responses_items(view)
    n = len(items)
    start = 0 if p.limit is None else max(0, n - p.limit)
    gone: dict[int, str] = {
        k: f"outside the last {plural(p.limit or 0, 'item')} of the session (limit)" for k in range(start)
    }
    window = range(start, n)
    completed = {items[k].call_id for k in window if items[k].kind == "output"}
    for k in window:
        if items[k].kind == "call" and items[k].call_id not in completed:
            gone[k] = ("its function_call has no function_call_output in the list sent, so the SDK drops it "
                       "(drop_orphan_function_calls)")
    if p.limit is not None:
        available = {items[k].call_id for k in window if items[k].kind == "call" and k not in gone}
        for k in window:
            if items[k].kind == "output" and k not in gone and items[k].call_id not in available:
                gone[k] = ("its function_call is not among the items sent, so the SDK drops the orphan output "
                           "(openai/openai-agents-python#4322, fixed)")
    # deduplicate_input_items_preferring_latest: one item per call id and kind; an output stays at its latest
    # place, a call at its first place with the latest value.
    last_output: dict[str, int] = {}
    calls_by_id: dict[str, list[int]] = {}
    for k in window:
        if k in gone:
            continue
        if items[k].kind == "output":
            last_output[items[k].call_id] = k
        elif items[k].kind == "call":
            calls_by_id.setdefault(items[k].call_id, []).append(k)
    for k in window:
        if k not in gone and items[k].kind == "output" and last_output[items[k].call_id] != k:
            gone[k] = "a later output answers the same call id, and the SDK keeps only the latest"
    replaced_calls: dict[tuple[int, int], Message] = {}
    for ks in calls_by_id.values():
        if len(ks) < 2:
            continue
        first, latest = items[ks[0]], items[ks[-1]]
        value = view.messages[latest.message].tool_calls[latest.call]
        if value != view.messages[first.message].tool_calls[first.call]:
            replaced_calls[(first.message, first.call)] = Message(role="assistant", tool_calls=[value])
        for k in ks[1:]:
            gone[k] = "an earlier call has the same call id, and the SDK sends one call per id at its first place"
    out = _regroup(view, items, gone, replaced_calls)
    window_text = "all session items" if p.limit is None else f"the last {plural(p.limit, 'item')} of the session"
    out.kept_reason = f"kept: within {window_text}"
    if p.limit is not None and 0 < start < n:
        cut = items[start - 1].message
        if cut == items[start].message:
            out.notes.append(
                f"The limit cuts message {view.offset + cut} between its items: only its items within the last "
                f"{plural(p.limit, 'item')} are sent."
            )
    if any(items[k].kind == "call" and reason.startswith("its function_call has no") for k, reason in gone.items()):
        out.notes.append("The SDK drops calls whose outputs are not in the list before every run, so a pending call "
                         "is never sent.")
    return out


TRIM_NOTE = "[Trimmed: {tool} output — {length} chars → {preview} char preview]\n{text}..."


@register(
    "openai_tool_output_trimmer", OpenAIToolOutputTrimmerParams,
    "Before the recent_turns-th user message from the end, replaces tool outputs longer than max_output_chars "
    "with a short preview; messages are never dropped.",
    "OpenAI Agents SDK ToolOutputTrimmer as call_model_input_filter (openai-agents 0.24.0)",
)
def _openai_tool_output_trimmer(view: View, p: OpenAIToolOutputTrimmerParams) -> Outcome:
    items = responses_items(view)
    out = _regroup(view, items, {}, {})
    boundary = None  # view position of the recent_turns-th user message from the end
    seen = 0
    for i in range(len(view) - 1, -1, -1):
        if view.messages[i].role == "user":
            seen += 1
            if seen >= p.recent_turns:
                boundary = i
                break
    if boundary is None or items[0].message == boundary:  # the SDK's boundary 0: nothing is old
        out.kept_reason = (f"kept unchanged: fewer than {plural(p.recent_turns, 'user message')}, so every turn is "
                           "recent" if boundary is None else "kept unchanged: nothing comes before the recent turns")
        return out
    names: dict[str, str] = {}
    for m in view.messages:
        for tc in m.tool_calls:
            if tc.function.name:
                names[tc.id] = tc.function.name
    allowed = set(p.trimmable_tools) if p.trimmable_tools is not None else None
    recent = f"the last {plural(p.recent_turns, 'user turn')}"
    out.kept_reason = "kept unchanged"
    kept = set(out.kept)
    for i in range(boundary):
        m = view.messages[i]
        if m.role != "tool" or i not in kept:
            continue
        name = names.get(m.tool_call_id or "")
        if allowed is not None and name not in allowed:
            out.kept_reasons[i] = f"kept unchanged: {name or 'its tool'} is not in trimmable_tools"
            continue
        text = m.text
        if len(text) <= p.max_output_chars:
            continue
        summary = TRIM_NOTE.format(tool=name or "unknown_tool", length=len(text), preview=p.preview_chars,
                                   text=text[: p.preview_chars])
        if len(summary) >= len(text):
            out.kept_reasons[i] = (f"kept unchanged: its {len(text):,} characters are more than max_output_chars="
                                   f"{p.max_output_chars:,}, but the trimmed form would not be shorter")
            continue
        out.replaced[i] = m.model_copy(update={"content": summary})
        out.kept_reasons[i] = (
            f"output trimmed to a {p.preview_chars}-character preview: {len(text):,} characters, more than "
            f"max_output_chars={p.max_output_chars:,}, before {recent}"
        )
    for i in range(boundary, len(view)):
        if view.messages[i].role == "tool" and i in kept:
            out.kept_reasons[i] = f"kept unchanged: within {recent}"
    return out
