"""The API's memory layers (DESIGN.md, "Memory beyond the message list"): the stores of your projects and of an agent,
a store's records (searched, filtered, sorted), a record with its versions, its reads and the diff of two versions,
a session's recalls, an agent's snapshots, one snapshot and the diff of two; and a store exported in a memory format
its library loads. Memory findings and a store's health: ``agents.api.memory_findings``.

Each endpoint reads its query, makes one call into ``agents.ledger.reading`` (or, for the export, into
``agents.transfer.exports``), which scopes to the caller's projects (404 for anything else), and shapes the answer
with the models below, which are also the answers' OpenAPI schema. Every list is paged: by page number like
``/api/sessions/`` where its size is known without counting (a store's records: from the store's ``record_count``),
by keyset where a list can be long (a record's versions and reads, a session's recalls)."""
from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from rest_framework.request import Request
from rest_framework.response import Response

from agents import models
from agents.api.endpoints import (
    ApiError,
    ApiPages,
    api,
    bad_request,
    documented,
    format_names_the_file,
    query_as,
    query_parameters,
    write_api,
)
from agents.http import collector_paused
from agents.ledger import context, reading
from agents.memory.formats import MEMORY_WRITE_FORMATS
from agents.memory.snapshot_diff import DISPLAY_CHARS
from agents.throttling import expensive_api
from agents.transfer import exports

MAX_PAGE = 1000
DEFAULT_PAGE = 50
MAX_CHANGES = 10_000
DEFAULT_CHANGES = 500

# Times as the rest of the API writes them (``isoformat``: ``+00:00``), null when unknown.
Time = Annotated[dt.datetime | None, PlainSerializer(lambda t: t.isoformat() if t else None, return_type=str | None)]


def examples(*examples: dict[str, Any]) -> ConfigDict:
    return ConfigDict(json_schema_extra={"examples": list(examples)})


# --- the answers' shapes ---------------------------------------------------------------------------------------------


class StoreOut(BaseModel):
    """A memory store: where an agent's (``agent``), or when shared its project's (``agent`` null), records live."""

    model_config = examples({
        "id": 3, "name": "mem0 (user_id=alice)", "kind": "records", "source_format": "mem0",
        "scope": {"user_id": "alice"}, "external_id": "", "project": "alpha", "agent": 7, "records": 4,
        "versions": 6, "recalls": 1, "last_write_at": "2026-12-06T00:48:20.625107+00:00",
        "last_read_at": None, "records_url": "https://memoryviz.example/api/memory/stores/3/records/",
        "export_url": "https://memoryviz.example/api/memory/stores/3/export/",
    })

    id: int
    name: str
    kind: Literal["records", "blocks", "list", "knowledge"]
    source_format: str
    scope: dict[str, Any]
    external_id: str
    project: str
    agent: int | None = Field(description="The agent that keeps it; null: shared by the project.")
    records: int
    versions: int
    recalls: int = Field(description="How many reads of it fed a model call.")
    last_write_at: Time
    last_read_at: Time
    records_url: str
    export_url: str


class StorePage(BaseModel):
    count: int
    next: str | None
    previous: str | None
    results: list[StoreOut]


class AgentMemoryOut(BaseModel):
    """The stores an agent reads, its own first, then those its project shares; paged like ``/api/sessions/``."""

    agent: int
    count: int
    next: str | None
    previous: str | None
    stores: list[StoreOut]
    snapshots_url: str


class RecordOut(BaseModel):
    """A record as it stands now (its history is its versions)."""

    model_config = examples({
        "id": 41, "url": "https://memoryviz.example/api/memory/records/41/",
        "external_id": "6008ddaf-1d5b-4c87-a471-1c73c052cea7", "text": "I am vegan and allergic to peanuts",
        "state": "active", "versions": 2, "reads": 1, "created_at": "2026-12-06T00:48:20.493510+00:00",
        "updated_at": "2026-12-06T00:48:20.589266+00:00", "char_limit": None,
    })

    id: int
    url: str
    external_id: str = Field(description="The record's id in its library.")
    text: str = Field(description="The text the model reads.")
    state: Literal["active", "deleted", "invalidated"]
    versions: int
    reads: int
    created_at: Time
    updated_at: Time
    char_limit: int | None = Field(description="A block's limit in characters (Letta); null elsewhere.")


