"""mem0 (``mem0ai`` 2.x; 1.x writes the same shapes): its API's output as JSON, and its own SQLite ``history.db``.

JSON read (``detect`` is true for these shapes only):

- a ``get_all`` or ``search`` output, ``{"results": [record, ...]}``, or a bare list of records (mem0's older
  output). A record: ``{"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id", "agent_id",
  "run_id", "actor_id", "role", "attributed_to", ...}`` (``score`` in a search's). ``relations`` (mem0's graph
  memory) is noted, not read;
- ``history`` rows: ``[{"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at",
  "is_deleted", "actor_id", "role"}, ...]``, of one record or several;
- an object holding them together: ``results`` (records), ``get_all`` (a ``get_all`` output or a list of records),
  ``search`` (a search output), ``history`` (a list of rows, or an object of rows by memory id as
  ``{id: m.history(id) ...}`` dumps them), and the search's ``query``, ``top_k``, ``threshold`` and ``filters``
  where the file gives them.

What becomes what: one store of kind ``records`` (key ``mem0``) whose scope is the ``user_id`` / ``agent_id`` /
``run_id`` its records share. A record's metadata is mem0's payload as its API shows it, flattened: the caller's
``metadata`` with ``user_id``, ``agent_id``, ``run_id``, ``actor_id``, ``role``, ``attributed_to``,
``expiration_date`` beside it (mem0 keeps them in one payload, so no key collides); ``value`` is the record as
read. Versions are the history rows in the order mem0 wrote them: by the event's time, then the order of the rows.
The event's time is ``updated_at``; an ADD without one (an inferred add) takes ``created_at``; an UPDATE or DELETE
without one has no time (``created_at`` is the *memory's* creation time on every row, not the event's) and is placed
after the row before it, never dropped. A record only history knows is read from history (state ``deleted`` when its
last event is a DELETE); a record with no history gets one ADD version from the record itself, at its
``created_at``. An item with an ``event`` (an ``add`` output) gives that event, without a time, to a record that
history does not know. When a record is listed twice (``get_all`` and ``search``), the later ``updated_at`` wins;
when history wrote after the listing was taken, the record's text is history's last.

A search output is also a **recall**: one read of the store, each item with its rank and ``score``, matched to its
record by id. The query is unknown unless the file gives it, and no message is known to carry it (``session`` None):
mem0 injects nothing itself; the caller puts what it found into a prompt.

``history.db``: the ``history`` table, read in bounded memory, a record at a time: rows ordered by ``memory_id``
then rowid (the order mem0 inserted them), each record's rows then ordered as above, given through
``MemoryDocument.records`` (consume them while the database is open). The file holds neither the vectors nor the
payloads (the vector store does): no scope, and of the metadata only each row's ``actor_id`` and ``role``. 2.x's
``messages`` table holds the raw messages of inferred adds, the last ten of each scope (mem0 evicts older ones):
each scope's are a conversation (external id the ``session_scope``, e.g. ``user_id=alice``) in the order written.

``write``: ``{"results": [...], "history": [...]}``, the active records as ``get_all`` lists them and every version
as a history row; mem0 2.2.1 takes the records back with ``add(..., infer=False)``. What it cannot hold is reported.
"""
from __future__ import annotations

import itertools
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any

from agents.memory.ledger import (
    MemoryDocument,
    RecallIn,
    RecallItemIn,
    RecordIn,
    RecordIndex,
    StoreIn,
    VersionIn,
    content_hash,
    match_items,
    order_events,
    parse_time,
    record_state,
    scope_of,
    version_at,
)
from agents.memory.schema import Conversation, Message

from .base import FormatError, FormatSpec, WriteReport, at, json_type, make_conversation, make_message
from .json_input import check_depth

NAME = "mem0"
SPEC = FormatSpec(
    name=NAME,
    label="mem0",
    description="mem0 get_all/search output and history rows as JSON, or mem0's history.db",
    extension="json",
    media_type="application/json",
)
TABLES = frozenset({"history"})
STORE_KEY = "mem0"

