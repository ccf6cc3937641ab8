"""Memory findings over the stored rows: the rules of ``agents.memory.findings`` (the ones ``manage.py lint`` applies
to a file) fed from the database, and stored (``models.MemoryFinding``) so that pages and lists read them.

- A session's findings come from its recalls and the records they read, with each record's versions
  (``stale_recall``, ``recall_of_deleted``, ``unmatched_recall``, ``zero_hit_recall``, ``repeated_injection``).
- A store's come from its records and their versions (``duplicate_record``, ``noop_write``, ``block_over_limit``,
  ``block_near_limit``).

Each is computed when what it is computed from changes: an import computes those of the sessions and stores it
wrote, and of every session that reads a store it wrote (``findings_after_import``); whoever else changes memory
rows calls ``findings_refresh``. A reader checks the key they were computed from (``session_key``, ``store_key``: a
few aggregates over indexed rows, two queries) and computes them again when it no longer holds (rows written by a
path that did not call ``findings_refresh``, or stored before these findings existed): what is read is always what
the rows say. Session.memory_finding_count is what the session list's "has memory findings" filter reads.

The cost of computing them is bounded by what they are computed from, never held whole: a session's recalls are read
in the order of the messages carrying them, ``BATCH`` at a time with their items (two queries a batch, three when it
reads records not read before); a store's records ``BATCH`` at a time with their versions. What is kept across
batches is one entry per distinct memory a persisted recall carried (the repeated-injection check), the versions
(number, op, time: no text) of the records read, and for a store one key per distinct active text (duplicates).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Min, QuerySet, Sum
from django_tasks import task

from agents import models
from agents.access import User, session_for_user
from agents.ledger.reading import store_for_user
from agents.memory import findings as rules
from agents.memory.ledger import VersionIn
from agents.store.writing import RowInsert

BATCH = 2000
# Bumped when a rule changes: every stored finding is then computed again when next read.
RULES_VERSION = 1
SESSION_KINDS = ("stale_recall", "recall_of_deleted", "unmatched_recall", "zero_hit_recall", "repeated_injection")
STORE_KINDS = ("duplicate_record", "noop_write", "block_over_limit", "block_near_limit")


class FindingsRequestError(ValueError):
    """A filter that cannot apply; ``str(e)`` is ``field: what is wrong``."""


# --- what they were computed from ----------------------------------------------------------------------------------


def session_key(session: models.Session) -> str:
    """What a session's findings depend on: its messages' version (the last reply), its recalls (count, last id,
    where they are, how many items), and each store they read (its records and versions, as its summaries count
    them). Two indexed aggregates (one for a session without recalls)."""
    return _session_key(session)[0]


def _session_key(session: models.Session) -> tuple[str, int]:
    """The key, and how many recalls the session has."""
    recalls = models.Recall.objects.filter(session=session).order_by().aggregate(
        n=Count("id"), last=Max("id"), seqs=Sum("seq"), items=Sum("item_count"))
    stores: list[Any] = []
    if recalls["n"]:  # no recall reads a store: the list would be empty
        stores = list(models.MemoryStore.objects.filter(
            pk__in=models.Recall.objects.filter(session=session, store__isnull=False).order_by().values("store_id")
        ).order_by("pk").values_list("pk", "record_count", "version_count", "last_write_at", "state"))
    return _digest([RULES_VERSION, session.content_version, recalls["n"], recalls["last"], recalls["seqs"],
                    recalls["items"], *stores]), recalls["n"]


def store_key(store: models.MemoryStore) -> str:
    return _digest([RULES_VERSION, store.record_count, store.version_count, store.last_write_at, store.state])


def _digest(parts: Sequence[Any]) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]


# --- a session's findings ------------------------------------------------------------------------------------------


@dataclass
class _Found:
    """A finding and where it is in the rows."""

    finding: rules.Finding
    recall: int | None = None
    record: int | None = None
    at: datetime | None = None


class _Records:
    """The records a session's recalls read: their library ids and versions (number, op, time), loaded once each."""

    def __init__(self) -> None:
        self.external: dict[int, str] = {}
        self.pk: dict[tuple[int, str], int] = {}  # (store, external id) -> record
        self.versions: dict[int, list[VersionIn]] = {}

    def load(self, record_ids: Iterable[int]) -> None:
        wanted = sorted({r for r in record_ids if r not in self.external})
        for start in range(0, len(wanted), BATCH):
            chunk = wanted[start:start + BATCH]
            for pk, store_id, external_id in models.MemoryRecord.objects.filter(pk__in=chunk).values_list(
                    "pk", "store_id", "external_id"):
                self.external[pk] = external_id
                self.pk[(store_id, external_id)] = pk
                self.versions[pk] = []
            for record_id, number, op, at in models.RecordVersion.objects.filter(record_id__in=chunk).order_by(
                    "record_id", "number").values_list("record_id", "number", "op", "at"):
                self.versions[record_id].append(VersionIn(op=op, at=at, number=number))