class RecordPage(BaseModel):
    count: int
    next: str | None
    previous: str | None
    results: list[RecordOut]


class VersionOut(BaseModel):
    """One write of the record: its whole new text, the op as the library wrote it, and what caused it."""

    model_config = examples({"number": 2, "op": "UPDATE", "text": "I am vegan and allergic to peanuts",
                              "at": "2026-12-06T00:48:20.589266+00:00", "actor": "alice", "session": 12, "seq": 7})

    number: int
    op: str
    text: str | None = Field(description="Null for a write that left no text (a delete).")
    at: Time
    actor: str
    session: int | None = Field(description="The session of the message that caused it, where known.")
    seq: int | None


class ReadOut(BaseModel):
    """One read of the record that fed a model call: the recall, the message carrying it, and what was sent."""

    model_config = examples({"id": 90, "recall": 17, "session": 12, "seq": 7, "rank": 2, "score": 0.67,
                              "query": "Make me a plan for the trip.", "version": 1,
                              "text": "User prefers trains over flights"})

    id: int = Field(description="The read's id: ``reads_after`` pages on from it.")
    recall: int
    session: int
    seq: int | None
    rank: int
    score: float | None
    query: str
    version: int | None = Field(description="The record's version current when it was read.")
    text: str = Field(description="The text as sent.")


class RecordDetailOut(BaseModel):
    """A record with a page of its versions (oldest first) and a page of its reads (newest recall first)."""

    id: int
    url: str
    store: int
    external_id: str
    text: str
    value: Any
    metadata: dict[str, Any]
    state: Literal["active", "deleted", "invalidated"]
    content_hash: str
    char_limit: int | None
    created_at: Time
    updated_at: Time
    last_read_at: Time
    version_count: int
    read_count: int
    versions: list[VersionOut]
    versions_next: str | None
    reads: list[ReadOut]
    reads_next: str | None
    diff_url: str


class VersionRef(BaseModel):
    number: int
    op: str
    at: Time


class VersionsDiffOut(BaseModel):
    """Two versions' texts diffed word by word: ``=`` on both sides, ``-`` only in ``from``, ``+`` only in ``to``."""

    model_config = ConfigDict(populate_by_name=True, json_schema_extra={"examples": [{
        "record": 41, "from": {"number": 1, "op": "ADD", "at": "2026-12-06T00:48:20.493510+00:00"},
        "to": {"number": 2, "op": "UPDATE", "at": "2026-12-06T00:48:20.589266+00:00"}, "changed": True,
        "diff": [["=", "I am "], ["-", "vegetarian"], ["+", "vegan"], ["=", " and allergic to peanuts"]],
    }]})

    record: int
    from_: VersionRef = Field(alias="from")
    to: VersionRef
    changed: bool
    diff: list[tuple[Literal["=", "-", "+"], str]]


class RecallItemOut(BaseModel):
    record: int | None = Field(description="The record it matched; null: no record of the store holds it.")
    version: int | None
    rank: int
    score: float | None
    text: str = Field(description="The text as sent.")
    metadata: dict[str, Any] = Field(description="What the library said of the item beside its text (a document's "
                                                 "source, mem0's categories); {} when it said nothing.")


