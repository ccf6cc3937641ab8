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
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Q, Sum

from agents import models
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


def _aware(when: datetime | None) -> datetime | None:
    # Libraries without a time zone (AgentScope, SQLite's CURRENT_TIMESTAMP) are read as UTC, as messages are.
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


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
            _store_summaries(store.row, self.read_records if self.partial_records else None)
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
            times = [when for v in ordered if (when := _aware(v.at)) is not None and _version_key(v) not in keys]
            late = last_at is not None and bool(times) and min(times) < last_at
            if added and self.partial_records and not late and ordered[-1].op.upper() != "DELETE" and (
                    ordered[-1].captured and _version_key(ordered[-1]) not in keys):
                # The document wrote the record's last body, appended: the record is that body (no reload).
                _record_written(row, ordered[-1], record.metadata, last + len(added))
                changed.append(row)
            elif added and (self.partial_records or late):
                body = next((v for v in reversed(ordered) if v.op.upper() != "DELETE" and v.captured), None)
                reordered[row.pk] = (record.metadata, _version_key(body) if body is not None else None)
            elif (added or ((row.text != record.text or row.state != record.state)
                            and _version_key(ordered[-1]) == last_key)) and not self.partial_records:
                _record_update(row, record, last + len(added))
                changed.append(row)
        if versions:
            _VERSION_INSERT.insert_values(versions)
            self.outcome.versions += len(versions)
        if changed:
            models.MemoryRecord.objects.bulk_update(
                changed, ["text", "value", "metadata", "state", "content_hash", "char_limit", "updated_at",
                          "version_count"], batch_size=BATCH)
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
            if keys and _version_key(version) in keys:
                self.outcome.skipped += 1
                continue
            number += 1
            session, seq = (None, None) if version.session is None else session_at(
                version.session, version.seq, f"records[{external_id}].versions")
            out.append(_VERSION_INSERT.values(
                record_id=record_id, number=number, op=version.op[:40], text=version.text, value=version.value,
                at=_aware(version.at), actor=(version.actor or "")[:255],
                session_id=session.pk if session is not None else None, seq=seq,
                llm_call_id=self.call_named(version.llm_call), external_id=(version.external_id or "")[:255],
                body_captured=version.captured,
            ))
        return out

    # --- recalls -------------------------------------------------------------------------------------------------

    def _recalls_write(self, session_at: SessionAt) -> None:
        recalls = self.document.recalls
        matchers: dict[int, _StoreMatcher] = {}
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
                placement=recall.placement, persisted=recall.persisted, at=_aware(recall.at),
                item_count=len(recall.items), external_id=external_id[:255],
                llm_call_id=self.call_named(recall.llm_call), call_input=recall.call_input,
            )
            matcher = None
            if store is not None:
                matcher = matchers.get(store.pk)
                if matcher is None:
                    matcher = matchers[store.pk] = _StoreMatcher(store)
                    matcher.prime(i for r in recalls if r.store == recall.store for i in r.items)
            items = []
            for item in recall.items:
                record_id, version = matcher.find(item, _aware(recall.at)) if matcher else (None, None)
                items.append(models.RecallItem(recall=row, record_id=record_id, version=version, rank=item.rank,
                                               score=item.score, text=item.text, ref=item.ref))
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
            if snapshot.parent:
                parent = models.Snapshot.objects.filter(agent=agent, external_id=snapshot.parent[:255]).first()
            elif session is not None:
                # Two saves of one session: the later one's parent is the one before it.
                earlier = models.Snapshot.objects.filter(agent=agent, session=session)
                if seq is not None:
                    earlier = earlier.filter(seq__lte=seq)
                parent = earlier.order_by("-seq", "-taken_at", "-id").first()
            models.Snapshot.objects.create(
                agent=agent, session=session, seq=seq, external_id=snapshot.external_id[:255], parent=parent,
                step=snapshot.step, taken_at=_aware(snapshot.taken_at), source_format=snapshot.source_format[:40],
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
            models.Compaction.objects.create(
                session=session, seq=seq, llm_call_id=self.call_named(compaction.llm_call), at=_aware(compaction.at),
                summary=compaction.summary, source=compaction.source[:20], external_id=compaction.external_id[:255])
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
        char_limit=record.char_limit, created_at=_aware(record.created_at), updated_at=_aware(record.updated_at),
        version_count=versions,
    )


def _record_update(row: models.MemoryRecord, record: core.RecordIn, versions: int) -> None:
    row.text = record.text
    row.value = record.value
    row.metadata = record.metadata or row.metadata
    row.state = record.state
    row.content_hash = record.content_hash or core.content_hash(record.text)
    row.char_limit = record.char_limit if record.char_limit is not None else row.char_limit
    row.updated_at = _aware(record.updated_at) or row.updated_at
    row.version_count = versions


