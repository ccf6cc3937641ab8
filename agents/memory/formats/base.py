"""What every format module shares: the error type, the write report, shape checks that name the place, the
streamed JSON writer, and the small conversions (arguments, tool schemas, images) several formats need."""
from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agents.memory.schema import Conversation, Message, content_text, describe_validation_error


@dataclass
class ConversationStream:
    """A conversation's metadata (``conversation`` has no messages) and its messages, read as they are consumed.

    Keys that come after the messages in a streamed file (rare; memoryviz writes them first) are applied to
    ``conversation`` once ``messages`` is exhausted."""

    conversation: Conversation
    messages: Iterator[Message]

    @classmethod
    def whole(cls, conversation: Conversation) -> ConversationStream:
        return cls(conversation.model_copy(update={"messages": []}), iter(conversation.messages))


class FormatError(ValueError):
    """Input that cannot be read (or a conversation that cannot be written), naming the place.

    ``choose_format``: naming the format would let it be read (the text ends "name the format"); each interface
    adds where that is done (a command's option, a page's field)."""

    def __init__(self, place: str, detail: str, *, choose_format: bool = False) -> None:
        self.place = place
        self.detail = detail
        self.choose_format = choose_format
        super().__init__(f"{place}: {detail}" if place else detail)


@dataclass(frozen=True)
class FormatSpec:
    name: str
    label: str
    description: str
    extension: str
    media_type: str


@dataclass(frozen=True)
class SkippedConversation:
    index: int
    external_id: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "external_id": self.external_id, "reason": self.reason}


@dataclass
class WriteReport:
    """What a write produced and what the target format could not hold."""

    format: str
    conversations: int = 0
    messages: int = 0
    skipped: list[SkippedConversation] = field(default_factory=list)
    # (what, unit, reason) -> how many; kept as counts so a million messages make one line, not a million.
    losses: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def lose(self, what: str, reason: str, unit: str = "message", count: int = 1) -> None:
        key = (what, unit, reason)
        self.losses[key] = self.losses.get(key, 0) + count

    @property
    def dropped(self) -> list[str]:
        out = []
        for (what, unit, reason), n in self.losses.items():
            out.append(f"{what} on {n} {unit}{'' if n == 1 else 's'}: {reason}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "conversations": self.conversations,
            "messages": self.messages,
            "dropped": self.dropped,
            "skipped": [s.to_dict() for s in self.skipped],
        }


# --- places and shapes ------------------------------------------------------------------------------------------

