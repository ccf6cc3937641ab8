"""AgentScope 1.x: ``InMemoryMemory.state_dict()`` (``{"_compressed_summary", "content": [[msg, marks], ...]}``),
the older ``{"content": [msg, ...]}``, or a list of ``Msg.to_dict()``.

Tool results are ``role: "system"`` messages carrying ``tool_result`` blocks (the ReAct agent's convention): each
block becomes a ``tool`` message. ``thinking`` blocks become ``reasoning``, marks ``marks``, timestamps
``created_at`` (naive: AgentScope writes local time without a zone; memoryviz writes the zone of a time that has
one, ``+00:00``), the compressed summary conversation metadata."""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from agents.memory.schema import Conversation, Message

from .base import (
    CallNames,
    FormatError,
    FormatSpec,
    Streamed,
    WriteReport,
    at,
    dict_or_empty,
    dump_arguments,
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
    opt_str,
    report_conversation_losses,
    report_losses,
    settled,
    write_documents,
)

NAME = "agentscope"
SPEC = FormatSpec(
    name=NAME,
    label="AgentScope memory",
    description="AgentScope 1.x InMemoryMemory.state_dict() or a list of Msg.to_dict().",
    extension="json",
    media_type="application/json",
)
HELD = frozenset({"name", "tool_name", "external_id", "created_at", "reasoning", "marks"})
ROLES = ("user", "assistant", "system")
TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f"
_MSG_KEYS = {"id", "name", "role", "content", "metadata", "timestamp"}


def _is_msg(item: Any) -> bool:
    return (isinstance(item, dict) and item.get("role") in ROLES and "name" in item and "content" in item
            and ("id" in item or "timestamp" in item) and "type" not in item)


def full_msgs(items: list[Any]) -> bool:
    """Every object carries all of ``Msg.to_dict()``'s keys (id, name, role, content, metadata, timestamp): an
    AgentScope list, which no Chat Completions list is (its messages have neither ids nor timestamps)."""
    objects = [m for m in items if isinstance(m, dict)]
    return bool(objects) and all(m.keys() >= _MSG_KEYS for m in objects)


def looks_like_msg(item: Any) -> bool:
    """A Msg dict by its keys alone (whatever its role): for detection when nothing matches strictly."""
    return (isinstance(item, dict) and {"role", "name", "content"} <= set(item)
            and ("id" in item or "timestamp" in item) and "type" not in item)


def _is_entry(item: Any) -> bool:
    pair = isinstance(item, list) and len(item) == 2 and _is_msg(item[0]) and isinstance(item[1], list)
    return pair or _is_msg(item)


def detect(doc: Any) -> bool:
    if isinstance(doc, dict) and isinstance(doc.get("content"), list) and "role" not in doc:
        entries = doc["content"][:200]
        return (bool(entries) and all(_is_entry(e) for e in entries)) or (not entries and "_compressed_summary" in doc)
    return isinstance(doc, list) and bool(doc) and all(_is_msg(m) for m in doc[:200])


# --- reading ----------------------------------------------------------------------------------------------------

def format_timestamp(value: datetime) -> str:
    """AgentScope's ``%Y-%m-%d %H:%M:%S.mmm``, and the UTC offset when the time has one (``+00:00``): AgentScope
    keeps the timestamp as text and never parses it, and with the offset a re-import knows the instant instead of
    guessing a zone."""
    text = value.strftime(TIMESTAMP)[:-3]
    offset = value.utcoffset()
    if offset is None:
        return text
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def parse_timestamp(value: Any, place: str) -> tuple[datetime | None, str | None]:
    """(created_at, the original text when writing created_at back would not reproduce it, or when it is not
    a time at all)."""
    if value is None:
        return None, None
    text = need_str(value, place)
    for parse in (lambda s: datetime.strptime(s, TIMESTAMP), datetime.fromisoformat):
        try:
            parsed = parse(text)
        except ValueError:
            continue
        return parsed, (None if format_timestamp(parsed) == text else text)
    # Not a time memoryviz can read: the message still is, and the text is written back as it was.
    return None, text


