"""Live capture: the calls that OTLP batches describe become sessions, messages and LlmCall rows.

The core reads the bodies (``memory.otlp``), the calls (``memory.llm_calls``) and places each call in its
session's chain (``memory.stitch``); this module keeps the chain in the database. ``StoredChain`` answers the
stitcher's questions with indexed lookups (``Message.content_key``), new messages go through the store's one
row writer, and the session's summaries (counts, running totals, violations) are brought up to date once per
batch. A call that belongs before calls already placed (it arrived late, or the rest of its log events did)
rolls the session back to where it belongs and replays the later calls, as ``memory.stitch.Stitcher`` does.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from agents import models
from agents.memory import schema
from agents.memory.chain import ProtocolChecker
from agents.memory.llm_calls import CapturedCall, Extraction, SpanLink, extract, merge_calls, told_by_span
from agents.memory.otlp import Batch
from agents.memory.stitch import call_order, message_key, place_call
from agents.store import mapping, reading, writing

SOURCE_FORMAT = "otlp"
DEFAULT_AGENT = "OpenTelemetry"


@dataclass
class IngestResult:
    calls: int = 0  # calls stored or completed
    rejected: int = 0  # spans or log records that could not be read
    problems: list[str] = field(default_factory=list)
    sessions: set[int] = field(default_factory=set)
    traces: set[str] = field(default_factory=set)  # the traces of the calls it stored
    replayed: set[int] = field(default_factory=set)  # sessions whose later calls were placed again after a late one

    @property
    def error_message(self) -> str:
        shown = "; ".join(self.problems[:5])
        more = f" (and {len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        return shown + more


# An exporter sends traces and logs from two threads, and several processes of one agent export at once: two
# requests may write one session together. PostgreSQL serialises them on the session row (select_for_update)
# and a lost race for a new row is retried whole; SQLite takes one writer at a time anyway, so this process
# queues its writers, across its processes too (``_SqliteWriter``), rather than have them fail on the database lock.
ATTEMPTS = 3


class _SqliteWriter:
    """The SQLite database's one writer, taken in turn by the threads and processes that write live sessions.

    SQLite makes a writer that finds the database locked sleep and try again (1 ms, 2, 5, ... up to 100 ms), so that
    between two processes each with several threads, the process holding the lock hands it from thread to thread
    while the other's sleep: under a flood of requests a request waited seconds (bench/bench_memory_capture.py). Here
    a thread takes this process's lock, then an exclusive ``flock`` of a file beside the database (``<name>-writer``,
    as SQLite's own ``-wal``), on which the other processes wait in the kernel and are woken as it is released.
    Reentrant: the receiver holds it for a whole request (``request_writer``) while the parts it calls take it again;
    only the outermost hold locks the file. A database in memory (the tests) has one process: the thread lock alone."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._files: dict[tuple[int, str], int] = {}  # by process: a forked worker opens its own

    @contextmanager
    def held(self, database: str | None = None) -> Iterator[None]:
        """``database``: the file of the database written (default: the connection's)."""
        with self._lock:
            self._depth += 1
            fd = self._file(database) if self._depth == 1 else None
            try:
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    if fd is not None:
                        fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                self._depth -= 1

    def _file(self, database: str | None) -> int | None:
        name = database if database is not None else str(connection.settings_dict.get("NAME") or "")
        if not name or name.startswith(":memory:") or "mode=memory" in name:
            return None
        key = (os.getpid(), name)
        if key not in self._files:
            self._files[key] = os.open(f"{name}-writer", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._files[key]


_SQLITE_WRITER = _SqliteWriter()


class SessionMoved(Exception):
    """The session a batch was writing to went while it waited for its lock: a concurrent batch named the trace's
    session and moved the calls there (``_move_trace_session``). Tried again, the batch finds the named one."""


def otlp_ingest(*, api_key: models.ApiKey, batch: Batch, extraction: Extraction | None = None) -> IngestResult:
    """Store what one decoded OTLP request says about model calls, in the key's project (``extraction``: the
    batch's calls read already, ``llm_calls.extract(batch)``)."""
    if extraction is None:
        extraction = extract(batch)
    for attempt in range(ATTEMPTS):
        try:
            with session_writer():
                return _ingest(api_key.project, extraction)
        except Exception as exc:
            _CHECKERS.clear()  # they may hold what the rolled-back transaction fed them
            # Tried again: a lost race for a new row, a session moved away meanwhile, or PostgreSQL breaking a
            # deadlock (rolled back whole).
            if not isinstance(exc, IntegrityError | OperationalError | SessionMoved) or attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _ingest(project: models.Project, extraction: Extraction) -> IngestResult:
    result = IngestResult(rejected=len(extraction.rejected), problems=[r.reason for r in extraction.rejected])
    with transaction.atomic():
        named = _remember_trace_names(project, extraction)
        groups: dict[tuple[str, str], list[CapturedCall]] = defaultdict(list)
        links = {link.span_id: link for link in extraction.links}
        for call in merge_calls(extraction.calls):
            groups[_where(project, call, links, named)].append(call)
        for (external_id, agent_name), calls in groups.items():
            session = _session(project, external_id, agent_name, calls)
            for call in sorted(calls, key=call_order):
                result.traces.add(call.trace_id)
                if call_capture(session=session, call=call, replayed=result.replayed):
                    result.calls += 1
            session_refresh(session=session)
            result.sessions.add(session.pk)
        for trace_id, (external_id, agent_name) in named.items():
            moved = _move_trace_session(project, trace_id, external_id, agent_name, result.replayed)
            if moved is not None:
                result.sessions.add(moved.pk)
    return result


# --- which session --------------------------------------------------------------------------------------------


def _remember_trace_names(project: models.Project, extraction: Extraction) -> dict[str, tuple[str, str]]:
    """Traces whose spans in this batch name a session (an ``invoke_agent`` span, say): remembered, so that
    calls of the trace arriving later, and those that already came, go to that session."""
    named: dict[str, tuple[str, str]] = {}
    for link in extraction.links:
        if link.session_id and link.trace_id not in named:
            named[link.trace_id] = (link.session_id, link.agent_name or "")
    for trace_id, (external_id, agent_name) in named.items():
        models.CapturedTrace.objects.update_or_create(
            project=project, trace_id=trace_id,
            defaults={"session_external_id": external_id[:255], "agent_name": agent_name[:200]},
        )
    return named


def _where(project: models.Project, call: CapturedCall, links: Mapping[str, SpanLink],
           named: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
    """(session external id, agent name) of a call: its own span or resource, its ancestors in this batch, a
    span of its trace seen before, else the trace itself."""
    session, agent = call.session_id, call.agent_name
    span_id, seen = call.parent_span_id, set()
    while span_id and span_id in links and span_id not in seen:
        seen.add(span_id)
        session = session or links[span_id].session_id
        agent = agent or links[span_id].agent_name
        span_id = links[span_id].parent_span_id
    if session is None:
        known = named.get(call.trace_id) or models.CapturedTrace.objects.filter(
            project=project, trace_id=call.trace_id).exclude(session_external_id="").values_list(
            "session_external_id", "agent_name").first()
        if known is not None:
            session, agent = known[0], agent or known[1] or None
    return session or f"trace:{call.trace_id}", agent or call.service_name or DEFAULT_AGENT


def _agent(project: models.Project, name: str, model: str | None) -> models.Agent:
    slug = slugify(name)[:100] or "agent"
    agent, _ = models.Agent.objects.get_or_create(
        project=project, slug=slug, defaults={"name": name[:200], "model": (model or "")[:200]}
    )
    return agent


def _session(
    project: models.Project, external_id: str, agent_name: str, calls: Sequence[CapturedCall]
) -> models.Session:
    agent = _agent(project, agent_name, next((c.model for c in calls if c.model), None))
    session = (
        models.Session.objects.filter(agent__project=project, external_id=external_id).select_related("agent").first()
    )
    if session is None:
        session = models.Session.objects.create(
            agent=agent, external_id=external_id[:255], source_format=SOURCE_FORMAT, token_counter=agent.counter,
            started_at=_started(calls), title=_title(calls),
        )
    # One writer per session at a time: concurrent batches of one agent queue here (a no-op on SQLite, which
    # serialises writers anyway).
    # of=("self",): only the session row; locking its agent too (the join) deadlocks two batches of one agent.
    try:
        session = models.Session.objects.select_for_update(of=("self",)).select_related("agent").get(pk=session.pk)
    except models.Session.DoesNotExist:
        raise SessionMoved(f"session {external_id!r} went while this batch waited for it") from None
    _key_stored_messages(session)
    _complete_summary(session, calls)
    return session


def _complete_summary(session: models.Session, calls: Sequence[CapturedCall]) -> None:
    """What the session's first batch could not say: its title when that batch held spans without their content
    (the log events came later), its start when a call that began earlier came late or its span came after its
    log events. The session is then the same whatever the order its batches came in."""
    changed = []
    started = _started(calls)
    if started is not None and (session.started_at is None or started < session.started_at):
        session.started_at = started
        changed.append("started_at")
    if not session.title and (title := _title(calls)):
        session.title = title
        changed.append("title")
    if changed:
        session.save(update_fields=changed)


def _key_stored_messages(session: models.Session) -> None:
    """Messages stored by another path (an import, a session created through the API) have no content key yet:
    keyed once, the first time calls arrive for their session, so a call that resends them finds them."""
    rows = list(models.Message.objects.filter(session=session, content_key=""))
    if not rows:
        return
    for row in rows:
        row.content_key = message_key(mapping.message_to_schema(row))
    models.Message.objects.bulk_update(rows, ["content_key"], batch_size=writing.BULK_BATCH)


def _started(calls: Sequence[CapturedCall]) -> dt.datetime | None:
    return min((when for c in calls if (when := _when(c)) is not None), default=None)


def _title(calls: Sequence[CapturedCall]) -> str:
    for call in sorted(calls, key=call_order):
        for message in call.inputs or ():
            if message.role == "user" and message.text.strip():
                return message.text.strip()[:120]
    return ""


def _move_trace_session(
    project: models.Project, trace_id: str, external_id: str, agent_name: str, replayed: set[int]
) -> models.Session | None:
    """Calls that waited in their trace's own session go to the session a span of the trace has now named."""
    # Locked before its calls are read: a concurrent batch storing calls there (it did not see the name yet) either
    # commits first, and its calls are read and moved, or waits and then finds the session gone (SessionMoved).
    # Read unlocked, the calls it committed meanwhile went with the session's delete.
    waiting = (models.Session.objects.select_for_update(of=("self",)).select_related("agent")
               .filter(agent__project=project, external_id=f"trace:{trace_id}").first())
    if waiting is None:
        return None
    calls = stored_calls(waiting)
    target = _session(project, external_id, agent_name or waiting.agent.name, calls)
    for call in sorted(calls, key=call_order):
        call_capture(session=target, call=call, replayed=replayed)
    waiting.delete()
    session_refresh(session=target)
    return target


# --- the chain in the database ----------------------------------------------------------------------------------


class StoredChain:
    """``memory.stitch.ChainIndex`` over a stored session: each question is one indexed query."""

    def __init__(self, session: models.Session) -> None:
        self.session = session
        self._size = session.message_count  # kept up to date by _place and _truncate within a batch
        self._last: str | None = None
        self._last_known = False

    def size(self) -> int:
        return self._size

    def last_key(self) -> str | None:
        if not self._last_known:
            self._last = (
                models.Message.objects.filter(session=self.session, seq=self._size - 1)
                .values_list("content_key", flat=True).first()
            ) if self._size else None
            self._last_known = True
        return self._last

    def positions(self, keys: Collection[str]) -> Mapping[str, Sequence[int]]:
        found: dict[str, list[int]] = defaultdict(list)
        rows = (models.Message.objects.filter(session=self.session, content_key__in=list(keys))
                .order_by("seq").values_list("content_key", "seq"))
        for key, seq in rows:
            found[key].append(seq)
        return found

    def appended(self, keys: Sequence[str]) -> None:
        if keys:
            self._size += len(keys)
            self._last, self._last_known = keys[-1], True


def call_capture(*, session: models.Session, call: CapturedCall, replayed: set[int] | None = None) -> bool:
    """Store one call in ``session``: place it (and replay the calls after it, if it belongs before them), or
    complete the call it is the other half of. False when it added nothing. ``replayed`` gets the session when
    calls already placed were placed again (what was recalled into them moves with their messages)."""
    row = models.LlmCall.objects.filter(session=session, trace_id=call.trace_id, span_id=call.span_id).first()
    if row is not None:
        before = call_from_row(row, reading.session_message_loader(session.pk)(sorted(set(_seqs_of(row)))))
        merged = before.merged(call)
        if (_keys(merged.inputs), _keys(merged.outputs)) == (_keys(before.inputs), _keys(before.outputs)):
            if row.placed:
                _restamp(session, row, before, merged)
            _write_metadata(row, merged)
            row.save()
            return False
        call = merged
    elif not call.has_content:
        row = models.LlmCall(session=session, trace_id=call.trace_id, span_id=call.span_id)
        _write_metadata(row, call)
        row.placed = False
        row.save()
        return True
    # Where the chain must be rolled back to: this call's old place, or that of the first call after it.
    order = call_order(call)
    starts = [row.chain_start] if row is not None and row.placed else []
    after = next((r for r in models.LlmCall.objects.filter(session=session, placed=True, order_ns__gte=order[0])
                  .order_by("order_ns", "trace_id", "span_id").only("order_ns", "trace_id", "span_id", "chain_start")
                  if (r.order_ns, r.trace_id, r.span_id) > order), None)
    if after is not None:
        starts.append(after.chain_start)
    replay = [call]
    if starts:
        start = min(starts)
        later = [r for r in models.LlmCall.objects.filter(session=session, placed=True, chain_start__gte=start)
                 if (r.trace_id, r.span_id) != (call.trace_id, call.span_id)]
        messages = reading.session_message_loader(session.pk)(sorted({s for r in later for s in _seqs_of(r)}))
        replay += [call_from_row(r, messages) for r in later]
        _truncate(session, start, [r.pk for r in later] + ([row.pk] if row is not None else []))
        if replayed is not None:
            replayed.add(session.pk)
    chain = StoredChain(session)
    for each in sorted(replay, key=call_order):
        _place(session, chain, each)
    return True


def _place(session: models.Session, chain: StoredChain, call: CapturedCall) -> None:
    placement = place_call(chain, call.inputs or [], call.outputs or [])
    new = [
        _stamped(m, call, i == len(placement.new) - 1 and placement.reply is not None)
        for i, m in enumerate(placement.new)
    ]
    keys = [message_key(m) for m in new]
    session_append(session=session, messages=new, content_keys=keys)
    chain.appended(keys)
    row = models.LlmCall.objects.filter(session=session, trace_id=call.trace_id, span_id=call.span_id).first() \
        or models.LlmCall(session=session, trace_id=call.trace_id, span_id=call.span_id)
    _write_metadata(row, call)
    row.placed = True
    row.sent = placement.sent
    row.sent_violations = sent_violations(call.inputs or [], placement.sent)
    row.reply_seq = placement.reply
    row.chain_start = placement.start
    row.save()


def session_append(*, session: models.Session, messages: Sequence[schema.Message],
                   content_keys: Sequence[str] | None = None) -> writing.StoredBatch:
    """Append messages at the end of a session as they arrive (live capture, the write API): the store's row
    writer stores them with their running totals, and the session's checker is fed only these. Call
    ``session_refresh`` once the batch is done to write the summaries."""
    start = session.message_count
    if not messages:
        return writing.StoredBatch(token_running=0)
    keys = list(content_keys) if content_keys is not None else [message_key(m) for m in messages]
    stored = writing.messages_append(session=session, messages=messages, start_seq=start, content_keys=keys)
    session.has_errors = session.has_errors or stored.has_errors
    _checker_feed(session, start, messages)
    session.message_count = start + len(messages)
    return stored


@contextmanager
def request_writer() -> Iterator[None]:
    """On SQLite, everything one OTLP request writes (its calls, then its memory) in one transaction, under one hold
    of the database's single writer: released and taken again between the two, a request went back to the end of the
    queue behind every other client's, and under a flood of requests its wait grew without bound (p95 2 s, max 9 s
    with 8 clients: bench/bench_memory_capture.py). PostgreSQL: nothing here; each part locks what it writes."""
    if connection.vendor == "sqlite":
        with _SQLITE_WRITER.held(), transaction.atomic():
            yield
    else:
        yield


@contextmanager
def session_writer() -> Iterator[None]:
    """One writer of live sessions at a time in this process on SQLite (see ``_SQLITE_WRITER``)."""
    if connection.vendor == "sqlite":
        with _SQLITE_WRITER.held():
            yield
    else:
        yield


def sent_violations(inputs: Sequence[schema.Message], sent: Sequence[int]) -> list[dict[str, object]]:
    """What a provider would refuse in the list a call was really sent (a list that was sent: a call left
    unanswered at its end is an error, not an agent mid-loop). Checked once, when the call is stored."""
    checker = ProtocolChecker(pending_severity="error")
    checker.feed_many(inputs)
    return [{**v.to_dict(), "seq": sent[v.index] if v.index < len(sent) else None} for v in checker.finish()]


def _stamped(message: schema.Message, call: CapturedCall, is_reply: bool) -> schema.Message:
    """A message a call brings is stamped with the call's start, its reply with its end. Always: no convention
    gives a message a time of its own, so a stamp it carries was put there by an earlier placement of the same
    call (read back from the store), when less was known of it."""
    when = _when(call, end=is_reply)
    if when is not None and message.created_at != when:
        return message.model_copy(update={"created_at": when})
    return message


def _restamp(session: models.Session, row: models.LlmCall, before: CapturedCall, after: CapturedCall) -> None:
    """The messages a call brought were stamped with the times known when it was placed: until its span comes,
    when its first log event was emitted. Stamped again with the span's start and end, as if it had come first."""
    brought = [s for s in row.sent if s >= row.chain_start]  # what it resent lies before where it started
    replies = [row.reply_seq] if row.reply_seq is not None else []
    for seqs, old, new in ((brought, _when(before), _when(after)),
                           (replies, _when(before, end=True), _when(after, end=True))):
        if seqs and new is not None and old != new:
            models.Message.objects.filter(session=session, seq__in=seqs).update(created_at=new)


def _truncate(session: models.Session, start: int, call_pks: Sequence[int]) -> None:
    models.Message.objects.filter(session=session, seq__gte=start).delete()
    writing.session_changed(session)
    models.LlmCall.objects.filter(pk__in=call_pks).update(placed=False, sent=[], reply_seq=None)
    session.message_count = start
    session.has_errors = models.Message.objects.filter(session=session, is_error=True).exists()
    _CHECKERS.forget(session)


def _seqs_of(row: models.LlmCall) -> list[int]:
    return [*row.sent, *([row.reply_seq] if row.reply_seq is not None else [])]


def call_from_row(row: models.LlmCall, messages: Mapping[int, schema.Message]) -> CapturedCall:
    """The call a stored row stands for, its messages read back from the chain (what it was sent, its reply)."""
    placed = row.placed
    # The row's start is the span's or, until the span comes, when the first log event was emitted: read back as
    # what it is, so that the span, when it comes, gives the call its start. ``order_ns`` has it to the ns.
    started_ns = ended_ns = None
    if row.started_at is not None and told_by_span(row.convention):
        started_ns = row.order_ns
        if row.duration is not None:
            ended_ns = _ns(row.started_at + row.duration)
    return CapturedCall(
        trace_id=row.trace_id, span_id=row.span_id, parent_span_id=row.parent_span_id or None,
        convention=row.convention, model=row.model or None, started_ns=started_ns, ended_ns=ended_ns,
        observed_ns=(row.order_ns or None) if started_ns is None else None,
        input_times=row.input_times, usage=dict(row.usage or {}),
        inputs=[messages[s] for s in row.sent] if placed else None,
        # No reply yet is None, not []: the other half of the call's log events may bring it.
        outputs=[messages[row.reply_seq]] if placed and row.reply_seq is not None else None,
        error=row.error or None,
    )


def stored_calls(session: models.Session) -> list[CapturedCall]:
    rows = list(models.LlmCall.objects.filter(session=session))
    messages = reading.session_message_loader(session.pk)(sorted({s for r in rows for s in _seqs_of(r)}))
    return [call_from_row(r, messages) for r in rows]


def _write_metadata(row: models.LlmCall, call: CapturedCall) -> None:
    row.parent_span_id = call.parent_span_id or ""
    row.convention = call.convention[:40]
    row.model = (call.model or "")[:200]
    row.started_at = _when(call)
    # The end as the reply's stamp has it (to the microsecond), so that a call read back stamps it the same.
    row.duration = (_at(call.ended_ns) - _at(call.started_ns)
                    if call.started_ns and call.ended_ns and call.ended_ns >= call.started_ns else None)
    row.usage = dict(call.usage)
    row.error = call.error or ""
    row.order_ns = call_order(call)[0]
    row.input_times = call.input_times


def _keys(messages: Sequence[schema.Message] | None) -> list[str] | None:
    return None if messages is None else [message_key(m) for m in messages]


def _when(call: CapturedCall, *, end: bool = False) -> dt.datetime | None:
    ns = (call.ended_ns if end else None) or call.started_ns or call.observed_ns
    return _at(ns) if ns else None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


def _at(ns: int) -> dt.datetime:
    """A time in ns since the epoch, to the microsecond as the database keeps it (integer arithmetic: a float of
    the seconds would round some ns differently from the same time read back)."""
    return _EPOCH + ns // 1000 * _MICROSECOND


def _ns(when: dt.datetime) -> int:
    return (when - _EPOCH) // _MICROSECOND * 1000


# --- summaries ------------------------------------------------------------------------------------------------


class _CheckerCache:
    """Protocol checkers of sessions receiving live, fed up to the session's stored count, so that a batch only
    checks what it appended. A miss (another process wrote, or a rollback) rebuilds from the stored messages."""

    def __init__(self, size: int = 256) -> None:
        # Keyed by the session's id and creation time: an id alone can come back (a test database rolled back).
        self._items: OrderedDict[tuple[int, object], tuple[int, ProtocolChecker]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, session: models.Session, count: int) -> ProtocolChecker | None:
        key = (session.pk, session.imported_at)
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] != count:
                return None
            self._items.move_to_end(key)
            return item[1]

    def put(self, session: models.Session, count: int, checker: ProtocolChecker) -> None:
        key = (session.pk, session.imported_at)
        with self._lock:
            self._items[key] = (count, checker)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def forget(self, session: models.Session) -> None:
        with self._lock:
            self._items.pop((session.pk, session.imported_at), None)


_CHECKERS = _CheckerCache()


def _checker(session: models.Session, count: int) -> ProtocolChecker:
    checker = _CHECKERS.get(session, count)
    if checker is None:
        checker = ProtocolChecker()
        rows = models.Message.objects.filter(session=session, seq__lt=count).order_by("seq")
        for row in rows.iterator(chunk_size=reading.SESSION_ROWS_PER_FETCH):
            checker.feed(mapping.message_to_schema(row))
    return checker


def _checker_feed(session: models.Session, start: int, messages: Sequence[schema.Message]) -> None:
    checker = _checker(session, start)
    checker.feed_many(messages)
    _CHECKERS.put(session, start + len(messages), checker)


def session_refresh(*, session: models.Session) -> models.Session:
    """Summaries after live messages arrived: count, tokens (from the last running total), errors, violations."""
    last = (models.Message.objects.filter(session=session).order_by("-seq")
            .values_list("seq", "token_running").first())
    count = last[0] + 1 if last else 0
    checker = _checker(session, count)
    _CHECKERS.put(session, count, checker)
    writing.session_finish(session=session, message_count=count, token_counts_sum=last[1] if last else 0,
                           has_errors=session.has_errors, violations=checker.finish())
    session.last_activity_at = timezone.now()
    session.save(update_fields=["last_activity_at"])
    return session