ENTITY_KEYS = ("user_id", "agent_id", "run_id")
# The payload keys mem0's get / get_all / search lift beside ``metadata`` (mem0 2.2.1's promoted_payload_keys).
PROMOTED = ("user_id", "agent_id", "run_id", "actor_id", "role", "attributed_to", "expiration_date")
_RECORD_OWN = frozenset({"id", "memory", "hash", "metadata", "score", "created_at", "updated_at", "event",
                         "previous_memory"})
_OBJECT_KEYS = frozenset({"results", "relations", "get_all", "search", "history", "query", "top_k", "threshold",
                          "filters"})
_SEARCH_PARAMS = ("top_k", "threshold", "filters")
_SAMPLE = 200
_ROLES = frozenset({"user", "assistant", "system", "developer"})


# --- detection --------------------------------------------------------------------------------------------------

def _is_record(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("memory"), str)


def _is_row(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("memory_id"), str) and isinstance(item.get("event"), str)
            and ("new_memory" in item or "old_memory" in item))


def _all(items: list[Any], test: Any) -> bool:
    return all(test(item) for item in items[:_SAMPLE])


def _output_like(value: Any) -> bool:
    if isinstance(value, dict) and "results" in value and set(value) <= {"results", "relations"}:
        value = value["results"]
    return isinstance(value, list) and _all(value, _is_record)


def _history_like(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(rows, list) and _all(rows, _is_row) for rows in itertools.islice(value.values(), 50))
    return isinstance(value, list) and _all(value, _is_row)


def detect(data: Any) -> bool:
    if isinstance(data, list):
        return bool(data) and (_all(data, _is_record) or _all(data, _is_row))
    if not isinstance(data, dict) or not set(data) <= _OBJECT_KEYS:
        return False
    parts = [key for key in ("results", "get_all", "search", "history") if key in data]
    checks = {"results": lambda v: isinstance(v, list) and _all(v, _is_record), "get_all": _output_like,
              "search": _output_like, "history": _history_like}
    return bool(parts) and all(checks[key](data[key]) for key in parts)


# --- reading: shared by the JSON and the database -----------------------------------------------------------------