def _marks(value: Any, place: str) -> list[str]:
    marks: list[str] = need_list(value, place)
    for i, mark in enumerate(marks):
        need_str(mark, at(place, i))
    return marks


def _read_msg(item: Any, place: str, marks: list[str]) -> list[Message]:
    need_dict(item, place)
    role = item.get("role")
    if role not in ROLES:
        shown = role if isinstance(role, str) else json_type(role)
        raise FormatError(at(place, "role"), f"expected user, assistant or system, got {shown!r}"[:120])
    msg_id = opt_str(item.get("id"), at(place, "id"))
    name = opt_str(item.get("name"), at(place, "name"))
    created_at, raw_ts = parse_timestamp(item.get("timestamp"), at(place, "timestamp"))
    memo: dict[str, Any] = {}
    if raw_ts is not None:
        memo["timestamp"] = raw_ts
    metadata = item.get("metadata")
    if metadata is not None:
        need_dict(metadata, at(place, "metadata"))
        if metadata:
            memo["metadata"] = metadata
    else:
        memo["no_metadata"] = True
    rest = {k: v for k, v in item.items() if k not in _MSG_KEYS}
    if rest:
        memo["fields"] = rest
    common = {"external_id": msg_id, "created_at": created_at, "marks": marks}
    content = item.get("content")
    cplace = at(place, "content")
    if content is None or isinstance(content, str):
        return [
            make_message(place, role=role, content=content, name=name, extra={NAME: memo} if memo else {}, **common)
        ]
    need_parts(content, cplace)
    if role == "system" and content and all(b.get("type") == "tool_result" for b in content):
        out: list[Message] = []
        for i, block in enumerate(content):
            bplace = at(cplace, i)
            call_id = need_str(block.get("id"), at(bplace, "id"))
            output = block.get("output")
            if output is not None and not isinstance(output, str):
                need_parts(output, at(bplace, "output"))
            bmemo: dict[str, Any] = dict(memo) if i == 0 else {"same_msg": True}
            if i == 0 and name != "system":
                bmemo["msg_name"] = name
            brest = {k: v for k, v in block.items() if k not in {"type", "id", "name", "output"}}
            if brest:
                bmemo["block"] = brest
            # The results of parallel calls are one Msg; each tool message after the first gets an id of its own
            # derived from it, so that a later save of the session (which repeats them) appends none twice and
            # loses none (an appending import skips a message it cannot match by id). Written back, they are
            # blocks of the first one's Msg again.
            fields = common if i == 0 else {"external_id": f"{msg_id}#{i}" if msg_id else None,
                                            "created_at": created_at, "marks": marks}
            out.append(make_message(bplace, role="tool", tool_call_id=call_id, content=output,
                                    name=opt_str(block.get("name"), at(bplace, "name")),
                                    extra={NAME: bmemo} if bmemo else {}, **fields))
        return out
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    call_memo: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    order: list[str] = []
    for i, block in enumerate(content):
        bplace = at(cplace, i)
        kind = block.get("type")
        if kind == "thinking":
            need_str(block.get("thinking"), at(bplace, "thinking"))
            thinking.append(block)
            order.append("thinking")
        elif kind == "tool_use" and role == "assistant":
            args = need_dict(block.get("input"), at(bplace, "input"))
            raw = block.get("raw_input")
            cm: dict[str, Any] = {
                k: v for k, v in block.items() if k not in {"type", "id", "name", "input", "raw_input"}
            }
            if isinstance(raw, str):
                arguments = raw
                cm["raw_input"] = True
                if load_arguments(raw) != args:
                    cm["input"] = args
            else:
                if raw is not None:
                    cm["raw_input_value"] = raw
                arguments = dump_arguments(args)
            calls.append(
                {
                    "id": need_str(block.get("id"), at(bplace, "id")),
                    "function": {"name": need_str(block.get("name"), at(bplace, "name")), "arguments": arguments},
                }
            )
            call_memo.append(cm)
            order.append("tool_use")
        else:
            parts.append(block)
            order.append("content")
    if thinking:
        memo["thinking"] = thinking
    if order != sorted(order, key=["thinking", "content", "tool_use"].index):
        memo["order"] = order
    if any(call_memo):
        memo["tool_use"] = call_memo
    if not content:
        memo["empty_blocks"] = True
    reasoning = "\n\n".join(b["thinking"] for b in thinking) if thinking else None
    return [make_message(place, role=role, content=parts or None, name=name, tool_calls=calls, reasoning=reasoning,
                         extra={NAME: memo} if memo else {}, **common)]