class RecallOut(BaseModel):
    """One read of a store that fed a model call, and where its items were put."""

    model_config = examples({
        "id": 17, "seq": 7, "store": 3, "query": "Make me a plan for the trip.", "params": {"limit": 5},
        "placement": "message", "persisted": True, "at": None,
        "items": [{"record": 41, "version": 1, "rank": 1, "score": None,
                   "text": "User is planning a trip to Hangzhou next week",
                   "metadata": {"categories": ["travel"]}}],
    })

    id: int
    seq: int | None = Field(description="The message carrying the recalled text; null: none known.")
    store: int | None
    query: str
    params: dict[str, Any]
    placement: Literal["message", "system", "tool_result"]
    persisted: bool = Field(description="The carrying message stays in the list and is sent again later.")
    at: Time
    items: list[RecallItemOut]


class RecallPageOut(BaseModel):
    session: int
    next: str | None
    recalls: list[RecallOut]


class ContextQuery(BaseModel):
    seq: int | None = Field(default=None, ge=0, description="The reply (an assistant message's seq).")
    call: int | None = Field(default=None, ge=1, description="A captured call's id, instead of seq.")


class ContextPartOut(BaseModel):
    part: Literal["system", "memory_blocks", "recalled_memory", "retrieved_documents", "summary", "history",
                  "tool_definitions", "input"]
    tokens: int
    count: int = Field(description="How many messages hold this part.")
    ranges: list[list[int]] = Field(description="Its messages as [first, last] runs of seqs.")
    seqs: list[int] | None = Field(default=None, description="Its messages' seqs, when 2,000 or fewer.")


class ContextOut(BaseModel):
    """What one model call was sent, by part, against the agent's window; the parts add up to ``total``."""

    model_config = examples({
        "session": 12, "seq": 9, "call": None, "window": 128000, "total": 305, "counter": "cl100k",
        "parts": [{"part": "system", "tokens": 14, "count": 1, "ranges": [[0, 0]], "seqs": [0]},
                  {"part": "recalled_memory", "tokens": 46, "count": 1, "ranges": [[7, 7]], "seqs": [7]},
                  {"part": "retrieved_documents", "tokens": 140, "count": 2, "ranges": [[2, 2], [8, 8]],
                   "seqs": [2, 8]},
                  {"part": "history", "tokens": 85, "count": 4, "ranges": [[1, 1], [3, 5]], "seqs": [1, 3, 4, 5]},
                  {"part": "input", "tokens": 20, "count": 1, "ranges": [[6, 6]], "seqs": [6]}],
    })

    session: int
    seq: int | None
    call: int | None
    window: int
    total: int
    counter: str
    parts: list[ContextPartOut]


class SnapshotOut(BaseModel):
    """One whole-agent state (its value at ``url``), its parent, and the session and message it reaches."""

    model_config = examples({
        "id": 5, "url": "https://memoryviz.example/api/snapshots/5/", "agent": 7, "external_id": "user_1_trip@2",
        "parent": 4, "step": None, "taken_at": None, "source_format": "agentscope_session", "format_version": "1.0",
        "session": 12, "seq": 11,
    })

    id: int
    url: str
    agent: int
    external_id: str
    parent: int | None
    step: int | None
    taken_at: Time
    source_format: str
    format_version: str
    session: int | None
    seq: int | None


class SnapshotPage(BaseModel):
    count: int
    next: str | None
    previous: str | None
    results: list[SnapshotOut]


class SnapshotDetailOut(SnapshotOut):
    value: Any = Field(description="The agent's state as its library keeps it, verbatim.")


class ChangeOut(BaseModel):
    path: str = Field(description="Where, on the right side: $.memory.content[3]")
    op: Literal["added", "removed", "changed"]
    old: Any
    new: Any
    cut: dict[str, int] | None = Field(default=None, description="A value cut for display: its whole length.")
    message_list: str | None = None
    message: int | None = None
    left_index: int | None = None
    right_index: int | None = None


