"""Storing sessions: ``messages_append`` is the one row writer (``session_store`` stores a whole schema
``Conversation`` with it; the importer calls it batch by batch while a ``ProtocolChecker`` streams over a huge
session), with the summaries it keeps, SQLite's write retries, and deleting a session."""
from __future__ import annotations

import datetime as dt
import os
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, transaction
from django.db.models import F, ForeignKey, Model
from django.db.models import fields as models_fields
from django.utils import timezone

from agents import models
from agents.access import User, require_role
from agents.memory import schema
from agents.memory.chain import ProtocolChecker, Violation
from agents.memory.tokens import count_messages, get_counter, total_tokens
from agents.store.mapping import conversation_problem, message_problem, message_rows

# Messages per INSERT batch: bounded memory for a session streamed from a file, few round trips.
BATCH_SIZE = 2_000
# Rows per bulk_update statement (its CASE grows with the batch): live capture's keying of stored messages.
BULK_BATCH = 500


def session_delete(*, user: User, session: models.Session) -> None:
    """Delete a session with its messages, calls and annotations (editor or admin of its project)."""
    require_role(user, session.agent.project, "edit")
    session.delete()


# --- storing ------------------------------------------------------------------------------------------------


@dataclass
class StoredBatch:
    """What ``messages_append`` stored."""

    count: int = 0
    tokens: int = 0
    has_errors: bool = False
    # The session's running total after these messages: pass it as the next call's ``tokens_before``.
    token_running: int = 0
    # The tool names their calls use (written to the project's ToolName rows once the session is ready).
    tool_names: set[str] = field(default_factory=set)


def session_create(
    *,
    agent: models.Agent,
    conversation: schema.Conversation,
    counter: str | None = None,
    external_id: str = "",
    state: str = models.Session.State.READY,
    import_owner: str = "",
    append_to: models.Session | None = None,
) -> models.Session:
    """The Session row of a conversation, without messages and with zero summaries. ``counter``: what its
    messages are counted with; None: the agent's (``Agent.counter``: chosen for it, or its model's).
    ``state=importing``: hidden from every reader until ``imports`` completes it (``import_owner`` says which
    process writes it).

    Raises ValueError naming the place for a value the database cannot store (see ``conversation_problem``)."""
    counter = counter or agent.counter
    get_counter(counter)  # fail before anything is written when the counter is unknown
    problem = conversation_problem(conversation)
    if problem:
        raise ValueError(problem)
    return models.Session.objects.create(
        agent=agent,
        external_id=external_id or conversation.external_id or "",
        title=(conversation.title or "")[:500],
        source_format=conversation.source_format or "",
        started_at=conversation.started_at or _first_created_at(conversation.messages),
        metadata=dict(conversation.metadata),
        tools=conversation.tools,
        token_counter=counter,
        state=state,
        import_owner=import_owner,
        import_heartbeat=timezone.now() if state == models.Session.State.IMPORTING else None,
        append_to=append_to,
    )


