"""The memory layers beyond the message list, as every memory reader produces them and the importer stores them.

An agent's memory has three layers (DESIGN.md, "Memory beyond the message list"): the message list (a
``Conversation``), what it keeps across sessions (a **store** of **records**, each with every **version** the library
wrote), and what it retrieves on each call (a **recall** of items, placed in a message of a conversation). A whole
agent's state, kept verbatim, is a **snapshot**. A memory file holds any of these at once: a ``MemoryDocument``.

Everything here is plain data, with no Django: each reader in ``agents.memory.formats`` returns a ``MemoryDocument``;
the importer, the API and the benchmarks read the same one. References inside a document are by the keys the document
gives (a store's ``key``, a record's ``external_id`` in its store, a conversation's ``external_id``): the importer
turns them into rows.

The rules shared by every reader live here too, so that they are written once:

- ``content_hash``: md5 of the text, as mem0 hashes its records (so mem0's own ``hash`` matches ours);
- ``RecordIn.ordered_versions``: versions in the order the library wrote them, numbered from 1; an event without a
  time is placed after the one before it, never dropped;
- ``match_items``: a recall's items matched to the records of its store, by id, then by hash of the text, then by the
  text with its whitespace folded; an item that matches nothing stays, as unmatched;
- ``version_at``: the version of a record that was current at a moment (for a recall: what the store held then).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .schema import Conversation

StoreKind = Literal["records", "blocks", "list", "knowledge"]
STORE_KINDS: tuple[str, ...] = ("records", "blocks", "list", "knowledge")
RecordState = Literal["active", "deleted", "invalidated"]
RECORD_STATES: tuple[str, ...] = ("active", "deleted", "invalidated")
# Where a recall's text was put: in a message of the list (AgentScope's <long_term_memory> message, AutoGen's memory
# SystemMessage), in the system prompt (Letta's blocks, a LangGraph node's "Known about the user"), or in a tool result
# (an agent that searched its memory with a tool: Letta's archival_memory_search, AgentScope's retrieve_from_memory).
Placement = Literal["message", "system", "tool_result"]
PLACEMENTS: tuple[str, ...] = ("message", "system", "tool_result")
# The ops libraries write (mem0's events; Letta's and the OTel conventions' map onto these); kept as written.
OPS: tuple[str, ...] = ("ADD", "UPDATE", "DELETE", "NONE")


def content_hash(text: str) -> str:
    """md5 of the text in UTF-8, hex: mem0's ``hash`` of a record (``hashlib.md5(data.encode()).hexdigest()``)."""
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


_SPACE = re.compile(r"\s+")


def folded(text: str) -> str:
    """The text with runs of whitespace made one space and the ends trimmed: how a recalled text is compared with a
    record's when neither id nor exact text matches (a framework may re-wrap what it puts into the prompt)."""
    return _SPACE.sub(" ", text).strip()


class VersionIn(BaseModel):
    """One write of a record, with its whole new body. ``number`` is given by ``RecordIn.ordered_versions``."""

    model_config = ConfigDict(extra="forbid")

    op: str = Field(description="As the library wrote it: ADD, UPDATE, DELETE, NONE, or its own word.")
    text: str | None = Field(default=None, description="The text after the write; None for a delete.")
    value: Any = Field(default=None, description="The raw body after the write, where it holds more than text.")
    at: datetime | None = None
    actor: str | None = None
    # Where known, what caused it: a conversation of the same document (its external_id) and the message's position.
    session: str | None = None
    seq: int | None = Field(default=None, ge=0)
    llm_call: str | None = Field(default=None, description="A captured call's span id, for live capture.")
    external_id: str | None = Field(default=None, description="The library's id of this event (mem0's history id).")
    number: int | None = Field(default=None, ge=1)
    # The position the event had where it was read (a history row's rowid): the tiebreak of events at the same time.
    order: int = 0
    # False: the write was seen without its body (an OpenTelemetry memory span with content capture off, or a body
    # too big to read): ``text`` and ``value`` are unknown, not empty, and are shown as such.
    captured: bool = True


class RecordIn(BaseModel):
    """One item of a store as the library keeps it now, with its versions (oldest first once ordered)."""

    model_config = ConfigDict(extra="forbid")

    external_id: str
    text: str = ""
    value: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: RecordState = "active"
    content_hash: str | None = None
    char_limit: int | None = Field(default=None, ge=0)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    versions: list[VersionIn] = Field(default_factory=list)

    def ordered_versions(self) -> list[VersionIn]:
        """The versions in the order the library wrote them, numbered 1, 2, ...: by time, then by the order they were
        read in; a version without a time keeps its place after the one read before it (mem0 writes a DELETE or an
        inferred ADD without ``updated_at``)."""
        return [v.model_copy(update={"number": i}) for i, v in enumerate(order_events(self.versions), 1)]

    def with_hash(self) -> RecordIn:
        return self if self.content_hash else self.model_copy(update={"content_hash": content_hash(self.text)})