def session_findings_compute(session: models.Session) -> list[_Found]:
    """Every finding of the session's recalls, from the rows, in the order of the messages carrying them."""
    last_reply = models.Message.objects.filter(session=session, role="assistant").order_by("-seq").values_list(
        "seq", flat=True).first()
    key = str(session.pk)
    injections = rules.InjectionCheck(key, -1 if last_reply is None else last_reply)
    stores: dict[int, bool] = {}  # store -> whether its records are known
    records = _Records()
    out: list[_Found] = []
    for batch in _recall_batches(session):
        items: dict[int, list[tuple[int | None, int | None, str]]] = {r[0]: [] for r in batch}
        for recall_id, record_id, version, text in models.RecallItem.objects.filter(
                recall_id__in=list(items)).order_by("recall_id", "rank", "id").values_list(
                "recall_id", "record_id", "version", "text"):
            items[recall_id].append((record_id, version, text))
        records.load(r for found in items.values() for r, _v, _t in found if r is not None)
        unknown = {r[2] for r in batch if r[2] is not None and r[2] not in stores}
        if unknown:
            stores.update({pk: count > 0 for pk, count in models.MemoryStore.objects.filter(
                pk__in=unknown).values_list("pk", "record_count")})
        for recall_id, seq, store_id, at, persisted, query in batch:
            facts = rules.RecallFacts(
                session=key, seq=seq, store=str(store_id) if store_id is not None else None, at=at,
                persisted=persisted, query=query or None,
                items=[rules.ItemFacts(text, records.external.get(r) if r is not None else None, v)
                       for r, v, text in items[recall_id]])
            store_facts = None
            if store_id is not None:
                read = {records.external[r]: records.versions[r] for r, _v, _t in items[recall_id]
                        if r is not None and r in records.external}
                store_facts = rules.StoreFacts(records_known=stores.get(store_id, False), versions=read)
            for finding in [*rules.recall_findings(facts, store_facts), *injections.add(facts)]:
                record = records.pk.get((store_id, finding.record)) if finding.record and store_id else None
                out.append(_Found(finding, recall=recall_id, record=record, at=at))
    return out


_Recall = tuple[int, int | None, int | None, datetime | None, bool, str]


def _recall_batches(session: models.Session) -> Iterator[list[_Recall]]:
    """The session's recalls by the message carrying them, then those no message carries, BATCH at a time, each
    batch a range of the index on (session, seq, id)."""
    rows = models.Recall.objects.filter(session=session)
    fields = ("pk", "seq", "store_id", "at", "persisted", "query")
    after: tuple[int, int] | None = None
    while True:
        placed = rows.filter(seq__isnull=False)
        if after is not None:
            placed = placed.filter(seq__gte=after[0]).exclude(seq=after[0], pk__lte=after[1])
        batch: list[_Recall] = list(placed.order_by("seq", "pk").values_list(*fields)[:BATCH])
        if not batch:
            break
        yield batch
        last = batch[-1]
        assert last[1] is not None
        after = (last[1], last[0])
    last_pk = 0
    while True:
        batch = list(rows.filter(seq__isnull=True, pk__gt=last_pk).order_by("pk").values_list(*fields)[:BATCH])
        if not batch:
            break
        yield batch
        last_pk = batch[-1][0]


