"""Export of stored sessions to any format of DESIGN.md: one session, a filtered list, or a session as trimmed; and of
one memory store in a memory format its library loads (``store_export``).

Messages are read a batch at a time in seq order and handed lazily to the format's writer, a generator of
text (``agents.memory.formats.write_chunks``), so that exporting a 1,000,000-message session keeps memory bounded.
Every export leaves an ``ExportRecord`` (who, what, when, and what the target format could not hold). The pages
stream :func:`export_chunks` (for ``StreamingHttpResponse``); the command line and the benchmark call
:func:`export_to`, which writes the same chunks into a file object.
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from django.db.models import QuerySet, Sum
from django.utils import timezone

from agents import access, models
from agents.lab import trimming as lab_trimming
from agents.ledger import exporting
from agents.ledger import reading as ledger_reading
from agents.memory import formats
from agents.memory.schema import Conversation, Message
from agents.memory.trimming import StrategySpec, TrimResult
from agents.review import annotating
from agents.store import reading, writing

# Messages read from the database per query while exporting.
PAGE_SIZE = 2_000
# Characters per chunk of a streamed export: few writes, bounded memory.
CHUNK_CHARS = 65_536
ON_INVALID = ("skip", "stop")


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
    spec: StrategySpec | None = None  # export each session as trimmed by this
    on_invalid: str = "skip"
    counter: str | None = None  # what the trim counts with (a preset's); None: each session's own, as stored

    @property
    def trimmed(self) -> bool:
        return self.spec is not None

    @property
    def strategy(self) -> str:
        return self.spec.name if self.spec is not None else ""

    @property
    def params(self) -> dict[str, Any]:
        return self.spec.params.model_dump(mode="json") if self.spec is not None else {}


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
    spec: StrategySpec | None = None,
    on_invalid: str = "skip",
    counter: str | None = None,
) -> ExportPlan:
    """Check the format and what to do with invalid conversations before a byte is written (the strategy and
    its parameters come validated, once for every session; ``counter``: what the trim counts with, a preset's,
    ``presets.trim_counter``). Raises ExportFailed."""
    if format not in formats.FORMATS:
        raise ExportFailed(f"format: unknown format {format!r}; valid: {', '.join(sorted(formats.FORMATS))}")
    if on_invalid not in ON_INVALID:
        raise ExportFailed(f"on_invalid: {on_invalid!r}; valid: skip, stop")
    return ExportPlan(
        sessions=sessions.order_by("id"),
        format=format,
        scope=scope,
        filters=dict(filters or {}),
        spec=spec,
        on_invalid=on_invalid,
        counter=counter if spec is not None else None,
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


def export_chunks(
    plan: ExportPlan,
    *,
    user: Any = None,
    interface: str = "web",
    on_messages: Callable[[int], None] | None = None,
) -> Generator[str, None, ExportResult]:
    """The export as text chunks of about ``CHUNK_CHARS``, produced as they are consumed (a streaming response
    pulls them; ``export_to`` writes them into a file), with bounded memory; records the export and returns (as
    the generator's value) its result. A consumer that stops early (a client that goes away) closes the generator:
    no more rows are read."""
    record = _record_start(plan, user=user, interface=interface)
    progress = writing.Progress(on_messages)
    report = formats.WriteReport(format=plan.format)
    # Native carries the memory layers that go with the sessions (a trimmed view is another conversation, which
    # no recall or snapshot points into); every other format says what it leaves out of them.
    memory = exporting.memory_of_sessions(plan.sessions) if not plan.trimmed else None
    pieces = formats.write_chunks(_conversations(plan, progress), plan.format, report, on_invalid=plan.on_invalid,
                                  memory=memory)
    try:
        yield from _joined(pieces)
    except formats.FormatError as exc:
        record.delete()
        raise ExportFailed(str(exc)) from None
    return _record_finish(record, report)


def export_to(
    plan: ExportPlan,
    out: IO[str],
    *,
    user: Any = None,
    interface: str = "command",
    on_messages: Callable[[int], None] | None = None,
) -> ExportResult:
    """Write the plan's conversations to ``out`` and record the export."""
    chunks = export_chunks(plan, user=user, interface=interface, on_messages=on_messages)
    while True:
        try:
            chunk = next(chunks)
        except StopIteration as done:
            return done.value
        out.write(chunk)


def _joined(pieces: Iterable[str]) -> Iterator[str]:
    """The writer's small pieces joined into chunks of at least CHUNK_CHARS (one per response write)."""
    parts: list[str] = []
    size = 0
    for piece in pieces:
        parts.append(piece)
        size += len(piece)
        if size >= CHUNK_CHARS:
            yield "".join(parts)
            parts, size = [], 0
    if parts:
        yield "".join(parts)


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
        # Native writes them after the messages; every other format reports them as dropped.
        annotations=annotating.annotations_export(session),
    )


