"""The memory write API's writes, for teams that do not trace (issue 26): a store created, versions of its records
written (one or a batch), a recall posted with its items and the message (or captured call) it fed, a snapshot
posted; their bodies as pydantic models (the API's request schema).

Every write is a small ``core.MemoryDocument`` stored by ``ledger.storing.MemoryImport`` (the one path for storing,
as an import and the OTLP receiver use it, with ``partial_records``: a request holds part of a record's history,
and a version placed by its time), under the session writer's lock and retries as live capture writes. Each thing
written carries the client's id, so that a retry never duplicates: a store by ``id`` (in its project), a version by
``id`` (in its record), a recall by ``id`` (in its session), a snapshot by ``id`` (in its agent). What was stored
already is counted in ``skipped``. ``agents.api.memory_writes`` is the endpoints.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify
from pydantic import BaseModel, ConfigDict, Field

from agents import access, models
from agents.capture import ingest
from agents.ledger import findings, storing
from agents.memory import ledger as core

SOURCE_FORMAT = "api"  # the stores this API makes: joined by their client id, never by an import's
MAX_BATCH = 1000


class ApiStoreCreate(BaseModel):
    """A memory store: ``id`` is the client's (a retry with the same id answers the store made the first time)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=255, description="The client's id of the store, unique in the project.")
    project: str | None = Field(default=None, description="The project's slug (the key's own project if left out).")
    name: str = Field(default="", max_length=200, description="What the pages call it (the id if left out).")
    kind: core.StoreKind = "records"
    agent: str | None = Field(default=None, max_length=200,
                              description="The agent it belongs to, by name or slug (created when missing); "
                                          "none: shared by the project.")
    scope: dict[str, Any] = Field(default_factory=dict, description="Whose memory it is: user_id, agent_id, ...")


class ApiVersion(BaseModel):
    """One write of a record, with its whole new body (``text``, and ``value`` where it holds more); ``captured``
    false when the client knows of the write but not its body (shown as unknown, not empty)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=255, description="The client's id of this write: a retry skips it.")
    record: str = Field(min_length=1, max_length=255, description="The record's id in the client's store.")
    op: str = Field(default="UPDATE", min_length=1, max_length=40, description="ADD, UPDATE, DELETE, NONE, ...")
    text: str | None = None
    value: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    captured: bool = True
    at: datetime | None = Field(default=None, description="When it was written (when it arrived if left out).")
    actor: str | None = Field(default=None, max_length=255)
    session: int | None = Field(default=None, description="The session whose message caused it (its id here).")
    seq: int | None = Field(default=None, ge=0, description="That message's seq.")


class ApiVersions(BaseModel):
    """Versions of a store's records, one or a batch, in any order: each is placed by its time."""

    model_config = ConfigDict(extra="forbid")

    project: str | None = None
    store: str = Field(min_length=1, max_length=255, description="The store's client id (ApiStoreCreate.id).")
    versions: list[ApiVersion] = Field(min_length=1, max_length=MAX_BATCH)


class ApiRecallItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="The text as sent to the model.")
    record: str | None = Field(default=None, max_length=255,
                               description="The record's client id; else matched by the text.")
    score: float | None = None
    rank: int | None = Field(default=None, ge=1, description="Its position (the order given if left out).")
    ref: dict[str, Any] = Field(default_factory=dict, description="What identifies it in the library.")
    metadata: dict[str, Any] = Field(default_factory=dict,
                                     description="What the library said of it beside its text (source, page, ...).")


