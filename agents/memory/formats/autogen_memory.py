"""AutoGen memory: a ``ListMemory`` component (``memory.dump_component()``), ``TaskResult`` dumps
(``result.model_dump(mode="json")``: ``{"messages": [...], "stop_reason"}``) with their ``MemoryQueryEvent``s, or an
array of these.

- A ``ListMemory`` component is a store of kind ``list``: each ``MemoryContent`` a record, in order (ListMemory has no
  ids: a record's ``external_id`` is its position, ``"0"``, ``"1"``, ...); its text is the content as AutoGen renders
  it into the prompt (``str(content)``: a dict in Python's repr), its value the content as dumped, the ``mime_type``
  (and AutoGen's own ``metadata``) in its metadata. One ``ADD`` version each: ListMemory keeps no history.
- A ``TaskResult`` is a conversation: the list the agent sent its model, as ``AssistantAgent`` builds its model
  context from the same steps (a ``TextMessage`` of the user a user message, the agent's tool calls and results, its
  answers; a ``ThoughtEvent`` the thought of the agent's next message), read by the ``autogen`` message reader. Each
  ``MemoryQueryEvent`` is the ``SystemMessage`` ``ListMemory.update_context`` appended after the user message
  (``"\\nRelevant memory content (in chronological order):\\n1. ..."``: what the model received,
  tests/samples/memory/autogen/llm_calls.json), and a recall carried by it: ``placement="message"``,
  ``persisted=True`` (it stays in the model context and is sent again on every later call), no query (ListMemory
  ignores it), its items the contents, matched to a ``ListMemory`` component's records when the document holds one.
  The conversation's ``external_id`` is the first message's id. ``ToolCallSummaryMessage`` (the reply AutoGen builds
  from tool results without a model call) and streaming or team events are not in the model context: left out, and
  noted.

``recalls_of(conversation)`` finds the same memory ``SystemMessage``s in a conversation read by the ``autogen``
reader (``save_state``: they are in ``llm_context``, one per run), items parsed from the numbered lines.
``write`` gives a ``ListMemory`` component that ``ListMemory.load_component`` loads.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agents.memory.ledger import (
    MemoryDocument,
    RecallIn,
    RecallItemIn,
    RecordIn,
    RecordIndex,
    StoreIn,
    VersionIn,
    match_items,
)
from agents.memory.schema import Conversation

from . import autogen
from .base import (
    FormatError,
    FormatSpec,
    WriteReport,
    at,
    json_type,
    make_conversation,
    need_dict,
    need_list,
    need_str,
    opt_str,
)
from .json_input import check_depth

NAME = "autogen_memory"
SPEC = FormatSpec(
    name=NAME,
    label="AutoGen memory",
    description="AutoGen ListMemory component, or TaskResult messages with MemoryQueryEvents",
    extension="json",
    media_type="application/json",
)

PROVIDER = "autogen_core.memory.ListMemory"
MEMORY_HEADER = "\nRelevant memory content (in chronological order):\n"
DEFAULT_NAME = "default_list_memory"
# What AssistantAgent never puts into its model context.
_OUTSIDE_CONTEXT = frozenset({"ToolCallSummaryMessage", "ModelClientStreamingChunkEvent", "UserInputRequestedEvent",
                              "SelectSpeakerEvent", "SelectorEvent", "CodeGenerationEvent", "CodeExecutionEvent"})
_TEXT_TYPES = frozenset({"TextMessage", "StopMessage", "HandoffMessage", "StructuredMessage", "MultiModalMessage"})
_AGENT_EVENTS = frozenset({"MemoryQueryEvent", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ThoughtEvent",
                           "ToolCallSummaryMessage"})


# --- detection ----------------------------------------------------------------------------------------------------

def _is_component(data: Any) -> bool:
    if not isinstance(data, dict) or data.get("component_type") != "memory":
        return False
    provider = data.get("provider")
    return isinstance(provider, str) and (provider == PROVIDER or provider.endswith(".ListMemory")) and isinstance(
        data.get("config"), dict)


def _is_task_result(data: Any) -> bool:
    if not isinstance(data, dict) or "stop_reason" not in data or not isinstance(data.get("messages"), list):
        return False
    messages = data["messages"][:200]
    return all(isinstance(m, dict) and isinstance(m.get("type"), str) and "source" in m for m in messages)


def detect(data: Any) -> bool:
    if isinstance(data, list):
        return bool(data) and all(_is_component(d) or _is_task_result(d) for d in data[:200])
    return _is_component(data) or _is_task_result(data)


# --- reading ------------------------------------------------------------------------------------------------------

BINARY = "application/octet-stream"


def render(content: Any, mime_type: str | None = None) -> str:
    """A MemoryContent's content as ListMemory puts it into the prompt: ``str(content)``. Read from JSON, a dict is
    the dict AutoGen held, so its repr is the same. Bytes (``MemoryMimeType.BINARY``) were dumped as their UTF-8
    text: AutoGen rendered them ``b'...'`` (a component loaded back holds a str, rendered plain)."""
    if isinstance(content, str):
        return str(content.encode("utf-8", "surrogatepass")) if mime_type == BINARY else content
    return str(content)


def read(data: Any, *, name: str | None = None) -> MemoryDocument:
    check_depth(data, "input")
    items = data if isinstance(data, list) else [data]
    document = MemoryDocument(format=NAME)
    places = [at("input", i) if isinstance(data, list) else "input" for i in range(len(items))]
    for item, place in zip(items, places, strict=True):
        if _is_component(item):
            document.stores.append(_read_component(item, place, document))
    if isinstance(data, list) and not data:
        raise FormatError("input", "an empty array: no ListMemory component nor TaskResult")
    for item, place in zip(items, places, strict=True):
        if _is_component(item):
            continue
        if not isinstance(item, dict) or not isinstance(item.get("messages"), list):
            raise FormatError(place, f"expected a ListMemory component or a TaskResult, got {json_type(item)}"
                              if not isinstance(item, dict) else "expected a ListMemory component or a TaskResult")
        _read_task_result(item, place, document)
    return document


def _read_component(data: dict[str, Any], place: str, document: MemoryDocument) -> StoreIn:
    config = need_dict(data.get("config"), at(place, "config"))
    name = opt_str(config.get("name"), at(at(place, "config"), "name")) or DEFAULT_NAME
    cplace = at(at(place, "config"), "memory_contents")
    contents = need_list(config.get("memory_contents", []), cplace)
    records = [_record(item, at(cplace, i), i) for i, item in enumerate(contents)]
    keys = {s.key for s in document.stores}
    key, n = f"autogen:{name}", 2
    while key in keys:
        key, n = f"autogen:{name}#{n}", n + 1
    return StoreIn(key=key, name=name, kind="list", source_format=NAME, external_id=name, records=records)


def _content_fields(item: Any, place: str) -> tuple[Any, dict[str, Any]]:
    need_dict(item, place)
    if "content" not in item:
        raise FormatError(at(place, "content"), "missing")
    content = item["content"]
    if content is None:
        raise FormatError(at(place, "content"), "expected a string, bytes, an object or an image, got null")
    mime = need_str(item.get("mime_type"), at(place, "mime_type"))
    metadata: dict[str, Any] = {"mime_type": mime}
    if item.get("metadata") is not None:
        metadata["metadata"] = need_dict(item["metadata"], at(place, "metadata"))
    return content, metadata


def _record(item: Any, place: str, index: int) -> RecordIn:
    content, metadata = _content_fields(item, place)
    text = render(content, metadata["mime_type"])
    return RecordIn(external_id=str(index), text=text, value=content, metadata=metadata,
                    versions=[VersionIn(op="ADD", text=text, value=content, order=index)])


def _read_task_result(data: dict[str, Any], place: str, document: MemoryDocument) -> None:
    mplace = at(place, "messages")
    raw = data["messages"]
    agents: set[str] = set()
    for i, item in enumerate(raw):
        need_dict(item, at(mplace, i))
        kind = need_str(item.get("type"), at(at(mplace, i), "type"))
        source = opt_str(item.get("source"), at(at(mplace, i), "source"))
        if source is not None and (kind in _AGENT_EVENTS or item.get("models_usage") is not None):
            agents.add(source)
    context: list[dict[str, Any]] = []  # autogen LLMMessages, as AssistantAgent adds them to its model context
    origin: list[tuple[dict[str, Any], str]] = []  # the event each came from, and its place
    memory_events: list[tuple[int, dict[str, Any], str]] = []
    thought: dict[str, str] = {}
    skipped: dict[str, int] = {}
    for i, item in enumerate(raw):
        iplace = at(mplace, i)
        kind = item["type"]
        source = item.get("source")
        cplace = at(iplace, "content")
        content = item.get("content")
        if kind == "MemoryQueryEvent":
            contents = need_list(content, cplace)
            fields = [_content_fields(c, at(cplace, k)) for k, c in enumerate(contents)]
            lines = [f"{k}. {render(c, m['mime_type'])}" for k, (c, m) in enumerate(fields, 1)]
            memory_events.append((len(context), item, iplace))
            context.append({"type": "SystemMessage", "content": MEMORY_HEADER + "\n".join(lines) + "\n"})
        elif kind == "ThoughtEvent":
            thought[str(source)] = need_str(content, cplace)
            continue
        elif kind == "ToolCallRequestEvent":
            calls = [_fields(c, at(cplace, k), ("id", "arguments", "name"))
                     for k, c in enumerate(need_list(content, cplace))]
            context.append({"type": "AssistantMessage", "content": calls, "thought": thought.pop(str(source), None),
                            "source": source})
        elif kind == "ToolCallExecutionEvent":
            results = need_list(content, cplace)
            if not results:
                raise FormatError(cplace, "a ToolCallExecutionEvent with no results")
            context.append({"type": "FunctionExecutionResultMessage", "content": [
                {**_fields(r, at(cplace, k), ("content", "name", "call_id")),
                 **({"is_error": r["is_error"]} if isinstance(r.get("is_error"), bool) else {})}
                for k, r in enumerate(results)]})
        elif kind in _TEXT_TYPES:
            text = _text_of(kind, content, cplace)
            if source in agents:
                context.append({"type": "AssistantMessage", "content": text if isinstance(text, str)
                                else "\n".join(t for t in text if isinstance(t, str)),
                                "thought": thought.pop(str(source), None), "source": source})
            else:
                context.append({"type": "UserMessage", "content": text, "source": source})
        else:
            skipped[kind] = skipped.get(kind, 0) + 1
            continue
        origin.append((item, iplace))
    for kind, n in skipped.items():
        why = "not in the model context" if kind in _OUTSIDE_CONTEXT else "not a kind of message memoryviz reads"
        document.notes.append(f"{place}: {n} {kind} left out ({why})")
    if not context:
        return
    conversation = autogen.read({"messages": context}, place)[0]
    messages = []
    position = 0
    seq_of: list[int] = []
    for llm, (item, iplace) in zip(context, origin, strict=True):
        count = len(llm["content"]) if llm["type"] == "FunctionExecutionResultMessage" else 1
        seq_of.append(position)
        for k in range(count):
            message = conversation.messages[position + k]
            update: dict[str, Any] = {}
            msg_id = opt_str(item.get("id"), at(iplace, "id"))
            if msg_id:
                update["external_id"] = msg_id if k == 0 else f"{msg_id}:{k}"
            update["created_at"] = _time(item.get("created_at"), at(iplace, "created_at"))
            if k == 0 and isinstance(item.get("models_usage"), dict):
                update["usage"] = item["models_usage"]
            if k == 0 and isinstance(item.get("metadata"), dict) and item["metadata"]:
                update["extra"] = {**message.extra, NAME: {"metadata": item["metadata"]}}
            messages.append(message.model_copy(update=update))
        position += count
    first_id = next((m.external_id for m in messages if m.external_id), None)
    conversation = make_conversation(place, messages=messages, external_id=first_id,
                                     agent=sorted(agents)[0] if len(agents) == 1 else None, source_format=NAME,
                                     metadata={NAME: {"stop_reason": data.get("stop_reason")}})
    document.conversations.append(conversation)
    if document.agent is None and conversation.agent:
        document.agent = conversation.agent
    lists = [s for s in document.stores if s.kind == "list"]
    for index, item, iplace in memory_events:
        seq = seq_of[index]
        cplace = at(iplace, "content")
        items = [RecallItemIn(text=render(c, meta["mime_type"]), rank=k, metadata=meta)
                 for k, (c, meta) in enumerate((_content_fields(c, at(cplace, j - 1))
                                                for j, c in enumerate(item["content"], 1)), 1)]
        store = _store_for(items, lists)
        if store is not None:
            items = _match(items, store)
        document.recalls.append(RecallIn(
            session=conversation.external_id, seq=seq, store=store.key if store else None, placement="message",
            persisted=True, at=messages[seq].created_at, items=items,
            external_id=opt_str(item.get("id"), at(iplace, "id"))))


def _fields(item: Any, place: str, keys: tuple[str, ...]) -> dict[str, str]:
    need_dict(item, place)
    return {key: need_str(item.get(key), at(place, key)) for key in keys}


def _text_of(kind: str, content: Any, place: str) -> str | list[Any]:
    if kind == "MultiModalMessage":
        parts = need_list(content, place)
        return [p for p in parts if isinstance(p, (str, dict))]
    if kind == "StructuredMessage":
        return json.dumps(content, ensure_ascii=False) if not isinstance(content, str) else content
    return need_str(content, place)


def _time(value: Any, place: str) -> datetime | None:
    text = opt_str(value, place)
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise FormatError(place, f"expected an ISO 8601 time, got {text[:40]!r}") from None


def _store_for(items: Sequence[RecallItemIn], lists: Sequence[StoreIn]) -> StoreIn | None:
    """The ListMemory the recalled contents came from: the only one, or the one holding every item's text."""
    if len(lists) == 1:
        return lists[0]
    for store in lists:
        texts = {r.text for r in store.records}
        if items and all(i.text in texts for i in items):
            return store
    return None