def _record_written(row: models.MemoryRecord, last: core.VersionIn, metadata: dict[str, Any], versions: int) -> None:
    """A record whose new last version (a body seen whole) a partial document wrote: as ``_record_refreshed`` leaves
    it."""
    row.text = last.text or ""
    row.value = last.value
    row.metadata = metadata  # the body's metadata, whole: none is none
    row.state = "active"
    row.content_hash = core.content_hash(row.text)
    row.updated_at = _aware(last.at) or row.updated_at
    row.version_count = versions


def _version_key(version: core.VersionIn) -> str:
    """What tells a version already stored: the library's event id, else its body and time."""
    if version.external_id:
        return "id:" + version.external_id
    when = _aware(version.at)
    return json.dumps([version.op, version.text, when.isoformat() if when else None], ensure_ascii=False)


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
        key = _version_key(core.VersionIn(op=op, text=text, at=at, external_id=external_id or None))
        keys.add(key)
        known[record_id] = (max(last, number), keys, at if last_at is None or (at and at > last_at) else last_at,
                            key)
    return known


def records_reordered(records: dict[int, tuple[dict[str, Any], str | None]]) -> None:
    """Records that a late version reached, or that lost one (record id -> the metadata its document gives, and the
    key of the document's last version with a body seen whole): their versions numbered again by time, then
    arrival (a version without a time keeps its place after the one before it), from 1 without a gap, in two steps
    (``number`` is unique per record), and each record's body, state and times taken from its versions again (its
    metadata from the document that wrote its last body seen whole)."""
    ids = sorted(records)
    for start in range(0, len(ids), BATCH):
        chunk = ids[start:start + BATCH]
        by_record: dict[int, list[models.RecordVersion]] = {}
        for version in models.RecordVersion.objects.filter(record_id__in=chunk).order_by("record_id", "number").only(
                "pk", "record_id", "number", "op", "text", "value", "at", "body_captured", "external_id"):
            by_record.setdefault(version.record_id, []).append(version)
        moved: list[tuple[models.RecordVersion, int, int]] = []  # (version, its number for now, its place)
        rows = {r.pk: r for r in models.MemoryRecord.objects.filter(pk__in=chunk)}
        for record_id, versions in by_record.items():
            placed = _by_time(versions)
            if [v.pk for v in placed] != [v.pk for v in versions] or versions[-1].number != len(versions):
                top = max(v.number for v in versions)  # first past every number the record holds: no two rows meet
                moved += [(version, top + number, number) for number, version in enumerate(placed, 1)]
            _record_refreshed(rows[record_id], placed, *records[record_id])
        for step in (1, 2):
            for version, for_now, place in moved:
                version.number = for_now if step == 1 else place
            if moved:
                models.RecordVersion.objects.bulk_update([m[0] for m in moved], ["number"], batch_size=BATCH)
        models.MemoryRecord.objects.bulk_update(
            list(rows.values()), ["text", "value", "metadata", "state", "content_hash", "created_at", "updated_at",
                                  "version_count"], batch_size=BATCH)


def _by_time(versions: list[models.RecordVersion]) -> list[models.RecordVersion]:
    keyed = []
    last: datetime | None = None
    for version in versions:  # in their present order: one without a time stays after the one before it
        when = version.at if version.at is not None else last
        last = when
        keyed.append((when is not None, when.timestamp() if when else 0.0, version.pk, version))
    return [k[3] for k in sorted(keyed, key=lambda k: k[:3])]


def _record_refreshed(row: models.MemoryRecord, versions: list[models.RecordVersion], metadata: dict[str, Any],
                      body_key: str | None) -> None:
    """The record as its last version leaves it: a deleted record keeps the last body written, and a body seen
    without its content is unknown (no text, no value), as ``memory_spans.to_document`` says of a trace."""
    last = versions[-1]
    body = next((v for v in reversed(versions) if v.op.upper() != "DELETE"), None)
    known = body is not None and body.body_captured
    row.text = (body.text or "") if known and body is not None else ""
    row.value = body.value if known and body is not None else None
    # Metadata comes whole with a body seen whole (none is none), from the document that wrote the last such body.
    described = next((v for v in reversed(versions) if v.op.upper() != "DELETE" and v.body_captured), None)
    if described is not None and body_key == _version_key(core.VersionIn(
            op=described.op, text=described.text, at=described.at, external_id=described.external_id or None)):
        row.metadata = metadata
    row.state = "deleted" if last.op.upper() == "DELETE" else "active"
    row.content_hash = core.content_hash(row.text)
    row.created_at = versions[0].at or row.created_at
    row.updated_at = last.at or row.updated_at
    row.version_count = len(versions)


