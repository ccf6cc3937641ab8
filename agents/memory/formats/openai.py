"""OpenAI Chat Completions: a message list, or an object with ``messages`` (and ``tools``, ``model``, ...).

The message shape is shared with ``openai_jsonl`` and ``openmanus``; keys the schema has no field for are kept
in ``extra["openai"]["fields"]`` and written back. ``reasoning_content`` (a non-standard key some providers
add) becomes ``reasoning``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from agents.memory.schema import ROLES, Conversation, Message

from .base import (
    CallNames,
    ConversationStream,
    FormatError,
    FormatSpec,
    WriteReport,
    at,
    convert_parts,
    dict_or_empty,
    format_extra,
    format_metadata,
    image_url_part,
    json_type,
    make_conversation,
    make_message,
    need_dict,
    need_list,
    need_str,
    opt_str,
    peek_single,
    report_conversation_losses,
    report_losses,
    text_or_parts,
)
from .json_input import Events

NAME = "openai"
SPEC = FormatSpec(
    name=NAME,
    label="OpenAI Chat Completions",
    description="A Chat Completions message list, or an object with messages (and tools).",
    extension="json",
    media_type="application/json",
)
# What the format holds beyond role/content/tool calls: names (not on tool messages), and reasoning only when it
# came from a provider's reasoning_content key.
HELD = frozenset({"name"})
CONVERSATION_HELD = frozenset({"tools"})

_CHAT_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id"}
_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}
_RESPONSES_TYPES = {"message", "function_call", "function_call_output", "reasoning"}


def short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --- detection --------------------------------------------------------------------------------------------------

def is_chat_message(item: Any) -> bool:
    return (isinstance(item, dict) and (item.get("role") in ROLES or item.get("role") == "function")
            and "type" not in item and "data" not in item)


def has_anthropic_blocks(messages: list[Any]) -> bool:
    for item in messages[:200]:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list):
            for block in content:
                # A non-string "type" (a list, an object) is not a block type and cannot be looked up in a set.
                if (
                    isinstance(block, dict)
                    and isinstance(block.get("type"), str)
                    and block["type"] in _ANTHROPIC_BLOCKS
                ):
                    return True
    return False


def chat_messages_of(doc: Any) -> list[Any] | None:
    """The message list of an OpenAI-shaped document (a list, or an object with messages), else None."""
    if isinstance(doc, list):
        messages = doc
    elif isinstance(doc, dict) and isinstance(doc.get("messages"), list) and "format" not in doc:
        if "system" in doc or "input" in doc or "llm_context" in doc:
            return None
        messages = doc["messages"]
    else:
        return None
    sample = messages[:200]
    if not all(is_chat_message(m) for m in sample):
        return None
    if has_anthropic_blocks(sample):
        return None
    return messages


def detect(doc: Any) -> bool:
    return chat_messages_of(doc) is not None


# Every key a Chat Completions message may carry (the legacy function_call and providers' reasoning_content too).
_MESSAGE_KEYS = _CHAT_KEYS | {"function_call", "reasoning_content"}


def looks_like_message(item: Any) -> bool:
    """A message by its keys alone: an object with a ``role`` (whatever its value), or one made only of Chat
    Completions keys. Detection uses this when no format matches strictly, so that a message with a bad role or a
    missing key is read as openai and the reader names the place, instead of "unknown format"."""
    if not isinstance(item, dict) or "type" in item or "data" in item:
        return False
    if "role" in item:
        return True
    return bool(item) and set(item) <= _MESSAGE_KEYS and ("content" in item or "tool_calls" in item)


def loose_messages_of(doc: Any) -> list[Any] | None:
    """The message list of a document shaped like a chat history (a list, or an object with messages) whose
    objects all look like messages, whatever their values; items that are not objects are the reader's to
    report. None when nothing in it looks like a message."""
    if isinstance(doc, list):
        messages = doc
    elif isinstance(doc, dict) and isinstance(doc.get("messages"), list) and "format" not in doc:
        if "input" in doc or "llm_context" in doc:
            return None
        messages = doc["messages"]
    else:
        return None
    objects = [m for m in messages[:200] if isinstance(m, dict)]
    if not objects or not all(looks_like_message(m) for m in objects):
        return None
    return messages


# --- reading ----------------------------------------------------------------------------------------------------

def read_call(item: Any, place: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tool call dict as ToolCall fields, and its keys beyond the schema."""
    need_dict(item, place)
    call_id = need_str(item.get("id"), at(place, "id"))
    kind = item.get("type", "function")
    if kind != "function":
        raise FormatError(at(place, "type"), f"only function tool calls are supported, got {short(kind)}")
    fn = need_dict(item.get("function"), at(place, "function"))
    name = need_str(fn.get("name"), at(at(place, "function"), "name"))
    args = fn.get("arguments")
    if not isinstance(args, str):
        raise FormatError(at(at(place, "function"), "arguments"),
                          f"expected a string (the arguments as JSON text), got {json_type(args)}")
    rest = {k: v for k, v in item.items() if k not in {"id", "type", "function"}}
    fn_rest = {k: v for k, v in fn.items() if k not in {"name", "arguments"}}
    if fn_rest:
        rest["function"] = fn_rest
    return {"id": call_id, "function": {"name": name, "arguments": args}}, rest


