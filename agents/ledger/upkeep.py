"""Keeping stored memory right after a write (an import's, live capture's, the write API's, a cleanup's): a record's
versions numbered again by time when a late one arrives, recalled items pointed at the version current when they were
read, a store's recalls matched again to the records it gained, its summaries counted again, and hidden stores
removed. ``ledger.storing`` writes; this keeps what it wrote right."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Q, Sum

from agents import models
from agents.memory import ledger as core

BATCH = 2000


def aware(when: datetime | None) -> datetime | None:
    # Libraries without a time zone (AgentScope, SQLite's CURRENT_TIMESTAMP) are read as UTC, as messages are.
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def version_key(version: core.VersionIn) -> str:
    """What tells a version already stored: the library's event id, else its body and time."""
    if version.external_id:
        return "id:" + version.external_id
    when = aware(version.at)
    return json.dumps([version.op, version.text, when.isoformat() if when else None], ensure_ascii=False)


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
    if described is not None and body_key == version_key(core.VersionIn(
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


class StoreMatcher:
    """A store's records as recalled items are matched to them: by the record's library id, then by the hash of the
    text (the record's now, or any version's), then by the text with its whitespace folded. Loaded lazily, for the
    texts asked only (a store may hold a million records)."""

    def __init__(self, store: models.MemoryStore) -> None:
        self.store = store
        # Primed: records by the ids the items name, and their versions (two queries for a batch of recalls).
        self._ids: dict[str, int | None] = {}
        self._versions: dict[int, list[core.VersionIn]] = {}
        # Primed too: what _by_text finds for the texts of the items no id matches (three queries in all, not up to
        # three an item).
        self._texts: dict[str, tuple[int, int | None] | None] = {}

    def prime(self, items: Iterable[core.RecallItemIn]) -> None:
        items = list(items)
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
        texts = sorted({item.text for item in items if not any(
            self._ids.get(str(name)) for name in (item.record, item.ref.get("id")) if name is not None)}
            - self._texts.keys())
        for start in range(0, len(texts), BATCH):
            self._prime_texts(texts[start:start + BATCH])

    def _prime_texts(self, texts: list[str]) -> None:
        """``_by_text`` of each of ``texts``, in as many queries as it takes for one."""
        by_hash: dict[str, tuple[int, int | None]] = {}

        def records(hashes: set[str]) -> None:
            for content_hash, pk, count in models.MemoryRecord.objects.filter(
                    store=self.store, content_hash__in=sorted(hashes - by_hash.keys())).order_by(
                    "-pk").values_list("content_hash", "pk", "version_count"):
                by_hash[content_hash] = (pk, count or None)  # the lowest pk last: first()'s

        records({core.content_hash(text) for text in texts})
        left = [text for text in texts if core.content_hash(text) not in by_hash]
        by_version: dict[str, tuple[int, int]] = {}
        if left:
            for text, record_id, number in models.RecordVersion.objects.filter(
                    record__store=self.store, text__in=left).order_by("number", "-record_id").values_list(
                    "text", "record_id", "number"):
                if text is not None:  # always: found by its text
                    by_version[text] = (record_id, number)  # the highest number last
        folded = {text: core.folded(text) for text in left if text not in by_version}
        if any(wanted != text for text, wanted in folded.items()):
            records({core.content_hash(wanted) for text, wanted in folded.items() if wanted != text})
        for text in texts:
            found = by_hash.get(core.content_hash(text)) or by_version.get(text)
            if found is None and text in folded and folded[text] != text:
                found = by_hash.get(core.content_hash(folded[text]))
            self._texts[text] = found

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
        if text in self._texts:
            return self._texts[text]
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
    matcher = StoreMatcher(store)
    found = []
    # Driven from the store's recalls (an index probe of (no record, recall) each), not from every unmatched item of
    # the database (SQLite's plan for recall__store: the items of every knowledge store nobody writes, on each write).
    unmatched = models.RecallItem.objects.filter(
        recall__in=models.Recall.objects.filter(store=store), record__isnull=True).select_related("recall").order_by()
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


def store_summaries(store: models.MemoryStore, read: set[int] | None = None) -> None:
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