def order_events(versions: Sequence[VersionIn]) -> list[VersionIn]:
    """Events sorted by time where they have one; one without a time takes the time of the event read before it, so
    that it stays right after it. Ties keep the order they were read in (``order``, then position)."""
    keyed: list[tuple[datetime | None, int, int, VersionIn]] = []
    last: datetime | None = None
    for i, version in enumerate(versions):
        when = version.at if version.at is not None else last
        last = when
        keyed.append((when, version.order, i, version))
    timed = [k for k in keyed if k[0] is not None]
    untimed_first = [k for k in keyed if k[0] is None]  # nothing before them had a time: they lead, as read
    timed.sort(key=lambda k: (_sortable(k[0]), k[1], k[2]))
    return [k[3] for k in untimed_first] + [k[3] for k in timed]


def _sortable(when: datetime | None) -> float:
    assert when is not None
    # Naive and aware times from one library are compared on one line: a naive time is read as UTC.
    return when.timestamp() if when.tzinfo else when.replace(tzinfo=UTC).timestamp()


def parse_time(text: str) -> datetime:
    """A time as the libraries write it: ISO 8601 (mem0's ``2026-12-06T00:48:20.493510+00:00``, ``...Z``) or
    SQLite's ``CURRENT_TIMESTAMP`` (``2026-12-06 00:53:01``, the Agents SDK's). A time without a zone is UTC, as
    SQLite's is. ``ValueError`` when it is none of these."""
    when = datetime.fromisoformat(text.strip())
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class StoreIn(BaseModel):
    """A memory store: where records live. ``key`` names it inside the document (recalls point to it)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    name: str
    kind: StoreKind
    source_format: str
    scope: dict[str, Any] = Field(default_factory=dict)
    external_id: str | None = None
    agent: str | None = Field(default=None, description="The agent it belongs to; None: shared by the project.")
    records: list[RecordIn] = Field(default_factory=list)


class RecallItemIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    rank: int = Field(ge=1)
    score: float | None = None
    record: str | None = Field(default=None, description="The matched record's external_id; None: matches none.")
    version: int | None = Field(default=None, description="The record's version current at the recall.")
    # What identifies the item in the library, where it says (mem0's id, a chunk's doc_id and chunk_id).
    ref: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class RecallIn(BaseModel):
    """One read of a store that fed a model call."""

    model_config = ConfigDict(extra="forbid")

    session: str | None = Field(default=None, description="The conversation's external_id in this document.")
    seq: int | None = Field(default=None, ge=0, description="The message carrying the recalled text.")
    llm_call: str | None = None
    # Live capture: the position, in the captured call's input, of the message carrying the recalled text (the
    # receiver turns it into ``seq`` once the call is placed in its session).
    call_input: int | None = Field(default=None, ge=0)
    store: str | None = Field(default=None, description="The store's key; None when the store is unknown.")
    query: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    placement: Placement = "message"
    persisted: bool = False
    at: datetime | None = None
    items: list[RecallItemIn] = Field(default_factory=list)
    external_id: str | None = None


class SnapshotIn(BaseModel):
    """One whole-agent state, kept verbatim; ``parent`` is another snapshot's ``external_id``."""

    model_config = ConfigDict(extra="forbid")

    external_id: str
    value: Any
    source_format: str
    format_version: str | None = None
    parent: str | None = None
    step: int | None = None
    taken_at: datetime | None = None
    agent: str | None = None
    session: str | None = Field(default=None, description="The conversation its message list is, by external_id.")
    seq: int | None = Field(default=None, ge=0, description="The last message of that conversation it holds.")


class CompactionIn(BaseModel):
    """A framework or provider compacting the message list between calls: the summary that came in where the source
    carries it. ``external_id`` tells the same compaction seen twice (a compacted part passed back on every later
    call)."""

    model_config = ConfigDict(extra="forbid")

    external_id: str
    at: datetime | None = None
    summary: str | None = None
    llm_call: str | None = Field(default=None, description="The captured call that carried it first, by span id.")
    session: str | None = Field(default=None, description="The conversation's external_id in this document.")
    seq: int | None = Field(default=None, ge=0)
    source: str = Field(default="", description="Where it was seen, e.g. 'flag', 'output', 'input', 'marks'.")
    went_out: list[tuple[int, int]] | None = Field(
        default=None, description="The messages it stood for, as [first, last] runs of seqs, where the file says.")