def _legacy_id(place: str) -> str:
    # Made from the place so that it is stable, in the characters every provider accepts in a call id.
    return "legacy-" + "".join(c if c.isalnum() else "_" for c in place).strip("_")


def _legacy_result(item: dict[str, Any], place: str, fmt: str, legacy: dict[str, Any]) -> Message:
    """A ``role: "function"`` message of the legacy function-calling API: the result of the last
    ``function_call``, which had no id (memoryviz gives the pair one)."""
    name = need_str(item.get("name"), at(place, "name"))
    content = text_or_parts(item.get("content"), at(place, "content"))
    call_id = legacy.pop("last", None) or _legacy_id(place)
    rest = {k: v for k, v in item.items() if k not in {"role", "name", "content"}}
    memo: dict[str, Any] = {"function_role": True, **({"fields": rest} if rest else {})}
    return make_message(place, role="tool", content=content, name=name, tool_call_id=call_id, extra={fmt: memo})


def read_chat_message(item: Any, place: str, fmt: str = NAME, legacy: dict[str, Any] | None = None) -> Message:
    """One Chat Completions message dict (also the shape of openai_jsonl and openmanus). ``legacy`` pairs the
    legacy API's ``function_call`` with the ``function`` message that answers it, across messages."""
    need_dict(item, place)
    legacy = legacy if legacy is not None else {}
    role = item.get("role")
    if role == "function":
        return _legacy_result(item, place, fmt, legacy)
    if role not in ROLES:
        raise FormatError(at(place, "role"), f"expected one of {', '.join(ROLES)}, got {short(role)}")
    content = text_or_parts(item.get("content"), at(place, "content"))
    name = opt_str(item.get("name"), at(place, "name"))
    tool_call_id = opt_str(item.get("tool_call_id"), at(place, "tool_call_id"))
    calls: list[dict[str, Any]] = []
    call_rest: list[dict[str, Any]] = []
    raw_calls = item.get("tool_calls")
    if raw_calls is not None:
        need_list(raw_calls, at(place, "tool_calls"))
        for i, raw in enumerate(raw_calls):
            call, rest = read_call(raw, at(at(place, "tool_calls"), i))
            calls.append(call)
            call_rest.append(rest)
    memo: dict[str, Any] = {}
    fields = {k: v for k, v in item.items() if k not in _CHAT_KEYS}
    function_call = fields.pop("function_call", None)
    if function_call is not None and role == "assistant":
        fplace = at(place, "function_call")
        need_dict(function_call, fplace)
        args = function_call.get("arguments")
        if not isinstance(args, str):
            raise FormatError(
                at(fplace, "arguments"), f"expected a string (the arguments as JSON text), got {json_type(args)}"
            )
        legacy["last"] = _legacy_id(place)
        calls.append(
            {
                "id": legacy["last"],
                "function": {"name": need_str(function_call.get("name"), at(fplace, "name")), "arguments": args},
            }
        )
        call_rest.append({})
        memo["function_call"] = True
    elif function_call is not None:
        fields["function_call"] = function_call
    reasoning = fields.pop("reasoning_content", None)
    if reasoning is not None:
        need_str(reasoning, at(place, "reasoning_content"))
        memo["reasoning_content"] = True
    if fields:
        memo["fields"] = fields
    if any(call_rest):
        memo["tool_calls"] = call_rest
    if "content" not in item:
        memo["no_content"] = True
    if raw_calls is not None and not raw_calls:
        memo["empty_tool_calls"] = True
    return make_message(
        place, role=role, content=content, name=name, tool_calls=calls, tool_call_id=tool_call_id,
        reasoning=reasoning, extra={fmt: memo} if memo else {},
    )


def read_messages(items: Any, place: str, fmt: str = NAME) -> list[Message]:
    need_list(items, place)
    legacy: dict[str, Any] = {}
    return [read_chat_message(item, at(place, i), fmt, legacy) for i, item in enumerate(items)]


