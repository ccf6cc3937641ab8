"""OpenAI Responses API input items: a list of items, or ``{"instructions": ..., "input": [...]}``.

``message`` items are messages; consecutive ``function_call`` items (after an assistant ``message``, when there is
one) become one assistant message with ``tool_calls``; ``function_call_output`` items are ``tool`` messages;
``reasoning`` items become the ``reasoning`` of the message they precede, kept whole (ids, encrypted content) in
``extra`` so they are written back unchanged; ``instructions`` is a leading system message. Item types memoryviz
has no message for (web searches, item references, ...) ride along with the next message and are written back
in place."""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from agents.memory.schema import SYSTEM_ROLES, Conversation, Message

from .base import (
    CallNames,
    FormatError,
    FormatSpec,
    Streamed,
    WriteReport,
    at,
    chat_tool_from_flat,
    convert_parts,
    dict_or_empty,
    flat_tool_from_chat,
    format_extra,
    format_metadata,
    json_type,
    list_or_empty,
    make_conversation,
    make_message,
    need_dict,
    need_list,
    need_parts,
    need_str,
    one_string,
    report_conversation_losses,
    report_losses,
    responses_image_part,
    write_documents,
)

NAME = "openai_responses"
SPEC = FormatSpec(
    name=NAME,
    label="OpenAI Responses input",
    description="Responses API input items (message, function_call, function_call_output, reasoning), "
                "or an object with instructions and input.",
    extension="json",
    media_type="application/json",
)
TYPES = {"message", "function_call", "function_call_output", "reasoning"}
HELD = frozenset({"external_id"})  # reported by the writer when it cannot place one
CONVERSATION_HELD = frozenset({"tools"})
_ROLES = ("user", "assistant", "system", "developer")
_TEXT_PART = {"user": "input_text", "system": "input_text", "developer": "input_text", "assistant": "output_text"}


def _items_like(items: list[Any]) -> bool:
    sample = items[:200]
    if not sample or not all(isinstance(i, dict) for i in sample):
        return False
    if not any(isinstance(i.get("type"), str) and i["type"] in TYPES for i in sample):
        return False
    return all(isinstance(i.get("type"), str) or ("role" in i and "content" in i) for i in sample)


def detect(doc: Any) -> bool:
    if isinstance(doc, dict) and "format" not in doc and "messages" not in doc:
        value = doc.get("input")
        return isinstance(value, str) or (isinstance(value, list) and (not value or _items_like(value)))
    return isinstance(doc, list) and _items_like(doc)


# --- reading ----------------------------------------------------------------------------------------------------

def _content(value: Any, role: str, place: str) -> tuple[str | list[dict[str, Any]] | None, dict[str, Any]]:
    memo: dict[str, Any] = {}
    if value is None or isinstance(value, str):
        return value, memo
    need_parts(value, place)
    default = _TEXT_PART[role]
    if (role == "assistant" and len(value) == 1 and value[0].get("type") == "output_text"
            and isinstance(value[0].get("text"), str) and set(value[0]) == {"type", "text", "annotations"}
            and value[0]["annotations"] == []):
        return value[0]["text"], {"output_text": True}  # the usual assistant output: one text part
    parts: list[dict[str, Any]] = []
    kinds: list[str | None] = []
    for part in value:
        kind = part.get("type")
        if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
            parts.append({**part, "type": "text"})
            kinds.append(None if kind == default else kind)
        else:
            parts.append(part)
            kinds.append(None)
    if any(kinds):
        memo["part_types"] = kinds
    return parts, memo