def _match(items: list[RecallItemIn], store: StoreIn) -> list[RecallItemIn]:
    # ListMemory.update_context sends every content, in order: item k is record k when the texts agree.
    records = store.records
    if len(items) == len(records) and all(i.text == r.text for i, r in zip(items, records, strict=True)):
        return [i.model_copy(update={"record": r.external_id, "version": 1}) for i, r in
                zip(items, records, strict=True)]
    matched = match_items(items, RecordIndex.of(records))
    return [i.model_copy(update={"version": 1}) if i.record else i for i in matched]


_NUMBERED = re.compile(r"(\d+)\. ")


def memory_items(text: str) -> list[RecallItemIn] | None:
    """The items of a ListMemory memory message, or None when ``text`` is not one. A content whose text spans
    lines keeps its lines: a new item starts only at the next number."""
    if not text.startswith(MEMORY_HEADER):
        return None
    body = text[len(MEMORY_HEADER):]
    body = body.removesuffix("\n")
    items: list[str] = []
    for line in body.split("\n"):
        found = _NUMBERED.match(line)
        if found and int(found.group(1)) == len(items) + 1:
            items.append(line[found.end():])
        elif items:
            items[-1] += "\n" + line
        else:
            return None
    return [RecallItemIn(text=t, rank=k) for k, t in enumerate(items, 1)]