def conversation_fields(doc: dict[str, Any], place: str) -> dict[str, Any]:
    """The keys of an object document beyond ``messages``: tools to ``tools``, the rest kept for writing back."""
    fields: dict[str, Any] = {}
    tools = doc.get("tools")
    if tools is not None:
        need_list(tools, at(place, "tools"))
        for i, tool in enumerate(tools):
            need_dict(tool, at(at(place, "tools"), i))
        fields["tools"] = tools
    rest = {k: v for k, v in doc.items() if k not in {"messages", "tools"}}
    fields["metadata"] = {NAME: {"object": True, "fields": rest}}
    return fields


def read_document(doc: Any, place: str = "") -> Conversation:
    if isinstance(doc, list):
        return make_conversation(
            place or "input",
            messages=read_messages(doc, at(place, "messages") if place else "messages"),
            source_format=NAME,
        )
    need_dict(doc, place or "input")
    if "messages" not in doc:
        raise FormatError(place or "input", "expected a message list or an object with messages")
    messages = read_messages(doc["messages"], at(place, "messages"))
    return make_conversation(place or "input", messages=messages, source_format=NAME, **conversation_fields(doc, place))


def read(data: Any, place: str = "") -> list[Conversation]:
    # read_data passes the document's place ("[1]") when a JSON array holds several conversations.
    return [read_document(data, place)]


# --- writing ----------------------------------------------------------------------------------------------------

# Keys a part may carry and still be plain text; "annotations" only when empty (the Responses API writes [] on
# every output_text).
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def text_parts(parts: list[Any]) -> list[str] | None:
    """The texts of content parts that carry nothing but text, else None (an image, a cache_control, citations...
    stay parts)."""
    texts: list[str] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if not (isinstance(kind, str) and kind in _TEXT_PART_TYPES and isinstance(part.get("text"), str)):
            return None
        if set(part) - {"type", "text", "annotations"} or part.get("annotations"):
            return None
        texts.append(part["text"])
    return texts


def chat_content(parts: list[Any]) -> str | list[Any]:
    """Content parts as Chat Completions holds them: one plain text part as its string; several stay parts (Chat
    Completions takes a list of text parts on every role, and joining them would change the text the model reads),
    Responses' ``input_text``/``output_text`` written as ``text``; images as ``image_url`` parts."""
    texts = text_parts(parts)
    if texts is not None and len(texts) == 1:
        return texts[0]
    if texts:
        return [{"type": "text", "text": text} for text in texts]
    return list(convert_parts(parts, image_url_part))


def chat_dict(message: Message, fmt: str = NAME) -> dict[str, Any]:
    """``Message.to_openai()`` plus what the message kept from a Chat Completions source."""
    out = message.to_openai()
    if isinstance(out.get("content"), list):
        out["content"] = chat_content(out["content"])
    memo = format_extra(message, fmt)
    if memo.get("function_role") and message.role == "tool" and message.name:
        out = {"role": "function", "name": message.name, "content": out.get("content")}
    elif memo.get("function_call") and len(message.tool_calls) == 1 and message.tool_calls[0].id.startswith("legacy-"):
        del out["tool_calls"]
        out["function_call"] = message.tool_calls[0].function.model_dump()
    if memo.get("no_content") and out.get("content") in (None, "") and message.content is None:
        del out["content"]
    if memo.get("empty_tool_calls") and not message.tool_calls:
        out["tool_calls"] = []
    extras = memo.get("tool_calls")
    if isinstance(extras, list) and "tool_calls" in out and len(extras) == len(out["tool_calls"]):
        for call, rest in zip(out["tool_calls"], extras, strict=True):
            if isinstance(rest, dict):
                fn_rest = rest.get("function")
                call.update({k: v for k, v in rest.items() if k != "function"})
                if isinstance(fn_rest, dict):
                    call["function"].update(fn_rest)
    if message.reasoning is not None and memo.get("reasoning_content"):
        out["reasoning_content"] = message.reasoning
    fields = memo.get("fields")
    if isinstance(fields, dict):
        for key, value in fields.items():
            out.setdefault(key, value)
        if message.content is None and "content" in out and fields.get("refusal") is not None:
            out["content"] = None  # a refusal: the model said nothing, and "" would claim it said an empty text
    return out


def report_message(message: Message, report: WriteReport, names: CallNames, fmt: str = NAME) -> None:
    held = HELD | ({"reasoning"} if format_extra(message, fmt).get("reasoning_content") else frozenset())
    report_losses(report, message, held, names)
    names.see(message)


def iter_chat_dicts(messages: Iterable[Message], report: WriteReport, fmt: str = NAME) -> Iterator[dict[str, Any]]:
    names = CallNames()
    for message in messages:
        report_message(message, report, names, fmt)
        report.messages += 1
        yield chat_dict(message, fmt)