# --- a store's findings --------------------------------------------------------------------------------------------


def store_findings_compute(store: models.MemoryStore) -> list[_Found]:
    """Every finding of the store's records, from the rows, a batch of records (and their versions) at a time."""
    pks: dict[str, int] = {}
    updated: dict[str, datetime | None] = {}
    times: dict[tuple[str, int], datetime | None] = {}

    def facts() -> Iterator[rules.RecordFacts]:
        last = 0
        while True:
            batch = list(models.MemoryRecord.objects.filter(store=store, pk__gt=last).order_by("pk").values_list(
                "pk", "external_id", "text", "state", "char_limit", "updated_at")[:BATCH])
            if not batch:
                return
            last = batch[-1][0]
            versions: dict[int, list[VersionIn]] = {pk: [] for pk, *_ in batch}
            for record_id, number, op, text, value, at in models.RecordVersion.objects.filter(
                    record_id__in=list(versions)).order_by("record_id", "number").values_list(
                    "record_id", "number", "op", "text", "value", "at"):
                versions[record_id].append(VersionIn(op=op, text=text, value=value, at=at, number=number))
            for pk, external_id, text, state, char_limit, updated_at in batch:
                pks[external_id], updated[external_id] = pk, updated_at
                for version in versions[pk]:
                    if version.op.upper() == "UPDATE":
                        times[(external_id, version.number or 0)] = version.at
                yield rules.RecordFacts(external_id, text, state, char_limit, versions[pk])

    found = rules.record_findings(str(store.pk), store.kind, facts())
    out = []
    for finding in found:
        assert finding.record is not None
        at = times.get((finding.record, finding.version or 0)) if finding.kind == "noop_write" else updated.get(
            finding.record)
        out.append(_Found(finding, record=pks.get(finding.record), at=at))
    return out


# --- stored ----------------------------------------------------------------------------------------------------------


def _rows(found: Sequence[_Found], **owner: Any) -> list[models.MemoryFinding]:
    return [models.MemoryFinding(kind=f.finding.kind, seq=f.finding.index, recall_id=f.recall, record_id=f.record,
                                 version=f.finding.version, message=f.finding.message, at=f.at, **owner)
            for f in found]


_FINDING_INSERT = RowInsert(models.MemoryFinding)


def _insert(rows: list[models.MemoryFinding]) -> None:
    for start in range(0, len(rows), BATCH):
        _FINDING_INSERT.insert(rows[start:start + BATCH])


def session_findings_store(session: models.Session, *, key: str | None = None) -> int:
    """Compute the session's findings and store them in place of those it had; returns how many. ``key``: its
    ``session_key``, when the caller has just read it."""
    key = key or session_key(session)
    found = session_findings_compute(session)
    with transaction.atomic():
        models.MemoryFinding.objects.filter(session=session).delete()
        _insert(_rows(found, session=session))
        models.Session.objects.filter(pk=session.pk).update(memory_finding_count=len(found), memory_findings_key=key)
    session.memory_finding_count, session.memory_findings_key = len(found), key
    return len(found)


def store_findings_store(store: models.MemoryStore) -> int:
    key = store_key(store)
    found = store_findings_compute(store)
    with transaction.atomic():
        models.MemoryFinding.objects.filter(store=store).delete()
        _insert(_rows(found, store=store))
        models.MemoryStore.objects.filter(pk=store.pk).update(finding_count=len(found), findings_key=key)
    store.finding_count, store.findings_key = len(found), key
    return len(found)