def recalls_of(conversation: Conversation) -> list[RecallIn]:
    """The memory ``SystemMessage``s ListMemory appended to an AutoGen model context (a ``save_state`` read by the
    ``autogen`` reader) as recalls: persisted (they stay in ``llm_context`` and are sent again; after two runs it
    holds two), the store unknown (the state does not name the memory)."""
    out = []
    for seq, message in enumerate(conversation.messages):
        if message.role != "system" or not isinstance(message.content, str):
            continue
        items = memory_items(message.content)
        if items is None:
            continue
        out.append(RecallIn(session=conversation.external_id, seq=seq, placement="message", persisted=True,
                            at=message.created_at, items=items))
    return out


# --- writing ------------------------------------------------------------------------------------------------------

def write(document: MemoryDocument, report: WriteReport) -> Any:
    """A ListMemory component of the document's first store (a ``list`` store if there is one): its active records
    in order, each as the MemoryContent it was (an AutoGen record) or as text."""
    stores = sorted(document.stores, key=lambda s: s.kind != "list")
    if not stores:
        raise FormatError("input", "no memory store to write as a ListMemory")
    store = stores[0]
    for other in stores[1:]:
        report.lose(f"store {other.name}", "a ListMemory component holds one list", unit="store")
    if document.conversations:
        report.lose("conversations", "a ListMemory component holds memory contents only", unit="conversation",
                    count=len(document.conversations))
    if document.recalls:
        report.lose("recalls", "a ListMemory component holds memory contents only", unit="recall",
                    count=len(document.recalls))
    if document.snapshots:
        report.lose("snapshots", "a ListMemory component holds memory contents only", unit="snapshot",
                    count=len(document.snapshots))
    records = [r for key, r in document.all_records() if key == store.key]
    if all(r.external_id.isdigit() for r in records):
        records.sort(key=lambda r: int(r.external_id))
    contents = []
    for record in records:
        if record.state != "active":
            report.lose(f"{record.state} records", "ListMemory keeps current contents only", unit="record")
            continue
        if len(record.versions) > 1:
            report.lose("record history", "ListMemory keeps the current content only", unit="record")
        mime = record.metadata.get("mime_type")
        own = store.source_format == NAME and isinstance(mime, str) and record.value is not None
        item: dict[str, Any] = ({"content": record.value, "mime_type": mime} if own
                                else {"content": record.text, "mime_type": "text/plain"})
        metadata = record.metadata.get("metadata") if own else {
            k: v for k, v in record.metadata.items() if k != "mime_type"}
        if metadata:
            item["metadata"] = metadata
        contents.append(item)
    return {"provider": PROVIDER, "component_type": "memory", "version": 1, "component_version": 1,
            "description": "Simple chronological list-based memory implementation.", "label": "ListMemory",
            "config": {"name": store.name, "memory_contents": contents}}
