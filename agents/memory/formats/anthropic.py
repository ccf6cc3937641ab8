"""Anthropic Messages: top-level ``system``, content blocks, ``tool_use`` with an ``input`` object, results as
``tool_result`` blocks inside user messages (with ``is_error``), ``thinking`` blocks with signatures.

Reading splits a user message into one ``tool`` message per result (then a user message for any other blocks);
writing groups consecutive results back into one user message. What is needed to rebuild the exact source
(signatures, block order, a result that started its own user message) is kept in ``extra["anthropic"]``."""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from agents.memory.schema import SYSTEM_ROLES, Conversation, Message

from .base import (
    CallNames,
    FormatError,
    FormatSpec,
    Streamed,
    WriteReport,
    anthropic_image_block,
    at,
    chat_tool_from_flat,
    convert_parts,
    dict_or_empty,
    dump_arguments,
    flat_tool_from_chat,
    format_extra,
    format_metadata,
    json_type,
    list_or_empty,
    load_arguments,
    make_conversation,
    make_message,
    need_dict,
    need_list,
    need_parts,
    need_str,
    opt_bool,
    report_conversation_losses,
    report_losses,
    settled,
    write_documents,
)

NAME = "anthropic"
SPEC = FormatSpec(
    name=NAME,
    label="Anthropic Messages",
    description="Messages API request: top-level system, content blocks, tool_use / tool_result, thinking.",
    extension="json",
    media_type="application/json",
)
HELD = frozenset({"is_error"})
CONVERSATION_HELD = frozenset({"tools"})
_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}
_THINKING = ("thinking", "redacted_thinking")


def _anthropic_messages(messages: list[Any], need_blocks: bool) -> bool:
    sample = messages[:200]
    if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") and "type" not in m for m in sample):
        return False
    if not need_blocks:
        return True
    for m in sample:
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"] in _BLOCKS for b in content
        ):
            return True
    return False


def detect(doc: Any) -> bool:
    if isinstance(doc, list):
        return bool(doc) and _anthropic_messages(doc, need_blocks=True)
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list) and "format" not in doc and "input" not in doc:
        return _anthropic_messages(doc["messages"], need_blocks="system" not in doc)
    return False


# --- reading ----------------------------------------------------------------------------------------------------

def _read_user(item: dict[str, Any], place: str) -> list[Message]:
    content = item.get("content")
    cplace = at(place, "content")
    if isinstance(content, str):
        return [make_message(place, role="user", content=content)]
    blocks = need_parts(content, cplace)
    out: list[Message] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            memo = {"joined": True} if out else {}
            out.append(make_message(place, role="user", content=list(pending), extra={NAME: memo} if memo else {}))
            pending.clear()

    for i, block in enumerate(blocks):
        bplace = at(cplace, i)
        if block.get("type") != "tool_result":
            pending.append(block)
            continue
        flush()
        call_id = need_str(block.get("tool_use_id"), at(bplace, "tool_use_id"))
        result = block.get("content")
        if result is not None and not isinstance(result, str):
            need_parts(result, at(bplace, "content"))
        is_error = opt_bool(block.get("is_error"), at(bplace, "is_error"))
        memo: dict[str, Any] = {}
        rest = {k: v for k, v in block.items() if k not in {"type", "tool_use_id", "content", "is_error"}}
        if rest:
            memo["block"] = rest
        if "content" not in block:
            memo["no_content"] = True
        if "is_error" in block and block["is_error"] is None:
            memo["null_is_error"] = True
        if out:
            memo["joined"] = True
        out.append(make_message(bplace, role="tool", tool_call_id=call_id, content=result, is_error=is_error,
                                extra={NAME: memo} if memo else {}))
    flush()
    if not out:  # an empty content list
        out.append(make_message(place, role="user", content=[]))
    return out


def _read_assistant(item: dict[str, Any], place: str) -> Message:
    content = item.get("content")
    cplace = at(place, "content")
    if isinstance(content, str) or content is None:
        return make_message(place, role="assistant", content=content)
    need_parts(content, cplace)
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    call_rest: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    order: list[str] = []
    for i, block in enumerate(content):
        bplace = at(cplace, i)
        kind = block.get("type")
        if kind in _THINKING:
            if kind == "thinking":
                need_str(block.get("thinking"), at(bplace, "thinking"))
            thinking.append(block)
            order.append("thinking")
        elif kind == "tool_use":
            call_id = need_str(block.get("id"), at(bplace, "id"))
            name = need_str(block.get("name"), at(bplace, "name"))
            args = need_dict(block.get("input"), at(bplace, "input"))
            calls.append({"id": call_id, "function": {"name": name, "arguments": dump_arguments(args)}})
            call_rest.append({k: v for k, v in block.items() if k not in {"type", "id", "name", "input"}})
            order.append("tool_use")
        else:
            parts.append(block)
            order.append("content")
    memo: dict[str, Any] = {}
    texts = [b["thinking"] for b in thinking if b.get("type") == "thinking"]
    reasoning = "\n\n".join(texts) if texts else None
    if thinking:
        memo["thinking"] = thinking
    canonical = sorted(order, key=["thinking", "content", "tool_use"].index)
    if order != canonical:
        memo["order"] = order
    if any(call_rest):
        memo["tool_use"] = call_rest
    return make_message(place, role="assistant", content=parts or None, tool_calls=calls, reasoning=reasoning,
                        extra={NAME: memo} if memo else {})


