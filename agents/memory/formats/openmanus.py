"""OpenManus ``Memory.to_dict_list()``: Chat Completions dicts with None keys left out, ``name`` on tool results,
``content: ""`` on assistants that said nothing (with or without tool calls), and the non-standard
``base64_image``. The system prompt is normally
kept outside memory, so a file usually starts with the user."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agents.memory.schema import Conversation, Message

from . import openai
from .base import (
    CallNames,
    FormatSpec,
    Streamed,
    WriteReport,
    at,
    dict_or_empty,
    format_extra,
    make_conversation,
    need_list,
    one_string,
    report_conversation_losses,
    report_losses,
    write_documents,
)

NAME = "openmanus"
SPEC = FormatSpec(
    name=NAME,
    label="OpenManus memory",
    description="OpenManus Memory.to_dict_list(): OpenAI-style dicts with the tool name on results.",
    extension="json",
    media_type="application/json",
)
HELD = frozenset({"name", "tool_name"})
_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "base64_image"}


def detect(doc: Any) -> bool:
    """Only when clearly OpenManus: results carry names, nothing is null, tool-call assistants have string
    content. Anything less is read as openai (the two differ only there)."""
    if not isinstance(doc, list) or openai.chat_messages_of(doc) is None:
        return False
    return clearly(doc[:200])


def clearly(sample: list[Any]) -> bool:
    """The OpenManus marks in messages (the objects of the list; anything else is the reader's to report)."""
    sample = [m for m in sample if isinstance(m, dict)]
    if any("base64_image" in m for m in sample):
        return True
    tools = [m for m in sample if m.get("role") == "tool"]
    if not tools or not all(isinstance(m.get("name"), str) for m in tools):
        return False
    if any(v is None for m in sample for v in m.values()):
        return False
    callers = [m for m in sample if m.get("tool_calls")]
    return all(isinstance(m.get("content"), str) for m in callers)


def read_message(item: Any, place: str) -> Message:
    message = openai.read_chat_message(item, place, fmt=NAME)
    memo = dict(format_extra(message, NAME))
    fields = memo.pop("fields", {}) or {}
    image = fields.pop("base64_image", None)
    if image is not None:
        memo["base64_image"] = image
    if fields:
        memo["fields"] = fields
    extra = {k: v for k, v in message.extra.items() if k != NAME}
    if memo:
        extra[NAME] = memo
    return message.model_copy(update={"extra": extra})


def read(doc: Any, place: str = "") -> list[Conversation]:
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        # Memory.model_dump(): {"messages": [...], "max_messages": 100}
        items = doc["messages"]
        rest = {k: v for k, v in doc.items() if k != "messages"}
    else:
        items, rest = doc, {}
    need_list(items, place or "input")
    base = at(place, "messages")
    messages = [read_message(item, at(base, i)) for i, item in enumerate(items)]
    return [make_conversation(place or "input", messages=messages, source_format=NAME,
                              metadata={NAME: {"fields": rest}} if rest else {})]


def message_dict(message: Message, names: CallNames, report: WriteReport) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role if message.role != "developer" else "system"}
    content: Any = message.content
    if isinstance(content, list) and openai.text_parts(content):
        # OpenManus' Message.content is Optional[str]: text parts are written as the string it can load.
        content = one_string(message, report, "an openmanus message holds one string")
    if content is None and message.role == "assistant":
        # ToolCallAgent.think() stores `response.content or ""` whether the model called tools or not.
        content = ""
    if content is not None:
        out["content"] = content
    if message.tool_calls:
        out["tool_calls"] = [call.model_dump() for call in message.tool_calls]
    name = names.name_for(message) if message.role == "tool" else message.name
    if name:
        out["name"] = name
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    memo = format_extra(message, NAME)
    if memo.get("base64_image") is not None:
        out["base64_image"] = memo["base64_image"]
    fields = memo.get("fields")
    if isinstance(fields, dict):
        for key, value in fields.items():
            out.setdefault(key, value)
    return out


def render(conversation: Conversation, report: WriteReport) -> Any:
    report_conversation_losses(report, conversation, frozenset())
    names = CallNames()

    def items() -> Iterator[dict[str, Any]]:
        for message in conversation.messages:
            if message.role == "developer":
                report.lose("the developer role", "openmanus has system, user, assistant and tool; written as system")
            report_losses(report, message, HELD, names)
            names.see(message)
            report.messages += 1
            yield message_dict(message, names, report)

    # What the file held beside its messages, as reading kept it; a stored value of another shape (metadata edited
    # by hand, or by another tool) is not the format's and is left out.
    rest = dict_or_empty(dict_or_empty(conversation.metadata.get(NAME)).get("fields"))
    if rest:
        return Streamed(key="messages", items=items(), tail={k: v for k, v in rest.items() if k != "messages"})
    return Streamed(items=items())


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    return write_documents(conversations, report, render)


