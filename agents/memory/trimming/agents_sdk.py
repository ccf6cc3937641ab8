"""The OpenAI Agents SDK (openai-agents 0.24.0): a session's ``limit`` with the run-time repair, and the
``ToolOutputTrimmer`` model-input filter (reference/trimming-2026.md §6).

The SDK keeps Responses items, not chat messages (§0): an assistant message's text (when not empty) is one
``message`` item, then one ``function_call`` item per call; each tool message is one ``function_call_output``;
each user/system/developer message is one ``message`` item. Both strategies work on those items and show the result
per message: a message whose items all go is dropped, one that loses some (its text, a call) is sent edited.
Agent instructions are not in the session, so ``pin_system`` defaults to true.
"""
from __future__ import annotations

from typing import NamedTuple

from pydantic import Field

from agents.memory.schema import Message
from agents.memory.trimming.registry import Outcome, StrategyParams, View, pin_field, plural, register
from agents.memory.trimming.runs import ReasonRuns, Run
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


class Item(NamedTuple):  # a tuple: a session has an item or more per message
    message: int  # view position
    kind: str  # text (an assistant message's text) | call | output | message (a user/system message)
    call: int = -1  # the call's position in the message's tool_calls (kind call)
    call_id: str = ""


def responses_items(view: View, first: int = 0) -> list[Item]:
    """The items of the view's messages from ``first`` on."""
    items: list[Item] = []
    add = items.append
    messages = view.messages
    for i in range(first, len(messages)):
        m = messages[i]
        role = m.role
        if role == "assistant":
            content = m.content
            if content and (isinstance(content, str) or m.text):  # m.text: the text parts joined
                add(Item(i, "text"))
            for k, tc in enumerate(m.tool_calls):
                add(Item(i, "call", k, tc.id))
        elif role == "tool":
            add(Item(i, "output", -1, m.tool_call_id or ""))
        else:
            add(Item(i, "message"))
    return items


def _item_count(m: Message) -> int:
    if m.role != "assistant":
        return 1
    content = m.content
    return len(m.tool_calls) + (1 if content and (isinstance(content, str) or m.text) else 0)


def _first_of_last_items(view: View, limit: int) -> int:
    """The view position of the message holding the ``limit``-th item from the end (0 when there are fewer)."""
    seen = 0
    messages = view.messages
    for i in range(len(messages) - 1, -1, -1):
        seen += _item_count(messages[i])
        if seen >= limit:
            return i
    return 0


NO_ITEM = "an assistant message with neither text nor calls has no Responses item, so the SDK never sends it"


def _regroup(view: View, items: list[Item], gone: dict[int, str], replaced_calls: dict[tuple[int, int], Message],
             cut: int = 0, cut_reason: str = "") -> Outcome:
    """Messages from the surviving items: kept whole, sent edited (some items gone), or dropped (all gone).

    The items before ``cut`` are gone for ``cut_reason`` (a limit): the messages wholly before it are dropped as
    one run, read no further. Of the others, only a message with an item in ``gone`` or ``replaced_calls`` is
    looked at item by item."""
    n_items = len(items)
    gone_at = (lambda k: gone.get(k, cut_reason) if k < cut else gone[k]) if cut else gone.__getitem__
    # Messages before the message of item ``cut`` have all their items before it. ``items`` may start at a later
    # message than the view (``base``): the messages before it are only checked for having items.
    front = items[cut].message if cut < n_items else len(view)
    base = items[0].message if items else len(view)
    runs: list[Run] = []
    at = 0
    touched = {items[k].message for k in gone} | {m for m, _ in replaced_calls}
    if cut:
        touched.add(front)
    by_message: dict[int, list[tuple[int, Item]]] = {}
    has_items = [False] * len(view)
    for k in range(n_items):
        item = items[k]
        has_items[item.message] = True
        if item.message in touched:
            by_message.setdefault(item.message, []).append((k, item))
    # Wholly before the cut: dropped, but a message without items for that reason.
    messages = view.messages
    holes = [i for i in range(min(base, front))
             if messages[i].role == "assistant" and not messages[i].tool_calls and not _item_count(messages[i])]
    holes += [i for i in range(base, front) if not has_items[i]]
    for i in holes:
        runs += [(at, i, cut_reason), (i, i + 1, NO_ITEM)]
        at = i + 1
    runs.append((at, front, cut_reason))
    kept: list[int] = []
    out = Outcome(kept=kept, dropped={}, kept_reason="kept: all its items are sent")
    dropped: dict[int, str] = {}
    for i in range(front, len(view)):
        if not has_items[i]:
            dropped[i] = NO_ITEM
            continue
        if i not in touched:
            kept.append(i)
            continue
        m = view.messages[i]
        own = by_message[i]
        lost = [(k, item) for k, item in own if k < cut or k in gone]
        if len(lost) == len(own):
            dropped[i] = gone_at(lost[0][0])
            continue
        kept.append(i)
        changed = [(k, item) for k, item in own if (item.message, item.call) in replaced_calls and k not in gone]
        if not lost and not changed:
            continue
        update: dict[str, object] = {}
        what = []
        if any(item.kind == "text" for _, item in lost):
            update["content"] = None
            what.append(f"its text ({gone_at(next(k for k, it in lost if it.kind == 'text'))})")
        calls = []
        for k, item in own:
            if item.kind != "call" or k < cut or k in gone:
                continue
            source = replaced_calls.get((item.message, item.call))
            calls.append(source.tool_calls[0] if source is not None else m.tool_calls[item.call])
        for k, item in lost:
            if item.kind == "call":
                what.append(f"call {item.call_id} ({gone_at(k)})")
        for _, item in changed:
            what.append(f"call {item.call_id} with the later call's name and arguments (the SDK keeps the latest "
                        "value of a duplicated call id at its first place)")
        if m.role == "assistant":
            update["tool_calls"] = calls
        out.replaced[i] = m.model_copy(update=update)
        out.kept_reasons[i] = "sent without " + "; without ".join(what) if lost else "sent with " + "; ".join(
            what)
    runs += [(i, i + 1, why) for i, why in dropped.items()]
    out.dropped = ReasonRuns(runs)
    return out