def session_findings_fresh(session: models.Session, *, writer: bool = False) -> models.Session:
    """The session with its stored findings as its rows say now: computed again when what they were computed from
    changed since (``session_key``). ``writer``: store the key even for a session without recalls (a reader skips
    that write)."""
    _fresh(session, writer=writer)
    return session


def _fresh(session: models.Session, *, writer: bool = False) -> int:
    """``session_findings_fresh``, saying how many recalls the session has (read by the key's aggregate)."""
    key, recalls = _session_key(session)
    if session.memory_findings_key != key:
        if not recalls and not session.memory_finding_count and not writer:
            # Every session finding comes from a recall: a session without any (most sessions, stored before these
            # findings or by a path that does not compute them) has none, and a page view writes nothing.
            return recalls
        session_findings_store(session)
    return recalls


def store_findings_fresh(store: models.MemoryStore) -> models.MemoryStore:
    if store.findings_key != store_key(store):
        store.refresh_from_db(fields=["record_count", "version_count", "last_write_at", "state"])
        store_findings_store(store)
    return store


@dataclass(frozen=True)
class Bound:
    """How much a writer that must answer quickly (the OTLP receiver, the memory write API) computes itself: stores
    of up to ``store_rows`` records and versions, sessions with up to ``session_recalls`` recalls in all (the
    sessions written first, then those reading a store written), and those readers only when there are up to
    ``readers`` of them. What is past it is left to a worker. Measured on SQLite (tests' machine, 2 cores): a store
    costs about 15 ms per 1,000 records and versions, a session about 0.4 ms per recall of 5 items, so the bound
    adds at most about 0.2 s to a request (the receiver's goal: p95 under 1 s with 8 clients at once)."""

    store_rows: int = 5_000
    session_recalls: int = 300
    readers: int = 20


LIVE = Bound()


@dataclass
class Left:
    """What a bounded refresh left for later: the stores (and their readers) and sessions past its bound."""

    stores: list[int]
    sessions: list[int]

    def __bool__(self) -> bool:
        return bool(self.stores or self.sessions)


def findings_refresh(*, sessions: Iterable[int] = (), stores: Iterable[int] = ()) -> None:
    """After memory rows changed: the findings of ``stores``, then of ``sessions`` and of every session that reads
    one of ``stores`` (a record's new version may make an earlier recall of it stale), each computed again only when
    what it was computed from changed. For an import, for live capture (``findings_after_write``: bounded), for
    anything that writes memory rows."""
    _refresh(sessions=sessions, stores=stores)


def _refresh(*, sessions: Iterable[int] = (), stores: Iterable[int] = (), bound: Bound | None = None,
             writer: bool = True) -> Left:
    """``findings_refresh``. ``bound`` (live capture, the write API): what is past it is not computed but returned
    (``Left``), for ``findings_refresh_later``; readers see it fresh anyway (``session_findings_fresh`` checks the
    key). ``writer`` False: a session without recalls is not written to (a live batch's sessions mostly are such)."""
    store_ids = sorted(set(stores))
    left = Left(stores=[], sessions=[])
    done_stores = []
    ready = models.MemoryStore.objects.filter(state=models.MemoryStore.State.READY)
    for store in ready.filter(pk__in=store_ids).order_by("pk") if bound is None else _locked(ready, store_ids):
        if bound is not None and store.record_count + store.version_count > bound.store_rows:
            left.stores.append(store.pk)
            continue
        store_findings_fresh(store)
        done_stores.append(store.pk)
    written = sorted(set(sessions))
    others: set[int] = set()
    if done_stores:
        readers = models.Recall.objects.filter(store_id__in=done_stores).order_by().values_list(
            "session_id", flat=True).distinct()
        if bound is not None:
            others = set(readers[:bound.readers + 1])
            if len(others) > bound.readers:  # all of them to the worker, with the stores that say which
                left.stores += done_stores
                others = set()
        else:
            others = set(readers)
    ordered = written + sorted(others - set(written))  # the sessions written first: what the client just sent
    sessions_ready = models.Session.objects.filter(state=models.Session.State.READY)
    if bound is None:
        for session in sessions_ready.filter(pk__in=ordered).order_by("pk"):
            session_findings_fresh(session, writer=writer)
    else:
        budget = bound.session_recalls
        for session in _locked(sessions_ready, ordered):
            key, recalls = _session_key(session)
            if session.memory_findings_key == key or (
                    not recalls and not session.memory_finding_count and not writer):
                continue  # fresh, or without recalls and findings: nothing to compute (a page view would not)
            if recalls > budget:
                left.sessions.append(session.pk)
                continue
            budget -= recalls
            session_findings_store(session, key=key)
    left.stores.sort()
    left.sessions.sort()
    return left