def read(doc: Any, place: str = "") -> list[Conversation]:
    if isinstance(doc, list):
        raw, top = doc, {}
        memo: dict[str, Any] = {"list": True}
        mplace = at(place, "messages")
    else:
        need_dict(doc, place or "input")
        if "messages" not in doc:
            raise FormatError(place or "input", "expected an object with messages (and system)")
        raw = need_list(doc["messages"], at(place, "messages"))
        top = {k: v for k, v in doc.items() if k not in {"messages"}}
        memo = {}
        mplace = at(place, "messages")
    messages: list[Message] = []
    system = top.pop("system", None)
    if system is not None:
        splace = at(place, "system")
        if not isinstance(system, str):
            need_parts(system, splace)
        messages.append(make_message(splace, role="system", content=system))
    tools = top.pop("tools", None)
    chat_tools = None
    if tools is not None:
        need_list(tools, at(place, "tools"))
        chat_tools = [chat_tool_from_flat(t, "input_schema") for t in tools]
        if [flat_tool_from_chat(t, "input_schema", False) for t in chat_tools] != tools:
            memo["tools"] = tools
    for i, item in enumerate(raw):
        iplace = at(mplace, i)
        need_dict(item, iplace)
        role = item.get("role")
        if role == "user":
            batch = _read_user(item, iplace)
        elif role == "assistant":
            batch = [_read_assistant(item, iplace)]
        else:
            shown = role if isinstance(role, str) else json_type(role)
            raise FormatError(at(iplace, "role"), f"expected user or assistant, got {shown!r}"[:120])
        rest = {k: v for k, v in item.items() if k not in {"role", "content"}}
        if rest:
            first = batch[0]
            batch[0] = first.model_copy(
                update={"extra": {**first.extra, NAME: {**format_extra(first, NAME), "fields": rest}}}
            )
        if batch[0].role == "tool" and messages and messages[-1].role == "tool":
            first = batch[0]
            batch[0] = first.model_copy(
                update={"extra": {**first.extra, NAME: {**format_extra(first, NAME), "split": True}}}
            )
        messages.extend(batch)
    if top:
        memo["fields"] = top
    return [make_conversation(place or "input", messages=messages, tools=chat_tools, source_format=NAME,
                              metadata={NAME: memo} if memo else {})]


# --- writing ----------------------------------------------------------------------------------------------------