def write_array(items: Iterable[Any], indent: str = "") -> Iterator[str]:
    """A JSON array with one compact item per line, produced as it goes (a million messages never sit in one
    string)."""
    first = True
    for item in items:
        yield ("[\n" if first else ",\n") + indent + "  " + json.dumps(item, ensure_ascii=False)
        first = False
    yield "\n" + indent + "]" if not first else "[]"


def write_document(conversation: Conversation, report: WriteReport, indent: str = "") -> Iterator[str]:
    report_conversation_losses(report, conversation, CONVERSATION_HELD)
    meta = format_metadata(conversation, NAME)
    fields = dict_or_empty(meta.get("fields"))
    as_object = bool(meta.get("object")) or bool(conversation.tools) or bool(fields)
    items = iter_chat_dicts(conversation.messages, report)
    if not as_object:
        yield from write_array(items, indent)
        return
    yield "{"
    for key, value in fields.items():
        if key in {"messages", "tools"}:
            continue
        yield f"\n{indent}  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},"
    yield f"\n{indent}  \"messages\": "
    yield from write_array(items, indent + "  ")
    if conversation.tools is not None:
        yield f",\n{indent}  \"tools\": {json.dumps(conversation.tools, ensure_ascii=False)}"
    yield "\n" + indent + "}"


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    head, rest, single = peek_single(conversations)
    if single or not head:
        yield from write_document(head[0] if head else Conversation(), report)
        report.conversations = len(head)
        yield "\n"
        return
    yield "["
    for i, conv in enumerate([*head, *rest]):
        yield "\n  " if i == 0 else ",\n  "
        yield from write_document(conv, report, "  ")
        report.conversations += 1
    yield "\n]\n"


def is_document(item: Any) -> bool:
    return isinstance(item, list) or (isinstance(item, dict) and "messages" in item and "role" not in item)


def expect_end(events: Events) -> None:
    events.expect_end()


def _array_items(events: Events) -> Iterator[Any]:
    return events.array_items()


def stream(events: Events) -> Iterator[ConversationStream]:
    first = events.next_or_none()
    if first is None:
        raise FormatError("input", "empty input: expected JSON")
    _prefix, event, value = first
    if event == "start_array":
        yield from _stream_list(events)
    elif event == "start_map":
        yield from _stream_object(events)
    else:
        raise FormatError("input", f"expected a message list or an object with messages, got {json_type(value)}")


def _stream_list(events: Events) -> Iterator[ConversationStream]:
    items = _array_items(events)
    first = next(items, _END)
    if first is _END:
        expect_end(events)
        yield ConversationStream(Conversation(source_format=NAME), iter(()))
        return
    if is_document(first):
        for i, doc in enumerate([first] if first is not _END else []):
            yield ConversationStream.whole(read_document(doc, f"[{i}]"))
        for i, doc in enumerate(items, start=1):
            yield ConversationStream.whole(read_document(doc, f"[{i}]"))
        expect_end(events)
        return

    def messages() -> Iterator[Message]:
        legacy: dict[str, Any] = {}
        yield read_chat_message(first, "messages[0]", NAME, legacy)
        for i, item in enumerate(items, start=1):
            yield read_chat_message(item, f"messages[{i}]", NAME, legacy)
        expect_end(events)

    yield ConversationStream(Conversation(source_format=NAME), messages())


def _object_messages(events: Events, fields: dict[str, Any], conversation: Conversation) -> Iterator[Message]:
    legacy: dict[str, Any] = {}
    for i, item in enumerate(_array_items(events)):
        yield read_chat_message(item, f"messages[{i}]", NAME, legacy)
    # Keys after the messages (tools, model) complete the conversation once the messages are read.
    for _p2, ev2, key2 in events:
        if ev2 == "end_map":
            break
        _p3, ev3, val3 = next(events)
        fields[key2] = events.value(ev3, val3)
    expect_end(events)
    done = conversation_fields(fields, "")
    conversation.tools = done.get("tools")
    conversation.metadata = done["metadata"]


def _stream_object(events: Events) -> Iterator[ConversationStream]:
    fields: dict[str, Any] = {}
    for _prefix, event, key in events:
        if event == "end_map":
            break
        _p, ev, val = next(events)
        if key == "messages" and ev == "start_array" and "system" not in fields and "input" not in fields:
            conversation = make_conversation("input", source_format=NAME, **conversation_fields(fields, ""))
            yield ConversationStream(conversation, _object_messages(events, fields, conversation))
            return
        fields[key] = events.value(ev, val)
    expect_end(events)
    yield ConversationStream.whole(read_document(fields))


_END = object()