def _locked(rows: QuerySet[Any], pks: Sequence[int]) -> Iterator[Any]:
    """The rows of ``pks`` in that order, each locked while its findings are computed and read once it is (a
    bounded refresh, inside its writer's transaction; on PostgreSQL two requests of one session or store compute
    them one after the other, the second finding them fresh)."""
    for pk in pks:
        with transaction.atomic():
            row = rows.select_for_update().filter(pk=pk).first()
            if row is not None:
                yield row


@task()
def findings_refresh_later(sessions: list[int], stores: list[int]) -> int:
    """``findings_refresh`` in a worker, for what a bounded refresh left (a big store, a store many sessions read, a
    session with many recalls): the same computation, without a bound. Returns how many sessions and stores it
    looked at."""
    findings_refresh(sessions=sessions, stores=stores)
    return len(sessions) + len(stores)


def findings_after_write(*, sessions: Iterable[int] = (), stores: Iterable[int] = (),
                         bound: Bound | None = None) -> Left:
    """The findings of what a live batch or a write-API request touched, as an import has them: ``findings_refresh``
    within ``bound``, in the writer's transaction; what is past it is queued for a worker
    (``findings_refresh_later``, enqueued in the same transaction: it runs once the rows it reads are there)."""
    left = _refresh(sessions=sessions, stores=stores, bound=bound or LIVE, writer=False)
    if left:
        findings_refresh_later.enqueue(left.sessions, left.stores)
    return left


# --- what the pages and the API read --------------------------------------------------------------------------------


def session_findings(session: models.Session) -> QuerySet[models.MemoryFinding]:
    """The session's findings, fresh, by the message they are flagged on (those on no message last)."""
    session_findings_fresh(session)
    return models.MemoryFinding.objects.filter(session=session).select_related("record").order_by("seq", "id")


def session_findings_by_seq(session: models.Session, first: int, last: int) -> dict[int, list[models.MemoryFinding]]:
    """The findings flagged on messages ``first`` to ``last`` (a page of the session page), by seq: for flags in
    place. One range of the index on (session, seq) once they are fresh."""
    session_findings_fresh(session)
    return _by_seq(session, first, last)


def _by_seq(session: models.Session, first: int, last: int) -> dict[int, list[models.MemoryFinding]]:
    out: dict[int, list[models.MemoryFinding]] = {}
    for finding in models.MemoryFinding.objects.filter(session=session, seq__gte=first, seq__lte=last).select_related(
            "record").order_by("seq", "id"):
        assert finding.seq is not None
        out.setdefault(finding.seq, []).append(finding)
    return out


@dataclass
class KindShown:
    """One kind of finding in a page's summary: how many, what to do about it, and the first message it is on."""

    kind: str
    count: int
    advice: str
    first_seq: int | None


@dataclass
class FindingsShown:
    """What the session page shows of its findings: a summary by kind (empty for a fragment) and the flags of the
    messages it shows; ``recalls``: how many recalls the session has (none: the page reads no recall)."""

    total: int
    kinds: list[KindShown]
    by_seq: dict[int, list[models.MemoryFinding]]
    recalls: int = 0


