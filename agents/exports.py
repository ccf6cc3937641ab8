"""Export of stored sessions to any format of DESIGN.md: one session, a filtered list, or a session as trimmed.

Messages are read page by page in seq order and handed to ``agents.memory.formats.write_conversations``
lazily, so that exporting a 1,000,000-message session keeps memory bounded. Every export leaves an
``ExportRecord`` (who, what, when, and what the target format could not hold). The pages, the command line
and the benchmark all call :func:`export_to` (a file object) or :func:`export_chunks` (an iterator of text
chunks, for ``StreamingHttpResponse``).
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from django.db.models import QuerySet, Sum
from django.utils import timezone

from agents import models, services
from agents.memory import formats
from agents.memory.schema import Conversation, Message
from agents.memory.trimming import StrategyError, resolve_params, trim

# Messages read from the database per query while exporting.
PAGE_SIZE = 2_000
ON_INVALID = ("skip", "stop")


class _Cancelled(Exception):
    """The response was closed before the export ended (the client went away)."""


class ExportFailed(Exception):
    """The export could not be made (unknown format or strategy, bad parameters, an invalid conversation with
    ``on_invalid="stop"``). ``str(e)`` says what and where."""


@dataclass
class ExportPlan:
    """What to export, validated: the sessions (already scoped to the user), the format, the trim."""

    sessions: QuerySet[models.Session]
    format: str
    scope: str
    filters: dict[str, Any] = field(default_factory=dict)
    strategy: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    on_invalid: str = "skip"

    @property
    def trimmed(self) -> bool:
        return bool(self.strategy)


@dataclass
class ExportResult:
    record: models.ExportRecord
    conversations: int
    messages: int
    dropped: list[str]
    skipped: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "export_id": self.record.pk,
            "format": self.record.format,
            "scope": self.record.scope,
            "strategy": self.record.strategy or None,
            "params": self.record.params or None,
            "conversations": self.conversations,
            "messages": self.messages,
            "dropped": self.dropped,
            "skipped": self.skipped,
        }


def export_plan(
    *,
    sessions: QuerySet[models.Session],
    format: str,
    scope: str,
    filters: Mapping[str, Any] | None = None,
    strategy: str | None = None,
    params: Mapping[str, Any] | None = None,
    on_invalid: str = "skip",
) -> ExportPlan:
    """Check the format, the strategy and its parameters before a byte is written. Raises ExportFailed."""
    if format not in formats.FORMATS:
        raise ExportFailed(f"format: unknown format {format!r}; valid: {', '.join(sorted(formats.FORMATS))}")
    if on_invalid not in ON_INVALID:
        raise ExportFailed(f"on_invalid: {on_invalid!r}; valid: skip, stop")
    resolved: dict[str, Any] = {}
    if strategy:
        try:
            resolved = resolve_params(strategy, params).model_dump(mode="json")
        except StrategyError as exc:
            raise ExportFailed(f"strategy: {exc}") from None
    elif params:
        raise ExportFailed("params: parameters were given without a strategy")
    return ExportPlan(
        sessions=sessions.order_by("id"),
        format=format,
        scope=scope,
        filters=dict(filters or {}),
        strategy=strategy or "",
        params=resolved,
        on_invalid=on_invalid,
    )


def invalid_sessions(plan: ExportPlan) -> list[str]:
    """For ``openai_jsonl``: the sessions whose protocol is broken, from the violations stored at import
    (untrimmed) or of the trimmed list; each as ``session <id> (<title>): <first violation>``."""
    out: list[str] = []
    if plan.trimmed:
        for session in plan.sessions.iterator(chunk_size=200):
            result = _trim_session(session, plan)
            errors = [v for v in result.violations if v.severity == "error"]
            if errors:
                out.append(f"session {session.pk} ({_name(session)}): {errors[0].message}")
        return out
    for session in plan.sessions.filter(violation_count__gt=0).iterator(chunk_size=200):
        first = next((v for v in session.violations if v.get("severity", "error") == "error"), None)
        what = first["message"] if first else f"{session.violation_count} violation(s)"
        out.append(f"session {session.pk} ({_name(session)}): {what}")
    return out


def export_to(
    plan: ExportPlan,
    out: IO[str],
    *,
    user: Any = None,
    interface: str = "command",
    on_messages: Callable[[int], None] | None = None,
) -> ExportResult:
    """Write the plan's conversations to ``out`` and record the export."""
    record = _record_start(plan, user=user, interface=interface)
    counter = services.Progress(on_messages)
    try:
        report = _write(plan, out, counter)
    except formats.FormatError as exc:
        record.delete()
        raise ExportFailed(str(exc)) from None
    return _record_finish(record, report, counter.count)