@register(
    "openai_session_limit", OpenAISessionLimitParams,
    "Sends the newest limit session items, then drops function calls without their outputs (and, with a "
    "limit, outputs without their calls), as the SDK's run-time repair does.",
    "OpenAI Agents SDK SessionSettings(limit) with drop_orphan_function_calls (openai-agents 0.24.0)",
)
def _openai_session_limit(view: View, p: OpenAISessionLimitParams) -> Outcome:
    # The SDK reads only the last limit items of its session: so does this (the items of the messages before are
    # never made; ``items`` starts at the message holding the first item read).
    items = responses_items(view, 0 if p.limit is None else _first_of_last_items(view, p.limit))
    n = len(items)
    start = 0 if p.limit is None else max(0, n - p.limit)
    outside = f"outside the last {plural(p.limit or 0, 'item')} of the session (limit)"
    gone: dict[int, str] = {}  # the items gone in the window (those before it are all gone for ``outside``)
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
    out = _regroup(view, items, gone, replaced_calls, start, outside)
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
    # Nothing is gone: a message is kept when it has an item (every message but an empty assistant message).
    itemless = [i for i, m in enumerate(view.messages)
                if m.role == "assistant" and not m.tool_calls
                and (not m.content or (not isinstance(m.content, str) and not m.text))]
    if itemless:
        out = _regroup(view, responses_items(view), {}, {})
    else:
        out = Outcome(kept=list(range(len(view))), dropped=ReasonRuns(), kept_reason="kept: all its items are sent")
    skipped = set(itemless)
    first_item = next((i for i in range(len(view)) if i not in skipped), None)
    boundary = None  # view position of the recent_turns-th user message from the end
    seen = 0
    for i in range(len(view) - 1, -1, -1):
        if view.messages[i].role == "user":
            seen += 1
            if seen >= p.recent_turns:
                boundary = i
                break
    if boundary is None or first_item == boundary:  # the SDK's boundary 0: nothing is old
        out.kept_reason = (f"kept unchanged: fewer than {plural(p.recent_turns, 'user message')}, so every turn is "
                           "recent" if boundary is None else "kept unchanged: nothing comes before the recent turns")
        return out
    messages = view.messages
    names: dict[str, str] | None = None  # call id -> its tool's name (the last call's), made when first needed

    def name_of(call_id: str) -> str | None:
        nonlocal names
        if names is None:
            names = {tc.id: tc.function.name for m in messages for tc in m.tool_calls if tc.function.name}
        return names.get(call_id)

    allowed = set(p.trimmable_tools) if p.trimmable_tools is not None else None
    recent = f"the last {plural(p.recent_turns, 'user turn')}"
    out.kept_reason = "kept unchanged"
    # Every tool message is kept (its output is an item, and nothing is gone).
    max_chars = p.max_output_chars
    for i in range(boundary):
        m = messages[i]
        if m.role != "tool":
            continue
        if allowed is not None:
            name = name_of(m.tool_call_id or "")
            if name not in allowed:
                out.kept_reasons[i] = f"kept unchanged: {name or 'its tool'} is not in trimmable_tools"
                continue
        content = m.content
        text = content if isinstance(content, str) else m.text
        if len(text) <= max_chars:
            continue
        name = name_of(m.tool_call_id or "")
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
        if messages[i].role == "tool":
            out.kept_reasons[i] = f"kept unchanged: within {recent}"
    return out