def session_findings_shown(session: models.Session, first: int | None, last: int | None, *,
                           summary: bool = True) -> FindingsShown:
    """The session page's findings: made fresh once (the key's two aggregates), then, only when the session has
    any, the counts by kind with each kind's first message (one grouped query, when ``summary``) and the flags of
    messages ``first`` to ``last`` (one range of the index on (session, seq)). The cost of a page does not depend
    on the session's length."""
    recalls = _fresh(session)
    if not session.memory_finding_count:
        return FindingsShown(total=0, kinds=[], by_seq={}, recalls=recalls)
    kinds: list[KindShown] = []
    if summary:
        rows = {kind: (n, seq) for kind, n, seq in models.MemoryFinding.objects.filter(session=session).order_by(
            ).values("kind").annotate(n=Count("id"), first=Min("seq")).values_list("kind", "n", "first")}
        kinds = [KindShown(kind=kind, count=rows[kind][0], advice=advice(kind), first_seq=rows[kind][1])
                 for kind in rules.KINDS if kind in rows]
    by_seq = _by_seq(session, first, last) if first is not None and last is not None else {}
    return FindingsShown(total=session.memory_finding_count, kinds=kinds, by_seq=by_seq, recalls=recalls)


def findings_counted(rows: QuerySet[models.MemoryFinding]) -> dict[str, int]:
    """How many of each kind (a summary at the top of a page), in KINDS' order."""
    counted = dict(rows.order_by().values_list("kind").annotate(n=Count("id")).values_list("kind", "n"))
    return {kind: counted[kind] for kind in rules.KINDS if counted.get(kind)}


def session_findings_counted(session: models.Session) -> dict[str, int]:
    session_findings_fresh(session)
    return findings_counted(models.MemoryFinding.objects.filter(session=session))


def record_findings(record: models.MemoryRecord) -> list[models.MemoryFinding]:
    """The findings of one record (its store's, fresh): for the record page."""
    store_findings_fresh(record.store)
    return list(models.MemoryFinding.objects.filter(store=record.store_id, record=record).order_by("version", "id"))


def advice(kind: str) -> str:
    return rules.ADVICE[kind]


@dataclass
class SessionFindings:
    session: models.Session
    findings: QuerySet[models.MemoryFinding]
    counts: dict[str, int]


def session_findings_listed(*, user: User, session_id: int, kind: str = "") -> SessionFindings:
    """The session's findings (404 outside the user's projects), fresh, of one ``kind`` or all, with the counts of
    each kind."""
    session = session_for_user(user, session_id)
    rows = session_findings(session)
    counts = findings_counted(models.MemoryFinding.objects.filter(session=session))
    if kind:
        if kind not in SESSION_KINDS:
            raise FindingsRequestError(f"kind: expected one of {', '.join(SESSION_KINDS)}")
        rows = rows.filter(kind=kind)
    return SessionFindings(session=session, findings=rows, counts=counts)


@dataclass
class StoreFindings:
    store: models.MemoryStore
    findings: QuerySet[models.MemoryFinding]
    counts: dict[str, int]
    count: int | None  # known without counting: every finding listed


def store_findings_listed(*, user: User, store_id: int, kind: str = "") -> StoreFindings:
    """The findings of a store's records (404 outside the user's projects), fresh, of one ``kind`` or all."""
    store = store_findings_fresh(store_for_user(user, store_id))
    rows = models.MemoryFinding.objects.filter(store=store).select_related("record").order_by("kind", "id")
    counts = findings_counted(models.MemoryFinding.objects.filter(store=store))
    if kind:
        if kind not in STORE_KINDS:
            raise FindingsRequestError(f"kind: expected one of {', '.join(STORE_KINDS)}")
        rows = rows.filter(kind=kind)
    return StoreFindings(store=store, findings=rows, counts=counts,
                         count=counts.get(kind, 0) if kind else store.finding_count)