class SessionMessages:
    """A stored session's messages, read a batch of rows at a time as they are iterated (``len`` from the
    stored summary). Writers take a ``Conversation`` and iterate its ``messages``; handing them this instead of
    a list keeps a million-message export to one batch of rows in memory."""

    def __init__(self, session: models.Session, progress: writing.Progress | None = None) -> None:
        self.session = session
        self.progress = progress

    def __len__(self) -> int:
        return self.session.message_count

    def __iter__(self) -> Iterator[Message]:
        for messages, _counts in reading.session_message_batches(self.session, size=PAGE_SIZE):
            yield from messages
            if self.progress is not None:
                self.progress.add(len(messages))

    def json_dicts(self) -> Iterator[dict[str, Any]]:
        """The messages as ``model_dump(mode="json")`` gives them, straight from the rows (the native writer asks
        for these: ``formats.native.write``)."""
        for batch in reading.session_message_json_batches(self.session, size=PAGE_SIZE):
            yield from batch
            if self.progress is not None:
                self.progress.add(len(batch))


def _trim_session(session: models.Session, plan: ExportPlan) -> TrimResult:
    assert plan.spec is not None
    return lab_trimming.session_trim(session=session, specs=[plan.spec], counter=plan.counter).results[0]


def _conversations(plan: ExportPlan, counter: writing.Progress) -> Iterator[Any]:
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
            # The annotations point at the stored messages, which a trimmed list renumbers or leaves out.
            meta.annotations = []
            meta.messages = list(result.messages)
            counter.add(len(meta.messages))
            yield meta
        else:
            # model_construct: the rows were validated when stored, and a lazy sequence is not a list.
            yield Conversation.model_construct(
                **{name: getattr(meta, name) for name in Conversation.model_fields if name != "messages"},
                messages=SessionMessages(session, counter),
            )


# --- the record ---------------------------------------------------------------------------------------------


def _record_start(plan: ExportPlan, *, user: Any, interface: str) -> models.ExportRecord:
    summary = plan.sessions.aggregate(n=Sum("message_count"))
    projects = list(plan.sessions.order_by().values_list("agent__project", flat=True).distinct()[:2])
    return models.ExportRecord.objects.create(
        user=access.recorded_user(user),
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


def _record_finish(record: models.ExportRecord, report: formats.WriteReport) -> ExportResult:
    record.dropped = report.dropped
    record.skipped = [_skipped_line(s) for s in report.skipped]
    # The counts at the start were the plan's; what was written is what the record keeps (trimmed lists are
    # shorter, skipped conversations are left out).
    record.session_count, record.message_count = report.conversations, report.messages
    record.save(update_fields=["dropped", "skipped", "session_count", "message_count"])
    return ExportResult(record=record, conversations=report.conversations, messages=report.messages,
                        dropped=record.dropped, skipped=record.skipped)


def _skipped_line(item: formats.SkippedConversation) -> str:
    ident = f" ({item.external_id})" if item.external_id else ""
    return f"conversation {item.index + 1}{ident}: {item.reason}"


def _name(session: models.Session) -> str:
    return session.title or session.external_id


# --- one memory store in a format its library loads -------------------------------------------------------------


@dataclass
class StoreExport:
    """One store written as a file (``text``) with its name and media type, and the export's record, which keeps
    what the format could not hold (``dropped``)."""

    text: str
    filename: str
    media_type: str
    record: models.ExportRecord

    @property
    def dropped(self) -> list[str]:
        return list(self.record.dropped)


def store_export(*, store: models.MemoryStore, format: str, user: Any = None,
                 interface: str = "web") -> StoreExport:
    """``store`` with every record and version in ``format`` (``formats.MEMORY_WRITE_FORMATS``: mem0, AutoGen's
    ListMemory, a LangGraph store, native), recorded like a session export. ExportFailed names the field."""
    if format not in formats.MEMORY_WRITE_FORMATS:
        raise ExportFailed(f"format: {format!r} is not a memory format memoryviz writes; valid: "
                           f"{', '.join(formats.MEMORY_WRITE_FORMATS)}")
    report = formats.WriteReport(format=format)
    try:
        text = formats.write_memory(exporting.memory_of_store(store), format, report)
    except formats.FormatError as exc:
        raise ExportFailed(str(exc)) from None
    record = models.ExportRecord.objects.create(
        user=access.recorded_user(user), project_id=store.project_id,
        format=format, scope=f"memory store {store.pk} ({store.name})"[:500], filters={"store": store.pk},
        dropped=report.dropped, interface=interface,
    )
    spec = formats.ALL_FORMATS[format]
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return StoreExport(text=text, filename=f"memoryviz-store-{store.pk}-{format}-{stamp}.{spec.extension.lstrip('.')}",
                       media_type=f"{spec.media_type}; charset=utf-8", record=record)


def store_export_for_user(*, user: Any, store_id: int, format: str, interface: str = "web") -> StoreExport:
    """``store_export`` of a store of the user's projects (404 for any other): any member may export it."""
    return store_export(store=ledger_reading.store_for_user(user, store_id), format=format, user=user,
                        interface=interface)


def recent_exports(user: Any, limit: int = 50) -> QuerySet[models.ExportRecord]:
    """The user's own exports, newest first (the export log page)."""
    return models.ExportRecord.objects.filter(user=user).select_related("project")[:limit]
