"""The memory layers read back out of the database as a core ``MemoryDocument``, for exports: with a native export
of sessions (the recalls they carry, the stores those read and their agents keep, every record with its versions,
the snapshots that reach them), or one store alone in a memory format its library loads (mem0, AutoGen's
``ListMemory``, a LangGraph store) or in native.

Records are read a batch at a time as the writer consumes them (``MemoryDocument.records``), so a store of a million
versions is exported in bounded memory. Conversations are named ``#N``: the N-th session of the export, in its order
(two sessions of one export may share an external id, under two agents).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from django.db.models import QuerySet

from agents import models
from agents.memory import ledger as core

BATCH = 2000


def _store_key(store_id: int) -> str:
    return f"store-{store_id}"


def _store_in(store: models.MemoryStore) -> core.StoreIn:
    return core.StoreIn(key=_store_key(store.pk), name=store.name, kind=store.kind,  # type: ignore[arg-type]
                        source_format=store.source_format, scope=store.scope or {},
                        external_id=store.external_id or None, agent=store.agent.name if store.agent else None)


def _records(store_ids: Sequence[int], session_keys: Mapping[int, str]) -> Iterator[tuple[str, core.RecordIn]]:
    """Every record of the stores with its versions, a batch of records at a time, in a stable order."""
    for store_id in store_ids:
        last = 0
        while True:
            rows = list(models.MemoryRecord.objects.filter(store_id=store_id, pk__gt=last).order_by("pk")[:BATCH])
            if not rows:
                break
            last = rows[-1].pk
            versions: dict[int, list[core.VersionIn]] = {}
            for v in models.RecordVersion.objects.filter(record_id__in=[r.pk for r in rows]).order_by(
                    "record_id", "number"):
                versions.setdefault(v.record_id, []).append(core.VersionIn(
                    op=v.op, text=v.text, value=v.value, at=v.at, actor=v.actor or None,
                    session=session_keys.get(v.session_id) if v.session_id else None,
                    seq=v.seq if v.session_id in session_keys else None,
                    external_id=v.external_id or None, number=v.number, order=v.number,
                ))
            for row in rows:
                yield _store_key(store_id), core.RecordIn(
                    external_id=row.external_id, text=row.text, value=row.value, metadata=row.metadata or {},
                    state=row.state, content_hash=row.content_hash or None,  # type: ignore[arg-type]
                    char_limit=row.char_limit, created_at=row.created_at, updated_at=row.updated_at,
                    versions=versions.get(row.pk, []),
                )


def _recalls(recalls: Iterable[models.Recall], session_keys: Mapping[int, str]) -> list[core.RecallIn]:
    out = []
    for recall in recalls:
        out.append(core.RecallIn(
            session=session_keys.get(recall.session_id), seq=recall.seq,
            store=_store_key(recall.store_id) if recall.store_id else None, query=recall.query or None,
            params=recall.params or {}, placement=recall.placement,  # type: ignore[arg-type]
            persisted=recall.persisted, at=recall.at, external_id=recall.external_id or None,
            items=[core.RecallItemIn(text=item.text, rank=item.rank, score=item.score,
                                     record=item.record.external_id if item.record else None,
                                     version=item.version, ref=item.ref or {},
                                     metadata=item.metadata or {})
                   for item in recall.items.all()],
        ))
    return out


def _snapshots(snapshots: Iterable[models.Snapshot], session_keys: Mapping[int, str]) -> list[core.SnapshotIn]:
    return [core.SnapshotIn(
        external_id=s.external_id, value=s.value, source_format=s.source_format or "native",
        format_version=s.format_version or None, parent=s.parent.external_id if s.parent else None,
        step=s.step, taken_at=s.taken_at, agent=s.agent.name,
        session=session_keys.get(s.session_id) if s.session_id else None,
        seq=s.seq if s.session_id in session_keys else None,
    ) for s in snapshots]


def memory_of_sessions(sessions: QuerySet[models.Session]) -> core.MemoryDocument:
    """The memory layers that go with ``sessions`` (exported in the order of their ids): the recalls they carry,
    the stores those recalls read and the stores their agents keep (with every record and version), and the
    snapshots that reach them. Empty when there are none."""
    ids = list(sessions.order_by("id").values_list("id", flat=True))
    session_keys = {pk: f"#{i}" for i, pk in enumerate(ids)}
    agent_ids = list(sessions.order_by().values_list("agent_id", flat=True).distinct())
    recalls = list(models.Recall.objects.filter(session_id__in=ids).select_related("store").prefetch_related(
        "items__record").order_by("session_id", "seq", "id"))
    store_ids = sorted({r.store_id for r in recalls if r.store_id} | set(models.MemoryStore.objects.filter(
        agent_id__in=agent_ids, state=models.MemoryStore.State.READY).values_list("id", flat=True)))
    stores = list(models.MemoryStore.objects.filter(pk__in=store_ids).select_related("agent").order_by("id"))
    # The parent is named, not read (its value may be as big as this one's); no digest: the file does not carry it.
    snapshots = models.Snapshot.objects.filter(session_id__in=ids).select_related("agent", "parent").defer(
        "digest", "parent__value", "parent__digest").order_by("session_id", "seq", "id")
    return core.MemoryDocument(
        format="native", stores=[_store_in(s) for s in stores],
        records=_records([s.pk for s in stores], session_keys),
        recalls=_recalls(recalls, session_keys), snapshots=_snapshots(snapshots, session_keys),
    )


def memory_of_store(store: models.MemoryStore) -> core.MemoryDocument:
    """One store with every record and version (their sessions left out: a store alone names none)."""
    return core.MemoryDocument(format=store.source_format or "native", stores=[_store_in(store)],
                               records=_records([store.pk], {}))
