"""LangGraph checkpoints: a ``SqliteSaver`` database, or ``get_state_history`` (and ``CheckpointTuple``s) as JSON.

LangGraph keeps a whole state at every step: the ``checkpoints`` table holds one row per step (``thread_id``,
``checkpoint_ns`` (a subgraph's own namespace), ``checkpoint_id``, ``parent_checkpoint_id``, the serializer's
``type`` and the ``checkpoint`` blob, ``metadata`` as JSON: ``source``, ``step``, ``parents``), and ``writes`` the
pending writes of the tasks that ran from a checkpoint (the interrupts left waiting among them).

- Every checkpoint is a **snapshot**: external_id its ``checkpoint_id`` (qualified by thread and namespace only in a
  file where an id repeats), parent the ``parent_checkpoint_id``, step ``metadata.step``, taken_at the checkpoint's
  ``ts``, format_version its ``v``, and as value ``{"thread_id", "checkpoint_ns", "checkpoint", "metadata",
  "pending_writes"}``: the decoded checkpoint (``channel_values``, ``channel_versions``, ``versions_seen``, ...), its
  metadata, and its writes (``task_id``, ``task_path``, ``idx``, ``channel``, ``value``), verbatim but decoded.
- The latest checkpoint of each thread (and namespace) gives a **conversation**: its ``messages`` channel, read by the
  ``langchain`` reader (``message_from_dump``); external_id the thread id (``<thread>|<namespace>`` for a
  subgraph's). Each snapshot points to it: seq is the last message it holds, matched by id (a message the latest
  state no longer has, removed or replaced: the last one it shares with it).
- ``get_state_history`` JSON (a list of StateSnapshots, newest first, values with messages as ``model_dump``) and
  ``CheckpointTuple`` JSON (``{config, checkpoint, metadata, parent_config, pending_writes}``) are read the same way,
  each entry the snapshot's value as the file has it.

The blob is msgpack as LangGraph's ``JsonPlusSerializer`` writes it, with ext types for what JSON cannot say
(``langgraph/checkpoint/serde/jsonplus.py``: 0 a constructor with one argument (uuid, set, Decimal, Enum, ...), 1
with positional arguments (timedelta, date, Path, Send), 2 with keyword arguments (dataclasses, namedtuples, Item,
time), 3 a class method (datetime.fromisoformat), 4 and 5 pydantic v1 and v2 models, 6 a numpy array, 7 a delta
channel's snapshot). LangGraph imports the class each one names and calls it; memoryviz never does: each becomes a
plain dict ``{"__type__": "module.Name", ...}`` (a model's or dataclass's fields, or ``value``/``args``/``method``),
bytes ``{"__bytes__": base64}``, keys that are not strings their JSON text. A checkpoint LangGraph pickled (its
``pickle_fallback``) is refused by name, never unpickled. Sizes are bounded: a blob of at most ``MAX_BLOB`` bytes,
``MAX_CONTAINERS`` arrays and maps, ``MAX_EXT_DEPTH`` ext values inside each other (msgpack itself bounds nesting).
Decoding is one pass over the blob (linear): a checkpoint of 10,000 messages decodes in well under a second.
"""
from __future__ import annotations

import base64
import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgpack

from agents.memory.ledger import MemoryDocument, SnapshotIn
from agents.memory.schema import Conversation, Message

from .base import FormatError, FormatSpec, at, json_type, make_conversation, need_dict
from .json_input import check_depth
from .langchain import compaction_of, message_from_dump

NAME = "langgraph_checkpoints"
SPEC = FormatSpec(
    name=NAME,
    label="LangGraph checkpoints",
    description="LangGraph SqliteSaver database, or get_state_history as JSON",
    extension="json",
    media_type="application/json",
)

TABLES = frozenset({"checkpoints", "writes"})
_CHECKPOINT_COLUMNS = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint",
                       "metadata")
_WRITE_COLUMNS = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value")

MAX_BLOB = 128 * 1024 * 1024
MAX_CONTAINERS = 5_000_000
MAX_EXT_DEPTH = 64
# How far back a snapshot's messages are searched for one the thread's latest state still holds.
_MATCH_BACK = 1000

# JsonPlusSerializer's ext codes (langgraph/checkpoint/serde/jsonplus.py).
EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6
EXT_DELTA_SNAPSHOT = 7