class ApiRecall(BaseModel):
    """A read of a store that fed a model call: its query and items, and the message carrying them (``seq``) or the
    captured call it fed (``llm_call``), in ``session``. Given the call alone, the recall is at the message of the
    call's input that holds its items, where one does."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=255, description="The client's id of this read: a retry skips it.")
    project: str | None = None
    session: int = Field(description="The session it fed (its id here).")
    seq: int | None = Field(default=None, ge=0, description="The message carrying the recalled text.")
    llm_call: int | None = Field(default=None, description="The captured call it fed (its id here).")
    store: str | None = Field(default=None, max_length=255, description="The store's client id; none: unknown.")
    query: str | None = None
    params: dict[str, Any] = Field(default_factory=dict, description="limit, threshold, filters, ...")
    placement: core.Placement = "message"
    persisted: bool = Field(default=False, description="The placement stays in the list and is sent again.")
    at: datetime | None = Field(default=None, description="When it was read (when it arrived if left out).")
    items: list[ApiRecallItem] = Field(default_factory=list, max_length=MAX_BATCH)


class ApiSnapshot(BaseModel):
    """One whole-agent state, kept verbatim."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=255, description="The client's id: a retry skips it.")
    project: str | None = None
    agent: str = Field(min_length=1, max_length=200, description="By name or slug (created when missing).")
    value: Any
    format: str = Field(default=SOURCE_FORMAT, min_length=1, max_length=40, description="The library's format.")
    format_version: str | None = Field(default=None, max_length=40)
    parent: str | None = Field(default=None, max_length=255, description="The client id of the snapshot before.")
    step: int | None = None
    taken_at: datetime | None = Field(default=None, description="When it was taken (when it arrived if left out).")
    session: int | None = Field(default=None, description="The session its message list is (its id here).")
    seq: int | None = Field(default=None, ge=0, description="The last message of that session it holds.")


# --- the writes --------------------------------------------------------------------------------------------------


class Conflict(Exception):
    """The client's id names something else already (a store of another kind or agent)."""


def _agent(project: models.Project, name: str) -> models.Agent:
    found = models.Agent.objects.filter(project=project).filter(Q(slug=name) | Q(name=name)).first()
    if found is None:
        found, _ = models.Agent.objects.get_or_create(project=project, slug=slugify(name)[:100] or "agent",
                                                      defaults={"name": name})
    return found


def _store_row(project: models.Project, store_id: str) -> models.MemoryStore:
    row = models.MemoryStore.objects.filter(
        project=project, source_format=SOURCE_FORMAT, external_id=store_id,
        state=models.MemoryStore.State.READY).order_by("id").first()
    if row is None:
        raise ValueError(f"store: no store {store_id!r} in project {project.slug} (create it first: POST "
                         "/api/memory/writes/stores/)")
    return row


def _store_in(row: models.MemoryStore, records: list[core.RecordIn] | None = None) -> core.StoreIn:
    return core.StoreIn(key=row.external_id, name=row.name, kind=cast(core.StoreKind, row.kind),
                        source_format=SOURCE_FORMAT, scope=row.scope, external_id=row.external_id,
                        records=records or [])


def _session(project: models.Project, session_id: int | None, place: str) -> models.Session | None:
    if session_id is None:
        return None
    session = models.Session.objects.filter(pk=session_id, agent__project=project).select_related("agent").first()
    if session is None:
        raise ValueError(f"{place}: no session {session_id} in project {project.slug}")
    return session


def _sessions_at(sessions: dict[str, models.Session]) -> storing.SessionAt:
    """A document's conversation keys here are session ids; a position is the message's seq."""

    def at(key: str | None, pos: int | None, place: str) -> tuple[models.Session | None, int | None]:
        session = sessions.get(key or "")
        return (session, pos) if session is not None else (None, None)

    return at