def at(place: str, key: int | str) -> str:
    """``at("messages", 3)`` -> ``messages[3]``; ``at("messages[3]", "content")`` -> ``messages[3].content``."""
    if isinstance(key, int):
        return f"{place}[{key}]"
    return f"{place}.{key}" if place else key


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def dict_or_empty(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one: for what a memo or an optional key may hold."""
    return value if isinstance(value, dict) else {}


def list_or_empty(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def need_dict(value: Any, place: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FormatError(place, f"expected an object, got {json_type(value)}")
    return value


def need_list(value: Any, place: str) -> list[Any]:
    if not isinstance(value, list):
        raise FormatError(place, f"expected an array, got {json_type(value)}")
    return value


def need_str(value: Any, place: str) -> str:
    if not isinstance(value, str):
        raise FormatError(place, f"expected a string, got {json_type(value)}")
    return value


def opt_str(value: Any, place: str) -> str | None:
    return None if value is None else need_str(value, place)


def opt_bool(value: Any, place: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise FormatError(place, f"expected true, false or null, got {json_type(value)}")


def need_parts(value: Any, place: str) -> list[dict[str, Any]]:
    """A list of content parts (each an object)."""
    parts: list[dict[str, Any]] = need_list(value, place)
    for i, part in enumerate(parts):
        need_dict(part, at(place, i))
    return parts


def text_or_parts(value: Any, place: str) -> str | list[dict[str, Any]] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return need_parts(value, place)
    raise FormatError(place, f"expected a string or an array of content parts, got {json_type(value)}")


def make_message(place: str, **fields: Any) -> Message:
    try:
        return Message(**fields)
    except ValidationError as exc:
        raise validation_error(exc, place) from None


def make_conversation(place: str, **fields: Any) -> Conversation:
    try:
        return Conversation(**fields)
    except ValidationError as exc:
        raise validation_error(exc, place) from None


def validation_error(exc: ValidationError, place: str) -> FormatError:
    text = describe_validation_error(exc, place)
    where, _, what = text.partition(": ")
    return FormatError(where, what)


# --- conversions ------------------------------------------------------------------------------------------------

def dump_arguments(value: Any) -> str:
    """An arguments object as the JSON string OpenAI-style formats carry (the spacing json.dumps uses, which is
    also what AutoGen and the OpenAI SDK samples show)."""
    return json.dumps(value, ensure_ascii=False)


def load_arguments(text: str) -> dict[str, Any] | None:
    """The arguments string as an object, or None when it is not a JSON object."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class CallNames:
    """Function names by call id, learnt as the messages go by: formats that put the function name on a result
    (AutoGen, AgentScope, LangChain, OpenManus) need it when the source format did not carry it.

    Only the latest ``keep`` calls are remembered, so that writing a million messages stays in bounded memory;
    a result comes right after its call, or a few exchanges later at worst."""

    def __init__(self, keep: int = 4096) -> None:
        self._names: OrderedDict[str, str] = OrderedDict()
        self._keep = keep

    def see(self, message: Message) -> None:
        for call in message.tool_calls:
            self._names[call.id] = call.function.name
            self._names.move_to_end(call.id)
            if len(self._names) > self._keep:
                self._names.popitem(last=False)

    def name_for(self, message: Message) -> str | None:
        if message.name:
            return message.name
        return self._names.get(message.tool_call_id or "")

    def lost_name(self, message: Message) -> bool:
        """True when the result carries a name that the call does not give back (real information lost)."""
        return bool(message.name) and self._names.get(message.tool_call_id or "") != message.name


MESSAGE_FIELDS = ("name", "external_id", "created_at", "is_error", "reasoning", "usage", "marks")


def report_losses(report: WriteReport, message: Message, held: frozenset[str], names: CallNames | None = None) -> None:
    """Count every field the message carries that the target format has no place for."""
    fmt = report.format
    for field_name in MESSAGE_FIELDS:
        value = getattr(message, field_name)
        if value in (None, [], {}, ""):
            continue
        if field_name == "name" and message.role == "tool":
            # A result's function name comes back by joining its call, so it is only lost when it differs.
            if "tool_name" in held or names is None or not names.lost_name(message):
                continue
            report.lose("the function name of a tool result", f"{fmt} has no place for it and the call names another")
            continue
        if field_name not in held:
            report.lose(field_name, f"{fmt} cannot hold it")


def one_string(message: Message, report: WriteReport, reason: str) -> str:
    """The message's content as one string, for a target with no place for parts there. Several text parts are
    joined with newlines (as memoryviz shows them): the text the model reads changes, so the join is reported, with
    ``reason`` saying why the target needs one string."""
    content = message.content
    if isinstance(content, list) and sum(isinstance(p.get("text"), str) for p in content) > 1:
        report.lose("several text parts", f"{reason}; joined into one with newlines")
    return content_text(content)


CONVERSATION_FIELDS = ("external_id", "title", "started_at", "agent", "project", "tools", "annotations")


def report_conversation_losses(report: WriteReport, conversation: Conversation, held: frozenset[str]) -> None:
    for field_name in CONVERSATION_FIELDS:
        if field_name in held:
            continue
        value = getattr(conversation, field_name)
        if value in (None, [], ""):
            continue
        report.lose(field_name, f"{report.format} cannot hold it", unit="conversation")


def format_metadata(conversation: Conversation, fmt: str) -> dict[str, Any]:
    """The part of a conversation's metadata that one format keeps to write itself back (top-level keys)."""
    value = conversation.metadata.get(fmt)
    return value if isinstance(value, dict) else {}


def format_extra(message: Message, fmt: str) -> dict[str, Any]:
    value = message.extra.get(fmt)
    return value if isinstance(value, dict) else {}


def with_format_extra(extra: dict[str, Any], fmt: str, values: dict[str, Any]) -> dict[str, Any]:
    """``extra`` with ``values`` under the format's key (nothing added when there is nothing to remember)."""
    if not values:
        return extra
    return {**extra, fmt: values}


def peek_single(conversations: Iterable[Conversation]) -> tuple[list[Conversation], Iterator[Conversation], bool]:
    """The first conversation(s) and the rest, and whether there is exactly one: formats that hold one
    conversation per document write a bare document for one conversation and an array of documents for more."""
    it = iter(conversations)
    head: list[Conversation] = []
    for conv in it:
        head.append(conv)
        if len(head) == 2:
            break
    return head, it, len(head) == 1


@dataclass
class Streamed:
    """A JSON document written while it is produced, so that a million-message conversation never sits in
    memory as one document: the ``head`` keys, then ``key`` whose value is the array of ``items`` (or the nested
    document ``inner``), then the ``tail`` keys. Without ``key`` the document is the array itself. Written the way
    ``json.dumps(..., indent=2)`` writes the same value."""

    items: Iterable[Any] = ()
    key: str | None = None
    head: dict[str, Any] = field(default_factory=dict)
    inner: Streamed | None = None
    tail: dict[str, Any] = field(default_factory=dict)


def settled(messages: Iterable[Message], step: Any) -> Iterator[Any]:
    """Items built by ``step(message, out)``, yielded as soon as they can no longer change: a step may still
    add to the last item (results grouped into one message), never to earlier ones."""
    out: list[Any] = []
    for message in messages:
        step(message, out)
        while len(out) > 1:
            yield out.pop(0)
    yield from out


def _dumps(value: Any, level: int) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n" + "  " * level)


def write_value(value: Any, level: int = 0) -> Iterator[str]:
    """The value as JSON text, in pieces as it is produced (a ``Streamed`` document item by item)."""
    if not isinstance(value, Streamed):
        yield _dumps(value, level)
        return
    pad = "  " * level
    if value.key is None:
        first = True
        for item in value.items:
            yield ("[\n" if first else ",\n") + pad + "  " + _dumps(item, level + 1)
            first = False
        yield "[]" if first else "\n" + pad + "]"
        return
    first = True
    for key, item in [*value.head.items(), (value.key, None)]:
        yield ("{\n" if first else ",\n") + pad + "  " + json.dumps(key, ensure_ascii=False) + ": "
        first = False
        if key == value.key and item is None:
            yield from write_value(value.inner if value.inner is not None else Streamed(items=value.items), level + 1)
        else:
            yield _dumps(item, level + 1)
    for key, item in value.tail.items():
        yield ",\n" + pad + "  " + json.dumps(key, ensure_ascii=False) + ": " + _dumps(item, level + 1)
    yield "\n" + pad + "}"


def write_documents(conversations: Iterable[Conversation], report: WriteReport, render: Any) -> Iterator[str]:
    """One document per conversation: a bare document for one, an array of documents for several; each
    written as it is produced."""
    head, rest, single = peek_single(conversations)
    if not head:
        yield from write_value(render(Conversation(), report))
        report.conversations = 0
        report.messages = 0
        yield "\n"
        return
    if single:
        yield from write_value(render(head[0], report))
        report.conversations += 1
        yield "\n"
        return
    yield "["
    for i, conv in enumerate([*head, *rest]):
        yield "\n  " if i == 0 else ",\n  "
        yield from write_value(render(conv, report), 1)
        report.conversations += 1
    yield "\n]\n"


# --- tool schemas: Conversation.tools holds the Chat Completions shape -----------------------------------------

def chat_tool_from_flat(tool: Any, schema_key: str) -> Any:
    """``{"name", "description", <schema_key>}`` (Anthropic ``input_schema``; Responses ``parameters`` with
    ``type: function``) as a Chat Completions tool; anything else is kept as it is."""
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or schema_key not in tool:
        return tool
    allowed = {"name", "description", schema_key, "type"}
    if set(tool) - allowed or tool.get("type") not in (None, "function", "custom"):
        return tool
    if tool.get("type") == "custom":
        return tool
    fn: dict[str, Any] = {"name": tool["name"]}
    if "description" in tool:
        fn["description"] = tool["description"]
    fn["parameters"] = tool[schema_key]
    return {"type": "function", "function": fn}


def flat_tool_from_chat(tool: Any, schema_key: str, with_type: bool) -> Any:
    if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
        return tool
    fn = tool["function"]
    out: dict[str, Any] = {"type": "function"} if with_type else {}
    out["name"] = fn.get("name")
    if "description" in fn:
        out["description"] = fn["description"]
    out[schema_key] = fn.get("parameters", {"type": "object", "properties": {}})
    return out


# --- images: each format's own part, converted when written to another format ------------------------------------

def _data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a ``data:image/png;base64,...`` URL."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    media_type, _, data = url[5:].partition(";base64,")
    return media_type, data


def image_url_part(part: dict[str, Any]) -> dict[str, Any] | None:
    """An Anthropic ``image`` block or a Responses ``input_image`` part as a Chat Completions ``image_url`` part."""
    kind = part.get("type")
    if kind == "image" and isinstance(part.get("source"), dict):
        source = part["source"]
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            return {
                "type": "image_url",
                "image_url": {"url": f"data:{source.get('media_type', 'image/png')};base64,{source['data']}"},
            }
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return {"type": "image_url", "image_url": {"url": source["url"]}}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image: dict[str, Any] = {"url": part["image_url"]}
        if isinstance(part.get("detail"), str):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    return None


def _chat_image_url(part: dict[str, Any]) -> tuple[str, str | None] | None:
    if part.get("type") == "image_url":
        image = part.get("image_url")
        if isinstance(image, dict) and isinstance(image.get("url"), str):
            return image["url"], image.get("detail") if isinstance(image.get("detail"), str) else None
        if isinstance(image, str):
            return image, None
        return None
    converted = image_url_part(part)
    return _chat_image_url(converted) if converted else None


def anthropic_image_block(part: dict[str, Any]) -> dict[str, Any] | None:
    """A Chat Completions ``image_url`` part (or a Responses ``input_image``) as an Anthropic ``image`` block."""
    if part.get("type") == "image":
        return None
    found = _chat_image_url(part)
    if found is None:
        return None
    url, _detail = found
    data = _data_url(url)
    if data is not None:
        return {"type": "image", "source": {"type": "base64", "media_type": data[0], "data": data[1]}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def responses_image_part(part: dict[str, Any]) -> dict[str, Any] | None:
    """A Chat Completions ``image_url`` part (or an Anthropic ``image``) as a Responses ``input_image`` part."""
    if part.get("type") == "input_image":
        return None
    found = _chat_image_url(part)
    if found is None:
        return None
    url, detail = found
    return {"type": "input_image", "image_url": url, "detail": detail or "auto"}


def convert_parts(content: Any, convert: Any) -> Any:
    """Content with each part ``convert`` knows replaced (the others kept as they are)."""
    if not isinstance(content, list):
        return content
    out = []
    for part in content:
        converted = convert(part) if isinstance(part, dict) else None
        out.append(converted if converted is not None else part)
    return out