class SnapshotDiffOut(BaseModel):
    """What changed from the left snapshot to the right, by path; message lists by message."""

    model_config = examples({
        "left": 4, "right": 5, "total": 2, "truncated": False, "exact": True, "counts": {"added": 1, "changed": 1},
        "changes": [{"path": "$.agent.memory.content[6]", "op": "added", "old": None,
                     "new": [{"role": "user", "content": "Make me a plan for the trip."}, []],
                     "message_list": "$.agent.memory.content", "message": 6, "left_index": None,
                     "right_index": 6},
                    {"path": "$.plan_notebook.current_plan", "op": "changed", "old": None,
                     "new": {"name": "Trip to Hangzhou"}}],
    })

    left: int
    right: int
    changes: list[ChangeOut]
    total: int
    counts: dict[str, int]
    truncated: bool
    exact: bool = Field(description="False: a long alignment was matched greedily, not minimally.")


# --- the query strings ---------------------------------------------------------------------------------------------


class RecordQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    versions_after: int | None = Field(default=None, ge=0, description="Versions after this number")
    reads_after: int | None = Field(default=None, ge=1, description="Reads after this read (its id)")
    limit: int = Field(default=DEFAULT_PAGE, ge=1, le=MAX_PAGE, description="Versions and reads per page")


class DiffQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    from_: int | None = Field(default=None, alias="from", ge=1, description="A version (default: the one before to)")
    to: int | None = Field(default=None, ge=1, description="A version (default: the latest)")


class RecallQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    after: int | None = Field(default=None, ge=0, description="Recalls at messages after this seq")
    after_id: int | None = Field(default=None, ge=1,
                                 description="With after: the recalls of that message after this one")
    limit: int = Field(default=DEFAULT_PAGE, ge=1, le=MAX_PAGE, description="Recalls per page")


class ChangesQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    limit: int = Field(default=DEFAULT_CHANGES, ge=0, le=MAX_CHANGES, description="Changes to list (total counts all)")


# --- shaping --------------------------------------------------------------------------------------------------------


def api_url(request: Request, name: str, *args: Any, query: dict[str, Any] | None = None) -> str:
    tail = f"?{urlencode(query)}" if query else ""
    return request.build_absolute_uri(reverse(f"api:{name}", args=args) + tail)


def _store(request: Request, store: models.MemoryStore) -> dict[str, Any]:
    return StoreOut(
        id=store.pk, name=store.name, kind=store.kind, source_format=store.source_format,  # type: ignore[arg-type]
        scope=store.scope or {}, external_id=store.external_id, project=store.project.slug, agent=store.agent_id,
        records=store.record_count, versions=store.version_count, recalls=store.read_count,
        last_write_at=store.last_write_at, last_read_at=store.last_read_at,
        records_url=api_url(request, "memory_store_records", store.pk),
        export_url=api_url(request, "memory_store_export", store.pk),
    ).model_dump(mode="json")


def _record(request: Request, record: models.MemoryRecord) -> dict[str, Any]:
    return RecordOut(
        id=record.pk, url=api_url(request, "memory_record", record.pk), external_id=record.external_id,
        text=record.text, state=record.state, versions=record.version_count,  # type: ignore[arg-type]
        reads=record.read_count, created_at=record.created_at, updated_at=record.updated_at,
        char_limit=record.char_limit,
    ).model_dump(mode="json")


def _snapshot_fields(request: Request, snapshot: models.Snapshot) -> dict[str, Any]:
    return {"id": snapshot.pk, "url": api_url(request, "snapshot_detail", snapshot.pk), "agent": snapshot.agent_id,
            "external_id": snapshot.external_id, "parent": snapshot.parent_id, "step": snapshot.step,
            "taken_at": snapshot.taken_at, "source_format": snapshot.source_format,
            "format_version": snapshot.format_version, "session": snapshot.session_id, "seq": snapshot.seq}


def paged(request: Request, rows: Any, shape: Any, *, count: int | None = None) -> tuple[ApiPages, list[Any]]:
    paginator = ApiPages(count=count)
    page = paginator.paginate_queryset(rows, request)
    return paginator, [shape(request, row) for row in page or ()]


# --- the endpoints --------------------------------------------------------------------------------------------------


