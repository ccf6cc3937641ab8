"""A file's memory layers (a core ``MemoryDocument``) into rows, as the last part of its import.

An import is all or nothing, and never holds the database's write lock for long (``agents.transfer``). Its memory
layers follow the same rules, in two steps that the import run calls:

- ``stage``: before the run completes, once the file is read. Each store of the document is joined to the
  project's store of the same kind, source and scope (so a mem0 export imported beside an AgentScope session, or
  after it, fills the store its recalls point to), or created hidden (``MemoryStore.State.IMPORTING``). The records
  of a new store are written now, in short committed batches (a store of a million versions never holds the lock);
  those of a joined store wait.
- ``finish``: inside the transaction in which the run makes its sessions ready. The joined stores' records, every
  recall (matched to records by id, then by the text's hash, where the reader could not), every snapshot (linked to
  its parent, or to the one before it in its session), the summaries, and the new stores made ready.

``discard`` removes the hidden stores of a run that failed; ``preview`` says what an import would do, writing
nothing. Whatever the database cannot store (a NUL character, NaN) is refused naming its place, before anything is
written. Importing the same file again adds nothing: a record is keyed by its library id, a version by its event id
or its body, a recall by its place and items, a snapshot by its id.
"""
from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Q

from agents import models
from agents.ledger.upkeep import (
    StoreMatcher,
    aware,
    items_reversioned,
    records_reordered,
    rematch_store,
    store_remove,
    store_summaries,
    version_key,
)
from agents.memory import ledger as core
from agents.memory.formats import FormatError
from agents.store.mapping import value_problem
from agents.store.writing import RowInsert

BATCH = 2000

# (the conversation's key in the file, the message's position in it, the place to name in an error)
#   -> (the stored session, the message's seq in it)
SessionAt = Callable[[str | None, int | None, str], tuple[models.Session | None, int | None]]
AgentNamed = Callable[[str | None], models.Agent | None]
# A captured call's span id (``llm_call`` in the document) -> its LlmCall row's id, for live capture.
CallNamed = Callable[[str | None], int | None]


@dataclass
class MemoryOutcome:
    """What an import did (or, previewed, would do) with a file's memory layers."""

    stores: list[dict[str, Any]] = field(default_factory=list)  # {"name", "kind", "status": new | joined, ...}
    records: int = 0  # new records
    versions: int = 0  # new versions
    recalls: int = 0
    recall_items: int = 0
    unmatched_items: int = 0
    snapshots: int = 0
    compactions: int = 0
    skipped: int = 0  # already stored: versions, recalls and snapshots that a re-import leaves as they are
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stores": self.stores, "records": self.records, "versions": self.versions, "recalls": self.recalls,
            "recall_items": self.recall_items, "unmatched_items": self.unmatched_items,
            "snapshots": self.snapshots, "compactions": self.compactions, "skipped": self.skipped,
            "notes": self.notes,
        }

    @property
    def any(self) -> bool:
        return bool(self.stores or self.recalls or self.snapshots)