def _reasoning_text(items: list[dict[str, Any]]) -> str | None:
    texts: list[str] = []
    for item in items:
        if item.get("type") != "reasoning":
            continue
        pieces = [
            p["text"] for p in item.get("summary") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        if not pieces:
            pieces = [
                p["text"]
                for p in item.get("content") or []
                if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
        texts.extend(pieces)
    return "\n\n".join(texts) if texts else None


def _rest(item: dict[str, Any], known: set[str]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in known}


def read(doc: Any, place: str = "", *, item_places: Sequence[str] | None = None,
         item_times: Sequence[datetime | None] | None = None) -> list[Conversation]:
    """``item_places`` and ``item_times``, for a list of items read from rows (the Agents SDK's session database):
    the place each item's errors name, and the time of each item; a message takes the time of the item that opens
    it."""
    meta: dict[str, Any] = {}
    builders: list[dict[str, Any]] = []
    tools = None
    if isinstance(doc, list):
        items, iplace = doc, at(place, "input")
        meta["list"] = True
    else:
        need_dict(doc, place or "input")
        iplace = at(place, "input")
        items = doc.get("input", [])
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
            meta["string_input"] = True
        need_list(items, iplace)
        instructions = doc.get("instructions")
        if instructions is not None:
            need_str(instructions, at(place, "instructions"))
            builders.append({"place": at(place, "instructions"), "role": "system", "content": instructions, "memo": {}})
            meta["instructions"] = True
        raw_tools = doc.get("tools")
        if raw_tools is not None:
            need_list(raw_tools, at(place, "tools"))
            tools = [chat_tool_from_flat(t, "parameters") for t in raw_tools]
            if [flat_tool_from_chat(t, "parameters", True) for t in tools] != raw_tools:
                meta["tools"] = raw_tools
        rest = _rest(doc, {"input", "instructions", "tools"})
        if rest:
            meta["fields"] = rest
    pending: list[dict[str, Any]] = []
    open_assistant: dict[str, Any] | None = None  # the message that function calls right after it join
    for i, item in enumerate(items):
        p = item_places[i] if item_places is not None else at(iplace, i)
        need_dict(item, p)
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role not in _ROLES:
                shown = role if isinstance(role, str) else json_type(role)
                raise FormatError(at(p, "role"), f"expected user, assistant, system or developer, got {shown!r}"[:120])
            content, memo = _content(item.get("content"), role, at(p, "content"))
            if "type" not in item:
                memo["untyped"] = True
            if role in SYSTEM_ROLES or role == "assistant":
                # A system item, not the instructions; an assistant item even when empty next to its calls.
                memo["item"] = True
            rest = _rest(item, {"type", "role", "content", "id"})
            if rest:
                memo["fields"] = rest
            ext = item.get("id")
            if ext is not None:
                need_str(ext, at(p, "id"))
                memo["id"] = True
            b = {"place": p, "role": role, "content": content, "external_id": ext, "memo": memo, "calls": [],
                 "first": i}
            if pending:
                memo["before"], pending = pending, []
            builders.append(b)
            open_assistant = b if role == "assistant" else None
        elif kind == "function_call":
            call_id = need_str(item.get("call_id"), at(p, "call_id"))
            name = need_str(item.get("name"), at(p, "name"))
            args = item.get("arguments")
            if not isinstance(args, str):
                raise FormatError(
                    at(p, "arguments"), f"expected a string (the arguments as JSON text), got {json_type(args)}"
                )
            call = {"id": call_id, "function": {"name": name, "arguments": args}}
            call_memo = _rest(item, {"type", "call_id", "name", "arguments"})
            if open_assistant is None or pending:
                open_assistant = {"place": p, "role": "assistant", "content": None, "memo": {}, "calls": [],
                                  "first": i}
                if pending:
                    open_assistant["memo"]["before"], pending = pending, []
                builders.append(open_assistant)
            open_assistant["calls"].append(call)
            open_assistant["memo"].setdefault("call_items", []).append(call_memo)
        elif kind == "function_call_output":
            call_id = need_str(item.get("call_id"), at(p, "call_id"))
            output = item.get("output")
            if not isinstance(output, str):
                need_parts(output, at(p, "output"))
            memo = {}
            rest = _rest(item, {"type", "call_id", "output"})
            if rest:
                memo["fields"] = rest
            if pending:
                memo["before"], pending = pending, []
            builders.append({"place": p, "role": "tool", "content": output, "tool_call_id": call_id, "memo": memo,
                             "first": i})
            open_assistant = None
        elif isinstance(kind, str):
            pending.append(item)  # reasoning, and item types with no message of their own
            if kind != "reasoning":
                open_assistant = None
        else:
            raise FormatError(at(p, "type"), f"expected an item type, got {json_type(kind)}")
    if pending:
        meta["trailing"] = pending
    messages: list[Message] = []
    for b in builders:
        memo = b["memo"]
        if not any(memo.get("call_items", [])):
            memo.pop("call_items", None)
        first = b.get("first")
        messages.append(make_message(
            b["place"], role=b["role"], content=b["content"], tool_calls=b.get("calls", []),
            tool_call_id=b.get("tool_call_id"), external_id=b.get("external_id"),
            created_at=item_times[first] if item_times is not None and first is not None else None,
            reasoning=_reasoning_text(memo.get("before", [])), extra={NAME: memo} if memo else {}))
    return [make_conversation(place or "input", messages=messages, tools=tools, source_format=NAME,
                              metadata={NAME: meta} if meta else {})]


# --- writing ----------------------------------------------------------------------------------------------------

def _parts(content: Any, role: str, memo: dict[str, Any]) -> Any:
    if not isinstance(content, list):
        return content
    content = convert_parts(content, responses_image_part)
    kinds = list_or_empty(memo.get("part_types"))
    out = []
    for i, part in enumerate(content):
        if part.get("type") == "text":
            kind = kinds[i] if i < len(kinds) and isinstance(kinds[i], str) else _TEXT_PART.get(role, "input_text")
            out.append({**part, "type": kind})
        else:
            out.append(part)
    return out


def _before(message: Message, memo: dict[str, Any], report: WriteReport) -> list[Any]:
    before = [b for b in memo.get("before", []) if isinstance(b, dict)] if isinstance(memo.get("before"), list) else []
    reasoning_items = [b for b in before if b.get("type") == "reasoning"]
    if _reasoning_text(reasoning_items) != message.reasoning:
        if message.reasoning is not None:
            report.lose("reasoning", "a Responses reasoning item needs the server's id (and encrypted content); "
                                     "not written")
        before = [b for b in before if b.get("type") != "reasoning"]
    return before


def render(conversation: Conversation, report: WriteReport) -> Any:
    report_conversation_losses(report, conversation, CONVERSATION_HELD)
    meta = format_metadata(conversation, NAME)
    messages = iter(conversation.messages)
    names = CallNames()
    instructions = None
    first = next(messages, None)
    if (first is not None and first.role == "system" and isinstance(first.content, str)
            and not meta.get("list") and (meta.get("instructions") or NAME not in first.extra)):
        instructions = first.content
        report_losses(report, first, HELD, names)
        if first.external_id is not None:
            report.lose("external_id", "openai_responses holds only the server's ids")
        report.messages += 1
        first = None
    rest = itertools.chain([first] if first is not None else [], messages)

    def items_of(message: Message) -> list[Any]:
        items: list[Any] = []
        memo = format_extra(message, NAME)
        report_losses(report, message, HELD | {"reasoning"}, names)
        names.see(message)
        report.messages += 1
        items.extend(_before(message, memo, report))
        fields = dict_or_empty(memo.get("fields"))
        if message.role == "tool":
            if message.external_id is not None:
                report.lose("external_id", "openai_responses holds only the server's ids")
            items.append({"type": "function_call_output", "call_id": message.tool_call_id,
                          "output": _parts(message.content, "user", memo) if message.content is not None else "",
                          **fields})
            return items
        has_text = message.content not in (None, "") or not message.tool_calls or bool(memo.get("item"))
        if has_text:
            item: dict[str, Any] = {} if memo.get("untyped") else {"type": "message"}
            item["role"] = message.role
            if message.external_id is not None and memo.get("id"):
                item["id"] = message.external_id
            elif message.external_id is not None:
                # An output message's id is the server's (msg_...); another format's id is no such thing.
                report.lose("external_id", "openai_responses holds only the server's ids")
            item.update({k: v for k, v in fields.items() if k == "status"})
            content: Any = message.content if message.content is not None else ""
            if message.role == "assistant" and isinstance(content, str) and memo.get("output_text"):
                content = [{"type": "output_text", "text": content, "annotations": []}]
            elif (message.role == "assistant" and isinstance(content, list) and NAME not in message.extra
                  and all(p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)):
                # An input assistant message takes text (the API refuses input_text parts there); output_text
                # parts belong to output messages, which need the server's ids.
                content = one_string(message, report, "an openai_responses assistant message without the server's "
                                                      "id holds one string")
            item["content"] = _parts(content, message.role, memo)
            item.update({k: v for k, v in fields.items() if k != "status"})
            items.append(item)
        elif message.external_id is not None:
            report.lose("external_id", "a Responses function_call item has its own ids; the message id is not written")
        call_items = list_or_empty(memo.get("call_items"))
        for i, call in enumerate(message.tool_calls):
            cm = call_items[i] if i < len(call_items) and isinstance(call_items[i], dict) else {}
            fc: dict[str, Any] = {"type": "function_call"}
            if "id" in cm:
                fc["id"] = cm["id"]
            fc.update({"call_id": call.id, "name": call.function.name, "arguments": call.function.arguments})
            fc.update({k: v for k, v in cm.items() if k != "id"})
            items.append(fc)
        return items

    def all_items() -> Iterator[Any]:
        for message in rest:
            yield from items_of(message)
        trailing = meta.get("trailing")
        if isinstance(trailing, list):
            yield from trailing

    if meta.get("list"):
        return Streamed(items=all_items())
    head: dict[str, Any] = {}
    if instructions is not None:
        head["instructions"] = instructions
    tail: dict[str, Any] = {}
    if conversation.tools is not None:
        original = meta.get("tools")
        if (
            isinstance(original, list)
            and [chat_tool_from_flat(t, "parameters") for t in original] == conversation.tools
        ):
            tail["tools"] = original
        else:
            tail["tools"] = [flat_tool_from_chat(t, "parameters", True) for t in conversation.tools]
    if isinstance(meta.get("fields"), dict):
        for key, value in meta["fields"].items():
            if key not in head and key not in tail and key != "input":
                tail[key] = value
    if meta.get("string_input"):
        # {"input": "text"}: one user message, written back as the string it was (a short document).
        items = list(all_items())
        if len(items) == 1 and items[0].get("role") == "user" and isinstance(items[0].get("content"), str):
            return {**head, "input": items[0]["content"], **tail}
        return Streamed(head=head, key="input", items=items, tail=tail)
    return Streamed(head=head, key="input", items=all_items(), tail=tail)


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    return write_documents(conversations, report, render)