def messages_append(
    *,
    session: models.Session,
    messages: Iterable[schema.Message],
    start_seq: int,
    counter: str | None = None,
    tokens_before: int | None = None,
    content_keys: Sequence[str] | None = None,
    progress: Progress | None = None,
    checked: bool = False,
    committed: bool = False,
) -> StoredBatch:
    """Count tokens and insert messages (and their tool calls) from ``start_seq`` on, ``BATCH_SIZE`` at a time,
    so that a stream of a million messages is stored with bounded memory.

    ``tokens_before``: the session's running total before ``start_seq``. A caller storing in several calls passes
    the previous call's ``StoredBatch.token_running`` (no query); when it is None, the total is read from the
    stored message at ``start_seq - 1`` (one indexed lookup), so a forgetful caller still stores right totals.
    Raises ValueError naming the place (``messages[3].content: ...``) for a value the database cannot store, unless
    the caller says it ``checked`` each message with ``message_problem`` already (the import does, as it reads).
    ``content_keys``: one per message, for live capture's matching of resent messages.
    ``committed``: each batch is written in a short transaction of its own (retried while SQLite's write lock is
    taken), never one transaction for the whole stream, so that an import holds the write lock a batch at a
    time and other users' writes (a login) get in between; the import's session stays hidden meanwhile
    (``state=importing``), which is what keeps it all or nothing to readers.
    """
    if tokens_before is None:
        tokens_before = stored_tokens_before(session, start_seq)
    stored = StoredBatch(token_running=tokens_before)
    source = iter(messages)
    while batch := list(islice(source, BATCH_SIZE)):
        seq = start_seq + stored.count
        if not checked:
            for i, message in enumerate(batch):
                problem = message_problem(message)
                if problem:
                    raise ValueError(f"messages[{seq + i}].{problem}")
        counts = count_messages(batch, counter or session.token_counter)
        rows, calls = message_rows(
            batch, session=session, start_seq=seq, token_counts=counts, tokens_before=stored.token_running,
            content_keys=None if content_keys is None else content_keys[stored.count:stored.count + len(batch)],
        )
        if committed:
            # Called at once (and again on retry) within this iteration: the loop's current values are meant.
            write_retrying(lambda: _rows_insert_committed(rows, calls, session=session, start_seq=seq))  # noqa: B023
        else:
            _rows_insert(rows, calls, session=session, start_seq=seq)
        stored.tool_names.update(call.name for call in calls)
        stored.count += len(rows)
        stored.tokens += sum(counts)
        stored.token_running += sum(counts)
        stored.has_errors = stored.has_errors or any(m.is_error for m in batch)
        if progress is not None:
            progress.add(len(rows))
    if stored.tool_names and session.state == models.Session.State.READY:
        tool_names_note(project_id=session.agent.project_id, names=stored.tool_names)
    return stored


def _rows_insert_committed(
    rows: list[models.Message], calls: list[models.ToolCall], *, session: models.Session, start_seq: int
) -> None:
    with transaction.atomic():
        _rows_insert(rows, calls, session=session, start_seq=start_seq)
        if session.state == models.Session.State.IMPORTING:
            # The heartbeat says the import is alive: cleanup removes only sessions whose writer has gone.
            models.Session.objects.filter(pk=session.pk).update(import_heartbeat=timezone.now())


def tool_names_note(*, project_id: int, names: Iterable[str]) -> None:
    """Remember tool names used in the project (for the list's tool filter); names already known are kept."""
    rows = [models.ToolName(project_id=project_id, name=name) for name in sorted(set(names)) if name]
    if rows:
        models.ToolName.objects.bulk_create(rows, ignore_conflicts=True)


def process_owner() -> str:
    """``host:pid`` of this process, for work that must be told apart from work whose process has gone."""
    return f"{socket.gethostname()}:{os.getpid()}"[:100]


