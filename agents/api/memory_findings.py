"""The API's memory findings and store health (issue 27; DESIGN.md, "Memory beyond the message list"): a session's
findings by the message they are flagged on, a store's findings, and a store's health figures counted from its
rows. Each endpoint makes one call into ``agents.ledger`` (``findings``, ``health``), which scopes to the caller's
projects; shaped and paged as the other memory endpoints (``agents.api.memory``)."""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Literal

from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel, ConfigDict, Field
from rest_framework.request import Request
from rest_framework.response import Response

from agents import models
from agents.api.endpoints import api, bad_request, documented, query_as, query_parameters
from agents.api.memory import Time, api_url, examples, paged
from agents.ledger import findings
from agents.ledger.health import HealthRequestError, store_health
from agents.throttling import expensive_api

# --- memory findings ---------------------------------------------------------------------------------------


class FindingOut(BaseModel):
    """One memory finding (DESIGN's stable kinds), where it is and what to do about it."""

    model_config = examples({
        "id": 8, "kind": "stale_recall", "seq": 13, "recall": 6, "record": 1,
        "record_url": "https://memoryviz.example/api/memory/records/1/", "version": 1,
        "message": "item 2 sent version 1 of '97471722-3994-4a2e-ae92-ad22be78fc72'; the record was at version 2 "
                   "by then",
        "advice": "Read the record again before sending it, or invalidate cached retrievals when it changes.",
        "at": "2026-12-07T00:51:32.719000+00:00",
    })

    id: int
    kind: str
    seq: int | None = Field(description="The message it is flagged on (a session's findings).")
    recall: int | None
    record: int | None
    record_url: str | None
    version: int | None
    message: str
    advice: str = Field(description="What to do about it, in one sentence.")
    at: Time


class SessionFindingsOut(BaseModel):
    """A session's memory findings by the message they are flagged on, with how many of each kind."""

    session: int
    counts: dict[str, int]
    count: int
    next: str | None
    previous: str | None
    results: list[FindingOut]


class StoreFindingsOut(BaseModel):
    """The findings of a store's records, by kind, with how many of each kind."""

    store: int
    counts: dict[str, int]
    count: int
    next: str | None
    previous: str | None
    results: list[FindingOut]


class FindingsQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    kind: str = Field(default="", description="Only findings of this kind")


def _finding(request: Request, finding: models.MemoryFinding) -> dict[str, Any]:
    return FindingOut(
        id=finding.pk, kind=finding.kind, seq=finding.seq, recall=finding.recall_id, record=finding.record_id,
        record_url=api_url(request, "memory_record", finding.record_id) if finding.record_id else None,
        version=finding.version, message=finding.message, advice=findings.advice(finding.kind), at=finding.at,
    ).model_dump(mode="json")


@documented("session_memory_findings", "A session's memory findings", 400, 401, 404, response=SessionFindingsOut,
            parameters=[*query_parameters(FindingsQuery), OpenApiParameter("page", int)])
@api
def session_memory_findings(request: Request, session_id: int) -> Response:
    """What went wrong with what the session's model calls were sent of memory: stale or deleted records sent,
    recalled text no record holds, searches that found nothing, the same memory sent twice. Each on the message
    carrying the recall (``seq``), with what to do about it; ``counts`` by kind. Computed from the rows when they
    change, never on a page view."""
    query = query_as(request, FindingsQuery)
    try:
        listed = findings.session_findings_listed(user=request.user, session_id=session_id, kind=query.kind)
    except findings.FindingsRequestError as exc:
        return bad_request(str(exc))
    count = listed.counts.get(query.kind, 0) if query.kind else listed.session.memory_finding_count
    paginator, shown = paged(request, listed.findings, _finding, count=count)
    return Response(SessionFindingsOut(
        session=listed.session.pk, counts=listed.counts, count=count, next=paginator.get_next_link(),
        previous=paginator.get_previous_link(), results=shown,
    ).model_dump(mode="json"))


@documented("memory_store_findings", "The findings of a store's records", 400, 401, 404, response=StoreFindingsOut,
            parameters=[*query_parameters(FindingsQuery), OpenApiParameter("page", int)])
@api
def memory_store_findings(request: Request, store_id: int) -> Response:
    """The same text stored twice, updates that changed nothing, blocks over or near their character limit: each
    on its record, with what to do about it; ``counts`` by kind. ``kind`` lists one kind."""
    query = query_as(request, FindingsQuery)
    try:
        listed = findings.store_findings_listed(user=request.user, store_id=store_id, kind=query.kind)
    except findings.FindingsRequestError as exc:
        return bad_request(str(exc))
    paginator, shown = paged(request, listed.findings, _finding, count=listed.count)
    return Response(StoreFindingsOut(
        store=listed.store.pk, counts=listed.counts, count=listed.count or 0, next=paginator.get_next_link(),
        previous=paginator.get_previous_link(), results=shown,
    ).model_dump(mode="json"))


class HealthQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    period: Literal["day", "week", "month"] | None = Field(
        default=None, description="Figures per day, ISO week (from Monday) or calendar month, in UTC")
    since: dt.datetime | None = Field(default=None, description="From this moment (ISO 8601; UTC when it has no "
                                                                 "zone): the periods and the two top lists")
    until: dt.datetime | None = Field(default=None, description="Until this moment, excluded")


