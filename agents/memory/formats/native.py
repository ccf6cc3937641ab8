"""memoryviz's own JSON: versioned, lossless, several sessions per file.

``{"format": "memoryviz", "version": 2, "sessions": [{external_id, title, source_format, started_at, agent,
project, tools, metadata, messages: [every schema field], annotations: [{seq, label, color, comment, author,
created_at, updated_at}]}]}``. Written one message per line so that a big export streams and diffs well; reading
what was written and writing it again gives the same bytes.

Version 2 added ``annotations`` (reviewers' labels and comments, after the messages, written only when there are
some); version 1 files, which have none, read as before.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from agents.memory.schema import Conversation, Message

from .base import (
    ConversationStream,
    FormatError,
    FormatSpec,
    WriteReport,
    at,
    json_type,
    make_conversation,
    need_dict,
    need_list,
    validation_error,
)
from .json_input import Events

NAME = "native"
SPEC = FormatSpec(
    name=NAME,
    label="memoryviz JSON",
    description="memoryviz's own versioned JSON: every field of every message, several sessions per file.",
    extension="json",
    media_type="application/json",
)
VERSION = 2
READS_VERSIONS = (1, 2)
# What is written before the messages; annotations come after the messages they point at.
HEAD_KEYS = ("external_id", "title", "source_format", "started_at", "agent", "project", "tools", "metadata")
SESSION_KEYS = (*HEAD_KEYS, "annotations")
_TOP_KEYS = {"format", "version", "sessions"}


def detect(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == "memoryviz"


def _check_header(doc: dict[str, Any], place: str) -> None:
    if doc.get("format") != "memoryviz":
        raise FormatError(at(place, "format"), f"expected \"memoryviz\", got {json.dumps(doc.get('format'))[:40]}")
    version = doc.get("version")
    if version not in READS_VERSIONS or isinstance(version, bool):
        raise FormatError(
            at(place, "version"),
            f"version {json.dumps(version)[:20]} is not supported; this memoryviz reads versions "
            f"{' and '.join(map(str, READS_VERSIONS))}",
        )
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise FormatError(
            at(place, unknown[0]), f"unknown key; a version {version} file has {', '.join(sorted(_TOP_KEYS))}"
        )


def read_message(item: Any, place: str) -> Message:
    need_dict(item, place)
    try:
        return Message.model_validate(item)
    except ValidationError as exc:
        raise validation_error(exc, place) from None


def _session_fields(item: dict[str, Any], place: str) -> dict[str, Any]:
    unknown = sorted(set(item) - set(SESSION_KEYS) - {"messages"})
    if unknown:
        raise FormatError(at(place, unknown[0]), f"unknown session key; valid: {', '.join(SESSION_KEYS)}, messages")
    return {k: item[k] for k in SESSION_KEYS if k in item}


def read_session(item: Any, place: str) -> Conversation:
    need_dict(item, place)
    fields = _session_fields(item, place)
    raw = need_list(item.get("messages", []), at(place, "messages"))
    messages = [read_message(m, at(at(place, "messages"), i)) for i, m in enumerate(raw)]
    conversation = make_conversation(place, messages=messages, **fields)
    _check_annotations(conversation, len(messages), place)
    return conversation


def _check_annotations(conversation: Conversation, count: int, place: str) -> None:
    for i, annotation in enumerate(conversation.annotations):
        if annotation.seq is not None and annotation.seq >= count:
            raise FormatError(at(at(at(place, "annotations"), i), "seq"),
                              f"no message #{annotation.seq}; the session has {count} (null: the whole session)")


def read(doc: Any, place: str = "") -> list[Conversation]:
    need_dict(doc, place or "input")
    _check_header(doc, place)
    sessions = need_list(doc.get("sessions"), at(place, "sessions"))
    return [read_session(s, at(at(place, "sessions"), i)) for i, s in enumerate(sessions)]


# --- streaming --------------------------------------------------------------------------------------------------

def stream(events: Events) -> Iterator[ConversationStream]:
    first = events.next_or_none()
    if first is None or first[1] != "start_map":
        raise FormatError("input", f"expected a memoryviz object, got {json_type(first[2]) if first else 'nothing'}")
    header: dict[str, Any] = {}
    saw_sessions = False
    for _prefix, event, key in events:
        if event == "end_map":
            break
        _p, ev, val = next(events)
        if key == "sessions":
            if ev != "start_array":
                raise FormatError("sessions", f"expected an array, got {json_type(events.value(ev, val))}")
            saw_sessions = True
            if "format" in header:
                _check_header({**header, "sessions": []}, "")
            yield from _sessions(events)
        else:
            header[key] = events.value(ev, val)
    if events.next_or_none() is not None:
        raise FormatError("input", "invalid JSON: more data after the document")
    _check_header({**header, "sessions": []}, "")
    if not saw_sessions:
        raise FormatError("sessions", "missing")


def _sessions(events: Events) -> Iterator[ConversationStream]:
    for index, (_prefix, event, value) in enumerate(events):
        if event == "end_array":
            return
        place = f"sessions[{index}]"
        if event != "start_map":
            raise FormatError(place, f"expected an object, got {json_type(events.value(event, value))}")
        fields: dict[str, Any] = {}
        streamed: ConversationStream | None = None
        for _p, ev, key in events:
            if ev == "end_map":
                break
            _p2, ev2, val2 = next(events)
            if key == "messages" and ev2 == "start_array":
                conversation = make_conversation(place, **_session_fields(fields, place))
                streamed = ConversationStream(conversation, _messages(events, place, fields, conversation))
                yield streamed
                # Whatever the consumer left unread is read (and checked) before the next session.
                for _ in streamed.messages:
                    pass
                break
            fields[key] = events.value(ev2, val2)
        if streamed is None:
            yield ConversationStream.whole(read_session(fields, place))
    raise FormatError("sessions", "invalid JSON: the input ends inside the sessions array")


def _messages(events: Events, place: str, fields: dict[str, Any], conversation: Conversation) -> Iterator[Message]:
    for i, (_prefix, event, value) in enumerate(events):
        if event == "end_array":
            break
        yield read_message(events.value(event, value), f"{place}.messages[{i}]")
    # Session keys after the messages complete the conversation.
    for _p, ev, key in events:
        if ev == "end_map":
            break
        _p2, ev2, val2 = next(events)
        fields[key] = events.value(ev2, val2)
    done = make_conversation(place, **_session_fields(fields, place))
    for key in SESSION_KEYS:
        setattr(conversation, key, getattr(done, key))
    _check_annotations(conversation, i, place)


# --- writing ----------------------------------------------------------------------------------------------------

# json.dumps(value, ensure_ascii=False) makes an encoder per call; one shared encoder writes the same text.
_dumps = json.JSONEncoder(ensure_ascii=False).encode


def _message_dicts(messages: Iterable[Message]) -> Iterator[dict[str, Any]]:
    """Each message's ``model_dump(mode="json")``, or what the sequence gives as those (``json_dicts()``: a
    stored session's messages read from their rows, which need no model in between)."""
    made = getattr(messages, "json_dicts", None)
    if callable(made):
        return iter(made())
    return (message.model_dump(mode="json") for message in messages)


def write(conversations: Iterable[Conversation], report: WriteReport) -> Iterator[str]:
    yield f'{{"format": "memoryviz", "version": {VERSION}, "sessions": ['
    count = 0
    for conversation in conversations:
        head = conversation.model_dump(mode="json", include=set(HEAD_KEYS))
        text = json.dumps({k: head[k] for k in HEAD_KEYS}, ensure_ascii=False)
        yield ("\n  " if count == 0 else ",\n  ") + text[:-1] + ', "messages": ['
        n = 0
        for message in _message_dicts(conversation.messages):
            yield ("\n    " if n == 0 else ",\n    ") + _dumps(message)
            n += 1
        yield "\n  ]" if n else "]"
        if conversation.annotations:
            # After the messages they point at, one per line, as the messages are.
            yield ', "annotations": [' + ",".join(
                "\n    " + json.dumps(annotation.model_dump(mode="json"), ensure_ascii=False)
                for annotation in conversation.annotations
            ) + "\n  ]"
        yield "}"
        report.messages += n
        count += 1
    report.conversations = count
    yield "\n]}\n" if count else "]}\n"