def items_reversioned(record_ids: Sequence[int]) -> int:
    """The recalled items of records whose versions changed, each given again the version current at its recall
    (a version that arrived later may be the one a recall read). Returns how many changed."""
    changed = []
    for start in range(0, len(record_ids), BATCH):
        chunk = record_ids[start:start + BATCH]
        items = list(models.RecallItem.objects.filter(record_id__in=chunk).select_related("recall").only(
            "pk", "record_id", "version", "text", "recall__at"))
        if not items:
            continue
        versions: dict[int, list[core.VersionIn]] = {}
        for record_id, number, op, text, at in models.RecordVersion.objects.filter(
                record_id__in={i.record_id for i in items}).order_by("record_id", "number").values_list(
                "record_id", "number", "op", "text", "at"):
            versions.setdefault(record_id, []).append(core.VersionIn(op=op, text=text, at=at, number=number))
        for item in items:
            assert item.record_id is not None
            version = core.version_at(versions.get(item.record_id, []), item.recall.at, item.text)
            if version != item.version:
                item.version = version
                changed.append(item)
    if changed:
        models.RecallItem.objects.bulk_update(changed, ["version"], batch_size=BATCH)
    return len(changed)


def _recall_id(recall: core.RecallIn, seq: int | None) -> str:
    """A recall without an id of its own is told by its place and what it returned."""
    body = json.dumps([recall.session, seq, recall.store, recall.query, [(i.rank, i.text) for i in recall.items]],
                      ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


class _StoreMatcher:
    """A store's records as recalled items are matched to them: by the record's library id, then by the hash of the
    text (the record's now, or any version's), then by the text with its whitespace folded. Loaded lazily, for the
    texts asked only (a store may hold a million records)."""

    def __init__(self, store: models.MemoryStore) -> None:
        self.store = store
        # Primed: records by the ids the items name, and their versions (two queries for a batch of recalls).
        self._ids: dict[str, int | None] = {}
        self._versions: dict[int, list[core.VersionIn]] = {}

    def prime(self, items: Iterable[core.RecallItemIn]) -> None:
        wanted = sorted({str(name) for item in items for name in (item.record, item.ref.get("id"))
                         if name is not None} - self._ids.keys())
        for start in range(0, len(wanted), BATCH):
            chunk = wanted[start:start + BATCH]
            found = dict(models.MemoryRecord.objects.filter(store=self.store, external_id__in=chunk).values_list(
                "external_id", "pk"))
            self._ids.update((name, found.get(name)) for name in chunk)
        ids = sorted({pk for pk in self._ids.values() if pk is not None} - self._versions.keys())
        for start in range(0, len(ids), BATCH):
            for record_id, number, op, text, at in models.RecordVersion.objects.filter(
                    record_id__in=ids[start:start + BATCH]).order_by("record_id", "number").values_list(
                    "record_id", "number", "op", "text", "at"):
                self._versions.setdefault(record_id, []).append(core.VersionIn(op=op, text=text, at=at,
                                                                               number=number))

    def find(self, item: core.RecallItemIn, when: datetime | None) -> tuple[int | None, int | None]:
        record_id = None
        if item.record is not None:
            record_id = self._by_external_id(item.record)
        if record_id is None and item.ref.get("id") is not None:
            record_id = self._by_external_id(str(item.ref["id"]))
        by_text = None
        if record_id is None:
            by_text = self._by_text(item.text)
            record_id = by_text[0] if by_text else None
        if record_id is None:
            return None, None
        version = item.version
        if version is None:
            version = by_text[1] if by_text else (
                core.version_at(self._versions[record_id], when, item.text) if record_id in self._versions
                else _version_current(record_id, when, item.text))
        return record_id, version

    def _by_external_id(self, external_id: str) -> int | None:
        if external_id in self._ids:
            return self._ids[external_id]
        return models.MemoryRecord.objects.filter(store=self.store, external_id=external_id).values_list(
            "pk", flat=True).first()

    def _by_text(self, text: str) -> tuple[int, int | None] | None:
        found = models.MemoryRecord.objects.filter(store=self.store, content_hash=core.content_hash(text)).values_list(
            "pk", "version_count").first()
        if found is not None:
            return found[0], found[1] or None
        version = models.RecordVersion.objects.filter(record__store=self.store, text=text).order_by(
            "-number").values_list("record_id", "number").first()
        if version is not None:
            return version[0], version[1]
        wanted = core.folded(text)
        if wanted != text:
            found = models.MemoryRecord.objects.filter(
                store=self.store, content_hash=core.content_hash(wanted)).values_list("pk", "version_count").first()
            if found is not None:
                return found[0], found[1] or None
        return None


def _version_current(record_id: int, when: datetime | None, text: str) -> int | None:
    versions = [core.VersionIn(op=op, text=t, at=at, number=number) for number, op, t, at in
                models.RecordVersion.objects.filter(record_id=record_id).order_by("number").values_list(
                    "number", "op", "text", "at")]
    return core.version_at(versions, when, text)


def rematch_store(store: models.MemoryStore, written: Sequence[core.RecordIn] | None = None) -> set[int]:
    """Items recalled from ``store`` that matched no record when they were stored, matched again now that it holds
    more records (``written``: only those that name one of these records by id or by a text it had, for a live
    batch that wrote a few records of a store where many items may never match). Returns the records found."""
    matcher = _StoreMatcher(store)
    found = []
    unmatched = models.RecallItem.objects.filter(recall__store=store, record__isnull=True).select_related("recall")
    items: dict[int, models.RecallItem] = {}
    if written is None:
        items = {item.pk: item for item in unmatched}
    for start in range(0, len(written or ()), BATCH):
        chunk = (written or [])[start:start + BATCH]
        texts = sorted({t for r in chunk for t in (r.text, *(v.text for v in r.versions)) if t})
        items.update((item.pk, item) for item in unmatched.filter(
            Q(ref__id__in=[r.external_id for r in chunk]) | Q(text__in=texts)))
    listed = [(item, core.RecallItemIn(text=item.text, rank=item.rank, ref=item.ref))
              for _, item in sorted(items.items())]
    matcher.prime(given for _, given in listed)
    for item, given in listed:
        record_id, version = matcher.find(given, item.recall.at)
        if record_id is not None:
            item.record_id, item.version = record_id, version
            found.append(item)
    if found:
        models.RecallItem.objects.bulk_update(found, ["record", "version"], batch_size=BATCH)
    return {item.record_id for item in found if item.record_id is not None}


def _store_summaries(store: models.MemoryStore, read: set[int] | None = None) -> None:
    """The counts the memory page lists, from the rows (once per import, not per record); the reads of ``read``
    records only, when given."""
    records = models.MemoryRecord.objects.filter(store=store)
    totals = records.aggregate(records=Count("id"), versions=Sum("version_count"), updated=Max("updated_at"))
    # Reads: every item that matched a record of the store.
    items = models.RecallItem.objects.filter(record__store=store)
    if read is not None:
        items = items.filter(record_id__in=sorted(read))
    reads = items.values("record_id").annotate(
        n=Count("id"), last=Max("recall__at")).values_list("record_id", "n", "last")
    for record_id, n, last in reads:
        models.MemoryRecord.objects.filter(pk=record_id).exclude(read_count=n).update(read_count=n, last_read_at=last)
    recalls = models.Recall.objects.filter(store=store).aggregate(n=Count("id"), last=Max("at"))
    models.MemoryStore.objects.filter(pk=store.pk).update(
        record_count=totals["records"] or 0, version_count=totals["versions"] or 0,
        read_count=recalls["n"] or 0, last_write_at=totals["updated"], last_read_at=recalls["last"],
    )


def store_remove(store_id: int) -> None:
    """Delete a store and its rows a batch at a time, each a short transaction (a hidden store of a failed import)."""
    def batch() -> bool:
        with transaction.atomic():
            ids = list(models.MemoryRecord.objects.filter(store_id=store_id).order_by().values_list(
                "pk", flat=True)[:BATCH])
            if not ids:
                models.MemoryStore.objects.filter(pk=store_id).delete()
                return False
            models.RecordVersion.objects.filter(record_id__in=ids)._raw_delete(models.RecordVersion.objects.db)
            models.RecallItem.objects.filter(record_id__in=ids).update(record=None, version=None)
            models.MemoryRecord.objects.filter(pk__in=ids)._raw_delete(models.MemoryRecord.objects.db)
            return True

    while batch():
        pass


def stores_cleanup(is_gone: Callable[[str], bool]) -> list[int]:
    """Remove the hidden stores of imports that will never complete (``is_gone(owner)``)."""
    removed = []
    for pk, owner in models.MemoryStore.objects.filter(state=models.MemoryStore.State.IMPORTING).values_list(
            "pk", "import_owner"):
        if is_gone(owner):
            store_remove(pk)
            removed.append(pk)
    return removed