@dataclass
class MemoryDocument:
    """All a memory file holds. ``stores[i].records`` may be left empty and the records given by ``records``
    instead, a store at a time, for a reader that streams a big store (pairs of store key and record)."""

    format: str
    conversations: list[Conversation] = field(default_factory=list)
    stores: list[StoreIn] = field(default_factory=list)
    recalls: list[RecallIn] = field(default_factory=list)
    snapshots: list[SnapshotIn] = field(default_factory=list)
    records: Iterable[tuple[str, RecordIn]] = ()
    compactions: list[CompactionIn] = field(default_factory=list)
    agent: str | None = None
    # What the reader could not keep, as a person reads it ("toolkit.active_groups: not a memory layer; kept in the
    # snapshot"): shown like an export's dropped fields.
    notes: list[str] = field(default_factory=list)

    def all_records(self) -> Iterator[tuple[str, RecordIn]]:
        for store in self.stores:
            for record in store.records:
                yield store.key, record
        yield from self.records

    def materialized(self) -> MemoryDocument:
        """The document with every record in its store's list (``records`` read to the end): for callers that keep
        it after the file it streams from is closed."""
        stores = {store.key: store.model_copy(update={"records": [*store.records]}) for store in self.stores}
        for key, record in self.records:
            stores[key].records.append(record)
        return MemoryDocument(format=self.format, conversations=self.conversations, stores=list(stores.values()),
                              recalls=self.recalls, snapshots=self.snapshots, agent=self.agent, notes=self.notes,
                              compactions=self.compactions)

    def holds_memory(self) -> bool:
        """Whether it holds anything beyond conversations: stores, recalls, snapshots or compactions."""
        return bool(self.stores or self.recalls or self.snapshots or self.compactions)

    def is_empty(self) -> bool:
        return not (self.conversations or self.stores or self.recalls or self.snapshots or self.compactions)


# --- matching recalled items to records -----------------------------------------------------------------------------


@dataclass
class RecordIndex:
    """The records of one store by what a recalled item may carry: id, hash of the text, folded text. Versions' texts
    count too, so that an item recalled at an older version still finds its record."""

    by_id: dict[str, str] = field(default_factory=dict)
    by_hash: dict[str, str] = field(default_factory=dict)
    by_folded: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[RecordIn]) -> RecordIndex:
        index = cls()
        for record in records:
            index.add(record.external_id, [record.text, *(v.text for v in record.versions if v.text)],
                      record.content_hash)
        return index

    def add(self, external_id: str, texts: Iterable[str], stored_hash: str | None = None) -> None:
        self.by_id.setdefault(external_id, external_id)
        if stored_hash:
            self.by_hash.setdefault(stored_hash, external_id)
        for text in texts:
            self.by_hash.setdefault(content_hash(text), external_id)
            self.by_folded.setdefault(folded(text), external_id)

    def find(self, text: str, ref_id: str | None = None) -> str | None:
        if ref_id is not None and ref_id in self.by_id:
            return self.by_id[ref_id]
        return self.by_hash.get(content_hash(text)) or self.by_folded.get(folded(text))


def match_items(items: Sequence[RecallItemIn], index: RecordIndex) -> list[RecallItemIn]:
    """The items with ``record`` set where one matches (by the item's ``ref["id"]``, then its text); others kept."""
    out = []
    for item in items:
        if item.record is not None:
            out.append(item)
            continue
        ref_id = item.ref.get("id")
        found = index.find(item.text, str(ref_id) if ref_id is not None else None)
        out.append(item.model_copy(update={"record": found}) if found else item)
    return out


def version_at(versions: Sequence[VersionIn], when: datetime | None, text: str | None = None) -> int | None:
    """The number of the version current at ``when``: the last one written at or before it. Without a time, the
    version whose text is ``text`` (the latest such), else the last one. ``versions`` are ordered and numbered."""
    if not versions:
        return None
    if when is not None:
        current = None
        for version in versions:
            if version.at is None or _sortable(version.at) <= _sortable(when):
                current = version.number
            else:
                break
        return current
    if text is not None:
        wanted = folded(text)
        for version in reversed(versions):
            if version.text is not None and folded(version.text) == wanted:
                return version.number
    return versions[-1].number


def record_state(versions: Sequence[VersionIn]) -> RecordState:
    return "deleted" if versions and versions[-1].op.upper() == "DELETE" else "active"


def scope_of(values: Mapping[str, Any], keys: Sequence[str] = ("user_id", "agent_id", "run_id")) -> dict[str, Any]:
    """The scope keys a library set on a record, in a fixed order, without the empty ones."""
    return {key: values[key] for key in keys if values.get(key) not in (None, "")}