def _stored(project: models.Project, document: core.MemoryDocument | Callable[[], core.MemoryDocument | None],
            sessions: dict[str, models.Session], *, agent_named: storing.AgentNamed = lambda name: None,
            call_named: Callable[[str | None], int | None] | None = None) -> storing.MemoryOutcome:
    """One document through the importer, in one transaction, one writer of a project's memory at a time (the
    project's row locked on PostgreSQL, SQLite has one writer anyway; what a retry finds stored it skips), tried
    again when SQLite is busy. ``document`` may be made once the lock is held (None: nothing to store)."""
    for attempt in range(ingest.ATTEMPTS):
        try:
            with ingest.session_writer(), transaction.atomic():
                _project_locked(project)
                given = document() if callable(document) else document
                importer = storing.MemoryImport(
                    project=project, document=given or core.MemoryDocument(format=SOURCE_FORMAT),
                    agent_named=agent_named, default_agent=None, owner="api", call_named=call_named,
                    partial_records=True)
                if given is not None:
                    importer.stage(_sessions_at(sessions))
                    importer.finish(_sessions_at(sessions))
                    # The memory findings of the stores and sessions written, as an import computes them (the
                    # sessions reading a store written too; bounded, the rest left to a worker).
                    findings.findings_after_write(sessions=[s.pk for s in sessions.values()],
                                                  stores=[s.row.pk for s in importer.stores.values()])
            return importer.outcome
        except (IntegrityError, OperationalError):
            if attempt == ingest.ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _project_locked(project: models.Project) -> None:
    list(models.Project.objects.select_for_update().filter(pk=project.pk).values_list("pk", flat=True))


def store_created(*, user: access.User, body: ApiStoreCreate) -> tuple[models.MemoryStore, bool]:
    """The store of the client's id, made on first sight: (the store, True when made now)."""
    project = access.project_to_write(user, body.project)
    agent = _agent(project, body.agent) if body.agent else None
    found: list[models.MemoryStore] = []

    def document() -> core.MemoryDocument | None:
        # Under the lock: two first requests of one id make one store, the second finds the first's.
        existing = models.MemoryStore.objects.filter(project=project, source_format=SOURCE_FORMAT,
                                                     external_id=body.id).order_by("id").first()
        if existing is not None:
            found.append(existing)
            return None
        # The client's id is part of the scope: two stores of one scope with their own ids stay two.
        return core.MemoryDocument(format=SOURCE_FORMAT, stores=[core.StoreIn(
            key=body.id, name=body.name or body.id, kind=body.kind, source_format=SOURCE_FORMAT,
            scope={**body.scope, "store_id": body.id}, external_id=body.id, agent=agent.slug if agent else None)])

    _stored(project, document, {}, agent_named=lambda name: agent if agent is not None and name == agent.slug else None)
    if found:
        existing = found[-1]
        if existing.kind != body.kind or (agent is not None and existing.agent_id not in (None, agent.pk)):
            raise Conflict(f"id {body.id}: the project has this store already, as a {existing.kind} store"
                           + (f" of agent {existing.agent.slug}" if existing.agent else ""))
        return existing, False
    return _store_row(project, body.id), True


def _record(external_id: str, given: list[ApiVersion]) -> core.RecordIn:
    """A record as a batch of its versions tells it (the last body seen whole is what it holds)."""
    versions = [core.VersionIn(op=v.op, text=None if _deletes(v.op) else v.text,
                               value=None if _deletes(v.op) else v.value, at=v.at, actor=v.actor,
                               session=str(v.session) if v.session is not None else None, seq=v.seq,
                               external_id=v.id, captured=v.captured) for v in given]
    ordered = core.order_events(versions)
    metadata = {v.id: v.metadata for v in given}
    # Its metadata is that of its last body seen whole, as the receiver keeps it (none is none).
    described = next((v for v in reversed(ordered) if not _deletes(v.op) and v.captured), None)
    last = ordered[-1]
    body = next((v for v in reversed(ordered) if not _deletes(v.op)), None) if _deletes(last.op) else last
    known = body is not None and body.captured
    return core.RecordIn(
        external_id=external_id, text=(body.text or "") if known and body else "",
        value=body.value if known and body else None,
        metadata=metadata[described.external_id or ""] if described else {},
        state="deleted" if _deletes(last.op) else "active", created_at=ordered[0].at, updated_at=last.at,
        versions=versions)


def _deletes(op: str) -> bool:
    return op.upper() == "DELETE"