def process_alive(owner: str) -> bool | None:
    """Whether the process named by ``process_owner()`` runs: None when it ran on another host (unknown here)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# SQLite lets one writer in at a time; a writer that waited out the busy timeout gets "database is locked".
# Writes that are short and self-contained are tried again after a pause that doubles (PostgreSQL takes row
# locks and never answers so).
WRITE_ATTEMPTS = 6
WRITE_BACKOFF_SECONDS = 0.05


def write_retrying(
    write: Callable[[], Any], *, attempts: int = WRITE_ATTEMPTS, sleep: Callable[[float], None] | None = None
) -> Any:
    """``write()`` (a whole transaction of its own), tried again while SQLite says the database is locked or busy.
    Must not run inside another transaction: the retry would repeat only part of it."""
    pause = WRITE_BACKOFF_SECONDS
    for attempt in range(attempts):
        try:
            return write()
        except OperationalError as exc:
            text = str(exc).lower()
            if attempt == attempts - 1 or not ("locked" in text or "busy" in text):
                raise
            if transaction.get_connection().in_atomic_block:
                raise
            (sleep or time.sleep)(pause)
            pause *= 2
    raise AssertionError("unreachable")


def _rows_insert(
    rows: list[models.Message], calls: list[models.ToolCall], *, session: models.Session, start_seq: int
) -> None:
    """Insert rows built by ``message_rows``: the one way message rows reach the database.

    ``executemany`` of a one-row INSERT instead of ``bulk_create``: Django builds bulk_create's multi-row SQL
    value by value, which costs about as much as the insert itself (bench/README.md); values are still prepared
    by each field's ``get_db_prep_save``, so JSON and datetimes are stored exactly as the ORM stores them, on
    SQLite and PostgreSQL alike. The message ids are read back by (session, seq) for the ToolCall rows.
    """
    if not rows:
        return
    db = connections[DEFAULT_DB_ALIAS]
    with db.cursor() as cursor:
        cursor.executemany(_MESSAGE_INSERT.sql(db), _MESSAGE_INSERT.param_rows(rows, db))
        if calls:
            ids = dict(
                models.Message.objects.filter(
                    session=session, seq__gte=start_seq, seq__lt=start_seq + len(rows)
                ).values_list("seq", "id")
            )
            for call in calls:
                call.message_id = ids[call.message.seq]
            cursor.executemany(_TOOLCALL_INSERT.sql(db), _TOOLCALL_INSERT.param_rows(calls, db))
    session_changed(session, appended=True)


# Messages written at once past which the planner's statistics are brought up to date (``tables_analyze``).
ANALYZE_AFTER_MESSAGES = 10_000


def tables_analyze() -> None:
    """After a bulk load on PostgreSQL (an import, the demo): the planner learns the tables' sizes now, not when
    autovacuum next passes; until then it plans for the tables as they were (an admin page over the freshly seeded
    demo took minutes in CI). SQLite plans without such statistics."""
    if connections[DEFAULT_DB_ALIAS].vendor != "postgresql":
        return
    tables = ", ".join(m._meta.db_table for m in (
        models.Project, models.Agent, models.Session, models.Message, models.ToolCall, models.Membership))
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


def session_changed(session: models.Session, *, appended: bool = False) -> None:
    """Say that the session's messages changed: its ``content_version`` goes up by one (in the database, whatever
    another process did meanwhile), so that what was computed from the old messages is not used again.
    ``appended``: messages were only added at its end (the row writer), so what was computed from the messages
    before them still holds for those; any other change sets ``rewritten_version`` to the new version."""
    if appended:
        models.Session.objects.filter(pk=session.pk).update(content_version=F("content_version") + 1)
    else:
        models.Session.objects.filter(pk=session.pk).update(
            content_version=F("content_version") + 1, rewritten_version=F("content_version") + 1)
        session.rewritten_version = session.content_version + 1
    session.content_version += 1


_PLAIN_FIELDS = (models_fields.CharField, models_fields.TextField, models_fields.IntegerField,
                 models_fields.BooleanField, models_fields.FloatField, ForeignKey)


class RowInsert:
    """A one-row INSERT of a model's concrete columns (primary key left to the database), run with
    ``executemany``: the way rows are written in bulk (messages, memory records and versions). Django builds
    ``bulk_create``'s multi-row SQL value by value, which costs about as much as the insert itself."""

    def __init__(self, model: type[Model]) -> None:
        self.fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        self.model = model

    def sql(self, db: Any) -> str:
        quote = db.ops.quote_name
        columns = ", ".join(quote(f.column) for f in self.fields)
        marks = ", ".join(["%s"] * len(self.fields))
        return f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) VALUES ({marks})"

    def param_rows(self, objs: Iterable[Any], db: Any) -> list[tuple[Any, ...]]:
        """Each object's values as ``get_db_prep_save`` prepares them for ``db`` (the real connection, not the
        ``django.db.connection`` proxy, whose per-access thread-local lookup cost 10% of an import)."""
        preps = [(f.get_db_prep_save, f.attname) for f in self.fields]
        return [tuple(prep(getattr(obj, name), db) for prep, name in preps) for obj in objs]

    def insert(self, objs: Iterable[Any]) -> None:
        db = connections[DEFAULT_DB_ALIAS]
        with db.cursor() as cursor:
            cursor.executemany(self.sql(db), self.param_rows(objs, db))

    def values(self, **values: Any) -> tuple[Any, ...]:
        """A row for ``insert_values`` from its values by attname (every column named: a missing one is a bug)."""
        return tuple(values[f.attname] for f in self.fields)

    def insert_values(self, rows: Iterable[Sequence[Any]]) -> None:
        """Rows given as their values in ``fields`` order (attnames: ``record_id`` for a foreign key), without a
        model instance in between: a bulk load of a million rows spends no time building objects."""
        db = connections[DEFAULT_DB_ALIAS]
        # Texts, numbers, booleans and foreign keys go to the driver as they are (Django's preparation of them is
        # the identity for values of their type, at a cost per value); JSON and times are prepared as the ORM does.
        preps = [None if isinstance(f, _PLAIN_FIELDS) else f.get_db_prep_save for f in self.fields]
        params = [tuple(value if prep is None else prep(value, db) for prep, value in zip(preps, row, strict=True))
                  for row in rows]
        with db.cursor() as cursor:
            cursor.executemany(self.sql(db), params)