def scope_key(scope: dict[str, Any]) -> str:
    """The scope as canonical JSON: two files of one store say the same."""
    text = json.dumps(scope, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= 500 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Store:
    given: core.StoreIn
    row: models.MemoryStore
    new: bool
    # Records of a joined store, written in ``finish``.
    waiting: list[core.RecordIn] = field(default_factory=list)
    touched: bool = False
    written: list[core.RecordIn] = field(default_factory=list)  # with partial_records: what a rematch looks for


class MemoryImport:
    """One file's memory layers, for one import run."""

    def __init__(self, *, project: models.Project | None, document: core.MemoryDocument, agent_named: AgentNamed,
                 default_agent: models.Agent | None, owner: str, call_named: CallNamed | None = None,
                 partial_records: bool = False) -> None:
        self.project = project
        self.document = document
        self.agent_named = agent_named
        self.default_agent = default_agent
        self.owner = owner
        self.call_named: CallNamed = call_named or (lambda span_id: None)
        # True: the document holds part of each record's history (one trace of a live capture), not the record as
        # it stands: a stored record's body is then always its last version's, never the document's.
        self.partial_records = partial_records
        self.read_records: set[int] = set()  # records whose recalled items this run wrote or matched
        self.outcome = MemoryOutcome(notes=list(document.notes))
        self.stores: dict[str, _Store] = {}

    # --- what an import would do ---------------------------------------------------------------------------------

    def preview(self) -> MemoryOutcome:
        """The outcome without writing: each store new or joined, and what the file holds (a record or version
        the store holds already is counted as new here; the import skips it)."""
        for given in self.document.stores:
            existing = self._joinable(given)
            self.outcome.stores.append({"name": existing.name if existing else given.name, "kind": given.kind,
                                        "status": "joined" if existing else "new",
                                        "id": existing.pk if existing else None})
        for key, record in self.document.all_records():
            _check_record(key, record)
            self.outcome.records += 1
            self.outcome.versions += len(record.versions) or 1
        for i, recall in enumerate(self.document.recalls):
            _check(f"memory.recalls[{i}]", recall.query, recall.params, *((it.text, it.ref) for it in recall.items))
            self.outcome.recalls += 1
            self.outcome.recall_items += len(recall.items)
        for i, snapshot in enumerate(self.document.snapshots):
            _check(f"memory.snapshots[{i}].value", snapshot.value)
        self.outcome.snapshots = len(self.document.snapshots)
        return self.outcome

    # --- before the run completes ---------------------------------------------------------------------------------

    def stage(self, session_at: SessionAt) -> None:
        if self.project is None:
            raise FormatError("project", "none to store the memory layers in")
        for i, store in enumerate(self.document.stores):
            self.stores[store.key] = self._store_for(store, f"memory.stores[{i}]")
        batch: list[tuple[_Store, core.RecordIn]] = []
        for key, record in self.document.all_records():
            _check_record(key, record)
            target = self.stores.get(key)
            if target is None:
                raise FormatError("memory.records", f"a record of store {key!r}, which the file does not hold")
            if not target.new:
                target.waiting.append(record)
                continue
            batch.append((target, record))
            if len(batch) >= BATCH:
                self._committed(batch, session_at)
                batch = []
        if batch:
            self._committed(batch, session_at)

    def _joinable(self, given: core.StoreIn, agent: models.Agent | None = None) -> models.MemoryStore | None:
        """The project's store that ``given`` is more of: the same kind, source and scope, and no other agent's."""
        candidates = models.MemoryStore.objects.filter(
            project=self.project, kind=given.kind, source_format=given.source_format, scope_key=scope_key(given.scope),
            state=models.MemoryStore.State.READY,
        ).order_by("id")
        if agent is not None:
            candidates = candidates.filter(Q(agent=agent) | Q(agent__isnull=True))
        return candidates.first()

    def _store_for(self, given: core.StoreIn, place: str) -> _Store:
        agent = self.agent_named(given.agent) if given.agent else None
        key = scope_key(given.scope)
        existing = self._joinable(given, agent)
        if existing is not None:
            if existing.agent_id is None and agent is not None:
                existing.agent = agent  # the file says whose it is
            self.outcome.stores.append({"name": existing.name, "kind": existing.kind, "status": "joined",
                                        "id": existing.pk})
            return _Store(given, existing, new=False)
        assert self.project is not None  # stage() says so first
        row = models.MemoryStore.objects.create(
            project=self.project, agent=agent, name=given.name[:200], kind=given.kind,
            source_format=given.source_format[:40], scope=given.scope, scope_key=key,
            external_id=(given.external_id or "")[:255], state=models.MemoryStore.State.IMPORTING,
            import_owner=self.owner,
        )
        self.outcome.stores.append({"name": row.name, "kind": row.kind, "status": "new", "id": row.pk})
        return _Store(given, row, new=True)

    def _committed(self, batch: list[tuple[_Store, core.RecordIn]], session_at: SessionAt) -> None:
        with transaction.atomic():
            self._records_write(batch, session_at)

    # --- in the run's last transaction ---------------------------------------------------------------------------

    def finish(self, session_at: SessionAt) -> None:
        """Inside the run's last transaction, which is tried again as a whole when SQLite is busy: what it counts
        is counted again from where ``stage`` left it."""
        staged = copy.deepcopy(self.outcome)
        try:
            self._finish(session_at)
        except BaseException:
            self.outcome = staged
            raise

    def _finish(self, session_at: SessionAt) -> None:
        for store in self.stores.values():
            if store.waiting:
                records = store.waiting
                for start in range(0, len(records), BATCH):
                    self._records_write([(store, r) for r in records[start:start + BATCH]], session_at)
        self._recalls_write(session_at)
        self._snapshots_write(session_at)
        self._compactions_write(session_at)
        for store in self.stores.values():
            # A live document touches a few records of a store that may hold many: only their reads are counted.
            store_summaries(store.row, self.read_records if self.partial_records else None)
            if store.new:
                models.MemoryStore.objects.filter(pk=store.row.pk).update(
                    state=models.MemoryStore.State.READY, import_owner="")
            elif store.row.agent_id is not None:
                models.MemoryStore.objects.filter(pk=store.row.pk, agent__isnull=True).update(agent=store.row.agent)

    def discard(self) -> None:
        for store in self.stores.values():
            if store.new:
                store_remove(store.row.pk)

    # --- records and their versions ------------------------------------------------------------------------------

    def _records_write(self, batch: Sequence[tuple[_Store, core.RecordIn]], session_at: SessionAt) -> None:
        by_store: dict[int, list[core.RecordIn]] = {}
        stores: dict[int, _Store] = {}
        for store, record in batch:
            by_store.setdefault(store.row.pk, []).append(record)
            stores[store.row.pk] = store
            if self.partial_records:
                store.written.append(record)
        for pk, records in by_store.items():
            stores[pk].touched = True
            self._store_records(stores[pk].row, records, session_at)

    def _store_records(self, store: models.MemoryStore, records: list[core.RecordIn], session_at: SessionAt) -> None:
        # One record twice in a batch (a file listing it twice) is one record: its versions are joined.
        merged: dict[str, core.RecordIn] = {}
        for record in records:
            seen = merged.get(record.external_id)
            merged[record.external_id] = record if seen is None else record.model_copy(
                update={"versions": [*seen.versions, *record.versions]})
        existing = {r.external_id: r for r in models.MemoryRecord.objects.filter(
            store=store, external_id__in=list(merged))}
        versions: list[tuple[Any, ...]] = []
        # New records are written whole, with their versions: one INSERT of each kind for the batch.
        fresh = {external_id: _ordered(record) for external_id, record in merged.items()
                 if external_id not in existing}
        if fresh:
            _RECORD_INSERT.insert(_record_row(store, merged[e].with_hash(), len(v)) for e, v in fresh.items())
            ids = dict(models.MemoryRecord.objects.filter(store=store, external_id__in=list(fresh)).values_list(
                "external_id", "pk"))
            for external_id, ordered in fresh.items():
                versions += self._versions(ids[external_id], external_id, ordered, 0, set(), session_at)
            self.outcome.records += len(fresh)
        # Records stored already (a joined store): only the versions they lack, numbered after theirs; a version
        # older than the record's last is placed by its time (the record renumbered), and the record's body is then
        # its last version's. A document restates a record only where its last version is the record's last.
        known = _known_versions(r for e, r in existing.items() if e in merged)
        changed: list[models.MemoryRecord] = []
        reordered: dict[int, tuple[dict[str, Any], str | None]] = {}
        grown: list[int] = []
        for external_id, row in existing.items():
            record = merged[external_id]
            last, keys, last_at, last_key = known.get(row.pk, (0, set(), None, None))
            ordered = _ordered(record)
            added = self._versions(row.pk, external_id, ordered, last, keys, session_at)
            versions += added
            if added:
                grown.append(row.pk)
            times = [when for v in ordered if (when := aware(v.at)) is not None and version_key(v) not in keys]
            late = last_at is not None and bool(times) and min(times) < last_at
            if added and self.partial_records and not late and ordered[-1].op.upper() != "DELETE" and (
                    ordered[-1].captured and version_key(ordered[-1]) not in keys):
                # The document wrote the record's last body, appended: the record is that body (no reload).
                _record_written(row, ordered[-1], record.metadata, last + len(added))
                changed.append(row)
            elif added and (self.partial_records or late):
                body = next((v for v in reversed(ordered) if v.op.upper() != "DELETE" and v.captured), None)
                reordered[row.pk] = (record.metadata, version_key(body) if body is not None else None)
            elif (added or ((row.text != record.text or row.state != record.state)
                            and version_key(ordered[-1]) == last_key)) and not self.partial_records:
                _record_update(row, record, last + len(added))
                changed.append(row)
        if versions:
            _VERSION_INSERT.insert_values(versions)
            self.outcome.versions += len(versions)
        if changed:
            _records_saved(changed)
        if reordered:
            records_reordered(reordered)
        if grown:
            items_reversioned(grown)

    def _versions(self, record_id: int, external_id: str, ordered: list[core.VersionIn], last: int, keys: set[str],
                  session_at: SessionAt) -> list[tuple[Any, ...]]:
        """The record's versions not stored yet, as rows of ``_VERSION_INSERT``, numbered after ``last``."""
        out = []
        number = last
        for version in ordered:
            if keys and version_key(version) in keys:
                self.outcome.skipped += 1
                continue
            number += 1
            session, seq = (None, None) if version.session is None else session_at(
                version.session, version.seq, f"records[{external_id}].versions")
            out.append(_VERSION_INSERT.values(
                record_id=record_id, number=number, op=version.op[:40], text=version.text, value=version.value,
                at=aware(version.at), actor=(version.actor or "")[:255],
                session_id=session.pk if session is not None else None, seq=seq,
                llm_call_id=self.call_named(version.llm_call), external_id=(version.external_id or "")[:255],
                body_captured=version.captured,
            ))
        return out

    # --- recalls -------------------------------------------------------------------------------------------------

    def _recalls_write(self, session_at: SessionAt) -> None:
        recalls = self.document.recalls
        matchers: dict[int, StoreMatcher] = {}
        for i, recall in enumerate(recalls):
            place = f"memory.recalls[{i}]"
            _check(place, recall.query, recall.params, *((item.text, item.ref) for item in recall.items))
            session, seq = session_at(recall.session, recall.seq, place)
            if session is None:
                self.outcome.notes.append(f"{place}: a read that fed no message of a conversation of the file "
                                          "(a search output alone) is not stored as a recall")
                continue
            store = None
            if recall.store is not None:
                found = self.stores.get(recall.store)
                if found is None:
                    raise FormatError(f"{place}.store", f"no store keyed {recall.store!r} in the file")
                store = found.row
            external_id = recall.external_id or _recall_id(recall, seq)
            if models.Recall.objects.filter(session=session, external_id=external_id).exists():
                self.outcome.skipped += 1
                continue
            row = models.Recall.objects.create(
                session=session, seq=seq, store=store, query=recall.query or "", params=recall.params,
                placement=recall.placement, persisted=recall.persisted, at=aware(recall.at),
                item_count=len(recall.items), external_id=external_id[:255],
                llm_call_id=self.call_named(recall.llm_call), call_input=recall.call_input,
            )
            matcher = None
            if store is not None:
                matcher = matchers.get(store.pk)
                if matcher is None:
                    matcher = matchers[store.pk] = StoreMatcher(store)
                    matcher.prime(i for r in recalls if r.store == recall.store for i in r.items)
            items = []
            for item in recall.items:
                record_id, version = matcher.find(item, aware(recall.at)) if matcher else (None, None)
                items.append(models.RecallItem(recall=row, record_id=record_id, version=version, rank=item.rank,
                                               score=item.score, text=item.text, ref=item.ref,
                                               metadata=item.metadata))
                self.outcome.unmatched_items += record_id is None
                if record_id is not None:
                    self.read_records.add(record_id)
            models.RecallItem.objects.bulk_create(items, batch_size=BATCH)
            self.outcome.recalls += 1
            self.outcome.recall_items += len(items)
        # Items recalled before their store's records came (an AgentScope session imported before its mem0 export).
        for staged in self.stores.values():
            if staged.touched:
                self.read_records |= rematch_store(staged.row, staged.written if self.partial_records else None)

    # --- snapshots -----------------------------------------------------------------------------------------------

    def _snapshots_write(self, session_at: SessionAt) -> None:
        given = list(enumerate(self.document.snapshots))
        # Parents before children: within a session by the message reached, then by step and time.
        given.sort(key=lambda pair: (pair[1].session or "", pair[1].seq if pair[1].seq is not None else -1,
                                     pair[1].step if pair[1].step is not None else -1,
                                     pair[1].taken_at.timestamp() if pair[1].taken_at else 0.0, pair[0]))
        for i, snapshot in given:
            place = f"memory.snapshots[{i}]"
            _check(f"{place}.value", snapshot.value)
            session, seq = session_at(snapshot.session, snapshot.seq, place)
            agent = (self.agent_named(snapshot.agent) if snapshot.agent else None) or (
                session.agent if session is not None else self.default_agent)
            if agent is None:
                raise FormatError(place, "a snapshot of no known agent")
            if models.Snapshot.objects.filter(agent=agent, external_id=snapshot.external_id[:255]).exists():
                self.outcome.skipped += 1
                continue
            parent = None
            # The parent is pointed at, not read: its value and digest may be megabytes.
            if snapshot.parent:
                parent = models.Snapshot.objects.filter(
                    agent=agent, external_id=snapshot.parent[:255]).only("id").first()
            elif session is not None:
                # Two saves of one session: the later one's parent is the one before it.
                earlier = models.Snapshot.objects.filter(agent=agent, session=session)
                if seq is not None:
                    earlier = earlier.filter(seq__lte=seq)
                parent = earlier.order_by("-seq", "-taken_at", "-id").only("id").first()
            models.Snapshot.written(
                agent=agent, session=session, seq=seq, external_id=snapshot.external_id[:255], parent=parent,
                step=snapshot.step, taken_at=aware(snapshot.taken_at), source_format=snapshot.source_format[:40],
                format_version=(snapshot.format_version or "")[:40], value=snapshot.value,
            )
            self.outcome.snapshots += 1


    # --- compactions ---------------------------------------------------------------------------------------------

    def _compactions_write(self, session_at: SessionAt) -> None:
        for i, compaction in enumerate(self.document.compactions):
            place = f"memory.compactions[{i}]"
            _check(place, compaction.summary, compaction.external_id)
            session, seq = session_at(compaction.session, compaction.seq, place)
            if session is None:
                self.outcome.notes.append(f"{place}: a compaction of no known session is not stored")
                continue
            if models.Compaction.objects.filter(session=session, external_id=compaction.external_id[:255]).exists():
                self.outcome.skipped += 1
                continue
            went_out = None
            if compaction.went_out is not None:  # the file's runs of seqs, as the session numbers its messages
                went_out = [[a, b] for a, b in ((session_at(compaction.session, first, place)[1],
                                                 session_at(compaction.session, last, place)[1])
                                                for first, last in compaction.went_out)
                            if a is not None and b is not None]
            models.Compaction.objects.create(
                session=session, seq=seq, llm_call_id=self.call_named(compaction.llm_call), at=aware(compaction.at),
                summary=compaction.summary, source=compaction.source[:20], external_id=compaction.external_id[:255],
                went_out=went_out)
            self.outcome.compactions += 1


# --- what cannot be stored ------------------------------------------------------------------------------------------


def _check(place: str, *values: Any) -> None:
    for value in values:
        problem = value_problem(value) if value else None
        if problem:
            raise FormatError(place, problem)


def _check_record(store: str, record: core.RecordIn) -> None:
    place = f"memory.stores[{store!r}].records[{record.external_id!r}]"
    _check(place, record.external_id, record.text, record.value, record.metadata)
    for i, version in enumerate(record.versions):
        _check(f"{place}.versions[{i}]", version.text, version.value, version.actor)


# --- helpers -------------------------------------------------------------------------------------------------------


_RECORD_INSERT = RowInsert(models.MemoryRecord)
_VERSION_INSERT = RowInsert(models.RecordVersion)


def _ordered(record: core.RecordIn) -> list[core.VersionIn]:
    """The record's versions in the order the library wrote them (numbered as they are written); a record listed
    without any has one, itself."""
    return core.order_events(record.versions) or [core.VersionIn(op="ADD", text=record.text, value=record.value,
                                                                  at=record.updated_at or record.created_at)]


def _record_row(store: models.MemoryStore, record: core.RecordIn, versions: int) -> models.MemoryRecord:
    return models.MemoryRecord(
        store=store, external_id=record.external_id[:255], text=record.text, value=record.value,
        metadata=record.metadata, state=record.state, content_hash=record.content_hash or "",
        char_limit=record.char_limit, created_at=aware(record.created_at), updated_at=aware(record.updated_at),
        version_count=versions,
    )


def _record_update(row: models.MemoryRecord, record: core.RecordIn, versions: int) -> None:
    row.text = record.text
    row.value = record.value
    row.metadata = record.metadata or row.metadata
    row.state = record.state
    row.content_hash = record.content_hash or core.content_hash(record.text)
    row.char_limit = record.char_limit if record.char_limit is not None else row.char_limit
    row.updated_at = aware(record.updated_at) or row.updated_at
    row.version_count = versions


_RECORD_BODY = ["text", "value", "metadata", "state", "content_hash", "char_limit", "updated_at", "version_count"]


def _records_saved(rows: Sequence[models.MemoryRecord]) -> None:
    """The body, state and counts of records changed in place, one UPDATE by id run with ``executemany``, values
    prepared as the ORM prepares them: ``bulk_update``'s CASE of a thousand rows cost seconds to build in Python (a
    batch of 1,000 versions through the write API: 3.3 s, 0.3 s now)."""
    db = connections[DEFAULT_DB_ALIAS]
    fields = [f for f in models.MemoryRecord._meta.concrete_fields if f.name in _RECORD_BODY]
    quote = db.ops.quote_name
    sql = (f"UPDATE {quote(models.MemoryRecord._meta.db_table)} SET "
           + ", ".join(f"{quote(f.column)} = %s" for f in fields) + f" WHERE {quote('id')} = %s")
    params = [(*(f.get_db_prep_save(getattr(row, f.attname), db) for f in fields), row.pk) for row in rows]
    with db.cursor() as cursor:
        for start in range(0, len(params), BATCH):
            cursor.executemany(sql, params[start:start + BATCH])


def _record_written(row: models.MemoryRecord, last: core.VersionIn, metadata: dict[str, Any], versions: int) -> None:
    """A record whose new last version (a body seen whole) a partial document wrote: as ``_record_refreshed`` leaves
    it."""
    row.text = last.text or ""
    row.value = last.value
    row.metadata = metadata  # the body's metadata, whole: none is none
    row.state = "active"
    row.content_hash = core.content_hash(row.text)
    row.updated_at = aware(last.at) or row.updated_at
    row.version_count = versions


_Known = tuple[int, set[str], datetime | None, str | None]


def _known_versions(records: Iterable[models.MemoryRecord]) -> dict[int, _Known]:
    """For each stored record: its last version's number, the keys of its versions, the latest time among them
    and its last version's key."""
    ids = [r.pk for r in records if r.version_count]
    known: dict[int, _Known] = {}
    if not ids:
        return known
    for record_id, number, op, text, at, external_id in models.RecordVersion.objects.filter(
            record_id__in=ids).order_by("record_id", "number").values_list(
            "record_id", "number", "op", "text", "at", "external_id"):
        last, keys, last_at, _ = known.get(record_id, (0, set(), None, None))
        key = version_key(core.VersionIn(op=op, text=text, at=at, external_id=external_id or None))
        keys.add(key)
        known[record_id] = (max(last, number), keys, at if last_at is None or (at and at > last_at) else last_at,
                            key)
    return known


def _recall_id(recall: core.RecallIn, seq: int | None) -> str:
    """A recall without an id of its own is told by its place and what it returned."""
    body = json.dumps([recall.session, seq, recall.store, recall.query, [(i.rank, i.text) for i in recall.items]],
                      ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()