@documented("memory_stores_list", "The memory stores of your projects", 401, 404, response=StorePage)
@api
def memory_store_list(request: Request) -> Response:
    """Every memory store of your projects, by project, an agent's before the ones its project shares."""
    paginator, stores = paged(request, reading.stores_listed(user=request.user), _store)
    return paginator.get_paginated_response(stores)


@documented("agent_memory", "The memory stores an agent reads", 401, 404, response=AgentMemoryOut)
@api
def agent_memory(request: Request, agent_id: int) -> Response:
    """The agent's own stores, then those its project shares (``agent`` null), each with its counts of records,
    versions and recalls, and when it was last written and read."""
    agent, stores = reading.agent_stores(user=request.user, agent_id=agent_id)
    paginator, shown = paged(request, stores, _store)
    assert paginator.page is not None
    return Response(AgentMemoryOut(
        agent=agent.pk, count=paginator.page.paginator.count, next=paginator.get_next_link(),
        previous=paginator.get_previous_link(), stores=shown,
        snapshots_url=api_url(request, "agent_snapshots", agent.pk),
    ).model_dump(mode="json"))


_RECORD_FILTERS = [
    OpenApiParameter("q", str, description="Records whose text contains this (case-insensitive)"),
    OpenApiParameter("state", str, enum=models.MemoryRecord.State.values),
    OpenApiParameter("read", str, enum=["never", "yes"], description="Never read, or read at least once"),
    OpenApiParameter("changed_from", OpenApiTypes.DATE, description="Last written on or after this day (UTC)"),
    OpenApiParameter("changed_to", OpenApiTypes.DATE, description="Last written on or before this day (UTC)"),
    OpenApiParameter("sort", str, enum=list(reading.RECORD_SORTS),
                     description=f"Default {reading.DEFAULT_RECORD_SORT}"),
    OpenApiParameter("page", int),
]


@documented("memory_store_records", "A store's records, searched, filtered and sorted", 400, 401, 404,
            response=RecordPage, parameters=_RECORD_FILTERS)
@api
def memory_store_records(request: Request, store_id: int) -> Response:
    """A page of the store's records. ``q`` searches their text through the trigram index that searches messages;
    ``state``, ``read``, ``changed_from`` and ``changed_to`` filter; ``sort`` orders. A filter that cannot apply
    is refused (400), never dropped. Unfiltered, ``count`` is the store's own count: a page costs the same in a
    store of a hundred records or of a million."""
    listed = reading.records_listed(user=request.user, store_id=store_id, query=request.query_params)
    paginator, records = paged(request, listed.records, _record, count=listed.count)
    return paginator.get_paginated_response(records)


@documented("memory_record", "A record with its versions and its reads", 400, 401, 404, response=RecordDetailOut,
            parameters=query_parameters(RecordQuery))
@api
def memory_record(request: Request, record_id: int) -> Response:
    """The record, a page of its versions in order (``versions_after=N``: those after version N) and a page of its
    reads, newest recall first (``reads_after=ID``: those after that read); ``limit`` of each."""
    query = query_as(request, RecordQuery)
    shown = reading.record_detail(user=request.user, record_id=record_id, versions_after=query.versions_after,
                                  reads_after=query.reads_after, limit=query.limit)
    record = shown.record
    versions_next = reads_next = None
    if shown.versions_more:
        versions_next = api_url(request, "memory_record", record.pk,
                             query={"versions_after": shown.versions[-1].number, "limit": query.limit})
    if shown.reads_more:
        reads_next = api_url(request, "memory_record", record.pk,
                          query={"reads_after": shown.reads[-1].pk, "limit": query.limit})
    return Response(RecordDetailOut(
        id=record.pk, url=api_url(request, "memory_record", record.pk), store=record.store_id,
        external_id=record.external_id, text=record.text, value=record.value, metadata=record.metadata or {},
        state=record.state, content_hash=record.content_hash, char_limit=record.char_limit,  # type: ignore[arg-type]
        created_at=record.created_at, updated_at=record.updated_at, last_read_at=record.last_read_at,
        version_count=record.version_count, read_count=record.read_count,
        versions=[VersionOut(number=v.number, op=v.op, text=v.text, at=v.at, actor=v.actor, session=v.session_id,
                             seq=v.seq) for v in shown.versions],
        versions_next=versions_next,
        reads=[ReadOut(id=item.pk, recall=item.recall_id, session=item.recall.session_id, seq=item.recall.seq,
                       rank=item.rank, score=item.score, query=item.recall.query, version=item.version,
                       text=item.text) for item in shown.reads],
        reads_next=reads_next, diff_url=api_url(request, "memory_record_diff", record.pk),
    ).model_dump(mode="json"))


