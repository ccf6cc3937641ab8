"""OpenAI fine-tuning JSON Lines: one ``{"messages": [...], "tools": [...]}`` object per line.

Writing checks each conversation's protocol first (a fine-tuning file with a broken chain is rejected by the
API): ``on_invalid="skip"`` leaves such conversations out and says so in the report, ``"stop"`` raises."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from agents.memory.schema import Conversation, Message

from . import openai
from .base import (
    FormatError,
    FormatSpec,
    SkippedConversation,
    WriteReport,
    at,
    format_metadata,
    make_conversation,
    need_dict,
    need_list,
    report_conversation_losses,
)

NAME = "openai_jsonl"
SPEC = FormatSpec(
    name=NAME,
    label="OpenAI fine-tuning JSONL",
    description="One conversation per line: {\"messages\": [...], \"tools\": [...]} (the fine-tuning format).",
    extension="jsonl",
    media_type="application/jsonl",
)
CONVERSATION_HELD = frozenset({"tools"})


def detect(doc: Any) -> bool:
    return False  # a JSON document is never JSON Lines; rows are told apart by detect_row


def detect_row(row: Any) -> bool:
    if not isinstance(row, dict) or not isinstance(row.get("messages"), list):
        return False
    if openai.chat_messages_of(row) is not None:
        return True
    # A row shaped like one (messages that look like chat messages) with a bad value in it: read as a row, so that
    # the error names the line and the place rather than the format being unknown. Anthropic rows stay Anthropic.
    objects = [m for m in row["messages"][:200] if isinstance(m, dict)]
    return (openai.loose_messages_of(row) is not None and "system" not in row
            and not openai.has_anthropic_blocks(objects))


def read_row(row: Any, place: str = "") -> Conversation:
    need_dict(row, place or "input")
    if "messages" not in row:
        raise FormatError(place or "input", "expected an object with messages")
    # Message keys are the Chat Completions ones, kept under extra["openai"] so openai and openai_jsonl share them.
    messages = openai.read_messages(row["messages"], at(place, "messages"), fmt=openai.NAME)
    tools = row.get("tools")
    if tools is not None:
        need_list(tools, at(place, "tools"))
        for i, tool in enumerate(tools):
            need_dict(tool, at(at(place, "tools"), i))
    rest = {k: v for k, v in row.items() if k not in {"messages", "tools"}}
    return make_conversation(place or "input", messages=messages, tools=tools, source_format=NAME,
                             metadata={NAME: {"fields": rest}} if rest else {})


def read(data: Any, place: str = "") -> list[Conversation]:
    """A list of parsed lines (or one line)."""
    if isinstance(data, dict):
        return [read_row(data, place)]
    need_list(data, place or "input")
    out = []
    for i, row in enumerate(data):
        try:
            out.append(read_row(row))
        except FormatError as exc:
            raise FormatError(f"line {i + 1}", str(exc)) from None
    return out


def _first_problem(messages: list[Message]) -> str | None:
    from agents.memory.chain import find_violations

    errors = [v for v in find_violations(messages) if v.severity == "error"]
    if not errors:
        return None
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{first.kind} at messages[{first.index}]: {first.message}{more}"


def write(conversations: Iterable[Conversation], report: WriteReport, *, on_invalid: str = "skip") -> Iterator[str]:
    for index, conversation in enumerate(conversations):
        # One line holds the whole conversation anyway; read the messages once (they may come from a database).
        messages = list(conversation.messages)
        problem = _first_problem(messages)
        if problem is not None:
            if on_invalid == "stop":
                raise FormatError(f"conversations[{index}]", f"breaks the tool-calling protocol: {problem}")
            report.skipped.append(SkippedConversation(index, conversation.external_id, problem))
            continue
        report_conversation_losses(report, conversation, CONVERSATION_HELD)
        row: dict[str, Any] = {"messages": list(openai.iter_chat_dicts(messages, report))}
        if conversation.tools is not None:
            row["tools"] = conversation.tools
        fields = format_metadata(conversation, NAME).get("fields")
        if isinstance(fields, dict):
            for key, value in fields.items():
                row.setdefault(key, value)
        yield json.dumps(row, ensure_ascii=False) + "\n"
        report.conversations += 1