def read(doc: Any, place: str = "") -> list[Conversation]:
    meta: dict[str, Any] = {}
    if isinstance(doc, list):
        entries, eplace = doc, at(place, "messages")
        meta["list"] = True
    else:
        need_dict(doc, place or "input")
        eplace = at(place, "content")
        entries = need_list(doc.get("content"), eplace)
        if "_compressed_summary" in doc:
            meta["compressed_summary"] = doc["_compressed_summary"]
        else:
            meta["no_summary"] = True
        rest = {k: v for k, v in doc.items() if k not in {"content", "_compressed_summary"}}
        if rest:
            meta["fields"] = rest
    messages: list[Message] = []
    for i, entry in enumerate(entries):
        ep = at(eplace, i)
        if isinstance(entry, list):
            if len(entry) != 2:
                raise FormatError(ep, "expected a [message, marks] pair")
            msg, marks = entry[0], _marks(entry[1], at(ep, 1))
            mp = at(ep, 0)
        else:
            msg, marks, mp = entry, [], ep
            if not meta.get("list"):
                meta["bare"] = True
        messages.extend(_read_msg(msg, mp, marks))
    return [make_conversation(place or "input", messages=messages, source_format=NAME,
                              metadata={NAME: meta} if meta else {})]


# --- writing ----------------------------------------------------------------------------------------------------