_MESSAGE_INSERT = RowInsert(models.Message)
_TOOLCALL_INSERT = RowInsert(models.ToolCall)


class Progress:
    """How many messages an import or an export has done so far, told to ``callback`` (a progress bar) after
    each batch."""

    def __init__(self, callback: Callable[[int], None] | None = None) -> None:
        self.callback = callback
        self.count = 0

    def add(self, n: int) -> None:
        self.count += n
        if self.callback is not None:
            self.callback(self.count)


def stored_tokens_before(session: models.Session, seq: int) -> int:
    """The running total of the stored messages before ``seq``: the ``token_running`` of the message at
    ``seq - 1`` (the unique (session, seq) index answers it), or 0 at the start of the session."""
    if seq <= 0:
        return 0
    value = (
        models.Message.objects.filter(session=session, seq=seq - 1).values_list("token_running", flat=True).first()
    )
    if value is None:
        raise ValueError(f"messages[{seq}]: no stored message at seq {seq - 1} to continue the running total from")
    return value


def session_finish(
    *,
    session: models.Session,
    message_count: int,
    token_counts_sum: int,
    has_errors: bool,
    violations: Sequence[Violation],
) -> models.Session:
    """Write the summaries: message_count, token_total (with the counter's per-list tokens), violations."""
    session.message_count = message_count
    # total_tokens adds the reply priming once per list, so token_total is what sending the whole list costs.
    session.token_total = total_tokens([token_counts_sum], session.token_counter) if message_count else 0
    session.has_errors = has_errors
    # Messages are stored at seq == their index in the conversation, so a violation's index is its seq.
    session.violations = [violation_record(v) for v in violations]
    session.violation_count = sum(1 for v in violations if v.severity == "error")
    session.save(update_fields=["message_count", "token_total", "has_errors", "violations", "violation_count"])
    return session


def violation_record(violation: Violation) -> dict[str, Any]:
    return {**violation.to_dict(), "seq": violation.index}


def session_store(
    *, agent: models.Agent, conversation: schema.Conversation, counter: str | None = None, external_id: str = ""
) -> models.Session:
    """Save a whole conversation: Session, Message and ToolCall rows, tokens and violations.

    Runs inside the caller's transaction when there is one (an atomic block of its own otherwise), so a
    failure leaves nothing half-stored.
    """
    with transaction.atomic():
        session = session_create(agent=agent, conversation=conversation, counter=counter, external_id=external_id)
        checker = ProtocolChecker()
        for message in conversation.messages:
            checker.feed(message)
        stored = messages_append(session=session, messages=conversation.messages, start_seq=0, tokens_before=0)
        return session_finish(
            session=session,
            message_count=stored.count,
            token_counts_sum=stored.tokens,
            has_errors=stored.has_errors,
            violations=checker.finish(),
        )


def _first_created_at(messages: Iterable[schema.Message]) -> dt.datetime | None:
    for message in messages:
        if message.created_at is not None:
            return message.created_at
    return None
