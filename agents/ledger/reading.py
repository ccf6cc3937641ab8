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
from django.db.models import F, Prefetch, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.http import Http404

from agents import models
from agents.access import User, agent_for_user, session_for_user, user_projects
from agents.memory.snapshot_diff import SnapshotDiff, diff_snapshots
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


def snapshot_for_user(user: User, snapshot_id: int) -> models.Snapshot:
    try:
        return models.Snapshot.objects.select_related("agent", "session", "parent").get(
            pk=snapshot_id, agent__project__in=user_projects(user))
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
    stores = list(models.MemoryStore.objects.filter(
        Q(agent=agent) | Q(project_id=agent.project_id, agent__isnull=True), state=READY,
    ).order_by(F("agent_id").asc(nulls_last=True), "name", "id"))
    return AgentMemory(agent=agent, stores=stores, snapshots=models.Snapshot.objects.filter(agent=agent).count())


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
    return models.RecallItem.objects.filter(record=record).select_related("recall", "recall__session").order_by(
        "-recall_id", "rank")


# --- a session's recalls -------------------------------------------------------------------------------------------


def session_recalls(*, user: User, session_id: int) -> tuple[models.Session, QuerySet[models.Recall]]:
    session = session_for_user(user, session_id)
    items = Prefetch("items", queryset=models.RecallItem.objects.select_related("record").order_by("rank"))
    recalls = models.Recall.objects.filter(session=session).select_related("store").prefetch_related(
        items).order_by(F("seq").asc(nulls_last=True), "id")
    return session, recalls


# --- snapshots -----------------------------------------------------------------------------------------------------


def agent_snapshots(*, user: User, agent_id: int) -> tuple[models.Agent, QuerySet[models.Snapshot]]:
    agent = agent_for_user(user, agent_id)
    return agent, models.Snapshot.objects.filter(agent=agent).defer("value").order_by(
        F("taken_at").asc(nulls_first=True), "id")


@dataclass
class SnapshotPair:
    left: models.Snapshot
    right: models.Snapshot
    diff: SnapshotDiff


def snapshots_diff(*, user: User, left_id: int, right_id: int, limit: int | None = None) -> SnapshotPair:
    left = snapshot_for_user(user, left_id)
    right = snapshot_for_user(user, right_id)
    return SnapshotPair(left=left, right=right, diff=diff_snapshots(left.value, right.value, limit=limit))