def _blocks(content: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(convert_parts(content, anthropic_image_block))


def _content(content: str | list[dict[str, Any]] | None) -> Any:
    """A user or result content: the string, or the parts with images as Anthropic image blocks."""
    if content is None:
        return ""
    return convert_parts(content, anthropic_image_block)


def _assistant(message: Message, report: WriteReport) -> dict[str, Any]:
    memo = format_extra(message, NAME)
    thinking = list_or_empty(memo.get("thinking"))
    texts = [
        b["thinking"]
        for b in thinking
        if isinstance(b, dict) and b.get("type") == "thinking" and isinstance(b.get("thinking"), str)
    ]
    if message.reasoning is not None and "\n\n".join(texts) != message.reasoning:
        report.lose("reasoning", "anthropic needs the thinking block's signature to accept it back; not written")
        thinking = []
    elif message.reasoning is None:
        thinking = [b for b in thinking if isinstance(b, dict) and b.get("type") == "redacted_thinking"]
    if not thinking and not message.tool_calls and not isinstance(message.content, list):
        return {"role": "assistant", "content": message.content if message.content is not None else ""}
    rests = list_or_empty(memo.get("tool_use"))
    uses = []
    for i, call in enumerate(message.tool_calls):
        args = load_arguments(call.function.arguments)
        if args is None:
            if call.function.arguments.strip():
                report.lose("tool call arguments that are not a JSON object",
                            "anthropic needs an object; written as {}")
            args = {}
        block: dict[str, Any] = {"type": "tool_use", "id": call.id, "name": call.function.name, "input": args}
        if i < len(rests) and isinstance(rests[i], dict):
            block.update(rests[i])
        uses.append(block)
    queues = {"thinking": list(thinking), "content": _blocks(message.content), "tool_use": uses}
    order = memo.get("order")
    blocks: list[dict[str, Any]] = []
    if isinstance(order, list) and all(isinstance(k, str) for k in order) and sorted(order) == sorted(
            ["thinking"] * len(queues["thinking"]) + ["content"] * len(queues["content"]) + ["tool_use"] * len(uses)):
        for kind in order:
            blocks.append(queues[kind].pop(0))
    else:
        blocks = queues["thinking"] + queues["content"] + queues["tool_use"]
    return {"role": "assistant", "content": blocks}


def _result(message: Message) -> dict[str, Any]:
    memo = format_extra(message, NAME)
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    if message.content is not None or not memo.get("no_content"):
        block["content"] = _content(message.content)
    if message.is_error is not None:
        block["is_error"] = message.is_error
    elif memo.get("null_is_error"):
        block["is_error"] = None
    if isinstance(memo.get("block"), dict):
        block.update(memo["block"])
    return block


def render(conversation: Conversation, report: WriteReport) -> Any:
    report_conversation_losses(report, conversation, CONVERSATION_HELD)
    meta = format_metadata(conversation, NAME)
    names = CallNames()
    # The leading system messages become the top-level system; the rest are read once, as they come.
    messages = iter(conversation.messages)
    leading: list[Message] = []
    first: Message | None = None
    for message in messages:
        if message.role not in SYSTEM_ROLES:
            first = message
            break
        leading.append(message)
    system: Any = None
    if len(leading) == 1:
        system = leading[0].content if leading[0].content is not None else ""
    elif len(leading) > 1:
        system = [b for m in leading for b in _blocks(m.content)]
    for m in leading:
        report_losses(report, m, HELD, names)
        if m.role == "developer":
            report.lose("the developer role", "anthropic has one top-level system prompt; written there")
        report.messages += 1

    def step(message: Message, out: list[dict[str, Any]]) -> None:
        report_losses(report, message, HELD | ({"reasoning"} if message.role == "assistant" else frozenset()), names)
        names.see(message)
        report.messages += 1
        memo = format_extra(message, NAME)
        last = out[-1] if out else None
        if message.role == "tool":
            block = _result(message)
            joinable = last if last and last["role"] == "user" and isinstance(last["content"], list) else None
            ends_in_result = (
                joinable is not None
                and bool(joinable["content"])
                and joinable["content"][-1].get("type") == "tool_result"
            )
            # Consecutive results share one user message, unless the source had them in separate messages.
            if joinable is not None and (memo.get("joined") or (ends_in_result and not memo.get("split"))):
                joinable["content"].append(block)
                return
            out.append({"role": "user", "content": [block]})
            return
        if message.role in SYSTEM_ROLES:
            report.lose("a system message after the start",
                        "anthropic takes the system prompt only at the top; written as a user message")
            out.append({"role": "user", "content": _content(message.content)})
            return
        if message.role == "user":
            after_results = (last is not None and last["role"] == "user" and isinstance(last["content"], list)
                             and bool(last["content"]) and last["content"][-1].get("type") == "tool_result")
            # Text after results goes into the results' user message (Anthropic merges consecutive user turns
            # anyway); a message read from Anthropic keeps the grouping it had.
            joins = memo.get("joined") if NAME in message.extra else after_results
            if joins and last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].extend(_blocks(message.content))
            else:
                out.append({"role": "user", "content": _content(message.content)})
        else:
            out.append(_assistant(message, report))
        fields = memo.get("fields")
        if isinstance(fields, dict):
            for key, value in fields.items():
                out[-1].setdefault(key, value)

    items = settled(itertools.chain([first] if first is not None else [], messages), step)
    if meta.get("list") and system is None and conversation.tools is None:
        return Streamed(items=items)
    head: dict[str, Any] = {}
    fields = dict_or_empty(meta.get("fields"))
    head.update({k: v for k, v in fields.items() if k not in {"system", "messages", "tools"}})
    if system is not None:
        head["system"] = system
    tail: dict[str, Any] = {}
    if conversation.tools is not None:
        tools = [flat_tool_from_chat(t, "input_schema", False) for t in conversation.tools]
        original = meta.get("tools")
        if (
            isinstance(original, list)
            and [chat_tool_from_flat(t, "input_schema") for t in original] == conversation.tools
        ):
            tools = original
        tail["tools"] = tools
    return Streamed(head=head, key="messages", items=items, tail=tail)


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    return write_documents(conversations, report, render)