# --- decoding: msgpack into plain values, nothing imported ------------------------------------------------------

class _TooBig(Exception):
    pass


def _bytes(value: bytes) -> dict[str, str]:
    return {"__bytes__": base64.b64encode(value).decode("ascii")}


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8", errors="backslashreplace")
    return json.dumps(key, ensure_ascii=False, default=str)


_STR = frozenset({str})


class _Decoder:
    """One blob's decoding: hooks that keep every value plain and count what they build. Maps are built by msgpack
    and checked (``object_hook``, the fast way); a map whose key is an array, which no dict can hold, has the blob
    decoded again pair by pair (``pairs``)."""

    def __init__(self, pairs: bool = False) -> None:
        self.containers = 0
        self.depth = 0
        self.pairs = pairs

    def _map(self, value: dict[Any, Any]) -> dict[str, Any]:
        self.containers += 1
        if self.containers > MAX_CONTAINERS:
            raise _TooBig(f"more than {MAX_CONTAINERS:,} arrays and maps")
        if value and set(map(type, value)) - _STR:
            value = {_key(k): v for k, v in value.items()}
        if bytes in set(map(type, value.values())):
            value = {k: _bytes(v) if type(v) is bytes else v for k, v in value.items()}
        return value

    def _pairs(self, pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
        return self._map({_key(k): v for k, v in pairs})

    def _list(self, items: list[Any]) -> list[Any]:
        self.containers += 1
        if self.containers > MAX_CONTAINERS:
            raise _TooBig(f"more than {MAX_CONTAINERS:,} arrays and maps")
        if bytes in set(map(type, items)):
            return [_bytes(v) if type(v) is bytes else v for v in items]
        return items

    def _ext(self, code: int, data: bytes) -> Any:
        if not EXT_CONSTRUCTOR_SINGLE_ARG <= code <= EXT_DELTA_SNAPSHOT:
            return {"__ext__": code, "data": _bytes(data)}  # not LangGraph's: kept as it is
        self.depth += 1
        try:
            if self.depth > MAX_EXT_DEPTH:
                raise _TooBig(f"ext values nested more than {MAX_EXT_DEPTH} deep")
            inner = self.unpack(data)
        finally:
            self.depth -= 1
        return _numpy(inner) if code == EXT_NUMPY_ARRAY else _plain(code, inner)

    def unpack(self, data: bytes) -> Any:
        hooks: dict[str, Any] = {"object_pairs_hook": self._pairs} if self.pairs else {"object_hook": self._map}
        value = msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True, timestamp=2,
                                list_hook=self._list, ext_hook=self._ext, **hooks)
        return _bytes(value) if type(value) is bytes else value


def _name(tup: list[Any]) -> str | None:
    if len(tup) >= 2 and isinstance(tup[0], str) and isinstance(tup[1], str):
        return f"{tup[0]}.{tup[1]}"
    return None


def _plain(code: int, tup: Any) -> Any:
    """An ext value as a plain dict naming its class (never looked up)."""
    if code == EXT_DELTA_SNAPSHOT:
        return {"__type__": "langgraph.checkpoint.serde.types._DeltaSnapshot", "value": tup}
    name = _name(tup) if isinstance(tup, list) and len(tup) >= 3 else None
    if name is None:
        return {"__ext__": code, "value": tup}
    payload = tup[2]
    if code in (EXT_CONSTRUCTOR_KW_ARGS, EXT_PYDANTIC_V1, EXT_PYDANTIC_V2) and isinstance(payload, dict):
        return {"__type__": name, **{k: v for k, v in payload.items() if k != "__type__"}}
    if code == EXT_CONSTRUCTOR_POS_ARGS:
        return {"__type__": name, "args": payload}
    if code == EXT_METHOD_SINGLE_ARG:
        return {"__type__": name, "method": tup[3] if len(tup) > 3 else None, "value": payload}
    return {"__type__": name, "value": payload}


def _numpy(meta: Any) -> Any:
    if isinstance(meta, list) and len(meta) == 4:
        dtype, shape, order, data = meta
        return {"__type__": "numpy.ndarray", "dtype": dtype, "shape": shape, "order": order, "data": data}
    return {"__ext__": EXT_NUMPY_ARRAY, "value": meta}