def export_chunks(
    plan: ExportPlan, *, user: Any = None, interface: str = "web", queue_size: int = 4
) -> Iterator[str]:
    """The export as text chunks, for a streaming response, with bounded memory.

    ``write_conversations`` pushes text into a file object, and a response pulls chunks: the writer runs in a
    worker thread and hands chunks over a bounded queue. The database is read by the worker (it opens its own
    connection) only when the caller's thread is not in a transaction; inside one (tests, atomic requests),
    rows are read first in this thread so that the worker sees what the transaction sees.
    """
    record = _record_start(plan, user=user, interface=interface)
    chunks: queue.Queue[str | None | BaseException] = queue.Queue(maxsize=queue_size)
    cancelled = threading.Event()
    result: dict[str, Any] = {}

    class _QueueWriter:
        """A text file object whose writes go to the queue in pieces of at least 64 KiB."""

        def __init__(self) -> None:
            self.parts: list[str] = []
            self.size = 0

        def write(self, text: str) -> int:
            self.parts.append(text)
            self.size += len(text)
            if self.size >= 65_536:
                self.flush()
            return len(text)

        def flush(self) -> None:
            if cancelled.is_set():
                raise _Cancelled
            if self.parts:
                chunks.put("".join(self.parts))
                self.parts, self.size = [], 0

    def work() -> None:
        from django.db import connection

        try:
            writer = _QueueWriter()
            counter = services.Progress(None)
            result["report"] = _write(plan, writer, counter)
            result["messages"] = counter.count
            writer.flush()
            chunks.put(None)
        except _Cancelled:
            chunks.put(None)
        except BaseException as exc:  # handed to the response thread, which raises it there
            chunks.put(exc)
        finally:
            connection.close()

    from django.db import connection as main_connection

    if main_connection.in_atomic_block:
        # A worker thread would not see this transaction's rows: write in this thread into a spooled file.
        import tempfile

        with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024, mode="w+", encoding="utf-8") as spool:
            counter = services.Progress(None)
            try:
                report = _write(plan, spool, counter)
            except formats.FormatError as exc:
                record.delete()
                raise ExportFailed(str(exc)) from None
            _record_finish(record, report, counter.count)
            spool.seek(0)
            while piece := spool.read(65_536):
                yield piece
        return

    thread = threading.Thread(target=work, name=f"export-{record.pk}", daemon=True)
    thread.start()
    try:
        while True:
            item = chunks.get()
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        # A client that goes away closes the generator: the worker stops at its next write; drain the queue so
        # that a write blocked on it returns.
        cancelled.set()
        while thread.is_alive():
            try:
                chunks.get(timeout=0.1)
            except queue.Empty:
                pass
        thread.join()
    if "report" in result:
        _record_finish(record, result["report"], result["messages"])


def export_filename(plan: ExportPlan, *, single: models.Session | None = None) -> str:
    spec = formats.FORMATS[plan.format]
    ext = (getattr(spec, "extension", "") or ".json").lstrip(".")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    base = f"session-{single.pk}" if single is not None else "sessions"
    if plan.strategy:
        base += f"-{plan.strategy}"
    return f"memoryviz-{base}-{plan.format}-{stamp}.{ext}"


# --- conversations from rows --------------------------------------------------------------------------------


def _session_meta(session: models.Session) -> Conversation:
    """The session's metadata as a Conversation without messages (what every format writes around them)."""
    return Conversation(
        external_id=session.external_id or None,
        title=session.title or None,
        source_format=session.source_format or None,
        started_at=session.started_at,
        agent=session.agent.slug,
        project=session.agent.project.slug,
        tools=session.tools,
        metadata=dict(session.metadata or {}),
    )


