"""A memory store's health (``GET /api/memory/stores/<id>/health/``), counted from its rows:

- ``records``: the store's records, in every state; ``never_read``: those no recalled item points at;
- ``reads``: the recalls (searches) that read the store; ``zero_hit_recalls``: those that returned nothing;
- ``writes``: the versions of its records (each write keeps one); ``noop_writes``: UPDATEs that changed nothing;
- ``duplicates``: active records holding the same text as an earlier one (``noop_writes`` and ``duplicates`` are the
  store's ``noop_write`` and ``duplicate_record`` findings, ledger.findings, made fresh first);
- ``tokens_recalled``: the tokens of the text the store's recalls sent, each item's text counted alone (without a
  message's overhead) with its session's counter.

Then, within ``since``/``until`` (by the time of each read and write; the whole store without them): the records
read most (``most_read``: how many recalled items point at each) and the queries that found nothing
(``zero_hit_queries``: how many times each, and the last session that asked it), ``TOP`` of each; and, with a
``period`` (a day, an ISO week from Monday, a calendar month, in UTC), per period with any read or write: reads,
zero-hit reads and their share, writes, no-op writes, rewrites (versions of a record after its first, deletes
aside), records written, tokens recalled and per session and per call fed (a recall's captured call, else the
message carrying it, else the recall alone). A read or write without a time is in no period.

Counted, not read from the store's summaries (``record_count``, ``read_count``...), so that the figures are what the
rows say even when a writer forgot a summary. Every figure is one indexed aggregate (grouped by period with one)
except the tokens, which read the recalled texts ``BATCH`` at a time (the only figures whose cost grows with the
reads), and the sessions and calls per period, which read the recalls' ids ``BATCH`` at a time.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import CharField, Count, Exists, F, Func, Max, OuterRef, Q, QuerySet
from django.urls import reverse

from agents import models
from agents.access import User
from agents.ledger import findings
from agents.ledger.reading import store_for_user
from agents.memory.schema import Message
from agents.memory.tokens import TokenCounter, get_counter

BATCH = 2000
PERIODS = ("day", "week", "month")
TOP = 10  # records read most, queries that found nothing
HEAD_CHARS = 120  # of a record's text in most_read


class HealthRequestError(ValueError):
    """A range that cannot apply; ``str(e)`` is ``field: what is wrong``."""


@dataclass(frozen=True)
class PeriodHealth:
    """One period's reads and writes of a store (``start``: its first moment, UTC)."""

    start: datetime
    reads: int
    zero_hit_recalls: int
    writes: int
    noop_writes: int
    rewrites: int
    records_written: int
    tokens_recalled: int
    sessions: int  # sessions that read the store in the period
    calls: int  # calls its reads fed

    @property
    def zero_hit_share(self) -> float | None:
        return round(self.zero_hit_recalls / self.reads, 4) if self.reads else None

    @property
    def tokens_per_session(self) -> float | None:
        return round(self.tokens_recalled / self.sessions, 1) if self.sessions else None

    @property
    def tokens_per_call(self) -> float | None:
        return round(self.tokens_recalled / self.calls, 1) if self.calls else None


@dataclass(frozen=True)
class RecordRead:
    record: int
    head: str  # the first HEAD_CHARS characters of its text now
    state: str
    reads: int  # recalled items pointing at it

    @property
    def url(self) -> str:
        return reverse("agents:memory_record", args=[self.record])


@dataclass(frozen=True)
class QueryMissed:
    query: str
    count: int  # searches of it that found nothing
    last_at: datetime | None
    last_session: int
    last_seq: int | None  # the message the last one was carried by

    @property
    def session_url(self) -> str:
        """The last session's page at the message carrying the search (as ``pages.message_url``)."""
        url = reverse("agents:session_detail", args=[self.last_session])
        return url if self.last_seq is None else f"{url}?at={self.last_seq}#m-{self.last_seq}"


@dataclass(frozen=True)
class StoreHealth:
    store: int
    records: int
    never_read: int
    zero_hit_recalls: int
    reads: int
    writes: int
    noop_writes: int
    duplicates: int
    tokens_recalled: int
    period: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    most_read: list[RecordRead] = field(default_factory=list)
    zero_hit_queries: list[QueryMissed] = field(default_factory=list)
    periods: list[PeriodHealth] = field(default_factory=list)


