"""LangChain ``messages_to_dict()``: a list of ``{"type": ..., "data": model_dump}`` envelopes.

``args`` objects become argument strings (``invalid_tool_calls`` keep their raw string and come back out as
invalid calls), ``status`` is ``is_error``, ``usage_metadata`` is ``usage``, ``reasoning_content`` in
``additional_kwargs`` or reasoning/thinking content blocks are ``reasoning``. Everything else in ``data``
(``response_metadata``, ``artifact``, the rest of ``additional_kwargs``) is kept in ``extra`` and written back."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agents.memory.ledger import CompactionIn
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
    json_type,
    list_or_empty,
    load_arguments,
    make_conversation,
    make_message,
    need_dict,
    need_list,
    need_str,
    opt_str,
    report_conversation_losses,
    report_losses,
    text_or_parts,
    write_documents,
)

NAME = "langchain"
SPEC = FormatSpec(
    name=NAME,
    label="LangChain messages",
    description="langchain-core messages_to_dict(): a list of {type, data} envelopes.",
    extension="json",
    media_type="application/json",
)
_ROLE_OF = {
    "system": "system", "SystemMessageChunk": "system",
    "human": "user", "HumanMessageChunk": "user",
    "ai": "assistant", "AIMessageChunk": "assistant",
    "tool": "tool", "ToolMessageChunk": "tool",
}
_TYPE_OF = {"system": "system", "developer": "system", "user": "human", "assistant": "ai", "tool": "tool"}
_MAPPED = {"content", "name", "id", "tool_calls", "invalid_tool_calls", "usage_metadata", "tool_call_id", "status",
           "type", "additional_kwargs"}
_REASONING_BLOCKS = {"reasoning": "reasoning", "thinking": "thinking"}


def detect(doc: Any) -> bool:
    return (isinstance(doc, list) and bool(doc)
            and all(isinstance(e, dict) and isinstance(e.get("type"), str) and isinstance(e.get("data"), dict)
                    for e in doc[:200]))


# --- reading ----------------------------------------------------------------------------------------------------

def _split_reasoning(content: Any) -> tuple[Any, str | None]:
    """Content without reasoning/thinking blocks, and their text."""
    if not isinstance(content, list):
        return content, None
    texts: list[str] = []
    rest: list[Any] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        key = _REASONING_BLOCKS.get(kind) if isinstance(kind, str) else None
        if key is not None and isinstance(block.get(key), str):
            texts.append(block[key])
        else:
            rest.append(block)
    if not texts:
        return content, None
    return rest, "\n\n".join(texts)


def _read_calls(data: dict[str, Any], place: str, memo: dict[str, Any]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    raw_calls = data.get("tool_calls")
    extras: list[dict[str, Any]] = []
    if raw_calls is not None:
        need_list(raw_calls, at(place, "tool_calls"))
        for i, raw in enumerate(raw_calls):
            cp = at(at(place, "tool_calls"), i)
            need_dict(raw, cp)
            args = need_dict(raw.get("args"), at(cp, "args"))
            call_id = opt_str(raw.get("id"), at(cp, "id"))
            calls.append({"id": call_id or "", "function": {"name": need_str(raw.get("name"), at(cp, "name")),
                                                             "arguments": dump_arguments(args)}})
            extra = {k: v for k, v in raw.items() if k not in {"name", "args", "id", "type"}}
            if call_id is None:
                extra["null_id"] = True
            extras.append(extra)
    else:
        memo["no_tool_calls"] = True
    if any(extras):
        memo["tool_calls"] = extras
    invalid = data.get("invalid_tool_calls")
    if invalid is not None:
        need_list(invalid, at(place, "invalid_tool_calls"))
        for i, raw in enumerate(invalid):
            cp = at(at(place, "invalid_tool_calls"), i)
            need_dict(raw, cp)
            args = raw.get("args")
            calls.append({"id": opt_str(raw.get("id"), at(cp, "id")) or "",
                          "function": {"name": opt_str(raw.get("name"), at(cp, "name")) or "",
                                       "arguments": args if isinstance(args, str) else ""}})
        if invalid:
            memo["invalid_tool_calls"] = invalid
    else:
        memo["no_invalid_tool_calls"] = True
    return calls


def _read_entry(entry: Any, place: str) -> Message:
    need_dict(entry, place)
    kind = need_str(entry.get("type"), at(place, "type"))
    dplace = at(place, "data")
    return _read_data(kind, need_dict(entry.get("data"), dplace), place, dplace)


def message_from_dump(data: Any, place: str) -> Message:
    """One message as ``BaseMessage.model_dump()`` gives it: the ``data`` of an envelope, its ``type`` inside. That
    is how LangGraph keeps messages (a checkpoint's ``channel_values``, ``get_state_history`` values)."""
    need_dict(data, place)
    return _read_data(need_str(data.get("type"), at(place, "type")), data, place, place)


def _read_data(kind: str, data: dict[str, Any], place: str, dplace: str) -> Message:
    role = _ROLE_OF.get(kind)
    memo: dict[str, Any] = {}
    if kind in ("chat", "ChatMessageChunk"):
        raw_role = data.get("role")
        role = {"human": "user", "ai": "assistant"}.get(raw_role, raw_role) if isinstance(raw_role, str) else None
        if role not in ("system", "developer", "user", "assistant"):
            raise FormatError(
                at(dplace, "role"), f"a chat message role memoryviz does not know: {str(data.get('role'))[:40]!r}"
            )
        memo["type"] = kind
    elif role is None:
        raise FormatError(at(place, "type"), f"expected system, human, ai or tool, got {kind[:40]!r}")
    elif kind != _TYPE_OF[role]:
        memo["type"] = kind
    kwargs_seen = data.get("additional_kwargs")
    if role == "system" and isinstance(kwargs_seen, dict) and kwargs_seen.get("__openai_role__") == "developer":
        role = "developer"  # how langchain-openai keeps the developer role on a SystemMessage
    content = text_or_parts(data.get("content"), at(dplace, "content"))
    content, block_reasoning = _split_reasoning(content)
    if block_reasoning is not None:
        memo["content"] = data.get("content")
    kwargs = data.get("additional_kwargs", {})
    need_dict(kwargs if kwargs is not None else {}, at(dplace, "additional_kwargs"))
    reasoning = block_reasoning
    if isinstance(kwargs, dict) and "reasoning_content" in kwargs and block_reasoning is None:
        reasoning = need_str(kwargs["reasoning_content"], at(at(dplace, "additional_kwargs"), "reasoning_content"))
        memo["reasoning_kwarg"] = True
    rest = {k: v for k, v in data.items() if k not in _MAPPED}
    if isinstance(kwargs, dict):
        kept = {k: v for k, v in kwargs.items() if not (k == "reasoning_content" and memo.get("reasoning_kwarg"))}
        rest["additional_kwargs"] = kept
    elif "additional_kwargs" in data:
        rest["additional_kwargs"] = kwargs
    # Defaults LangChain always dumps are not worth remembering on every message.
    rest = {k: v for k, v in rest.items()
            if not ((k in ("additional_kwargs", "response_metadata") and v == {}) or (k == "artifact" and v is None))}
    if rest:
        memo["data"] = rest
    fields: dict[str, Any] = {
        "role": role, "content": content, "name": opt_str(data.get("name"), at(dplace, "name")),
        "external_id": opt_str(data.get("id"), at(dplace, "id")), "reasoning": reasoning,
    }
    if role == "assistant":
        fields["tool_calls"] = _read_calls(data, dplace, memo)
        usage = data.get("usage_metadata")
        if usage is not None:
            fields["usage"] = need_dict(usage, at(dplace, "usage_metadata"))
        if "usage_metadata" not in data:
            memo["no_usage"] = True
    elif role == "tool":
        fields["tool_call_id"] = need_str(data.get("tool_call_id"), at(dplace, "tool_call_id"))
        if fields["name"] is None:
            memo["no_name"] = True  # written back without one (results from other formats get their call's)
        status = data.get("status")
        if status not in (None, "success", "error"):
            raise FormatError(at(dplace, "status"), f"expected \"success\" or \"error\", got {json_type(status)}")
        fields["is_error"] = None if status is None else status == "error"
        if "status" not in data:
            memo["no_status"] = True
    return make_message(place, **fields, extra={NAME: memo} if memo else {})


def read(doc: Any, place: str = "") -> list[Conversation]:
    need_list(doc, place or "input")
    base = at(place, "messages")
    messages = [_read_entry(entry, at(base, i)) for i, entry in enumerate(doc)]
    return [make_conversation(place or "input", messages=messages, source_format=NAME)]


# --- writing ----------------------------------------------------------------------------------------------------

def _calls(message: Message, memo: dict[str, Any], data: dict[str, Any]) -> None:
    valid: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    extras = list_or_empty(memo.get("tool_calls"))
    for i, call in enumerate(message.tool_calls):
        args = load_arguments(call.function.arguments)
        if args is None:
            invalid.append({"name": call.function.name, "args": call.function.arguments, "id": call.id or None,
                            "error": None, "type": "invalid_tool_call"})
            continue
        extra = extras[i] if i < len(extras) and isinstance(extras[i], dict) else {}
        entry: dict[str, Any] = {"name": call.function.name, "args": args,
                                 "id": None if extra.get("null_id") and not call.id else call.id, "type": "tool_call"}
        entry.update({k: v for k, v in extra.items() if k != "null_id"})
        valid.append(entry)
    original = memo.get("invalid_tool_calls")
    if (
        isinstance(original, list)
        and len(original) == len(invalid)
        and all(
            isinstance(o, dict) and (o.get("id") or "") == (n["id"] or "")
            for o, n in zip(original, invalid, strict=True)
        )
    ):
        invalid = original
    if valid or not memo.get("no_tool_calls"):
        data["tool_calls"] = valid
    if invalid or not memo.get("no_invalid_tool_calls"):
        data["invalid_tool_calls"] = invalid


def entry_for(message: Message, names: CallNames, report: WriteReport) -> dict[str, Any]:
    memo = format_extra(message, NAME)
    kind = memo.get("type") if isinstance(memo.get("type"), str) else _TYPE_OF[message.role]
    rest = dict_or_empty(memo.get("data"))
    kwargs = (
        dict(rest.get("additional_kwargs") or {})
        if isinstance(rest.get("additional_kwargs", {}), dict)
        else rest.get("additional_kwargs")
    )
    content: Any = message.content if message.content is not None else ""
    original = memo.get("content")
    if message.reasoning is not None:
        if original is not None and _split_reasoning(original) == (message.content, message.reasoning):
            content = original
        elif isinstance(kwargs, dict):
            kwargs["reasoning_content"] = message.reasoning
    if message.role == "developer" and isinstance(kwargs, dict):
        kwargs.setdefault("__openai_role__", "developer")
    data: dict[str, Any] = {"content": content, "additional_kwargs": kwargs,
                            "response_metadata": rest.get("response_metadata", {}), "type": kind}
    if kind in ("chat", "ChatMessageChunk"):
        data["role"] = rest.get("role", message.role)
    if message.role == "tool" and not (memo.get("no_name") and message.name is None):
        data["name"] = names.name_for(message)
    else:
        data["name"] = message.name
    data["id"] = message.external_id
    if message.role == "assistant":
        _calls(message, memo, data)
        if message.usage is not None or not memo.get("no_usage"):
            data["usage_metadata"] = message.usage
    elif message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
        data["artifact"] = rest.get("artifact")
        if message.is_error is not None or not memo.get("no_status"):
            data["status"] = "error" if message.is_error else "success"
    for key, value in rest.items():
        data.setdefault(key, value)
    return {"type": kind, "data": data}


def render(conversation: Conversation, report: WriteReport) -> Any:
    report_conversation_losses(report, conversation, frozenset())
    names = CallNames()

    def entries() -> Iterator[dict[str, Any]]:
        for message in conversation.messages:
            held = {"name", "tool_name", "external_id", "reasoning"}
            if message.role == "assistant":
                held.add("usage")
            if message.role == "tool":
                held.add("is_error")
            report_losses(report, message, frozenset(held), names)
            names.see(message)
            report.messages += 1
            yield entry_for(message, names, report)

    return Streamed(items=entries())


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    return write_documents(conversations, report, render)


# What LangChain's SummarizationMiddleware (langchain 1.x, ``_build_new_messages``) puts in place of the messages it
# summarised: a HumanMessage with this prefix and ``additional_kwargs={"lc_source": "summarization"}``.
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"


def compaction_of(message: Message, seq: int, conversation: str | None) -> CompactionIn | None:
    """A summary message of LangChain's SummarizationMiddleware as a compaction placed on it: the summary that came
    in. What went out is not in the list (the middleware removed it from the state), so it is not said."""
    data = message.extra.get(NAME, {}).get("data", {})
    kwargs = data.get("additional_kwargs") if isinstance(data, dict) else None
    if not (isinstance(kwargs, dict) and kwargs.get("lc_source") == "summarization"):
        return None
    text = message.text
    return CompactionIn(
        external_id=f"langchain:summary:{message.external_id or seq}", session=conversation, seq=seq,
        at=message.created_at, summary=text.removeprefix(SUMMARY_PREFIX), source="summary")
