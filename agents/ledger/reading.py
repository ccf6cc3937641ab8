"""Reading the memory layers for the pages and the API, scoped to what the user may see: an agent's stores, a store's
records (searched through the same trigram index as messages, filtered, sorted), a record with its versions and its
reads, a session's recalls, an agent's snapshots and the diff of two.

Every list is a queryset the caller pages (the API with its paginator, the pages with keyset links), never a list
built in Python: a store of a million records costs what one of a hundred does.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import F, Prefetch, Q, QuerySet, prefetch_related_objects
from django.db.models.expressions import RawSQL
from django.http import Http404

from agents import models
from agents.access import User, agent_for_user, session_for_user, user_projects
from agents.ledger.snapshot_reads import pair_diff
from agents.memory.diff import TextDiff, diff_text
from agents.memory.snapshot_diff import SnapshotDiff
from agents.store.listing import TRIGRAM, search_indexed

READY = models.MemoryStore.State.READY

RECORD_SORTS: dict[str, tuple[Any, ...]] = {
    "updated": (F("updated_at").asc(nulls_first=True), "id"),
    "-updated": (F("updated_at").desc(nulls_last=True), "-id"),
    "reads": ("read_count", "id"),
    "-reads": ("-read_count", "-id"),
    "versions": ("version_count", "id"),
    "-versions": ("-version_count", "-id"),
    "id": ("external_id", "id"),
}
DEFAULT_RECORD_SORT = "-updated"


class LedgerRequestError(ValueError):
    """A filter or parameter that cannot apply; ``str(e)`` is ``field: what is wrong``."""


def stores_for_user(user: User) -> QuerySet[models.MemoryStore]:
    return models.MemoryStore.objects.filter(project__in=user_projects(user), state=READY)


def store_for_user(user: User, store_id: int) -> models.MemoryStore:
    try:
        return stores_for_user(user).select_related("project", "agent").get(pk=store_id)
    except models.MemoryStore.DoesNotExist:
        raise Http404("No such memory store.") from None


def record_for_user(user: User, record_id: int) -> models.MemoryRecord:
    try:
        return models.MemoryRecord.objects.select_related("store", "store__project", "store__agent").get(
            pk=record_id, store__in=stores_for_user(user))
    except models.MemoryRecord.DoesNotExist:
        raise Http404("No such memory record.") from None


def snapshot_for_user(user: User, snapshot_id: int, *, value: bool = True) -> models.Snapshot:
    """``value=False``: without its value (nor its digest, which the diff reads on its own)."""
    try:
        # The parent is named, not read: its value may be as big as this one's.
        unread = ("parent__value", "parent__digest", "digest", "session__metadata", "session__violations")
        return models.Snapshot.objects.select_related("agent", "session", "parent").defer(
            *unread, *(() if value else ("value",))).get(pk=snapshot_id, agent__project__in=user_projects(user))
    except models.Snapshot.DoesNotExist:
        raise Http404("No such snapshot.") from None


# --- an agent's memory ---------------------------------------------------------------------------------------------


@dataclass
class AgentMemory:
    agent: models.Agent
    stores: list[models.MemoryStore]  # the agent's own, then those its project shares
    snapshots: int


def agent_memory(*, user: User, agent_id: int) -> AgentMemory:
    agent = agent_for_user(user, agent_id)
    return AgentMemory(agent=agent, stores=list(_agent_stores(agent)),
                       snapshots=models.Snapshot.objects.filter(agent=agent).count())


def agent_stores(*, user: User, agent_id: int) -> tuple[models.Agent, QuerySet[models.MemoryStore]]:
    """The stores an agent reads, for a caller that pages them: its own, then those its project shares."""
    agent = agent_for_user(user, agent_id)
    return agent, _agent_stores(agent)


def _agent_stores(agent: models.Agent) -> QuerySet[models.MemoryStore]:
    return models.MemoryStore.objects.filter(
        Q(agent=agent) | Q(project_id=agent.project_id, agent__isnull=True), state=READY,
    ).select_related("project").order_by(F("agent_id").asc(nulls_last=True), "name", "id")


def stores_listed(*, user: User) -> QuerySet[models.MemoryStore]:
    """Every store of the user's projects, by project, then an agent's before the shared ones."""
    return stores_for_user(user).select_related("project").order_by(
        "project__name", "project_id", F("agent_id").asc(nulls_last=True), "name", "id")


# --- a store's records ---------------------------------------------------------------------------------------------


@dataclass
class RecordFilters:
    q: str = ""
    state: str = ""  # active | deleted | invalidated
    read: str = ""  # "never": never read; "yes": read at least once
    changed_from: dt.date | None = None
    changed_to: dt.date | None = None
    sort: str = DEFAULT_RECORD_SORT

    @classmethod
    def from_query(cls, query: Any) -> RecordFilters:
        """From a query string (a QueryDict or a dict); LedgerRequestError names a value that cannot apply."""
        state = (query.get("state") or "").strip()
        if state and state not in models.MemoryRecord.State.values:
            raise LedgerRequestError(f"state: expected one of {', '.join(models.MemoryRecord.State.values)}")
        read = (query.get("read") or "").strip()
        if read and read not in ("never", "yes"):
            raise LedgerRequestError("read: expected never or yes")
        sort = (query.get("sort") or DEFAULT_RECORD_SORT).strip()
        if sort not in RECORD_SORTS:
            raise LedgerRequestError(f"sort: expected one of {', '.join(RECORD_SORTS)}")
        return cls(q=(query.get("q") or "").strip(), state=state, read=read,
                   changed_from=_date(query.get("changed_from"), "changed_from"),
                   changed_to=_date(query.get("changed_to"), "changed_to"), sort=sort)


    @property
    def narrowing(self) -> bool:
        """Whether they keep fewer records than the store holds (a sort alone keeps them all)."""
        return bool(self.q or self.state or self.read or self.changed_from or self.changed_to)


def _date(value: Any, name: str) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise LedgerRequestError(f"{name}: expected a date, YYYY-MM-DD") from None


def store_records(store: models.MemoryStore, filters: RecordFilters) -> QuerySet[models.MemoryRecord]:
    records = models.MemoryRecord.objects.filter(store=store)
    if filters.q:
        records = records.filter(_text_match(filters.q))
    if filters.state:
        records = records.filter(state=filters.state)
    if filters.read == "never":
        records = records.filter(read_count=0)
    elif filters.read == "yes":
        records = records.filter(read_count__gt=0)
    if filters.changed_from:
        records = records.filter(updated_at__gte=_day_start(filters.changed_from))
    if filters.changed_to:
        records = records.filter(updated_at__lt=_day_start(filters.changed_to + dt.timedelta(days=1)))
    return records.order_by(*RECORD_SORTS[filters.sort])


@dataclass
class RecordList:
    """A store's records as its list shows them: ``records`` to page, and ``count`` when it is known without
    counting them (the store's stored ``record_count``, when nothing narrows the list); else None."""

    store: models.MemoryStore
    filters: RecordFilters
    records: QuerySet[models.MemoryRecord]
    count: int | None


def records_listed(*, user: User, store_id: int, query: Any) -> RecordList:
    """The store's records (404 outside the user's projects) filtered and sorted by ``query`` (``q``, ``state``,
    ``read``, ``changed_from``, ``changed_to``, ``sort``); LedgerRequestError names a filter that cannot apply."""
    store = store_for_user(user, store_id)
    filters = RecordFilters.from_query(query)
    return RecordList(store=store, filters=filters, records=store_records(store, filters),
                      count=None if filters.narrowing else store.record_count)


def _text_match(text: str) -> Q:
    """Records whose text contains ``text`` (case-insensitively): from the trigram index where there is one (the
    session list's search, 0020_memory_record_search_index), else by a scan."""
    if len(text) >= TRIGRAM and search_indexed() and connections[DEFAULT_DB_ALIAS].vendor == "sqlite":
        phrase = '"' + text.replace('"', '""') + '"'
        candidates = RawSQL(
            "SELECT rowid FROM agents_memoryrecord_fts WHERE agents_memoryrecord_fts MATCH %s", (phrase,))
        return Q(pk__in=candidates, text__icontains=text)
    # PostgreSQL answers icontains (UPPER(text) LIKE UPPER(...)) from its GIN index on UPPER(text).
    return Q(text__icontains=text)


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


# --- one record ----------------------------------------------------------------------------------------------------


def record_versions(record: models.MemoryRecord) -> QuerySet[models.RecordVersion]:
    return models.RecordVersion.objects.filter(record=record).select_related("session").order_by("number")


def record_reads(record: models.MemoryRecord) -> QuerySet[models.RecallItem]:
    """Every read of the record, newest first: the recall (query, session, message), rank and score."""
    return models.RecallItem.objects.filter(record=record).select_related("recall").order_by(
        "-recall_id", "rank", "id")


@dataclass
class RecordDetail:
    """A record with a page of its versions (oldest first, after ``versions_after``) and a page of its reads
    (newest recall first, after the read ``reads_after``); ``*_more``: another page follows."""

    record: models.MemoryRecord
    versions: list[models.RecordVersion]
    versions_more: bool
    reads: list[models.RecallItem]
    reads_more: bool


def record_detail(*, user: User, record_id: int, versions_after: int | None = None, reads_after: int | None = None,
                  limit: int = 50) -> RecordDetail:
    """Three queries whatever the record holds (10,000 versions, 100,000 reads), four after a read: each page by its
    keyset."""
    record = record_for_user(user, record_id)
    versions = record_versions(record)
    if versions_after is not None:
        versions = versions.filter(number__gt=versions_after)
    reads = record_reads(record)
    if reads_after is not None:
        # After that read in the reads' order (-recall, rank, id), told by the read itself, in the same query.
        # A range of the index on (record, -recall), less the cursor's recall up to the cursor (an OR of the three
        # cases would read the record's reads from the first one at every page), with the cursor's values known to
        # the planner (as subqueries, PostgreSQL guessed a third of the reads and merged them with every recall).
        cursor = models.RecallItem.objects.filter(pk=reads_after, record=record).values_list(
            "recall_id", "rank").order_by().first()
        if cursor is None:
            raise LedgerRequestError(f"reads_after: the record has no read {reads_after}")
        recall, rank = cursor
        reads = reads.filter(recall_id__lte=recall).exclude(
            Q(recall_id=recall) & (Q(rank__lt=rank) | Q(rank=rank, pk__lte=reads_after)))
    version_rows = list(versions.defer("value")[: limit + 1])
    read_rows = list(reads[: limit + 1])
    return RecordDetail(record=record, versions=version_rows[:limit], versions_more=len(version_rows) > limit,
                        reads=read_rows[:limit], reads_more=len(read_rows) > limit)


@dataclass
class VersionsDiff:
    record: models.MemoryRecord
    left: models.RecordVersion
    right: models.RecordVersion
    diff: TextDiff


def record_versions_diff(*, user: User, record_id: int, left: int | None = None,
                         right: int | None = None) -> VersionsDiff:
    """The word-level diff of two versions of a record (derived, never stored): ``right`` defaults to the latest,
    ``left`` to the one before ``right``. A delete's text is empty. LedgerRequestError names a number the record
    does not have."""
    record = record_for_user(user, record_id)
    versions = models.RecordVersion.objects.filter(record=record).defer("value")
    if right is None:
        right = versions.order_by("-number").values_list("number", flat=True).first()
        if right is None:
            raise LedgerRequestError("to: the record has no version")
    if left is None:
        left = right - 1
    found = {v.number: v for v in versions.filter(number__in={left, right})}
    for name, number in (("from", left), ("to", right)):
        if number not in found:
            raise LedgerRequestError(f"{name}: the record has no version {number} (it has "
                                     f"{record.version_count}, numbered from 1)")
    old, new = found[left], found[right]
    return VersionsDiff(record=record, left=old, right=new, diff=diff_text(old.text or "", new.text or ""))


# --- a session's recalls -------------------------------------------------------------------------------------------


def _recall_items() -> Prefetch:
    return Prefetch("items", queryset=models.RecallItem.objects.select_related("record").order_by("rank"))


def session_recalls(*, user: User, session_id: int) -> tuple[models.Session, QuerySet[models.Recall]]:
    session = session_for_user(user, session_id)
    recalls = models.Recall.objects.filter(session=session).select_related("store").prefetch_related(
        _recall_items()).order_by(F("seq").asc(nulls_last=True), "id")
    return session, recalls


@dataclass
class RecallPage:
    """A page of a session's recalls in the order of the messages carrying them (those carried by no message last),
    each with its items by rank; ``more``: another page follows."""

    session: models.Session
    recalls: list[models.Recall]
    more: bool


def session_recalls_page(*, user: User, session_id: int, after: int | None = None, after_id: int | None = None,
                         limit: int = 50) -> RecallPage:
    """Keyset pages: the recalls after message ``after`` (a seq), or after the recall ``after_id`` of message
    ``after`` (several recalls may share a message), or with ``after_id`` alone, after that one of the recalls no
    message carries. Each part is a range of the index on (session, seq, id): a page costs the same at the end of a
    session of 50,000 recalls as at its start (the recalls, then their items: two queries, three when the page
    reaches the recalls no message carries)."""
    session, recalls = session_recalls(user=user, session_id=session_id)
    recalls = recalls.prefetch_related(None)  # the items once for the whole page, below
    unplaced = recalls.filter(seq__isnull=True)
    if after is None and after_id is not None:
        rows = list(unplaced.filter(pk__gt=after_id)[: limit + 1])
    else:
        placed = recalls.filter(seq__isnull=False)
        if after is not None and after_id is not None:
            placed = placed.filter(seq__gte=after).exclude(seq=after, pk__lte=after_id)
        elif after is not None:
            placed = placed.filter(seq__gt=after)
        rows = list(placed[: limit + 1])
        if len(rows) <= limit:
            rows += unplaced[: limit + 1 - len(rows)]
    prefetch_related_objects(rows[:limit], _recall_items())
    return RecallPage(session=session, recalls=rows[:limit], more=len(rows) > limit)


# --- snapshots -----------------------------------------------------------------------------------------------------


def agent_snapshots(*, user: User, agent_id: int) -> tuple[models.Agent, QuerySet[models.Snapshot]]:
    agent = agent_for_user(user, agent_id)
    return agent, models.Snapshot.objects.filter(agent=agent).defer("value", "digest").order_by(
        F("taken_at").asc(nulls_first=True), "id")


@dataclass
class SnapshotPair:
    left: models.Snapshot
    right: models.Snapshot
    diff: SnapshotDiff


def snapshots_diff(*, user: User, left_id: int, right_id: int, limit: int | None = None) -> SnapshotPair:
    left = snapshot_for_user(user, left_id, value=False)
    right = snapshot_for_user(user, right_id, value=False)
    return SnapshotPair(left=left, right=right, diff=pair_diff(left, right, limit=limit).diff)