def store_health(*, user: User, store_id: int, period: str | None = None, since: datetime | None = None,
                 until: datetime | None = None) -> StoreHealth:
    """The health of a store of the user's projects (404 for any other); per ``period`` when given, and the records
    read most and the queries that found nothing within ``since`` (inclusive) and ``until`` (exclusive)."""
    if period is not None and period not in PERIODS:
        raise HealthRequestError(f"period: expected one of {', '.join(PERIODS)}")
    since, until = _aware(since), _aware(until)
    if since is not None and until is not None and until <= since:
        raise HealthRequestError("until: must be later than since")
    store = findings.store_findings_fresh(store_for_user(user, store_id))
    records = models.MemoryRecord.objects.filter(store=store)
    recalls = models.Recall.objects.filter(store=store)
    kinds = findings.findings_counted(models.MemoryFinding.objects.filter(store=store))
    ranged = _ranged(recalls, "at", since, until)
    tokens, by_period = _tokens(store, period, since, until)
    return StoreHealth(
        store=store.pk,
        records=records.count(),
        never_read=records.filter(~Exists(models.RecallItem.objects.filter(record=OuterRef("pk")))).count(),
        reads=recalls.count(),
        zero_hit_recalls=recalls.filter(~Exists(models.RecallItem.objects.filter(recall=OuterRef("pk")))).count(),
        writes=models.RecordVersion.objects.filter(record__store=store).count(),
        noop_writes=kinds.get("noop_write", 0),
        duplicates=kinds.get("duplicate_record", 0),
        tokens_recalled=tokens,
        period=period, since=since, until=until,
        most_read=_most_read(store, since, until),
        zero_hit_queries=_zero_hit_queries(ranged),
        periods=_periods(store, period, since, until, by_period) if period else [],
    )


def _aware(when: datetime | None) -> datetime | None:
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def _ranged(rows: QuerySet[Any], name: str, since: datetime | None, until: datetime | None) -> QuerySet[Any]:
    if since is not None:
        rows = rows.filter(**{f"{name}__gte": since})
    if until is not None:
        rows = rows.filter(**{f"{name}__lt": until})
    return rows


def period_key(when: datetime, period: str) -> str:
    """The first day (UTC) of the ``period`` holding ``when``, 'YYYY-MM-DD', as ``PeriodOf`` says it in SQL."""
    day = when.astimezone(UTC).date()
    if period == "week":
        day -= timedelta(days=day.weekday())
    elif period == "month":
        day = day.replace(day=1)
    return day.isoformat()


class PeriodOf(Func):
    """The first day (UTC) of the ``period`` holding a time column, 'YYYY-MM-DD', in each database's own SQL:
    Django's Trunc calls a Python function for every row on SQLite (0.87 s for the periods of a store of 100,000
    versions and 5,000 reads, the page's bound, against 0.10 s for its totals)."""

    output_field = CharField()

    def __init__(self, name: str, period: str) -> None:
        if period not in PERIODS:
            raise ValueError(period)
        super().__init__(F(name))
        self.period = period

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # SQLite holds an aware time as text, 'YYYY-MM-DD HH:MM:SS[.ffffff]' in UTC.
        template = {"day": "substr(%(expressions)s, 1, 10)", "month": "substr(%(expressions)s, 1, 7) || '-01'",
                    "week": "date(%(expressions)s, '-6 days', 'weekday 1')"}[self.period]
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = f"to_char(date_trunc('{self.period}', %(expressions)s AT TIME ZONE 'UTC'), 'YYYY-MM-DD')"
        return self.as_sql(compiler, connection, template=template, **extra)


def _most_read(store: models.MemoryStore, since: datetime | None, until: datetime | None) -> list[RecordRead]:
    items = _ranged(models.RecallItem.objects.filter(record__store=store), "recall__at", since, until)
    top = list(items.order_by().values("record_id").annotate(n=Count("id")).order_by("-n", "record_id").values_list(
        "record_id", "n")[:TOP])
    shown = {pk: (text, state) for pk, text, state in models.MemoryRecord.objects.filter(
        pk__in=[pk for pk, _ in top]).values_list("pk", "text", "state")}
    return [RecordRead(record=pk, head=shown[pk][0][:HEAD_CHARS], state=shown[pk][1], reads=n) for pk, n in top]


def _zero_hit_queries(recalls: QuerySet[models.Recall]) -> list[QueryMissed]:
    missed = recalls.filter(~Exists(models.RecallItem.objects.filter(recall=OuterRef("pk"))))
    top = list(missed.order_by().values("query").annotate(n=Count("id"), last=Max("at")).order_by(
        "-n", F("last").desc(nulls_last=True), "query").values_list("query", "n")[:TOP])
    last: dict[str, tuple[datetime | None, int, int | None]] = {}
    for query, at, session_id, seq in missed.filter(query__in=[q for q, _ in top]).order_by(
            "query", F("at").desc(nulls_last=True), "-pk").values_list("query", "at", "session_id", "seq"):
        last.setdefault(query, (at, session_id, seq))
    return [QueryMissed(query=query, count=n, last_at=last[query][0], last_session=last[query][1],
                        last_seq=last[query][2]) for query, n in top]