class RecordReadOut(BaseModel):
    record: int
    url: str = Field(description="The record's page.")
    api_url: str
    head: str = Field(description="The first 120 characters of its text now.")
    state: str
    reads: int = Field(description="Recalled items that point at it.")


class QueryMissedOut(BaseModel):
    query: str
    count: int = Field(description="Searches of the store with this query that returned nothing.")
    last_at: Time
    last_session: int
    last_session_url: str = Field(description="That session's page, at the message the search fed.")


class PeriodOut(BaseModel):
    start: Time = Field(description="The period's first moment (UTC).")
    reads: int
    zero_hit_recalls: int
    zero_hit_share: float | None = Field(description="zero_hit_recalls / reads (none without reads).")
    writes: int
    noop_writes: int = Field(description="UPDATEs that changed nothing (noop_write findings), by their time.")
    rewrites: int = Field(description="Writes of a record already written (versions after its first, deletes "
                                      "aside).")
    records_written: int = Field(description="Records with a write in the period.")
    tokens_recalled: int
    sessions: int = Field(description="Sessions that read the store.")
    calls: int = Field(description="Model calls its reads fed (a recall's captured call, else the message "
                                   "carrying it, else the recall).")
    tokens_per_session: float | None
    tokens_per_call: float | None


class StoreHealthOut(BaseModel):
    """A store's health, counted from its rows (agents.ledger.health): its totals, the records read most and the
    queries that found nothing (within since/until), and with a period, its reads and writes period by period."""

    model_config = examples({
        "store": 3, "records": 120, "never_read": 87, "zero_hit_recalls": 4, "reads": 40, "writes": 161,
        "noop_writes": 2, "duplicates": 3, "tokens_recalled": 5230, "period": "week",
        "since": "2026-11-01T00:00:00+00:00", "until": None,
        "most_read": [{"record": 17, "url": "https://memoryviz.example/memory/records/17/",
                       "api_url": "https://memoryviz.example/api/memory/records/17/",
                       "head": "Alice is vegan", "state": "active", "reads": 12}],
        "zero_hit_queries": [{"query": "alice's flight number", "count": 3, "last_at": "2026-12-03T10:12:00+00:00",
                              "last_session": 42,
                              "last_session_url": "https://memoryviz.example/sessions/42/?at=7#m-7"}],
        "periods": [{"start": "2026-11-30T00:00:00+00:00", "reads": 25, "zero_hit_recalls": 3, "zero_hit_share": 0.12,
                     "writes": 40, "noop_writes": 1, "rewrites": 9, "records_written": 31, "tokens_recalled": 2100,
                     "sessions": 5, "calls": 20, "tokens_per_session": 420.0, "tokens_per_call": 105.0}],
    })

    store: int
    records: int = Field(description="Its records, in every state.")
    never_read: int = Field(description="Records no recall has returned.")
    zero_hit_recalls: int = Field(description="Recalls of the store that returned nothing.")
    reads: int = Field(description="Recalls (searches) that read the store.")
    writes: int = Field(description="Versions of its records: every write keeps one.")
    noop_writes: int = Field(description="UPDATEs that changed nothing (the store's noop_write findings).")
    duplicates: int = Field(description="Active records with the same text as an earlier one (duplicate_record).")
    tokens_recalled: int = Field(description="Tokens of the text its recalls sent, each item's text counted alone "
                                             "with its session's counter.")
    period: str | None
    since: Time
    until: Time
    most_read: list[RecordReadOut] = Field(description="The 10 records read most within since/until.")
    zero_hit_queries: list[QueryMissedOut] = Field(
        description="The 10 queries that found nothing most often within since/until.")
    periods: list[PeriodOut] = Field(description="With period: each period with a read or a write, oldest first "
                                                 "(a read or write without a time is in none).")


@documented("memory_store_health", "A store's health, counted from its rows", 400, 401, 404, response=StoreHealthOut,
            parameters=query_parameters(HealthQuery))
@api
@expensive_api
def memory_store_health(request: Request, store_id: int) -> Response:
    """How the store is used: its records and how many were never read, its reads and how many found nothing, its
    writes and how many changed nothing, its duplicates, and the tokens its recalls sent; the records read most and
    the queries that found nothing; with ``period``, its reads and writes per day, week or month."""
    query = query_as(request, HealthQuery)
    try:
        health = store_health(user=request.user, store_id=store_id, period=query.period, since=query.since,
                              until=query.until)
    except HealthRequestError as exc:
        return bad_request(str(exc))
    return Response(StoreHealthOut(
        **{f.name: getattr(health, f.name) for f in dataclasses.fields(health)
           if f.name not in ("most_read", "zero_hit_queries", "periods")},
        most_read=[RecordReadOut(record=r.record, url=request.build_absolute_uri(r.url),
                                 api_url=api_url(request, "memory_record", r.record), head=r.head, state=r.state,
                                 reads=r.reads) for r in health.most_read],
        zero_hit_queries=[QueryMissedOut(query=q.query, count=q.count, last_at=q.last_at,
                                         last_session=q.last_session,
                                         last_session_url=request.build_absolute_uri(q.session_url))
                          for q in health.zero_hit_queries],
        periods=[PeriodOut(**dataclasses.asdict(p), zero_hit_share=p.zero_hit_share,
                           tokens_per_session=p.tokens_per_session, tokens_per_call=p.tokens_per_call)
                 for p in health.periods],
    ).model_dump(mode="json"))