class _Bad(Exception):
    """A value of a row that is not what mem0 writes: the caller names the place (built only then: a history.db
    may hold millions of rows)."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(key, detail)
        self.key, self.detail = key, detail


def _when(value: Any, key: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(key, f"expected a time, got {json_type(value)}")
    try:
        return parse_time(value)
    except ValueError:
        raise _Bad(key, f"not a time: {value[:60]!r}") from None


def _maybe(value: Any, key: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _Bad(key, f"expected a string or null, got {json_type(value)}")


def _checked(place: str, check: Any, *args: Any) -> Any:
    try:
        return check(*args)
    except _Bad as bad:
        raise FormatError(at(place, bad.key) if bad.key else place, bad.detail) from None


def _time(value: Any, place: str) -> datetime | None:
    when: datetime | None = _checked(place, _when, value, "")
    return when


def _opt_text(value: Any, place: str) -> str | None:
    text: str | None = _checked(place, _maybe, value, "")
    return text


def _text(value: Any, place: str) -> str:
    if isinstance(value, str):
        return value
    raise FormatError(place, f"expected a string, got {json_type(value)}")


@dataclass
class _Known:
    """What the file says of one record: its body (a get_all / search item), its history rows, its add events."""

    body: dict[str, Any] | None = None
    body_place: str = ""
    body_time: datetime | None = None
    rows: list[VersionIn] = field(default_factory=list)
    events: list[VersionIn] = field(default_factory=list)
    created_at: datetime | None = None
    created_text: Any = None
    deleted_text: str | None = None
    row_meta: dict[str, Any] = field(default_factory=dict)


# A history row as both readers give it: (order, memory_id, id, old_memory, new_memory, event, created_at,
# updated_at, actor_id, role); ``order`` is the rowid in history.db, the position read in JSON.
_ROW_COLUMNS = ("order", "memory_id", "id", "old_memory", "new_memory", "event", "created_at", "updated_at",
                "actor_id", "role")


def _take_row(known: _Known, row: Sequence[Any]) -> None:
    """One history row as a version of its record. Kept lean: a history.db may hold millions of rows. ``_Bad``
    names the column of a value mem0 would not write."""
    order, _memory_id, row_id, old, new, event, created, updated, actor, role = row
    if not isinstance(event, str):
        raise _Bad("event", f"expected a string, got {json_type(event)}")
    for key, value in (("id", row_id), ("new_memory", new), ("actor_id", actor), ("role", role)):
        if value is not None and not isinstance(value, str):
            raise _Bad(key, f"expected a string or null, got {json_type(value)}")
    if created == known.created_text:
        created_at = known.created_at  # every row of a record carries the memory's creation time
    else:
        created_at = _when(created, "created_at")
        if known.created_text is None:
            known.created_text, known.created_at = created, created_at
    when = _when(updated, "updated_at")
    op = event.upper()
    if when is None and op == "ADD":
        when = created_at  # an inferred add has no updated_at; its created_at is the add's own time
    known.rows.append(VersionIn(op=event, text=None if op == "DELETE" else new, at=when, actor=actor,
                                external_id=row_id, order=order))
    if op == "DELETE":
        known.deleted_text = _maybe(old, "old_memory")
    # A record only history knows: the latest actor and role its rows name (the payload's, which mem0 copies).
    if actor is not None:
        known.row_meta["actor_id"] = actor
    if role is not None:
        known.row_meta["role"] = role


def _numbered(versions: list[VersionIn]) -> list[VersionIn]:
    ordered = order_events(versions)
    for number, version in enumerate(ordered, 1):
        version.number = number  # our own objects, just built: numbered in place, as ordered_versions numbers copies
    return ordered


def _record(external_id: str, known: _Known) -> RecordIn:
    body = known.body
    if known.rows:
        versions = known.rows
    elif known.events:
        versions = known.events
    elif body is not None:
        versions = [VersionIn(
            op="ADD", text=body["memory"], at=_time(body.get("created_at"), at(known.body_place, "created_at")),
            actor=body.get("actor_id") if isinstance(body.get("actor_id"), str) else None)]
    else:
        versions = []
    ordered = _numbered(versions)
    state = record_state(ordered)
    if body is not None:
        place = known.body_place
        text = body["memory"]
        metadata = _metadata(body, place)
        stored_hash = _opt_text(body.get("hash"), at(place, "hash"))
        created_at = _time(body.get("created_at"), at(place, "created_at"))
        updated_at = known.body_time
        value: Any = {k: v for k, v in body.items() if k not in ("score", "event", "previous_memory")}
        last = ordered[-1] if ordered else None
        if last is not None and last.at is not None and (updated_at is None or last.at > updated_at):
            # History wrote after the listing was taken (a search dumped before an update): its text is current.
            text = next((v.text for v in reversed(ordered) if v.text is not None), text)
            stored_hash, updated_at = None, last.at
    else:
        text = next((v.text for v in reversed(ordered) if v.text is not None), None) or known.deleted_text or ""
        metadata = dict(known.row_meta)
        stored_hash = None
        created_at = known.created_at
        updated_at = ordered[-1].at if ordered else None
        value = None
    return RecordIn(
        external_id=external_id, text=text, value=value, metadata=metadata, state=state,
        content_hash=stored_hash or content_hash(text), created_at=created_at,
        updated_at=updated_at, versions=ordered)


def _metadata(body: dict[str, Any], place: str) -> dict[str, Any]:
    """The record's metadata: the caller's, with the payload keys mem0 lifts beside it (and any other key the
    record carries) put back beside them."""
    caller = body.get("metadata")
    if caller is not None and not isinstance(caller, dict):
        raise FormatError(at(place, "metadata"), f"expected an object or null, got {json_type(caller)}")
    out = dict(caller or {})
    out.update((key, value) for key, value in body.items() if key not in _RECORD_OWN)
    return out


def _store(records: list[RecordIn], bodies: list[dict[str, Any]]) -> StoreIn:
    scope = _shared_scope(bodies)
    return StoreIn(key=STORE_KEY, name=_store_name(scope), kind="records", source_format=NAME, scope=scope,
                   agent=scope.get("agent_id") if isinstance(scope.get("agent_id"), str) else None,
                   records=records)


def _shared_scope(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    if not bodies:
        return {}
    shared = scope_of(bodies[0], ENTITY_KEYS)
    for body in bodies[1:]:
        own = scope_of(body, ENTITY_KEYS)
        shared = {key: value for key, value in shared.items() if own.get(key) == value}
    return shared


def _store_name(scope: dict[str, Any]) -> str:
    return f"mem0 ({', '.join(f'{key}={value}' for key, value in scope.items())})" if scope else "mem0"


# --- reading JSON -----------------------------------------------------------------------------------------------

@dataclass
class _Search:
    items: list[tuple[str, str, float | None]]
    query: str | None
    params: dict[str, Any]


class _Reading:
    def __init__(self) -> None:
        self.known: dict[str, _Known] = {}  # in the order first met
        self.searches: list[_Search] = []
        self.notes: list[str] = []
        self.order = 0

    def of(self, external_id: str) -> _Known:
        known = self.known.get(external_id)
        if known is None:
            known = self.known[external_id] = _Known()
        return known

    def records(self, items: Any, place: str, search: dict[str, Any] | None = None) -> None:
        """A list of records; ``search``: the query and parameters when it is a search output (else a list is one
        when its items carry scores)."""
        if not isinstance(items, list):
            raise FormatError(place, f"expected an array of mem0 records, got {json_type(items)}")
        found: list[tuple[str, str, float | None]] = []
        scored = search is not None
        for i, item in enumerate(items):
            p = at(place, i)
            if not isinstance(item, dict):
                raise FormatError(p, f"expected a mem0 record (an object with id and memory), got {json_type(item)}")
            external_id = _text(item.get("id"), at(p, "id"))
            text = _text(item.get("memory"), at(p, "memory"))
            score = item.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                raise FormatError(at(p, "score"), f"expected a number, got {json_type(score)}")
            scored = scored or score is not None
            found.append((external_id, text, score))
            known = self.of(external_id)
            if "event" in item:
                op = _text(item["event"], at(p, "event"))
                self.order += 1
                known.events.append(VersionIn(op=op, text=None if op.upper() == "DELETE" else text,
                                              order=self.order))
                if op.upper() == "DELETE":
                    known.deleted_text = text
                continue
            when = _time(item.get("updated_at"), at(p, "updated_at"))
            if known.body is None or _later_or_same(when, known.body_time):
                _metadata(item, p)  # checked now, where it is
                known.body, known.body_place, known.body_time = item, p, when
        if scored:
            query = (search or {}).get("query")
            self.searches.append(_Search(found, query, {
                key: value for key, value in (search or {}).items() if key != "query"}))

    def history(self, rows: Any, place: str, memory_id: str | None = None) -> None:
        if isinstance(rows, dict) and memory_id is None:
            for key, value in rows.items():
                self.history(value, at(place, key), key)
            return
        if not isinstance(rows, list):
            raise FormatError(place, f"expected an array of history rows, got {json_type(rows)}")
        for i, row in enumerate(rows):
            p = at(place, i)
            if not isinstance(row, dict):
                raise FormatError(p, f"expected a history row, got {json_type(row)}")
            rid = row.get("memory_id", memory_id)
            rid = _text(rid, at(p, "memory_id"))
            self.order += 1
            _checked(p, _take_row, self.of(rid), (self.order, rid, *(row.get(k) for k in _ROW_COLUMNS[2:])))

    def document(self) -> MemoryDocument:
        records = [_record(external_id, known) for external_id, known in self.known.items()]
        bodies = [known.body for known in self.known.values() if known.body is not None]
        store = _store(records, bodies)
        index = RecordIndex.of(records)
        by_id = {record.external_id: record for record in records}
        recalls = []
        for search in self.searches:
            items = match_items([RecallItemIn(text=text, rank=rank, score=score, ref={"id": external_id})
                                 for rank, (external_id, text, score) in enumerate(search.items, 1)], index)
            items = [item.model_copy(update={"version": version_at(by_id[item.record].versions, None, item.text)})
                     if item.record in by_id else item for item in items]
            recalls.append(RecallIn(store=STORE_KEY, query=search.query, params=search.params, items=items))
        return MemoryDocument(format=NAME, stores=[store], recalls=recalls, notes=self.notes,
                              agent=store.agent)


def _later_or_same(when: datetime | None, than: datetime | None) -> bool:
    if when is None or than is None:
        return than is None
    return when >= than  # parse_time gives every time a zone


def _search_of(data: dict[str, Any], place: str) -> dict[str, Any]:
    query = data.get("query")
    if query is not None and not isinstance(query, str):
        raise FormatError(at(place, "query"), f"expected a string, got {json_type(query)}")
    out: dict[str, Any] = {"query": query}
    out.update((key, data[key]) for key in _SEARCH_PARAMS if key in data)
    return out


def _output(reading: _Reading, value: Any, place: str, search: dict[str, Any] | None) -> None:
    """A get_all / search output (``{"results": [...]}``) or a bare list of records."""
    if isinstance(value, dict):
        if "results" not in value:
            raise FormatError(place, "expected a mem0 output with results")
        if value.get("relations"):
            reading.notes.append(f"{at(place, 'relations')}: mem0's graph memory (entities and relations) is not "
                                 "read")
        value, place = value["results"], at(place, "results")
    reading.records(value, place, search)


def read(data: Any, *, name: str | None = None) -> MemoryDocument:
    check_depth(data, "input")
    reading = _Reading()
    if isinstance(data, list):
        if data and isinstance(data[0], dict) and "memory_id" in data[0]:
            reading.history(data, "input")
        else:
            reading.records(data, "input")
        return reading.document()
    if not isinstance(data, dict):
        raise FormatError("input", f"expected mem0 records, history rows or an object of both, got {json_type(data)}")
    unknown = sorted(set(data) - _OBJECT_KEYS)
    if unknown:
        raise FormatError(at("input", unknown[0]), "not a key of mem0's output (expected results, get_all, search, "
                                                   "history, relations, query, top_k, threshold, filters)")
    if not any(key in data for key in ("results", "get_all", "search", "history")):
        raise FormatError("input", "expected results, get_all, search or history")
    search = _search_of(data, "input")
    has_search = "search" in data
    if "get_all" in data:
        _output(reading, data["get_all"], "get_all", None)
    if "results" in data:
        _output(reading, {k: data[k] for k in ("results", "relations") if k in data}, "",
                None if has_search else (search if search["query"] is not None or len(search) > 1 else None))
    if has_search:
        _output(reading, data["search"], "search", search)
    if "history" in data:
        reading.history(data["history"], "history")
    return reading.document()


# --- reading history.db -----------------------------------------------------------------------------------------



def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    cursor = db.execute(f'SELECT * FROM "{table}" LIMIT 0')
    return {str(d[0]) for d in cursor.description}


def read_sqlite(db: sqlite3.Connection) -> MemoryDocument:
    try:
        return _read_sqlite(db)
    except sqlite3.DatabaseError as exc:
        raise FormatError("input", f"a damaged SQLite database: {exc}") from None


def _read_sqlite(db: sqlite3.Connection) -> MemoryDocument:
    columns = _columns(db, "history")
    missing = [c for c in ("memory_id", "event") if c not in columns]
    if missing or not {"new_memory", "old_memory"} & columns:
        missing = missing or ["new_memory"]
        raise FormatError("history", f"not mem0's history table: no column {', '.join(missing)}")
    # old_memory is read for a DELETE only (the text it removed): the rest of the rows need not carry it through
    # the sort.
    select = ", ".join(
        ("CASE WHEN event = 'DELETE' THEN old_memory END" if c == "old_memory" else c) if c in columns
        else f"NULL AS {c}" for c in _ROW_COLUMNS[2:])
    tables = {str(n) for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    store = StoreIn(key=STORE_KEY, name="mem0", kind="records", source_format=NAME)
    notes = ["history.db holds no scope (user_id, agent_id, run_id) and no metadata beyond actor_id and role: they "
             "are in the vector store's payloads, which get_all() shows"]
    conversations = _conversations(db, notes) if "messages" in tables else []
    return MemoryDocument(format=NAME, conversations=conversations, stores=[store],
                          records=_history_records(db, select), notes=notes)


def _history_records(db: sqlite3.Connection, select: str) -> Iterator[tuple[str, RecordIn]]:
    """Every record of the history table, one at a time, its rows in the order mem0 inserted them (rowid)."""
    try:
        cursor = db.execute(f"SELECT rowid, memory_id, {select} FROM history ORDER BY memory_id, rowid")
        for memory_id, rows in itertools.groupby(cursor, key=itemgetter(1)):
            known = _Known()
            for row in rows:
                if not isinstance(memory_id, str):
                    raise FormatError(f"history[rowid={row[0]}].memory_id", f"expected a string, got "
                                                                              f"{_sql_type(memory_id)}")
                try:
                    _take_row(known, row)
                except _Bad as bad:
                    raise FormatError(at(f"history[rowid={row[0]}]", bad.key), bad.detail) from None
            yield STORE_KEY, _record(memory_id, known)
    except sqlite3.DatabaseError as exc:
        raise FormatError("input", f"a damaged SQLite database: {exc}") from None


def _sql_type(value: Any) -> str:
    return "null" if value is None else {int: "an integer", float: "a number", bytes: "a blob"}.get(
        type(value), json_type(value))


def _parse_scope(scope: str) -> dict[str, str]:
    """mem0's ``session_scope`` (``agent_id=a&user_id=u``, values escaped) as a dict."""
    out = {}
    for part in scope.split("&"):
        key, sep, value = part.partition("=")
        if sep:
            out[key] = value.replace("%3D", "=").replace("%26", "&").replace("%25", "%")
    return out


