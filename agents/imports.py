"""Import of agent histories: files in any format of DESIGN.md into Session/Message rows.

One file is one transaction: it is imported whole or not at all. Messages are streamed from the file
(``agents.memory.formats.open_stream``) into batched inserts, counted and protocol-checked batch by
batch, so that a 1,000,000-message conversation is imported with bounded memory. The pages, the command
line and the benchmark all call :func:`import_file` (or :func:`preview_file` to see what would happen).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.db import DatabaseError, transaction
from django.utils.text import slugify

from agents import models, services
from agents.memory import formats
from agents.memory.chain import ProtocolChecker
from agents.memory.schema import Conversation, Message
from agents.memory.tokens import DEFAULT_COUNTER, get_counter

BATCH_SIZE = 2_000
# Where neither the caller nor the file names a project, sessions go to this one (created when missing).
DEFAULT_PROJECT_SLUG = "imported"
DEFAULT_PROJECT_NAME = "Imported"
# Column widths of the Message/Session tables: longer values are refused with the place, not cut silently.
_MAX_CHARS = {"name": 255, "tool_call_id": 255, "external_id": 255}

Source = str | os.PathLike[str] | IO[bytes]


class ImportFailed(Exception):
    """The file could not be imported and nothing of it was saved. ``str(e)`` is ``place: what is wrong``."""


@dataclass
class SessionOutcome:
    """What happened to one conversation of the file."""

    index: int
    external_id: str
    title: str
    agent: str
    status: str  # "imported", "updated" (new messages appended), "already imported"
    session_id: int | None = None
    messages: int = 0  # messages read from the file
    added: int = 0  # messages saved
    skipped: int = 0  # messages not saved because their id is already stored (or repeated in the file)
    violations: list[dict[str, Any]] = field(default_factory=list)
    naive_times: int = 0  # timestamps without a time zone, read as UTC

    @property
    def error_count(self) -> int:
        return sum(1 for v in self.violations if v.get("severity", "error") == "error")

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "session_id": self.session_id,
            "external_id": self.external_id,
            "title": self.title,
            "agent": self.agent,
            "status": self.status,
            "messages": self.messages,
            "added": self.added,
            "skipped": self.skipped,
            "violation_count": self.error_count,
            "violations": self.violations,
        }


@dataclass
class ImportReport:
    """The report of one file: sessions, messages, violations found, warnings, what was dropped."""

    file: str
    format: str = ""
    project: str = ""
    saved: bool = False  # False for a preview
    sessions: list[SessionOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def sessions_imported(self) -> int:
        return sum(1 for s in self.sessions if s.status != "already imported")

    @property
    def messages_imported(self) -> int:
        return sum(s.added for s in self.sessions)

    @property
    def messages_read(self) -> int:
        return sum(s.messages for s in self.sessions)

    @property
    def violation_count(self) -> int:
        return sum(s.error_count for s in self.sessions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "format": self.format,
            "project": self.project,
            "saved": self.saved,
            "sessions_read": len(self.sessions),
            "sessions_imported": self.sessions_imported,
            "messages_read": self.messages_read,
            "messages_imported": self.messages_imported,
            "violation_count": self.violation_count,
            "sessions": [s.to_dict() for s in self.sessions],
            "warnings": self.warnings,
            "dropped": self.dropped,
        }


ProgressCallback = Callable[[int], None]


def import_file(
    source: Source,
    *,
    project: models.Project | str | None = None,
    agent: models.Agent | str | None = None,
    format: str | None = None,
    counter: str = DEFAULT_COUNTER,
    label: str | None = None,
    on_messages: ProgressCallback | None = None,
    name: str | None = None,
) -> ImportReport:
    """Import every conversation of one file, in one transaction.

    ``project``: a Project, a slug (found or created), or None: the project the file names (native carries it),
    else ``imported``. ``agent``: an Agent, a name or slug in that project (found or created), or None: the agent
    the file names, else an agent named after the source format (``openai``, ``autogen``...).
    ``on_messages(n)`` is called after each batch with the number of messages read so far (progress bars).
    ``name``: the file's own name when ``source`` is a copy stored under another (an upload): detection reads
    its extension (``.jsonl``) as the command line reads the path's.
    Raises :class:`ImportFailed` naming the place; then nothing of the file is saved.
    """
    get_counter(counter)  # an unknown counter is refused before anything is read
    report = ImportReport(file=label or _source_label(source))
    try:
        with transaction.atomic():
            _import_streams(source, report, project=project, agent=agent, format=format, counter=counter,
                            on_messages=on_messages, name=name)
    except ImportFailed:
        raise
    except formats.FormatError as exc:
        raise ImportFailed(str(exc)) from None
    except DatabaseError as exc:
        raise ImportFailed(f"database: {_first_line(exc)}") from None
    except RecursionError:
        raise ImportFailed("input: nested too deeply to read") from None
    except (ValueError, UnicodeError) as exc:
        # Readers raise FormatError; anything else is still bad input, said in one line, never a traceback.
        raise ImportFailed(_first_line(exc) or type(exc).__name__) from None
    report.saved = True
    return report


def preview_file(
    source: Source,
    *,
    project: models.Project | None = None,
    agent: models.Agent | str | None = None,
    format: str | None = None,
    label: str | None = None,
    name: str | None = None,
) -> ImportReport:
    """What :func:`import_file` would do, without saving: detected format, sessions, messages, violations,
    sessions already imported and messages already stored. Reads the file streaming, like the import."""
    report = ImportReport(file=label or _source_label(source))
    try:
        handle, close, file_format = _open(source, format)
        streams = formats.open_stream(handle, format, name=name)
        for index, stream in enumerate(_closing(streams, handle if close else None)):
            conv = _stream_meta(stream)
            report.format = report.format or (file_format or conv.source_format or "")
            agent_row = _existing_agent(project, agent, conv)
            outcome = SessionOutcome(
                index=index,
                external_id=conv.external_id or "",
                title=conv.title or "",
                agent=_agent_label(agent_row, agent, conv),
                status="imported",
            )
            known_ids: set[str] = set()
            existing = None
            if agent_row is not None and conv.external_id:
                existing = models.Session.objects.filter(agent=agent_row, external_id=conv.external_id).first()
            if existing is not None:
                known_ids = set(
                    models.Message.objects.filter(session=existing).exclude(external_id="").values_list(
                        "external_id", flat=True
                    )
                )
            checker = ProtocolChecker()
            hasher = hashlib.sha256()
            seen: set[str] = set()
            new_with_id = 0
            for pos, message in enumerate(_stream_messages(stream)):
                _check_lengths(message, index, pos)
                checker.feed(message)
                if message.created_at is not None and message.created_at.tzinfo is None:
                    outcome.naive_times += 1
                if report.format != "native" and not outcome.title and message.role == "user" and message.text.strip():
                    outcome.title = _title_from(message.text)
                hasher.update(message.model_dump_json().encode())
                hasher.update(b"\n")
                outcome.messages += 1
                mid = message.external_id
                if mid and (mid in known_ids or mid in seen):
                    outcome.skipped += 1
                    continue
                if mid:
                    seen.add(mid)
                    new_with_id += 1
            outcome.violations = [v.to_dict() | {"seq": v.index} for v in checker.finish()]
            if existing is not None:
                outcome.session_id = existing.pk
                outcome.title = existing.title or outcome.title
                outcome.status = "updated" if new_with_id else "already imported"
                outcome.added = new_with_id
                outcome.skipped = outcome.messages - new_with_id
            else:
                if not conv.external_id:
                    outcome.external_id = "sha256:" + hasher.hexdigest()
                    if agent_row is not None:
                        dup = models.Session.objects.filter(agent=agent_row, external_id=outcome.external_id).first()
                        if dup is not None:
                            outcome.status, outcome.session_id = "already imported", dup.pk
                            outcome.title = dup.title or outcome.title
                            outcome.skipped, outcome.added = outcome.messages, 0
                            report.sessions.append(outcome)
                            continue
                outcome.added = outcome.messages - outcome.skipped
            report.sessions.append(outcome)
        _note_skips(report)
    except formats.FormatError as exc:
        raise ImportFailed(str(exc)) from None
    except ImportFailed:
        raise
    except RecursionError:
        raise ImportFailed("input: nested too deeply to read") from None
    except (ValueError, UnicodeError) as exc:
        raise ImportFailed(_first_line(exc) or type(exc).__name__) from None
    if not report.sessions:
        raise ImportFailed(f"{report.file}: no conversation found")
    return report


# --- the import itself ------------------------------------------------------------------------------------


def _import_streams(
    source: Source,
    report: ImportReport,
    *,
    project: models.Project | str | None,
    agent: models.Agent | str | None,
    format: str | None,
    counter: str,
    on_messages: ProgressCallback | None,
    name: str | None = None,
) -> None:
    progress = services.Progress(on_messages)
    projects: dict[str | None, models.Project] = {}
    handle, close, file_format = _open(source, format)
    streams = formats.open_stream(handle, format, name=name)
    for index, stream in enumerate(_closing(streams, handle if close else None)):
        conv = _stream_meta(stream)
        report.format = report.format or (file_format or conv.source_format or "")
        key = conv.project if project is None else None
        if key not in projects:
            projects[key] = _resolve_project(project, conv)
        project_row = projects[key]
        report.project = report.project or project_row.slug
        agent_row = _resolve_agent(project_row, agent, conv, report.format)
        outcome = _import_conversation(index, conv, _stream_messages(stream), agent_row, counter, progress,
                                       derive_title=report.format != "native")
        report.sessions.append(outcome)
    if not report.sessions:
        raise ImportFailed(f"{report.file}: no conversation found")
    _note_skips(report)


def _import_conversation(
    index: int,
    conv: Conversation,
    messages: Iterator[Message],
    agent: models.Agent,
    counter: str,
    progress: services.Progress,
    *,
    derive_title: bool = True,
) -> SessionOutcome:
    outcome = SessionOutcome(
        index=index, external_id=conv.external_id or "", title=conv.title or "", agent=agent.slug, status="imported"
    )
    if conv.external_id and len(conv.external_id) > 255:
        raise ImportFailed(f"conversation {index + 1}: external_id: {len(conv.external_id)} characters, "
                           "longer than the 255 that can be stored")
    if conv.source_format and len(conv.source_format) > 40:
        raise ImportFailed(f"conversation {index + 1}: source_format: {conv.source_format[:50]!r} is not a format name")
    if conv.external_id:
        existing = models.Session.objects.filter(agent=agent, external_id=conv.external_id).first()
        if existing is not None:
            return _append_to_existing(outcome, existing, messages, counter, progress)
    if conv.started_at is not None and conv.started_at.tzinfo is None:
        conv = conv.model_copy(update={"started_at": conv.started_at.replace(tzinfo=dt.UTC)})
    # A savepoint, so that a session found to be a duplicate once its content hash is known is undone whole.
    sid = transaction.savepoint()
    session = services.session_create(
        agent=agent,
        conversation=conv,
        counter=counter,
        # A provisional id, unique by construction, until the content hash is known at the end of the stream.
        external_id=conv.external_id or f"pending:{uuid.uuid4().hex}",
    )
    hasher = None if conv.external_id else hashlib.sha256()
    writer = _SessionWriter(session, counter, outcome, progress, hasher=hasher)
    # Native is lossless: a session stored without a title comes back without one.
    writer.derive_title = derive_title
    writer.write_all(messages, index)
    if hasher is not None:
        content_id = "sha256:" + hasher.hexdigest()
        duplicate = models.Session.objects.filter(agent=agent, external_id=content_id).first()
        if duplicate is not None:
            # The same messages are already stored for this agent: undo this session, keep the other.
            transaction.savepoint_rollback(sid)
            outcome.status, outcome.session_id, outcome.external_id = "already imported", duplicate.pk, content_id
            # The report names the stored session as the session list does (the file may give no title).
            outcome.title = duplicate.title or outcome.title
            outcome.skipped, outcome.added, outcome.violations = outcome.messages, 0, []
            return outcome
        session.external_id = content_id
        session.save(update_fields=["external_id"])
        outcome.external_id = content_id
    transaction.savepoint_commit(sid)
    writer.finish()
    outcome.session_id = session.pk
    return outcome


def _append_to_existing(
    outcome: SessionOutcome,
    session: models.Session,
    messages: Iterator[Message],
    counter: str,
    progress: services.Progress,
) -> SessionOutcome:
    """Add to a session already stored the messages whose id it does not have (as AgentScope's memory does)."""
    outcome.session_id = session.pk
    outcome.title = session.title or outcome.title
    known = set(
        models.Message.objects.filter(session=session).exclude(external_id="").values_list("external_id", flat=True)
    )
    # The last stored message gives both where new messages go and the running total they continue.
    last = models.Message.objects.filter(session=session).order_by("-seq").values_list("seq", "token_running").first()
    writer = _SessionWriter(
        session,
        session.token_counter or counter,
        outcome,
        progress,
        known_ids=known,
        seq_start=(last[0] + 1) if last is not None else 0,
        tokens_before=last[1] if last is not None else 0,
        # Messages with no id cannot be matched to stored ones, so a re-import never adds them again.
        skip_without_id=True,
    )
    writer.write_all(messages, outcome.index, check=False)
    if outcome.added == 0:
        outcome.status = "already imported"
        return outcome
    outcome.status = "updated"
    writer.finish(recheck=True)
    return outcome


class _SessionWriter:
    """Streams schema Messages into one session's rows in batches, keeping the running summaries."""

    def __init__(
        self,
        session: models.Session,
        counter: str,
        outcome: SessionOutcome,
        progress: services.Progress,
        *,
        hasher: Any = None,
        known_ids: set[str] | None = None,
        seq_start: int = 0,
        tokens_before: int = 0,
        skip_without_id: bool = False,
    ) -> None:
        self.session = session
        self.counter = counter
        self.outcome = outcome
        self.progress = progress
        self.hasher = hasher
        # Message ids already stored in the session or seen earlier in the file: such a message is not added
        # twice (AgentScope's memory does the same). Only messages that carry an id cost memory here.
        self.known_ids = known_ids if known_ids is not None else set()
        self.seq = seq_start
        self.skip_without_id = skip_without_id
        self.checker = ProtocolChecker()
        self.tokens = 0  # the tokens of the messages this writer stored
        # The session's running total through the last stored message (Message.token_running), carried from
        # batch to batch; it starts at the stored total when appending to an existing session.
        self.running = tokens_before
        self.has_errors = False
        self.first_created_at: Any = None
        self.first_question = ""  # the title of a session whose file gives none
        self.derive_title = False

    def write_all(self, messages: Iterable[Message], conv_index: int, check: bool = True) -> None:
        batch: list[Message] = []
        for pos, message in enumerate(messages):
            _check_lengths(message, conv_index, pos)
            self.outcome.messages += 1
            if self.hasher is not None:
                self.hasher.update(message.model_dump_json().encode())
                self.hasher.update(b"\n")
            mid = message.external_id
            if (mid and mid in self.known_ids) or (self.skip_without_id and not mid):
                self.outcome.skipped += 1
                continue
            if mid:
                self.known_ids.add(mid)
            if message.created_at is not None and message.created_at.tzinfo is None:
                # Formats without a time zone (AgentScope) are read as UTC, explicitly: the database keeps
                # aware datetimes, and Django would warn once per distinct naive value.
                message = message.model_copy(update={"created_at": message.created_at.replace(tzinfo=dt.UTC)})
                self.outcome.naive_times += 1
            if check:
                self.checker.feed(message)
            if not self.first_question and message.role == "user" and message.text.strip():
                self.first_question = _title_from(message.text)
            if self.first_created_at is None and message.created_at is not None:
                self.first_created_at = message.created_at
            batch.append(message)
            if len(batch) >= BATCH_SIZE:
                self._flush(batch)
                batch = []
        if batch:
            self._flush(batch)

    def _flush(self, batch: list[Message]) -> None:
        try:
            stored = services.messages_append(session=self.session, messages=batch, start_seq=self.seq,
                                              counter=self.counter, tokens_before=self.running)
        except ValueError as exc:  # a value the database cannot store, named by its seq
            raise ImportFailed(f"conversation {self.outcome.index + 1}: {exc}") from None
        self.seq += stored.count
        self.tokens += stored.tokens
        self.running = stored.token_running
        self.has_errors = self.has_errors or stored.has_errors
        self.outcome.added += stored.count
        self.progress.add(stored.count)

    def finish(self, recheck: bool = False) -> None:
        session = self.session
        if recheck:
            # Messages were appended: the protocol is checked again over the whole stored session, in order
            # (seqs are contiguous from 0, so a violation's index is its seq).
            checker = ProtocolChecker()
            tokens = 0
            has_errors = False
            count = 0
            for row in (row for rows in services.session_row_batches(session) for row in rows):
                checker.feed(services.message_to_schema(row))
                tokens += row.token_count
                has_errors = has_errors or bool(row.is_error)
                count += 1
            violations, message_count, token_sum = checker.finish(), count, tokens
        else:
            violations = self.checker.finish()
            message_count, token_sum, has_errors = self.outcome.added, self.tokens, self.has_errors
        if session.started_at is None and self.first_created_at is not None:
            session.started_at = self.first_created_at
            session.save(update_fields=["started_at"])
        if self.derive_title and not session.title and self.first_question:
            session.title = self.first_question
            session.save(update_fields=["title"])
            self.outcome.title = session.title
        services.session_finish(
            session=session,
            message_count=message_count,
            token_counts_sum=token_sum,
            has_errors=has_errors,
            violations=violations,
        )
        self.outcome.violations = list(session.violations)


# --- targets ------------------------------------------------------------------------------------------------


def _resolve_project(project: models.Project | str | None, conv: Conversation) -> models.Project:
    if isinstance(project, models.Project):
        return project
    slug = project or conv.project or DEFAULT_PROJECT_SLUG
    clean = slugify(slug)[:100]
    if not clean:
        raise ImportFailed(f"project: {slug!r} is not a usable project slug")
    row = models.Project.objects.filter(slug=clean).first()
    if row is None:
        name = DEFAULT_PROJECT_NAME if clean == DEFAULT_PROJECT_SLUG else slug
        row = models.Project.objects.create(slug=clean, name=name[:200])
    return row


def _resolve_agent(
    project: models.Project, agent: models.Agent | str | None, conv: Conversation, source_format: str
) -> models.Agent:
    if isinstance(agent, models.Agent):
        if agent.project_id != project.pk:
            raise ImportFailed(f"agent: {agent.slug!r} is not an agent of project {project.slug!r}")
        return agent
    wanted = agent or conv.agent or conv.source_format or source_format or "imported"
    row = _find_agent(project, wanted)
    if row is not None:
        return row
    slug = slugify(wanted)[:100] or "imported"
    return models.Agent.objects.create(project=project, slug=slug, name=wanted[:200])


def _find_agent(project: models.Project | None, wanted: str) -> models.Agent | None:
    if project is None:
        return None
    slug = slugify(wanted)[:100]
    return (
        models.Agent.objects.filter(project=project, slug=slug).first()
        or models.Agent.objects.filter(project=project, name=wanted).first()
    )


def _existing_agent(
    project: models.Project | None, agent: models.Agent | str | None, conv: Conversation
) -> models.Agent | None:
    if isinstance(agent, models.Agent):
        return agent
    return _find_agent(project, agent or conv.agent or conv.source_format or "imported")


def _agent_label(row: models.Agent | None, agent: models.Agent | str | None, conv: Conversation) -> str:
    if row is not None:
        return row.slug
    wanted = agent if isinstance(agent, str) else None
    return slugify(wanted or conv.agent or conv.source_format or "imported")


# --- helpers ----------------------------------------------------------------------------------------------


_NATIVE_MARK = re.compile(rb'"format"\s*:\s*"memoryviz"')


def _open(source: Source, format: str | None) -> tuple[IO[bytes], bool, str | None]:
    """The input as a buffered binary stream, whether to close it, and the file's format when it is native.

    A native file's sessions say the format they were first imported from (``source_format``); the report
    names the file's own format, so the first bytes are peeked (without being consumed) for native's mark.
    """
    if isinstance(source, (str, os.PathLike)) and os.fspath(source) != "-":
        try:
            handle: IO[bytes] = open(source, "rb")  # noqa: SIM115 - closed by _closing
        except OSError as exc:
            raise ImportFailed(f"{os.fspath(source)}: {exc.strerror or exc}") from None
        close = True
    elif isinstance(source, (str, os.PathLike)):
        handle, close = sys.stdin.buffer, False
    else:
        handle, close = source, False
    if format:
        return handle, close, format
    peek = getattr(handle, "peek", None)
    head = peek(65_536)[:65_536] if callable(peek) else b""
    return handle, close, ("native" if _NATIVE_MARK.search(head) else None)


def _closing(streams: Iterator[Any], handle: IO[bytes] | None) -> Iterator[Any]:
    try:
        yield from streams
    finally:
        if handle is not None:
            handle.close()


def _stream_meta(stream: Any) -> Conversation:
    """The conversation's metadata from a ConversationStream (its messages are read separately)."""
    return stream.conversation


def _stream_messages(stream: Any) -> Iterator[Message]:
    return iter(stream.messages)


def _check_lengths(message: Message, conv_index: int, pos: int) -> None:
    for name, limit in _MAX_CHARS.items():
        value = getattr(message, name)
        if value and len(value) > limit:
            raise ImportFailed(
                f"{_place(conv_index, pos)}.{name}: {len(value)} characters, longer than the {limit} that can be stored"
            )
    for i, call in enumerate(message.tool_calls):
        if len(call.id) > 255 or len(call.function.name) > 255:
            raise ImportFailed(
                f"{_place(conv_index, pos)}.tool_calls[{i}]: call id or function name longer than 255 characters"
            )


def _title_from(text: str, limit: int = 80) -> str:
    """A title from the first question, on one line, cut at a word near ``limit`` characters."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut + "…"


def _place(conv_index: int, pos: int) -> str:
    return f"conversation {conv_index + 1}: messages[{pos}]"


def _note_skips(report: ImportReport) -> None:
    for s in report.sessions:
        name = s.title or s.external_id
        where = f"conversation {s.index + 1} ({name})"
        if s.messages == 0:
            report.warnings.append(f"{where}: has no messages")
        if s.naive_times:
            report.warnings.append(f"{where}: {s.naive_times} timestamp(s) without a time zone were read as UTC")
        if len(s.title) > 500:
            report.warnings.append(f"{where}: the title was cut to 500 characters")
        if s.error_count and s.status != "already imported":
            report.warnings.append(
                f"{where}: {s.error_count} protocol violation(s), imported and flagged "
                f"(first: {next(v['message'] for v in s.violations if v.get('severity', 'error') == 'error')})"
            )
        if s.status == "already imported":
            report.dropped.append(
                f"conversation {s.index + 1} ({name}): already imported as session {s.session_id}; nothing added"
            )
        elif s.skipped:
            report.dropped.append(
                f"conversation {s.index + 1} ({name}): {s.skipped} message(s) not added: their id is already "
                "stored in the session or came earlier in the file"
            )


def _source_label(source: Source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", "upload"))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
