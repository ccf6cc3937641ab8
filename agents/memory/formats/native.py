"""memoryviz's own JSON: versioned, lossless, several sessions per file.

``{"format": "memoryviz", "version": 2, "sessions": [{external_id, title, source_format, started_at, agent,
project, tools, metadata, messages: [every schema field], annotations: [{seq, label, color, comment, author,
created_at, updated_at}]}]}``. Written one message per line so that a big export streams and diffs well; reading
what was written and writing it again gives the same bytes.

Version 2 added ``annotations`` (reviewers' labels and comments, after the messages, written only when there are
some); version 1 files, which have none, read as before.

Version 3 added ``memory``, after the sessions, written only when there is some: the memory layers beyond the
message list (agents/memory/ledger.py), ``{"stores": [StoreIn without its records], "records": [{"store": key,
...RecordIn with its versions}], "recalls": [RecallIn], "snapshots": [SnapshotIn]}``, each item one line. Recalls,
versions and snapshots name their session by its ``external_id``. Read back, it is the same ``MemoryDocument``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from agents.memory.ledger import MemoryDocument, RecallIn, RecordIn, SnapshotIn, StoreIn
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
VERSION = 3
READS_VERSIONS = (1, 2, 3)
# What is written before the messages; annotations come after the messages they point at.
HEAD_KEYS = ("external_id", "title", "source_format", "started_at", "agent", "project", "tools", "metadata")
SESSION_KEYS = (*HEAD_KEYS, "annotations")
_TOP_KEYS = {"format", "version", "sessions", "memory"}
MEMORY_KEYS = ("stores", "records", "recalls", "snapshots")


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
            f"{', '.join(map(str, READS_VERSIONS[:-1]))} and {READS_VERSIONS[-1]}",
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

def read_memory(value: Any, place: str = "memory") -> MemoryDocument:
    """A version 3 file's ``memory`` section."""
    section = need_dict(value, place)
    unknown = sorted(set(section) - set(MEMORY_KEYS))
    if unknown:
        raise FormatError(at(place, unknown[0]), f"unknown key; valid: {', '.join(MEMORY_KEYS)}")
    document = MemoryDocument(format=NAME)
    stores = {}
    for i, item in enumerate(need_list(section.get("stores", []), at(place, "stores"))):
        store = _item(StoreIn, item, at(at(place, "stores"), i))
        if store.key in stores:
            raise FormatError(at(at(at(place, "stores"), i), "key"), f"a second store keyed {store.key!r}")
        stores[store.key] = store
        document.stores.append(store)
    for i, item in enumerate(need_list(section.get("records", []), at(place, "records"))):
        where = at(at(place, "records"), i)
        fields = dict(need_dict(item, where))
        key = fields.pop("store", None)
        if key not in stores:
            raise FormatError(at(where, "store"), f"no store keyed {json.dumps(key)[:60]} in this file")
        stores[key].records.append(_item(RecordIn, fields, where))
    document.recalls = [_item(RecallIn, item, at(at(place, "recalls"), i))
                        for i, item in enumerate(need_list(section.get("recalls", []), at(place, "recalls")))]
    for i, recall in enumerate(document.recalls):
        if recall.store is not None and recall.store not in stores:
            raise FormatError(at(at(at(place, "recalls"), i), "store"), f"no store keyed {recall.store!r}")
    document.snapshots = [_item(SnapshotIn, item, at(at(place, "snapshots"), i))
                          for i, item in enumerate(need_list(section.get("snapshots", []), at(place, "snapshots")))]
    return document


def _item(model: Any, item: Any, place: str) -> Any:
    need_dict(item, place)
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        raise validation_error(exc, place) from None


def stream(events: Events, keep_memory: Any = None) -> Iterator[ConversationStream]:
    """``keep_memory(value)`` is given a version 3 file's ``memory`` section when it is read (after the sessions)."""
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
        elif key == "memory":
            value = events.value(ev, val)
            if keep_memory is not None:
                keep_memory(value)
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


def write(conversations: Iterable[Conversation], report: WriteReport,
          memory: MemoryDocument | None = None) -> Iterator[str]:
    """``memory``: the memory layers, written after the sessions (records as its iterator gives them)."""
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
    yield "\n]" if count else "]"
    if memory is not None and not memory.is_empty():
        yield from _memory_chunks(memory)
    yield "}\n"


def _lines(key: str, items: Iterable[dict[str, Any]]) -> Iterator[str]:
    yield f'"{key}": ['
    n = 0
    for item in items:
        yield ("\n    " if n == 0 else ",\n    ") + _dumps(item)
        n += 1
    yield "\n  ]" if n else "]"


def _memory_chunks(memory: MemoryDocument) -> Iterator[str]:
    yield ', "memory": {\n  '
    yield from _lines("stores", (s.model_dump(mode="json", exclude={"records"}) for s in memory.stores))
    yield ",\n  "
    yield from _lines("records", ({"store": key, **r.model_dump(mode="json")} for key, r in memory.all_records()))
    yield ",\n  "
    yield from _lines("recalls", (r.model_dump(mode="json") for r in memory.recalls))
    yield ",\n  "
    yield from _lines("snapshots", (s.model_dump(mode="json") for s in memory.snapshots))
    yield "\n}"