def versions_written(*, user: access.User, body: ApiVersions) -> storing.MemoryOutcome:
    project = access.project_to_write(user, body.project)
    store = _store_row(project, body.store)
    now = timezone.now()
    seen: set[str] = set()
    by_record: dict[str, list[ApiVersion]] = {}
    sessions: dict[str, models.Session] = {}
    repeated = 0
    for i, version in enumerate(body.versions):
        if version.id in seen:  # the same write twice in one batch: once
            repeated += 1
            continue
        seen.add(version.id)
        session = _session(project, version.session, f"versions[{i}].session")
        if session is not None:
            sessions[str(session.pk)] = session
        by_record.setdefault(version.record, []).append(
            version if version.at is not None else version.model_copy(update={"at": now}))
    records = [_record(external_id, given) for external_id, given in by_record.items()]
    outcome = _stored(project, core.MemoryDocument(format=SOURCE_FORMAT, stores=[_store_in(store, records)]),
                      sessions)
    outcome.skipped += repeated
    return outcome


def recall_posted(*, user: access.User, body: ApiRecall) -> storing.MemoryOutcome:
    project = access.project_to_write(user, body.project)
    session = _session(project, body.session, "session")
    assert session is not None
    stores = [_store_in(_store_row(project, body.store))] if body.store is not None else []
    call_id = call_input = None
    seq = body.seq
    if seq is not None and not models.Message.objects.filter(session=session, seq=seq).exists():
        raise ValueError(f"seq: session {session.pk} has no message {seq}")
    if body.llm_call is not None:
        call = models.LlmCall.objects.filter(pk=body.llm_call, session=session).first()
        if call is None:
            raise ValueError(f"llm_call: no captured call {body.llm_call} in session {session.pk}")
        call_id = call.pk
        if seq is None:
            seq = _carrying(session, call, [item.text for item in body.items])
        # Its position in the call's input: the recall follows that message when a late call moves it.
        call_input = call.sent.index(seq) if call.placed and seq in call.sent else None
    recall = core.RecallIn(
        session=str(session.pk), seq=seq, llm_call=str(call_id) if call_id is not None else None,
        call_input=call_input,
        store=body.store, query=body.query, params=body.params, placement=body.placement, persisted=body.persisted,
        at=body.at or timezone.now(), external_id=body.id,
        items=[core.RecallItemIn(text=item.text, rank=item.rank or i, score=item.score, record=item.record,
                                 ref=item.ref, metadata=item.metadata) for i, item in enumerate(body.items, 1)])
    document = core.MemoryDocument(format=SOURCE_FORMAT, stores=stores, recalls=[recall])
    return _stored(project, document, {str(session.pk): session},
                   call_named=lambda given: call_id if given is not None and given == str(call_id) else None)


def _carrying(session: models.Session, call: models.LlmCall, texts: list[str]) -> int | None:
    """The message of the call's input that carries the recalled texts, as the receiver finds it: the last one,
    not the model's own, that holds one of them (whitespace folded)."""
    wanted = [core.folded(text) for text in texts if text.strip()]
    if not wanted or not call.placed:
        return None
    held = {seq: (role, content) for seq, role, content in models.Message.objects.filter(
        session=session, seq__in=call.sent).values_list("seq", "role", "content")}
    for seq in reversed(call.sent):
        role, content = held.get(seq, ("assistant", None))
        if role != "assistant" and any(text in core.folded(content or "") for text in wanted):
            return seq
    return None


def snapshot_posted(*, user: access.User, body: ApiSnapshot) -> storing.MemoryOutcome:
    project = access.project_to_write(user, body.project)
    agent = _agent(project, body.agent)
    session = _session(project, body.session, "session")
    if session is not None and session.agent_id != agent.pk:
        raise ValueError(f"session: session {session.pk} is not agent {agent.slug}'s")
    snapshot = core.SnapshotIn(
        external_id=body.id, value=body.value, source_format=body.format, format_version=body.format_version,
        parent=body.parent, step=body.step, taken_at=body.taken_at or timezone.now(), agent=agent.slug,
        session=str(session.pk) if session is not None else None, seq=body.seq)
    sessions = {str(session.pk): session} if session is not None else {}
    return _stored(project, core.MemoryDocument(format=SOURCE_FORMAT, snapshots=[snapshot]), sessions,
                   agent_named=lambda name: agent if name == agent.slug else None)