def _blocks(content: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def _id(conversation_index: int, index: int, message: Message) -> str:
    # AgentScope gives every Msg an id; deterministic ones keep exports reproducible.
    name = f"memoryviz:{conversation_index}:{index}:{message.role}:{message.text}"
    return uuid.uuid5(uuid.NAMESPACE_URL, name).hex[:22]


def _timestamp(message: Message, memo: dict[str, Any]) -> str | None:
    raw = memo.get("timestamp")
    if message.created_at is None:
        return raw if isinstance(raw, str) else None
    if isinstance(raw, str):
        try:
            if parse_timestamp(raw, "")[0] == message.created_at:
                return raw
        except FormatError:
            pass
    return format_timestamp(message.created_at)


def _msg(message: Message, memo: dict[str, Any], role: str, name: str, content: Any, msg_id: str) -> dict[str, Any]:
    msg: dict[str, Any] = {"id": msg_id, "name": name, "role": role, "content": content}
    metadata = memo.get("metadata")
    if isinstance(metadata, dict) or not memo.get("no_metadata"):
        msg["metadata"] = metadata if isinstance(metadata, dict) else {}
    msg["timestamp"] = _timestamp(message, memo)
    if isinstance(memo.get("fields"), dict):
        msg.update(memo["fields"])
    return msg


def _assistant_content(message: Message, memo: dict[str, Any], report: WriteReport) -> Any:
    thinking = list_or_empty(memo.get("thinking"))
    if message.reasoning is None:
        thinking = []
    elif "\n\n".join(str(b.get("thinking")) for b in thinking if isinstance(b, dict)) != message.reasoning:
        thinking = [{"type": "thinking", "thinking": message.reasoning}]
    if (
        not thinking
        and not message.tool_calls
        and not isinstance(message.content, list)
        and not memo.get("empty_blocks")
    ):
        return message.content if message.content is not None else ""
    call_memo = list_or_empty(memo.get("tool_use"))
    uses = []
    for i, call in enumerate(message.tool_calls):
        cm = call_memo[i] if i < len(call_memo) and isinstance(call_memo[i], dict) else {}
        args = load_arguments(call.function.arguments)
        if "input" in cm and isinstance(cm["input"], dict):
            args = cm["input"]
        block: dict[str, Any] = {"type": "tool_use", "id": call.id, "name": call.function.name}
        if args is None:
            # AgentScope keeps what the model produced in raw_input next to the parsed input.
            block["input"] = {}
            block["raw_input"] = call.function.arguments
        else:
            block["input"] = args
            if cm.get("raw_input"):
                block["raw_input"] = call.function.arguments
            elif "raw_input_value" in cm:
                block["raw_input"] = cm["raw_input_value"]
        block.update({k: v for k, v in cm.items() if k not in {"raw_input", "input", "raw_input_value"}})
        uses.append(block)
    queues = {"thinking": list(thinking), "content": _blocks(message.content), "tool_use": uses}
    order = memo.get("order")
    if (
        isinstance(order, list)
        and all(isinstance(k, str) for k in order)
        and sorted(order) == sorted(k for k, q in queues.items() for _ in q)
    ):
        return [queues[kind].pop(0) for kind in order]
    return queues["thinking"] + queues["content"] + queues["tool_use"]


def render_with_index(conversation: Conversation, report: WriteReport, conversation_index: int) -> Any:
    report_conversation_losses(report, conversation, frozenset())
    names = CallNames()
    counter = iter(range(1 << 62))

    def step(message: Message, entries: list[list[Any]]) -> None:
        memo = format_extra(message, NAME)
        if memo.get("sys_prompt"):
            # A session file's agent prompt (agentscope_session), which AgentScope keeps in the agent: written into
            # the memory, the agent would send it twice.
            report.lose("the agent's system prompt", "AgentScope keeps it in the agent (_sys_prompt), not in its "
                                                     "memory; not written")
            return
        i = next(counter)
        report_losses(report, message, HELD, names)
        names.see(message)
        report.messages += 1
        msg_id = message.external_id or _id(conversation_index, i, message)
        if message.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "id": message.tool_call_id,
                                     "name": names.name_for(message) or "",
                                     "output": message.content if message.content is not None else ""}
            if isinstance(memo.get("block"), dict):
                block.update(memo["block"])
            last = entries[-1][0] if entries else None
            if (memo.get("same_msg") and last is not None and last["role"] == "system"
                    and isinstance(last["content"], list) and last["content"]
                    and last["content"][-1].get("type") == "tool_result"):
                last["content"].append(block)
                return
            name = memo.get("msg_name")
            if not isinstance(name, str):
                name = "system"
            entries.append([_msg(message, memo, "system", name, [block], msg_id), list(message.marks)])
            return
        role = message.role
        if role == "developer":
            role = "system"
            report.lose("the developer role", "agentscope has user, assistant and system; written as system")
        name = message.name or role
        content = _assistant_content(message, memo, report)
        entries.append([_msg(message, memo, role, name, content, msg_id), list(message.marks)])
    entries = settled(conversation.messages, step)
    meta = format_metadata(conversation, NAME)
    if meta.get("list") or meta.get("bare"):
        entries = (e[0] for e in entries)
    if meta.get("list"):
        return Streamed(items=entries)
    head: dict[str, Any] = {}
    if not meta.get("no_summary"):
        head["_compressed_summary"] = meta.get("compressed_summary", "")
    fields = dict_or_empty(meta.get("fields"))
    return Streamed(head=head, key="content", items=entries,
                    tail={k: v for k, v in fields.items() if k not in {"content", "_compressed_summary"}})


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    counter = iter(range(1 << 62))
    return write_documents(conversations, report, lambda conv, rep: render_with_index(conv, rep, next(counter)))