class SessionMessages(Sequence[Message]):
    """A stored session's messages as a read-only sequence that reads rows page by page as it is iterated.

    Writers take a ``Conversation`` and iterate its ``messages``; handing them this instead of a list keeps a
    million-message export to one page of rows in memory. ``len`` comes from the stored summary.
    """

    def __init__(self, session: models.Session, counter: services.Progress | None = None) -> None:
        self.session = session
        self.counter = counter
        self._len = session.message_count

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Message]:
        for rows in services.session_row_batches(self.session, size=PAGE_SIZE):
            for row in rows:
                yield services.message_to_schema(row)
            if self.counter is not None:
                self.counter.add(len(rows))

    def __getitem__(self, index: Any) -> Any:
        rows = models.Message.objects.filter(session=self.session).order_by("seq")
        if isinstance(index, slice):
            return list(self)[index]  # not used by the writers; correct, if not frugal
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return services.message_to_schema(rows[index])


def _trim_session(session: models.Session, plan: ExportPlan) -> Any:
    messages, counts = services.session_messages_with_counts(session)
    # The stored counts were made by the session's counter: the strategy uses them and never recounts.
    return trim(messages, plan.strategy, plan.params, counter=session.token_counter, token_counts=counts)


def _conversations(plan: ExportPlan, counter: services.Progress) -> Iterator[Any]:
    sessions = plan.sessions.select_related("agent", "agent__project")
    for session in sessions.iterator(chunk_size=100):
        meta = _session_meta(session)
        if plan.trimmed:
            result = _trim_session(session, plan)
            meta.metadata = meta.metadata | {
                "trimmed": {"strategy": result.strategy, "params": result.params, "counter": result.counter,
                            "session_id": session.pk, "tokens_before": result.tokens_before,
                            "tokens_after": result.tokens_after}
            }
            # A trimmed export is a different conversation: re-imported, it must not merge into the original.
            if meta.external_id:
                meta.external_id = f"{meta.external_id}:trimmed:{plan.strategy}"[:255]
            meta.messages = list(result.messages)
            counter.add(len(meta.messages))
            yield meta
        else:
            # model_construct: the rows were validated when stored, and a lazy sequence is not a list.
            yield Conversation.model_construct(
                **{name: getattr(meta, name) for name in Conversation.model_fields if name != "messages"},
                messages=SessionMessages(session, counter),
            )


def _write(plan: ExportPlan, out: IO[str], counter: services.Progress) -> Any:
    return formats.write_conversations(_conversations(plan, counter), plan.format, out, on_invalid=plan.on_invalid)


# --- the record ---------------------------------------------------------------------------------------------


def _record_start(plan: ExportPlan, *, user: Any, interface: str) -> models.ExportRecord:
    summary = plan.sessions.aggregate(n=Sum("message_count"))
    projects = list(plan.sessions.order_by().values_list("agent__project", flat=True).distinct()[:2])
    return models.ExportRecord.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        project_id=projects[0] if len(projects) == 1 else None,
        format=plan.format,
        scope=plan.scope[:500],
        filters=plan.filters,
        session_count=plan.sessions.count(),
        message_count=summary["n"] or 0,
        strategy=plan.strategy,
        params=plan.params,
        interface=interface,
    )


def _record_finish(record: models.ExportRecord, report: Any, messages: int) -> ExportResult:
    dropped = [str(d) for d in getattr(report, "dropped", [])]
    skipped = [_skipped_line(s) for s in getattr(report, "skipped", [])]
    record.dropped = dropped
    record.skipped = skipped
    # The counts at the start were the plan's; what was written is what the record keeps (trimmed lists are
    # shorter, skipped conversations are left out).
    record.session_count = getattr(report, "conversations", record.session_count)
    record.message_count = getattr(report, "messages", record.message_count)
    record.save(update_fields=["dropped", "skipped", "session_count", "message_count"])
    return ExportResult(
        record=record,
        conversations=getattr(report, "conversations", 0),
        messages=getattr(report, "messages", messages),
        dropped=dropped,
        skipped=skipped,
    )


def _skipped_line(item: Any) -> str:
    if hasattr(item, "reason"):
        ident = f" ({item.external_id})" if getattr(item, "external_id", None) else ""
        return f"conversation {item.index + 1}{ident}: {item.reason}"
    return str(item)


def _name(session: models.Session) -> str:
    return session.title or session.external_id


def recent_exports(user: Any, limit: int = 50) -> QuerySet[models.ExportRecord]:
    """The user's own exports, newest first (the export log page)."""
    return models.ExportRecord.objects.filter(user=user).select_related("project")[:limit]