def _conversations(db: sqlite3.Connection, notes: list[str]) -> list[Conversation]:
    columns = _columns(db, "messages")
    if not {"session_scope", "role", "content"} <= columns:
        return []
    picked = ", ".join(c if c in columns else f"NULL AS {c}" for c in ("id", "name", "created_at"))
    cursor = db.execute(f"SELECT rowid, session_scope, role, content, {picked} FROM messages "
                        "ORDER BY session_scope, created_at, rowid")
    out = []
    for scope, rows in itertools.groupby(cursor, key=itemgetter(1)):
        messages: list[Message] = []
        first = None
        for rowid, _scope, role, content, message_id, name, created in rows:
            place = f"messages[rowid={rowid}]"
            first = first or place
            if not isinstance(scope, str):
                raise FormatError(at(place, "session_scope"), f"expected a string, got {_sql_type(scope)}")
            role = _text(role, at(place, "role"))
            if role not in _ROLES:
                # mem0 keeps what add() was given, a tool message too, but not the call it answers.
                notes.append(f"{place}: a {role!r} message (mem0 keeps no call id for it) is not read")
                continue
            messages.append(make_message(
                place, role=role, content=_opt_text(content, at(place, "content")),
                name=_opt_text(name, at(place, "name")), external_id=_opt_text(message_id, at(place, "id")),
                created_at=_time(created, at(place, "created_at"))))
        parsed = _parse_scope(scope)
        out.append(make_conversation(
            first or "messages", messages=messages, external_id=scope, title=f"mem0 messages ({scope})",
            source_format=NAME, agent=parsed.get("agent_id"), started_at=messages[0].created_at if messages else None,
            metadata={NAME: {"session_scope": scope, "scope": parsed,
                             "kept": "the last ten messages of the scope (mem0 evicts older ones)"}}))
    return out