@documented("memory_record_diff", "The word-level diff of two versions of a record", 400, 401, 404,
            response=VersionsDiffOut, parameters=query_parameters(DiffQuery))
@api
def memory_record_diff(request: Request, record_id: int) -> Response:
    """``from`` and ``to`` are version numbers (default: the latest and the one before it); derived from the two
    versions' texts, never stored. A delete's text is empty."""
    query = query_as(request, DiffQuery)
    pair = reading.record_versions_diff(user=request.user, record_id=record_id, left=query.from_, right=query.to)
    return Response(VersionsDiffOut.model_validate({
        "record": pair.record.pk, "from": VersionRef(number=pair.left.number, op=pair.left.op, at=pair.left.at),
        "to": VersionRef(number=pair.right.number, op=pair.right.op, at=pair.right.at),
        "changed": pair.left.text != pair.right.text, "diff": pair.diff.segments,
    }).model_dump(mode="json", by_alias=True))


@documented("session_recalls", "A session's recalls, with their items", 400, 401, 404, response=RecallPageOut,
            parameters=query_parameters(RecallQuery))
@api
def session_recalls(request: Request, session_id: int) -> Response:
    """The reads of memory that fed the session's model calls, in the order of the messages carrying them (those
    no message carries last), each with its items by rank: the record and its version then, the score, the text
    as sent. Keyset pages: ``next`` carries ``after`` (a seq) and ``after_id``; each page costs the same."""
    query = query_as(request, RecallQuery)
    page = reading.session_recalls_page(user=request.user, session_id=session_id, after=query.after,
                                        after_id=query.after_id, limit=query.limit)
    next_url = None
    if page.more:
        last = page.recalls[-1]
        cursor = {"after": last.seq} if last.seq is not None else {}
        next_url = api_url(request, "session_recalls", page.session.pk,
                        query={**cursor, "after_id": last.pk, "limit": query.limit})
    return Response(RecallPageOut(session=page.session.pk, next=next_url, recalls=[RecallOut(
        id=recall.pk, seq=recall.seq, store=recall.store_id, query=recall.query, params=recall.params or {},
        placement=recall.placement, persisted=recall.persisted, at=recall.at,  # type: ignore[arg-type]
        items=[RecallItemOut(record=item.record_id, version=item.version, rank=item.rank, score=item.score,
                             text=item.text, metadata=item.metadata or {}) for item in recall.items.all()],
    ) for recall in page.recalls]).model_dump(mode="json"))


@documented("session_context", "What one model call was sent, by part", 400, 401, 404, response=ContextOut,
            parameters=query_parameters(ContextQuery))
@api
def session_context(request: Request, session_id: int) -> Response:
    """What filled the window for the reply at ``seq`` (every message before it) or for the captured call
    ``call`` (what it was sent): tokens per part (system, memory blocks, recalled memory, retrieved documents,
    summary, history, tool definitions, input) against the agent's context window."""
    query = query_as(request, ContextQuery)
    try:
        composition = context.reply_context(user=request.user, session_id=session_id, seq=query.seq,
                                            call_id=query.call)
    except context.ContextRequestError as exc:
        return bad_request(str(exc))
    return Response(ContextOut.model_validate(composition.to_dict()).model_dump(mode="json"))