@dataclass
class _Period:
    tokens: int = 0
    sessions: set[int] = field(default_factory=set)
    calls: set[tuple[Any, ...]] = field(default_factory=set)


def _periods(store: models.MemoryStore, period: str, since: datetime | None, until: datetime | None,
             by_period: dict[str, _Period]) -> list[PeriodHealth]:
    """Each period with a read or a write, oldest first: grouped counts (one query each for reads, writes and no-op
    writes) and the sessions and calls of the reads (their ids, a batch at a time)."""
    def grouped(rows: QuerySet[Any], name: str, **counts: Any) -> dict[str, dict[str, int]]:
        rows = _ranged(rows.filter(**{f"{name}__isnull": False}), name, since, until)
        return {row["p"]: row for row in rows.order_by().annotate(p=PeriodOf(name, period)).values(
            "p").annotate(**counts)}

    reads = grouped(models.Recall.objects.filter(store=store).annotate(
        hit=Exists(models.RecallItem.objects.filter(recall=OuterRef("pk")))), "at",
        n=Count("id"), zero=Count("id", filter=Q(hit=False)))
    writes = grouped(models.RecordVersion.objects.filter(record__store=store), "at", n=Count("id"),
                     rewrites=Count("id", filter=Q(number__gt=1) & ~Q(op__iexact="DELETE")),
                     records=Count("record_id", distinct=True))
    noop = grouped(models.MemoryFinding.objects.filter(store=store, kind="noop_write"), "at", n=Count("id"))
    for pk, at, session_id, seq, call_id in _batches(_ranged(
            models.Recall.objects.filter(store=store, at__isnull=False), "at", since, until),
            "pk", "at", "session_id", "seq", "llm_call_id"):
        shown = by_period.setdefault(period_key(at, period), _Period())
        shown.sessions.add(session_id)
        shown.calls.add(("call", call_id) if call_id is not None else ("message", session_id, seq)
                        if seq is not None else ("recall", pk))
    out = []
    for start in sorted(set(reads) | set(writes) | set(noop) | set(by_period)):
        read, written, found = reads.get(start, {}), writes.get(start, {}), noop.get(start, {})
        seen = by_period.get(start, _Period())
        out.append(PeriodHealth(
            start=datetime.fromisoformat(start).replace(tzinfo=UTC), reads=read.get("n", 0),
            zero_hit_recalls=read.get("zero", 0), writes=written.get("n", 0),
            noop_writes=found.get("n", 0), rewrites=written.get("rewrites", 0),
            records_written=written.get("records", 0), tokens_recalled=seen.tokens, sessions=len(seen.sessions),
            calls=len(seen.calls)))
    return out


def _batches(rows: QuerySet[Any], *fields: str) -> Iterator[tuple[Any, ...]]:
    """``rows``' ``fields`` (the first the primary key), ``BATCH`` at a time by it."""
    last = 0
    while True:
        batch = list(rows.filter(pk__gt=last).order_by("pk").values_list(*fields)[:BATCH])
        if not batch:
            return
        last = batch[-1][0]
        yield from batch


def _tokens(store: models.MemoryStore, period: str | None, since: datetime | None, until: datetime | None
            ) -> tuple[int, dict[str, _Period]]:
    """The tokens of every text the store's recalls sent, each counted alone with its session's counter; with a
    ``period``, those of the reads within ``since``/``until`` by period too (one pass over the texts)."""
    counters: dict[str, TokenCounter] = {}
    total = 0
    by_period: dict[str, _Period] = {}
    for _pk, text, name, at in _batches(models.RecallItem.objects.filter(recall__store=store),
                                        "pk", "text", "recall__session__token_counter", "recall__at"):
        if not text:
            continue
        counter = counters.get(name)
        if counter is None:
            try:
                counter = get_counter(name)
            except ValueError:  # a counter this process does not have: the default, rather than no figure
                counter = get_counter("cl100k")
            counters[name] = counter
        tokens = text_tokens(text, counter)
        total += tokens
        if period and at is not None and (since is None or at >= since) and (until is None or at < until):
            by_period.setdefault(period_key(at, period), _Period()).tokens += tokens
    return total, by_period


def tokens_recalled(store: models.MemoryStore) -> int:
    """The tokens of every text the store's recalls sent, each counted alone with its session's counter."""
    return _tokens(store, None, None, None)[0]

def text_tokens(text: str, counter: TokenCounter) -> int:
    """A text's tokens under ``counter``: a message holding it, less the same message empty (the per-message
    overhead a recall's text shares with whatever carries it)."""
    return counter.count(Message(role="user", content=text)) - counter.count(Message(role="user", content=""))