# --- writing ----------------------------------------------------------------------------------------------------

def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def write(document: MemoryDocument, report: WriteReport) -> Any:
    """``{"results": [...], "history": [...]}``: the active records as mem0's ``get_all`` lists them, every version
    as a history row. A record's scope is its own (its metadata's ``user_id`` ...), else its store's."""
    stores = {store.key: store for store in document.stores}
    results: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    seen: set[str] = set()
    for store_key, record in document.all_records():
        store = stores.get(store_key)
        if record.external_id in seen:
            report.lose("record", "mem0's ids are unique: a second record with the same id is not written",
                        unit="record")
            continue
        seen.add(record.external_id)
        metadata = dict(record.metadata)
        for key, value in (store.scope.items() if store else ()):
            metadata.setdefault(key, value)
        foreign = store is not None and store.source_format != NAME
        if foreign and record.value is not None and record.value != record.text:
            report.lose("value", "mem0 keeps a text and metadata, not another library's value", unit="record")
        if record.char_limit is not None:
            report.lose("char_limit", "mem0 records have no character limit", unit="record")
        versions = order_events(record.versions)
        if record.state != "deleted":  # a deleted record is in history only, as mem0 keeps it
            if record.state == "invalidated":
                report.lose("state", "mem0 has no invalidated records: written as active", unit="record")
            if not any(metadata.get(key) for key in ENTITY_KEYS):
                report.lose("scope", "mem0 scopes a record by user_id, agent_id or run_id; none is known",
                            unit="record")
            results.append(_get_all_record(record, metadata))
        previous: str | None = None
        for number, version in enumerate(versions, 1):
            if version.session is not None or version.llm_call is not None:
                report.lose("session", "mem0's history does not say which message or call made a write",
                            unit="version")
            deleted = version.op.upper() == "DELETE"
            history.append({
                "id": version.external_id or str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                             f"memoryviz:{store_key}:{record.external_id}:{number}")),
                "memory_id": record.external_id,
                "old_memory": previous,
                "new_memory": None if deleted else version.text,
                "event": version.op,
                "created_at": _iso(record.created_at),
                "updated_at": _iso(version.at),
                "is_deleted": deleted,
                "actor_id": version.actor,
                "role": metadata.get("role") if isinstance(metadata.get("role"), str) else None,
            })
            if version.text is not None:
                previous = version.text
    if document.recalls:
        report.lose("recall", "mem0 keeps no record of its reads", unit="recall", count=len(document.recalls))
    if document.conversations:
        report.lose("conversation", "mem0's output holds records only", unit="conversation",
                    count=len(document.conversations))
    if document.snapshots:
        report.lose("snapshot", "mem0's output holds records only", unit="snapshot", count=len(document.snapshots))
    return {"results": results, "history": history}


def _get_all_record(record: RecordIn, metadata: dict[str, Any]) -> dict[str, Any]:
    caller = {key: value for key, value in metadata.items() if key not in PROMOTED}
    out: dict[str, Any] = {
        "id": record.external_id,
        "memory": record.text,
        "hash": record.content_hash or content_hash(record.text),
        "metadata": caller or None,
        "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at),
    }
    out.update((key, metadata[key]) for key in PROMOTED if metadata.get(key) is not None)
    return out