def decode_msgpack(data: bytes, place: str) -> Any:
    """LangGraph's msgpack as plain values (see the module's docstring); FormatError naming ``place``."""
    if len(data) > MAX_BLOB:
        raise FormatError(place, f"a value of {len(data):,} bytes, more than the {MAX_BLOB:,} memoryviz reads")
    try:
        try:
            return _Decoder().unpack(data)
        except TypeError as exc:
            if "unhashable" not in str(exc):
                raise
            return _Decoder(pairs=True).unpack(data)
    except _TooBig as exc:
        raise FormatError(place, f"msgpack with {exc}") from None
    except FormatError:
        raise
    except (ValueError, TypeError, msgpack.exceptions.ExtraData, msgpack.exceptions.StackError) as exc:
        raise FormatError(place, f"not msgpack LangGraph reads: {exc or type(exc).__name__}") from None
    except RecursionError:
        raise FormatError(place, "msgpack nested too deeply") from None


def decode_typed(kind: Any, data: Any, place: str) -> Any:
    """A value as LangGraph's ``serde.loads_typed((type, blob))`` would read it, but plain: ``msgpack``, ``json``
    (checkpoints written before msgpack), ``null``, ``bytes``, ``bytearray``. A pickled value is refused: unpickling
    runs code the file chooses."""
    if kind == "null":
        return None
    if not isinstance(data, bytes):
        if isinstance(data, str) and kind == "json":
            data = data.encode("utf-8")
        else:
            raise FormatError(place, f"expected a blob for serialization type {str(kind)[:40]!r}, got "
                                     f"{json_type(data)}")
    if kind == "msgpack":
        return decode_msgpack(data, place)
    if kind in ("bytes", "bytearray"):
        return _bytes(data)
    if kind == "json":
        return _json(data, place)
    if kind == "pickle":
        raise FormatError(place, "a pickled value (LangGraph's pickle_fallback): memoryviz never unpickles, which "
                                 "would run code the file names")
    if isinstance(kind, str) and "+" in kind:
        raise FormatError(place, f"an encrypted value ({kind[:40]!r}): save the checkpoints without "
                                 "EncryptedSerializer to read them")
    raise FormatError(place, f"an unknown serialization type {str(kind)[:40]!r}")


def _json(data: bytes, place: str) -> Any:
    if len(data) > MAX_BLOB:
        raise FormatError(place, f"a value of {len(data):,} bytes, more than the {MAX_BLOB:,} memoryviz reads")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        raise FormatError(place, "not JSON") from None
    check_depth(value, place)
    return value


def _metadata(data: Any, place: str) -> dict[str, Any]:
    """The metadata column: JSON text (langgraph-checkpoint-sqlite 3.x), else msgpack as older savers wrote."""
    if data is None:
        return {}
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, bytes):
        raise FormatError(place, f"expected JSON text, got {json_type(data)}")
    try:
        value = _json(data, place)
    except FormatError:
        value = decode_msgpack(data, place)
    return need_dict(value, place)


# --- messages, conversations, snapshots ---------------------------------------------------------------------------

_CLASS_TYPES = {"HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system",
                "ChatMessage": "chat", "FunctionMessage": "function", "HumanMessageChunk": "HumanMessageChunk",
                "AIMessageChunk": "AIMessageChunk", "ToolMessageChunk": "ToolMessageChunk",
                "SystemMessageChunk": "SystemMessageChunk", "ChatMessageChunk": "ChatMessageChunk"}


def _message_dump(item: Any, place: str) -> dict[str, Any]:
    """A message of the messages channel as ``model_dump()`` fields: a decoded model (``__type__`` and its fields),
    a ``json`` checkpoint's LangChain constructor (``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"],
    "kwargs"}``) or a ``messages_to_dict`` envelope."""
    data = need_dict(item, place)
    if data.get("lc") in (1, 2) and data.get("type") == "constructor" and isinstance(data.get("kwargs"), dict):
        ids = data.get("id")
        cls = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else ""
        return {"type": _CLASS_TYPES.get(cls, cls), **data["kwargs"]}
    if isinstance(data.get("data"), dict) and isinstance(data.get("type"), str) and "content" not in data:
        return {**data["data"], "type": data["type"]}
    fields = {k: v for k, v in data.items() if k != "__type__"}
    if "type" not in fields and isinstance(data.get("__type__"), str):
        fields["type"] = _CLASS_TYPES.get(data["__type__"].rsplit(".", 1)[-1], "")
    return fields


