"""AutoGen ``ChatCompletionContext.save_state()`` (``{"messages": [...]}``) and the ``AssistantAgentState`` wrapper
(``{"type": "AssistantAgentState", "llm_context": {...}}``).

A FunctionExecutionResultMessage becomes one ``tool`` message per result (``name`` and ``is_error`` kept);
writing groups consecutive results back into one. An AssistantMessage's ``thought`` is text emitted alongside the
calls: it becomes the content of a tool-call message (OpenAI's converter does the same), remembered in ``extra``
so the round trip is exact; on a plain answer it is the model's reasoning. ``source`` is the message's ``name``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
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
    format_extra,
    format_metadata,
    json_type,
    list_or_empty,
    make_conversation,
    make_message,
    need_dict,
    need_list,
    need_str,
    one_string,
    opt_bool,
    opt_str,
    report_conversation_losses,
    report_losses,
    settled,
    write_documents,
)

NAME = "autogen"
SPEC = FormatSpec(
    name=NAME,
    label="AutoGen model context",
    description="autogen-core ChatCompletionContext.save_state(), or an AssistantAgentState with llm_context.",
    extension="json",
    media_type="application/json",
)
TYPES = ("SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage")
HELD = frozenset({"name", "tool_name", "is_error", "reasoning"})


def _typed(messages: list[Any]) -> bool:
    sample = messages[:200]
    return bool(sample) and all(
        isinstance(m, dict) and isinstance(m.get("type"), str) and m["type"] in TYPES for m in sample
    )


def detect(doc: Any) -> bool:
    if isinstance(doc, dict):
        if isinstance(doc.get("llm_context"), dict):
            return True
        return isinstance(doc.get("messages"), list) and _typed(doc["messages"]) and "format" not in doc
    return isinstance(doc, list) and _typed(doc)


# --- reading ----------------------------------------------------------------------------------------------------

def _memo_extra(memo: dict[str, Any]) -> dict[str, Any]:
    return {NAME: memo} if memo else {}


def _user_content(value: Any, place: str) -> tuple[str | list[dict[str, Any]], dict[str, Any]]:
    if isinstance(value, str):
        return value, {}
    need_list(value, place)
    parts: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            parts.append({"type": "text", "text": item})
        elif isinstance(item, dict):
            parts.append(item)
        else:
            raise FormatError(at(place, i), f"expected a string or an image, got {json_type(item)}")
    return parts, {"parts": True}


def _rest(item: dict[str, Any], known: set[str]) -> dict[str, Any]:
    rest = {k: v for k, v in item.items() if k not in known}
    return {"fields": rest} if rest else {}


def _read_message(item: Any, place: str, previous: Message | None, state: dict[str, Any]) -> list[Message]:
    need_dict(item, place)
    kind = item.get("type")
    cplace = at(place, "content")
    if kind == "SystemMessage":
        content = need_str(item.get("content"), cplace)
        return [make_message(place, role="system", content=content,
                             extra=_memo_extra(_rest(item, {"content", "type"})))]
    if kind == "UserMessage":
        user_content, memo = _user_content(item.get("content"), cplace)
        source = opt_str(item.get("source"), at(place, "source"))
        memo.update(_rest(item, {"content", "source", "type"}))
        return [make_message(place, role="user", content=user_content, name=source, extra=_memo_extra(memo))]
    if kind == "AssistantMessage":
        source = opt_str(item.get("source"), at(place, "source"))
        thought = opt_str(item.get("thought"), at(place, "thought"))
        memo = _rest(item, {"content", "thought", "source", "type"})
        if "thought" not in item:
            memo["no_thought"] = True
        content = item.get("content")
        if isinstance(content, str):
            return [make_message(place, role="assistant", content=content, name=source, reasoning=thought,
                                 extra=_memo_extra(memo))]
        need_list(content, cplace)
        calls = []
        empty: list[int] = []
        state["pending"] = []
        for i, raw in enumerate(content):
            cp = at(cplace, i)
            need_dict(raw, cp)
            call_id = need_str(raw.get("id"), at(cp, "id"))
            if not call_id:
                # Some model clients leave call ids empty; AutoGen then pairs results with calls by position.
                call_id = f"autogen-empty-{state['index']}-{i}"
                empty.append(i)
                state["pending"].append(call_id)
            calls.append({"id": call_id,
                          "function": {"name": need_str(raw.get("name"), at(cp, "name")),
                                       "arguments": need_str(raw.get("arguments"), at(cp, "arguments"))}})
        if not calls:
            memo["empty_calls"] = True
        if empty:
            memo["empty_ids"] = empty
        if thought is not None:
            memo["thought"] = True
        return [make_message(place, role="assistant", content=thought, tool_calls=calls, name=source,
                             extra=_memo_extra(memo))]
    if kind == "FunctionExecutionResultMessage":
        results = need_list(item.get("content"), cplace)
        out: list[Message] = []
        for i, raw in enumerate(results):
            rp = at(cplace, i)
            need_dict(raw, rp)
            call_id = need_str(raw.get("call_id"), at(rp, "call_id"))
            memo = _rest(raw, {"content", "name", "call_id", "is_error"})
            if not call_id:
                pending = state.get("pending") or []
                call_id = pending.pop(0) if pending else f"autogen-empty-result-{state['index']}-{i}"
                memo["empty_call_id"] = True
            if not out and previous is not None and previous.role == "tool":
                memo["new_result_message"] = True  # two FERMs in a row: keep them apart when writing back
            if "is_error" not in raw:
                memo["no_is_error"] = True
            out.append(
                make_message(
                    rp,
                    role="tool",
                    tool_call_id=call_id,
                    content=need_str(raw.get("content"), at(rp, "content")),
                    name=opt_str(raw.get("name"), at(rp, "name")),
                    is_error=opt_bool(raw.get("is_error"), at(rp, "is_error")),
                    extra=_memo_extra(memo),
                )
            )
        if not out:
            raise FormatError(cplace, "a FunctionExecutionResultMessage with no results")
        return out
    shown = kind if isinstance(kind, str) else json_type(kind)
    raise FormatError(at(place, "type"), f"expected one of {', '.join(TYPES)}, got {shown!r}"[:160])


def read(doc: Any, place: str = "") -> list[Conversation]:
    meta: dict[str, Any] = {}
    if isinstance(doc, list):
        raw, mplace = doc, at(place, "messages")
        meta["list"] = True
    else:
        need_dict(doc, place or "input")
        context = doc
        cplace = place
        if "llm_context" in doc:
            cplace = at(place, "llm_context")
            context = need_dict(doc["llm_context"], cplace)
            meta["wrapper"] = {k: v for k, v in doc.items() if k != "llm_context"}
        if "messages" not in context:
            raise FormatError(cplace or "input", "expected an object with messages")
        raw = need_list(context["messages"], at(cplace, "messages"))
        mplace = at(cplace, "messages")
        rest = {k: v for k, v in context.items() if k != "messages"}
        if rest:
            meta["context"] = rest
    messages: list[Message] = []
    state: dict[str, Any] = {"pending": []}
    for i, item in enumerate(raw):
        state["index"] = i
        messages.extend(_read_message(item, at(mplace, i), messages[-1] if messages else None, state))
    return [make_conversation(place or "input", messages=messages, source_format=NAME,
                              metadata={NAME: meta} if meta else {})]


# --- writing ----------------------------------------------------------------------------------------------------

# Where a message's text goes in AutoGen: each holds one string (a UserMessage alone takes a list).
_KIND = {"system": "SystemMessage", "developer": "SystemMessage", "assistant": "AssistantMessage",
         "tool": "FunctionExecutionResult"}


def _text(message: Message, report: WriteReport) -> str:
    if isinstance(message.content, list) and any(p.get("type") != "text" for p in message.content):
        report.lose("non-text content parts", f"autogen {message.role} messages hold text only")
    return one_string(message, report, f"an autogen {_KIND[message.role]} holds one string")


def _user(message: Message, report: WriteReport) -> str | list[Any]:
    if not isinstance(message.content, list):
        return message.content or ""
    from_autogen = format_extra(message, NAME).get("parts")
    out: list[Any] = []
    for part in message.content:
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif from_autogen:
            out.append(part)
        else:
            report.lose("non-text content parts", "autogen keeps images in its own Image type; not converted")
    return out


def render(conversation: Conversation, report: WriteReport) -> Any:
    report_conversation_losses(report, conversation, frozenset())
    names = CallNames()

    def step(message: Message, items: list[dict[str, Any]]) -> None:
        memo = format_extra(message, NAME)
        report_losses(report, message, HELD, names)
        names.see(message)
        report.messages += 1
        fields = dict_or_empty(memo.get("fields"))
        if message.role in ("system", "developer"):
            if message.role == "developer":
                report.lose("the developer role", "autogen has SystemMessage only; written as one")
            if message.name:
                report.lose("name", "an autogen SystemMessage has no source")
            if message.reasoning is not None:
                report.lose("reasoning", "an autogen SystemMessage has no thought")
            items.append({"content": _text(message, report), "type": "SystemMessage", **fields})
        elif message.role == "user":
            if message.reasoning is not None:
                report.lose("reasoning", "an autogen UserMessage has no thought")
            items.append({"content": _user(message, report), "source": message.name or "user", "type": "UserMessage",
                          **fields})
        elif message.role == "assistant":
            item: dict[str, Any]
            if message.tool_calls or memo.get("empty_calls"):
                text = _text(message, report) if message.content is not None else None
                thought = text if text or memo.get("thought") else message.reasoning
                if text and message.reasoning is not None:
                    report.lose(
                        "reasoning", "an autogen AssistantMessage with calls has one thought, taken by its text"
                    )
                elif not text and message.reasoning is not None:
                    report.lose("reasoning", "written as the thought of an autogen AssistantMessage with calls, "
                                             "which reads back as the message's text")
                empty = list_or_empty(memo.get("empty_ids"))
                calls = [{"id": "" if k in empty and c.id.startswith("autogen-empty-") else c.id,
                          "arguments": c.function.arguments, "name": c.function.name}
                         for k, c in enumerate(message.tool_calls)]
                item = {"content": calls, "thought": thought}
            else:
                item = {"content": _text(message, report), "thought": message.reasoning}
            if memo.get("no_thought") and item["thought"] is None:
                del item["thought"]
            item["source"] = message.name or "assistant"
            item["type"] = "AssistantMessage"
            items.append({**item, **fields})
        else:
            call_id = "" if memo.get("empty_call_id") else message.tool_call_id
            result: dict[str, Any] = {"content": _text(message, report), "name": names.name_for(message) or "",
                                      "call_id": call_id}
            if not result["name"]:
                report.lose("the function name of a tool result",
                            "no call with its id precedes it and autogen requires one; written as \"\"")
            if message.is_error is not None or not memo.get("no_is_error"):
                result["is_error"] = message.is_error
            result.update(fields)
            last = items[-1] if items else None
            if (
                last is not None
                and last["type"] == "FunctionExecutionResultMessage"
                and not memo.get("new_result_message")
            ):
                last["content"].append(result)
            else:
                items.append({"content": [result], "type": "FunctionExecutionResultMessage"})
    items = settled(conversation.messages, step)
    meta = format_metadata(conversation, NAME)
    if meta.get("list"):
        return Streamed(items=items)
    context = Streamed(key="messages", items=items,
                       tail={k: v for k, v in (meta.get("context") or {}).items() if k != "messages"}
                       if isinstance(meta.get("context"), dict) else {})
    wrapper = meta.get("wrapper")
    if isinstance(wrapper, dict):
        return Streamed(head={k: v for k, v in wrapper.items() if k != "llm_context"}, key="llm_context", inner=context)
    return context


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    return write_documents(conversations, report, render)