@documented("agent_snapshots", "An agent's snapshots (without their values)", 401, 404, response=SnapshotPage)
@api
def agent_snapshots(request: Request, agent_id: int) -> Response:
    """Oldest first: each whole-agent state with its parent, its step and time, and the session and message it
    reaches. A snapshot's value is at its ``url``."""
    _agent, snapshots = reading.agent_snapshots(user=request.user, agent_id=agent_id)
    paginator, shown = paged(request, snapshots, lambda r, s: SnapshotOut(**_snapshot_fields(r, s)).model_dump(
        mode="json"))
    return paginator.get_paginated_response(shown)


@documented("snapshot_detail", "One snapshot with its value", 401, 404, response=SnapshotDetailOut)
@api
@collector_paused  # a long session's snapshot is hundreds of thousands of objects, in no cycle
def snapshot_detail(request: Request, snapshot_id: int) -> Response:
    snapshot = reading.snapshot_for_user(request.user, snapshot_id)
    return Response(SnapshotDetailOut(**_snapshot_fields(request, snapshot), value=snapshot.value).model_dump(
        mode="json"))


@documented("snapshot_diff", "What changed from one snapshot to another", 400, 401, 404, response=SnapshotDiffOut,
            parameters=query_parameters(ChangesQuery))
@api
@collector_paused
def snapshot_diff(request: Request, snapshot_id: int, other_id: int) -> Response:
    """The structural diff of two snapshots you may both see (404 otherwise): added, removed and changed values by
    path, message lists by message. ``limit`` bounds the changes listed (``total`` counts them all,
    ``truncated`` says some were left out); long values are cut for display (``cut`` gives their whole length)."""
    query = query_as(request, ChangesQuery)
    pair = reading.snapshots_diff(user=request.user, left_id=snapshot_id, right_id=other_id, limit=query.limit)
    return Response({"left": pair.left.pk, "right": pair.right.pk, **pair.diff.to_dict(max_chars=DISPLAY_CHARS)})


@extend_schema(
    operation_id="memory_store_export", summary="Download a memory store in a format its library loads",
    parameters=[OpenApiParameter("format", str, enum=list(MEMORY_WRITE_FORMATS),
                                 description="mem0 (get_all output and history rows), autogen_memory (a ListMemory "
                                             "component), langgraph_store (items), or native (default)")],
    request=None,
    responses={(200, "application/json"): OpenApiTypes.BINARY, 400: ApiError, 401: ApiError, 404: ApiError},
)
@format_names_the_file
@write_api(["POST"])
@expensive_api
def memory_store_export(request: Request, store_id: int) -> HttpResponse | Response:
    """The store with every record and version as a file: mem0's ``{"results", "history"}`` (what ``Memory.add``
    takes back), AutoGen's ``ListMemory`` component (``ListMemory.load_component``), LangGraph store items
    (``store.put`` each), or memoryviz's native file (imported again, the same records and versions). What the
    format cannot hold is kept on the export's record and said in ``X-Memoryviz-Dropped`` (a JSON list). Any
    member of the project may export."""
    data = request.data if isinstance(request.data, dict) else {}
    format = request.query_params.get("format") or data.get("format") or "native"
    try:
        exported = exports.store_export_for_user(user=request.user, store_id=store_id, format=str(format),
                                                 interface="api")
    except exports.ExportFailed as exc:
        return bad_request(str(exc))
    response = HttpResponse(exported.text, content_type=exported.media_type)
    response["Content-Disposition"] = f'attachment; filename="{exported.filename}"'
    response["X-Memoryviz-Export"] = str(exported.record.pk)
    # ASCII JSON: a header's value is Latin-1, and a store's name may be any text.
    response["X-Memoryviz-Dropped"] = json.dumps(exported.dropped)
    return response