def _messages(values: Any) -> list[dict[str, Any]] | None:
    """The ``messages`` channel's items as decoded, or None when the state has none (or a ``messages`` key that holds
    no messages: a state of the graph's own)."""
    if not isinstance(values, dict) or "messages" not in values:
        return None
    raw = values["messages"]
    if isinstance(raw, dict) and str(raw.get("__type__")).endswith("._DeltaSnapshot"):
        raw = raw.get("value")
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        return None
    return raw


def _conversation(thread: str, ns: str, key: str, latest: str, items: list[dict[str, Any]] | None,
                  place: str) -> Conversation:
    messages: list[Message] = []
    mplace = at(place, "messages")
    for i, item in enumerate(items or []):
        messages.append(message_from_dump(_message_dump(item, at(mplace, i)), at(mplace, i)))
    started = next((m.created_at for m in messages if m.created_at), None)
    return make_conversation(place, messages=messages, external_id=key, title=thread, source_format=NAME,
                             started_at=started,
                             metadata={NAME: {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": latest}})


def _message_id(item: dict[str, Any]) -> str:
    for holder in (item, item.get("kwargs"), item.get("data")):
        if isinstance(holder, dict) and isinstance(holder.get("id"), str):
            message_id: str = holder["id"]
            return message_id
    return ""


def _last_ids(items: list[dict[str, Any]] | None) -> list[str]:
    """The ids of the last messages (newest first), as far back as a snapshot is matched: a checkpoint's messages
    are not read further (linear in what is matched, not in the list)."""
    if not items:
        return []
    return [_message_id(item) for item in reversed(items[-_MATCH_BACK:])]


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _step(metadata: dict[str, Any]) -> int | None:
    step = metadata.get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


@dataclass
class _Thread:
    """The snapshots of one thread and namespace, waiting for its latest messages to give them their seq."""

    thread: str
    ns: str
    key: str
    place: str
    snapshots: list[tuple[SnapshotIn, list[str]]] = field(default_factory=list)
    latest: str = ""
    latest_messages: list[dict[str, Any]] | None = None


def _finish(thread: _Thread, document: MemoryDocument, unmatched: list[int]) -> None:
    if thread.latest_messages is None and not any(ids for _, ids in thread.snapshots):
        document.snapshots.extend(snapshot for snapshot, _ in thread.snapshots)
        return
    conversation = _conversation(thread.thread, thread.ns, thread.key, thread.latest, thread.latest_messages,
                                 thread.place)
    document.conversations.append(conversation)
    document.compactions.extend(c for seq, m in enumerate(conversation.messages)
                                if (c := compaction_of(m, seq, conversation.external_id)) is not None)
    seq_of = {m.external_id: i for i, m in enumerate(conversation.messages) if m.external_id}
    for snapshot, ids in thread.snapshots:
        seq = None
        for back, message_id in enumerate(ids):
            if message_id in seq_of:
                seq = seq_of[message_id]
                if back:
                    unmatched[0] += 1
                break
        else:
            if ids:
                unmatched[0] += 1
        document.snapshots.append(snapshot.model_copy(update={"session": thread.key, "seq": seq}))


def _thread_key(thread: str, ns: str) -> str:
    return thread if not ns else f"{thread}|{ns}"


def _unmatched_note(document: MemoryDocument, unmatched: int) -> None:
    if unmatched:
        document.notes.append(f"{unmatched} checkpoint(s) hold messages their thread's latest state no longer has "
                              "(removed or replaced): each points to the last message it shares with it")


# --- the SQLite database ----------------------------------------------------------------------------------------

def _columns(db: sqlite3.Connection, table: str, wanted: tuple[str, ...]) -> set[str]:
    try:
        cursor = db.execute(f'SELECT * FROM "{table}" LIMIT 0')
    except sqlite3.DatabaseError as exc:
        raise FormatError(table, f"cannot be read: {exc}") from None
    have = {d[0] for d in cursor.description or ()}
    missing = [c for c in wanted if c not in have]
    if missing:
        raise FormatError(table, f"a table of another shape than LangGraph's SqliteSaver writes: no column "
                                 f"{', '.join(missing)} (it has {', '.join(sorted(have)[:12])})")
    return have


def _text(value: Any, place: str) -> str:
    if not isinstance(value, str):
        raise FormatError(place, f"expected text, got {json_type(value)}")
    return value


def read_sqlite(db: sqlite3.Connection) -> MemoryDocument:
    _columns(db, "checkpoints", _CHECKPOINT_COLUMNS)
    write_columns = _columns(db, "writes", _WRITE_COLUMNS)
    task_path = "task_path" if "task_path" in write_columns else "''"
    document = MemoryDocument(format=NAME)
    repeated = db.execute("SELECT checkpoint_id FROM checkpoints GROUP BY checkpoint_id HAVING count(*) > 1 "
                          "LIMIT 1").fetchone() is not None
    writes_read = 0
    unmatched = [0]
    thread: _Thread | None = None
    rows = db.execute("SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
                      "metadata FROM checkpoints ORDER BY thread_id, checkpoint_ns, checkpoint_id")
    for thread_id, ns, checkpoint_id, parent_id, kind, blob, meta in rows:
        place = f"checkpoints[thread {str(thread_id)[:60]!r}, checkpoint {str(checkpoint_id)[:60]!r}]"
        thread_id = _text(thread_id, at(place, "thread_id"))
        ns = _text(ns if ns is not None else "", at(place, "checkpoint_ns"))
        checkpoint_id = _text(checkpoint_id, at(place, "checkpoint_id"))
        if parent_id is not None:
            parent_id = _text(parent_id, at(place, "parent_checkpoint_id"))
        if thread is None or (thread.thread, thread.ns) != (thread_id, ns):
            if thread is not None:
                _finish(thread, document, unmatched)
            thread = _Thread(thread_id, ns, _thread_key(thread_id, ns), f"checkpoints[thread {thread_id[:60]!r}]")
        checkpoint = decode_typed(kind, blob, at(place, "checkpoint"))
        metadata = _metadata(meta, at(place, "metadata"))
        pending = []
        for task_id, path, idx, channel, wkind, value in db.execute(
                f"SELECT task_id, {task_path}, idx, channel, type, value FROM writes "
                "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_id, idx",
                (thread_id, ns, checkpoint_id)):
            wplace = f"writes[checkpoint {checkpoint_id[:60]!r}, task {str(task_id)[:60]!r}, idx {str(idx)[:20]}]"
            if not isinstance(idx, int):
                raise FormatError(at(wplace, "idx"), f"expected an integer, got {json_type(idx)}")
            pending.append({"task_id": _text(task_id, at(wplace, "task_id")),
                            "task_path": _text(path if path is not None else "", at(wplace, "task_path")),
                            "idx": idx, "channel": _text(channel, at(wplace, "channel")),
                            "value": decode_typed(wkind, value, at(wplace, "value"))})
        writes_read += len(pending)
        values = checkpoint.get("channel_values") if isinstance(checkpoint, dict) else None
        items = _messages(values)
        ids = _last_ids(items)
        version = checkpoint.get("v") if isinstance(checkpoint, dict) else None
        snapshot = SnapshotIn(
            external_id=_qualified(repeated, thread_id, ns, checkpoint_id),
            parent=_qualified(repeated, thread_id, ns, parent_id) if parent_id else None,
            value={"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint": checkpoint, "metadata": metadata,
                   "pending_writes": pending},
            source_format=NAME, format_version=str(version) if version is not None else None,
            step=_step(metadata), taken_at=_time(checkpoint.get("ts")) if isinstance(checkpoint, dict) else None,
        )
        thread.snapshots.append((snapshot, ids))
        # Rows come in checkpoint_id order: the last one is the thread's latest (LangGraph's own get_tuple rule).
        thread.latest, thread.latest_messages = checkpoint_id, items
        thread.place = at(at(place, "checkpoint"), "channel_values")
    if thread is not None:
        _finish(thread, document, unmatched)
    (total,) = db.execute("SELECT count(*) FROM writes").fetchone()
    if total != writes_read:
        document.notes.append(f"{total - writes_read} write(s) of checkpoints the database does not hold; not read")
    _unmatched_note(document, unmatched[0])
    return document


def _qualified(repeated: bool, thread: str, ns: str, checkpoint_id: str) -> str:
    return f"{thread}|{ns}|{checkpoint_id}" if repeated else checkpoint_id


# --- JSON: get_state_history, CheckpointTuples ------------------------------------------------------------------

_HISTORY_KEYS = frozenset({"values", "next", "config", "metadata", "parent_config"})
_TUPLE_KEYS = frozenset({"config", "checkpoint", "metadata", "parent_config"})


def _configurable(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict) and isinstance(value.get("configurable"), dict):
        configurable: dict[str, Any] = value["configurable"]
        return configurable
    return None


def _entry_kind(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    configurable = _configurable(entry.get("config"))
    if configurable is None or not isinstance(configurable.get("checkpoint_id"), str):
        return None
    if entry.keys() >= _HISTORY_KEYS and isinstance(entry.get("values"), dict):
        return "history"
    if entry.keys() >= _TUPLE_KEYS and isinstance(entry.get("checkpoint"), dict):
        return "tuple"
    return None


def _entries(data: Any) -> list[Any] | None:
    if isinstance(data, dict):
        return [data] if _entry_kind(data) else None
    if isinstance(data, list) and data and all(_entry_kind(e) for e in data[:200]):
        return data
    return None


def detect(data: Any) -> bool:
    return _entries(data) is not None


def read(data: Any, *, name: str | None = None) -> MemoryDocument:
    entries = _entries(data)
    if entries is None:
        raise FormatError("input", "not LangGraph checkpoints: expected get_state_history output (StateSnapshots "
                                   "with values, next, config, metadata, parent_config) or CheckpointTuples (config, "
                                   "checkpoint, metadata, parent_config)")
    single = isinstance(data, dict)
    rows = []
    for i, entry in enumerate(entries):
        place = "input" if single else at("input", i)
        kind = _entry_kind(entry)
        if kind is None:
            raise FormatError(place, "expected a StateSnapshot or a CheckpointTuple with config.configurable."
                                     "checkpoint_id")
        configurable = _configurable(entry["config"])
        assert configurable is not None
        thread_value = configurable.get("thread_id")
        thread_id = thread_value if isinstance(thread_value, str) else "" if thread_value is None else str(thread_value)
        ns_value = configurable.get("checkpoint_ns")
        rows.append((thread_id, ns_value if isinstance(ns_value, str) else "", configurable["checkpoint_id"], i, entry,
                     kind, place))
    repeated = len({r[2] for r in rows}) != len(rows)
    document = MemoryDocument(format=NAME)
    unmatched = [0]
    thread: _Thread | None = None
    # The newest entry of each thread is its latest (get_state_history lists newest first; a file may mix threads).
    for thread_id, ns, checkpoint_id, _, entry, kind, place in sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3])):
        if thread is None or (thread.thread, thread.ns) != (thread_id, ns):
            if thread is not None:
                _finish(thread, document, unmatched)
            thread = _Thread(thread_id, ns, _thread_key(thread_id, ns), place)
        metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
        parent = _configurable(entry.get("parent_config"))
        parent_id = parent.get("checkpoint_id") if parent else None
        if kind == "history":
            items = _messages(entry["values"])
            taken = _time(entry.get("created_at"))
            version = None
        else:
            checkpoint = entry["checkpoint"]
            items = _messages(checkpoint.get("channel_values"))
            taken = _time(checkpoint.get("ts"))
            version = checkpoint.get("v")
        snapshot = SnapshotIn(
            external_id=_qualified(repeated, thread_id, ns, checkpoint_id),
            parent=_qualified(repeated, thread_id, ns, parent_id) if isinstance(parent_id, str) else None,
            value=entry, source_format=NAME, format_version=str(version) if version is not None else None,
            step=_step(metadata), taken_at=taken,
        )
        thread.snapshots.append((snapshot, _last_ids(items)))
        thread.latest, thread.latest_messages = checkpoint_id, items
        thread.place = at(place, "values") if kind == "history" else at(at(place, "checkpoint"), "channel_values")
    if thread is not None:
        _finish(thread, document, unmatched)
    _unmatched_note(document, unmatched[0])
    return document

