"""Import of agent histories: files in any format of DESIGN.md into Session/Message rows.

A file is imported whole or not at all, without holding the database's write lock for its whole run: messages
are streamed from the file (``agents.memory.formats.open_stream``), counted and protocol-checked batch by batch,
and written in short committed transactions into sessions that stay hidden (``Session.state = importing``; every
reader goes through ``access.sessions_for_user``, which shows ready sessions only). When the whole file has been
read, one short transaction makes its sessions ready (``staging.ImportRun``); a failure removes what was written,
and a run killed outright is cleaned up at the next start or by ``manage.py cleanup_imports``
(``staging.imports_cleanup``). New messages for a stored session are written into a hidden staging session and moved
into it in that last transaction. The pages, the API, the command line and the benchmark all call
:func:`import_file` (or :func:`preview_file` to see what would happen); what it tells is in ``import_report``
(``ImportReport``, ``ImportFailed``, both reachable from here).
"""
from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from django.db import DatabaseError, transaction
from django.utils.text import slugify

from agents import models
from agents.ledger import findings, storing
from agents.memory import formats
from agents.memory.chain import ProtocolChecker, Violation
from agents.memory.ledger import MemoryDocument
from agents.memory.schema import Conversation, Message
from agents.memory.tokens import DEFAULT_COUNTER, get_counter
from agents.review import annotating
from agents.store import mapping, reading, writing
from agents.transfer.import_report import ImportFailed, ImportReport, SessionOutcome
from agents.transfer.staging import ImportRun, Staged

# Where neither the caller nor the file names a project, sessions go to this one (created when missing).
DEFAULT_PROJECT_SLUG = "imported"
DEFAULT_PROJECT_NAME = "Imported"

Source = str | os.PathLike[str] | IO[bytes]


ProgressCallback = Callable[[int], None]


def import_file(
    source: Source,
    *,
    project: models.Project | str | None = None,
    agent: models.Agent | str | None = None,
    format: str | None = None,
    counter: str | None = None,
    label: str | None = None,
    on_messages: ProgressCallback | None = None,
    name: str | None = None,
    run: ImportRun | None = None,
) -> ImportReport:
    """Import every conversation of one file, all or nothing.

    ``project``: a Project, a slug (found or created), or None: the project the file names (native carries it),
    else ``imported``. ``agent``: an Agent, a name or slug in that project (found or created), or None: the agent
    the file names, else an agent named after the source format (``openai``, ``autogen``...).
    ``on_messages(n)`` is called after each batch with the number of messages read so far (progress bars).
    ``name``: the file's own name when ``source`` is a copy stored under another (an upload): detection reads
    its extension (``.jsonl``) as the command line reads the path's.
    ``run``: several files imported as one (the command line): the caller completes or discards it; without it,
    the file is its own run, completed before this returns.
    Raises :class:`ImportFailed` naming the place; then nothing of the file is saved.
    """
    if counter is not None:
        get_counter(counter)  # an unknown counter is refused before anything is read
    report = ImportReport(file=label or _source_label(source))
    own = run is None
    run = run or ImportRun()
    try:
        with _said_in_one_line():
            _walk(source, report, project=project, agent=agent, format=format, name=name, counter=counter,
                  progress=writing.Progress(on_messages), run=run)
            if own:
                run.complete()
    except BaseException:
        if own:
            run.discard()
        raise
    report.saved = True
    return report


def preview_file(
    source: Source,
    *,
    project: models.Project | str | None = None,
    agent: models.Agent | str | None = None,
    format: str | None = None,
    label: str | None = None,
    name: str | None = None,
) -> ImportReport:
    """What :func:`import_file` would do, without saving: detected format, sessions, messages, violations,
    sessions already imported and messages already stored. The same walk as the import, reading the file
    streaming and applying every check that could fail the import, so that a file the preview accepts imports."""
    report = ImportReport(file=label or _source_label(source))
    with _said_in_one_line():
        _walk(source, report, project=project, agent=agent, format=format, name=name, counter=DEFAULT_COUNTER,
              progress=None)
    return report


@contextmanager
def _said_in_one_line() -> Iterator[None]:
    """Whatever reading or storing the file raises, as an ImportFailed naming the place: never a traceback."""
    try:
        yield
    except ImportFailed:
        raise
    except formats.FormatError as exc:
        raise ImportFailed(str(exc), choose_format=exc.choose_format) from None
    except DatabaseError as exc:
        raise ImportFailed(f"database: {first_line(exc)}") from None
    except KeyboardInterrupt:
        raise ImportFailed("interrupted") from None
    except RecursionError:
        raise ImportFailed("input: nested too deeply to read") from None
    except (ValueError, UnicodeError) as exc:
        # Readers raise FormatError; anything else is still bad input, said in one line.
        raise ImportFailed(first_line(exc) or type(exc).__name__) from None


# --- one walk for the preview and the import ----------------------------------------------------------------


def _walk(
    source: Source,
    report: ImportReport,
    *,
    project: models.Project | str | None,
    agent: models.Agent | str | None,
    format: str | None,
    name: str | None,
    counter: str | None,
    progress: writing.Progress | None,
    run: ImportRun | None = None,
) -> None:
    """Read the file conversation by conversation into ``report``, then its memory layers: stored (hidden, in
    ``run``) when a ``progress`` is given (the import), only told otherwise (the preview, which creates no project,
    agent or row)."""
    projects: dict[str | None, models.Project | None] = {}
    placed: dict[str, _Placed] = {}
    with _layers(source, format, name) as layers:
        for index, stream in enumerate(layers.streams):
            conv = stream.conversation
            report.format = report.format or (layers.format or conv.source_format or "")
            problem = mapping.conversation_problem(conv)
            if problem:
                raise ImportFailed(f"conversation {index + 1}: {problem}")
            key = conv.project if project is None else None
            if key not in projects:
                projects[key] = _project_for(project, conv, create=run)
            project_row = projects[key]
            report.project = report.project or (project_row.slug if project_row is not None else "")
            wanted = agent if isinstance(agent, models.Agent) else (
                agent or conv.agent or conv.source_format or report.format or "imported")
            agent_row = _agent_for(project_row, wanted, create=run)
            outcome = SessionOutcome(
                index=index, external_id=conv.external_id or "", title=conv.title or "", status="imported",
                agent=agent_row.slug if agent_row is not None else slugify(str(wanted)) or "imported",
                agent_name=agent_row.name if agent_row is not None else str(wanted)[:200],
            )
            existing = None
            if agent_row is not None and conv.external_id:
                existing = models.Session.objects.filter(
                    agent=agent_row, external_id=conv.external_id, state=models.Session.State.READY).first()
                if existing is None and run is not None:
                    # The same conversation earlier in this import: new messages go to its (still hidden) session.
                    existing = run.session_named(agent_row, conv.external_id)
            accepted = _Accepted(outcome, existing, derive_title=report.format != "native")
            messages = accepted.messages(stream.messages)
            if progress is None:
                deque(messages, maxlen=0)
                accepted.settle(agent_row)
            elif existing is not None:
                assert run is not None
                _append(accepted, existing, messages, counter=counter, progress=progress, run=run)
            else:
                assert agent_row is not None and run is not None  # created when saving
                _store(accepted, conv, agent_row, messages, counter=counter, progress=progress, run=run)
            report.sessions.append(outcome)
            # Recalls, versions and snapshots name a conversation by its id, or as "#N" (native exports do).
            placed[f"#{index}"] = accepted.placed
            if conv.external_id:
                placed.setdefault(conv.external_id, accepted.placed)
        # Inside: a big store's records are read from the file as they are written.
        document = layers.memory()
        if document.holds_memory():
            report.format = report.format or document.format
            _memory(document, report, project=project, agent=agent, projects=projects, placed=placed, run=run)
    if not report.sessions and report.memory is None:
        raise ImportFailed(f"{report.file}: no conversation found, so there is nothing to import.")
    if report.sessions and not report.messages_read and report.memory is None:
        raise ImportFailed(f"{report.file}: has no message, so there is nothing to import.")
    _note_skips(report)


@contextmanager
def _layers(source: Source, format: str | None, name: str | None) -> Iterator[formats.Layers]:
    """Every layer of the file (``formats.open_layers``), a path opened by it (a SQLite file is read from its place,
    with what a running agent left in its log), a missing or unreadable path said in one line."""
    if isinstance(source, (str, os.PathLike)) and os.fspath(source) != "-":
        try:
            with open(source, "rb"):
                pass
        except OSError as exc:
            raise ImportFailed(f"{os.fspath(source)}: {exc.strerror or exc}") from None
    with formats.open_layers(source, format, name=name) as layers:
        yield layers


# --- the memory layers --------------------------------------------------------------------------------------


class _Placed:
    """Where the messages of one conversation of the file went: the seq each position has in its stored session.
    Positions not stored (their id was known already) are found again by that id; kept compact (only skips are
    listed), since a conversation may have a million messages."""

    def __init__(self, outcome: SessionOutcome) -> None:
        self.outcome = outcome
        self.base = 0  # the seq the first stored message got
        self.skipped: list[int] = []
        self.skipped_ids: list[str | None] = []
        self.identical = False  # the same messages stored already: each at its own position

    def seq(self, pos: int) -> tuple[int | None, str | None]:
        """The seq of the message at ``pos``, or (None, its id) for one that was not stored again."""
        if self.identical:
            return pos, None
        i = bisect.bisect_left(self.skipped, pos)
        if i < len(self.skipped) and self.skipped[i] == pos:
            return None, self.skipped_ids[i]
        return self.base + pos - i, None


def _memory(
    document: MemoryDocument,
    report: ImportReport,
    *,
    project: models.Project | str | None,
    agent: models.Agent | str | None,
    projects: dict[str | None, models.Project | None],
    placed: dict[str, _Placed],
    run: ImportRun | None,
) -> None:
    """The file's memory layers: staged now and finished when the run completes (the import), or told (preview)."""
    project_row = next(iter(projects.values()), None) if projects else _project_for(
        project, Conversation(), create=run)
    if project_row is None and run is not None:
        raise ImportFailed("project: none to store the memory layers in")
    report.project = report.project or (project_row.slug if project_row is not None else "")
    agents: dict[str, models.Agent | None] = {}

    def agent_named(name: str | None) -> models.Agent | None:
        if not name:
            return None
        if name not in agents:
            agents[name] = _agent_for(project_row, name, create=run)
        return agents[name]

    # Whose a snapshot is when it names no agent and no conversation: only a file with snapshots needs one, so that a
    # file of records alone makes no empty agent named after its format.
    default_agent = agent if isinstance(agent, models.Agent) else agent_named(
        agent or document.agent or document.format or "imported") if document.snapshots else None
    sessions: dict[int, models.Session] = {}

    def session_at(key: str | None, pos: int | None, place: str) -> tuple[models.Session | None, int | None]:
        if key is None:
            return None, None
        where = placed.get(key)
        if where is None:
            raise formats.FormatError(f"{place}.session", f"no conversation {key!r} in the file")
        session_id = where.outcome.session_id
        if session_id is None:
            return None, None
        if session_id not in sessions:
            sessions[session_id] = models.Session.objects.get(pk=session_id)
        session = sessions[session_id]
        if pos is None:
            return session, None
        if pos >= where.outcome.messages:
            raise formats.FormatError(f"{place}.seq", f"no message #{pos}; the conversation has "
                                                      f"{where.outcome.messages}")
        seq, known_id = where.seq(pos)
        if seq is None and known_id:
            seq = models.Message.objects.filter(session=session, external_id=known_id).values_list(
                "seq", flat=True).first()
        return session, seq

    importer = storing.MemoryImport(project=project_row, document=document, agent_named=agent_named,
                                    default_agent=default_agent, owner=run.owner if run else "")
    if run is None:
        outcome = importer.preview()
    else:
        run.discarders.append(importer.discard)
        importer.stage(session_at)
        run.finishers.append(lambda: importer.finish(session_at))
        # The memory findings of what it wrote, and of every session reading a store it wrote, in the same
        # transaction: the session list's "has memory findings" filter is right as soon as the import is seen.
        run.finishers.append(lambda: findings.findings_refresh(
            sessions=[s.pk for s in sessions.values()], stores=[s.row.pk for s in importer.stores.values()]))
        outcome = importer.outcome
    report.memory = outcome.to_dict()
    report.warnings.extend(f"memory: {note}" for note in outcome.notes)
    if run is not None:
        # The counts change when the run completes: the report shows them then.
        run.finishers.append(lambda: setattr(report, "memory", importer.outcome.to_dict()))


class _Accepted:
    """One conversation's messages as the import stores them, and what the preview and the import both report
    of it: the import's rules in one place (known ids, content hash, derived title, naive timestamps, what the
    database cannot store, the protocol check)."""

    def __init__(self, outcome: SessionOutcome, existing: models.Session | None, *, derive_title: bool) -> None:
        self.outcome = outcome
        self.existing = existing
        # Native is lossless: a session stored without a title comes back without one.
        self.derive_title = derive_title
        self.checker = ProtocolChecker()
        self.violations: list[Violation] = []
        # A conversation without an id is named by the hash of its messages: the same file imported twice adds
        # nothing.
        self.hasher = hashlib.sha256() if existing is None and not outcome.external_id else None
        # Message ids already stored in the session or seen earlier in the file: such a message is not added
        # twice (AgentScope's memory does the same). Only messages that carry an id cost memory here.
        self.known_ids: set[str] = set()
        if existing is not None:
            self.known_ids.update(existing.messages.exclude(external_id="").values_list("external_id", flat=True))
        self.stored = writing.StoredBatch()  # what the existing session holds already
        self.placed = _Placed(outcome)
        self.first_question = ""
        self.first_created_at: dt.datetime | None = None

    def messages(self, messages: Iterable[Message]) -> Iterator[Message]:
        outcome = self.outcome
        for pos, message in enumerate(messages):
            problem = mapping.message_problem(message)
            if problem:
                raise ImportFailed(f"conversation {outcome.index + 1}: messages[{pos}].{problem}")
            outcome.messages += 1
            if self.hasher is not None:
                self.hasher.update(message.model_dump_json().encode())
                self.hasher.update(b"\n")
            mid = message.external_id
            # Appending, a message without an id cannot be matched to a stored one: a re-import never adds it.
            if (mid and mid in self.known_ids) or (self.existing is not None and not mid):
                outcome.skipped += 1
                self.placed.skipped.append(pos)
                self.placed.skipped_ids.append(mid)
                continue
            if mid:
                self.known_ids.add(mid)
            if message.created_at is not None and message.created_at.tzinfo is None:
                # Formats without a time zone (AgentScope) are read as UTC, explicitly: the database keeps
                # aware datetimes, and Django would warn once per distinct naive value.
                message = message.model_copy(update={"created_at": message.created_at.replace(tzinfo=dt.UTC)})
                outcome.naive_times += 1
            if self.existing is not None and outcome.added == 0:
                self._check_stored(self.existing)
            self.checker.feed(message)
            if not self.first_question and message.role == "user" and message.text.strip():
                self.first_question = _title_from(message.text)
            if self.first_created_at is None and message.created_at is not None:
                self.first_created_at = message.created_at
            outcome.added += 1
            yield message

    def _check_stored(self, session: models.Session) -> None:
        """Messages are appended: the protocol is checked over the session as it will be stored, its stored
        messages first (seqs are contiguous from 0, so a violation's index is its seq)."""
        for rows in reading.session_row_batches(session):
            for row in rows:
                self.checker.feed(mapping.message_to_schema(row))
                self.stored.tokens += row.token_count
                self.stored.has_errors = self.stored.has_errors or bool(row.is_error)
            self.stored.count += len(rows)

    def settle(self, agent: models.Agent | None) -> models.Session | None:
        """The outcome once every message is read; the stored session that this one duplicates, if any."""
        outcome = self.outcome
        self.violations = self.checker.finish()
        outcome.violations = [writing.violation_record(v) for v in self.violations]
        if self.existing is not None:
            outcome.session_id = self.existing.pk
            outcome.title = self.existing.title or outcome.title
            outcome.status = "updated" if outcome.added else "already imported"
            return None
        if self.derive_title and not outcome.title:
            outcome.title = self.first_question
        if self.hasher is None:
            return None
        outcome.external_id = "sha256:" + self.hasher.hexdigest()
        duplicate = None
        if agent is not None:
            duplicate = models.Session.objects.filter(
                agent=agent, external_id=outcome.external_id, state=models.Session.State.READY).first()
        if duplicate is not None:
            # The same messages are already stored for this agent. The report names the stored session as the
            # session list does (the file may give no title).
            outcome.status, outcome.session_id = "already imported", duplicate.pk
            outcome.title = duplicate.title or outcome.title
            self.placed.identical = True
            outcome.skipped, outcome.added, outcome.violations = outcome.messages, 0, []
        return duplicate


def _store(
    accepted: _Accepted,
    conv: Conversation,
    agent: models.Agent,
    messages: Iterator[Message],
    *,
    counter: str | None,
    progress: writing.Progress,
    run: ImportRun,
) -> None:
    """A new session, written hidden; removed at once when it turns out to duplicate a stored one."""
    # The file's own object: a streamed native session learns its annotations once its messages are read.
    read = conv
    if conv.started_at is not None and conv.started_at.tzinfo is None:
        conv = conv.model_copy(update={"started_at": conv.started_at.replace(tzinfo=dt.UTC)})
    session = run.session_start(agent=agent, conversation=conv, counter=counter)
    stored = writing.messages_append(session=session, messages=messages, start_seq=0, counter=counter,
                                     tokens_before=0, progress=progress, checked=True, committed=True)
    duplicate = accepted.settle(agent)
    if duplicate is not None:
        run.session_discard(session)
        return
    outcome = accepted.outcome
    session.title = session.title or outcome.title
    session.started_at = session.started_at or accepted.first_created_at
    writing.write_retrying(lambda: _summaries_write(session, stored, accepted))
    try:
        annotations = writing.write_retrying(
            lambda: annotating.annotations_import(session=session, items=read.annotations)
        )
    except ValueError as exc:
        raise ImportFailed(f"conversation {outcome.index + 1}: {exc}") from None
    outcome.annotations = annotations.added
    # The session's own id (or content hash) is set when it is made ready: until then it keeps a provisional one,
    # so that two imports of one conversation never collide before either is complete.
    run.staged.append(Staged(session=session, outcome=outcome, external_id=outcome.external_id,
                              content_named=accepted.hasher is not None, tool_names=stored.tool_names))
    outcome.session_id = session.pk


def _summaries_write(session: models.Session, stored: writing.StoredBatch, accepted: _Accepted) -> None:
    with transaction.atomic():
        session.save(update_fields=["title", "started_at"])
        writing.session_finish(session=session, message_count=stored.count, token_counts_sum=stored.tokens,
                               has_errors=stored.has_errors, violations=accepted.violations)


def _append(
    accepted: _Accepted,
    session: models.Session,
    messages: Iterator[Message],
    *,
    counter: str | None,
    progress: writing.Progress,
    run: ImportRun,
) -> None:
    """Add to a session already stored the messages whose id it does not have (as AgentScope's memory does):
    written into a hidden staging session at the seqs they will have, moved into the session when the run
    completes."""
    if any(item.target is not None and item.target.pk == session.pk for item in run.staged):
        raise ImportFailed(f"conversation {accepted.outcome.index + 1}: session {session.pk} gets new messages twice "
                           "in one import; import these files one at a time")
    # The last stored message gives both where new messages go and the running total they continue.
    last = session.messages.order_by("-seq").values_list("seq", "token_running").first()
    start = (last[0] + 1) if last is not None else 0
    accepted.placed.base = start
    staging = run.session_start(agent=session.agent, conversation=Conversation(messages=[]),
                                counter=session.token_counter or counter, append_to=session)
    added = writing.messages_append(
        session=staging, messages=messages, start_seq=start, counter=session.token_counter or counter,
        tokens_before=last[1] if last is not None else 0, progress=progress, checked=True, committed=True,
    )
    accepted.settle(session.agent)
    if not added.count:
        run.session_discard(staging)
        return
    stored = accepted.stored
    run.staged.append(Staged(
        session=staging, outcome=accepted.outcome, target=session, expected_count=start,
        tool_names=added.tool_names,
        summaries={"message_count": stored.count + added.count, "token_counts_sum": stored.tokens + added.tokens,
                   "has_errors": stored.has_errors or added.has_errors, "violations": accepted.violations},
    ))


# --- targets ------------------------------------------------------------------------------------------------


def _project_for(
    project: models.Project | str | None, conv: Conversation, *, create: ImportRun | None
) -> models.Project | None:
    """The project a conversation goes to (created for the run ``create``; None when it does not exist yet)."""
    if isinstance(project, models.Project):
        return project
    slug = project or conv.project or DEFAULT_PROJECT_SLUG
    clean = slugify(slug)[:100]
    if not clean:
        raise ImportFailed(f"project: {slug!r} is not a usable project slug")
    row = models.Project.objects.filter(slug=clean).first()
    if row is None and create is not None:
        name = DEFAULT_PROJECT_NAME if clean == DEFAULT_PROJECT_SLUG else slug
        row, made = _get_or_create(models.Project, {"slug": clean}, {"name": name[:200]})
        if made:
            create.projects.append(row.pk)
    return row


def _get_or_create(model: Any, lookup: dict[str, Any], defaults: dict[str, Any]) -> tuple[Any, bool]:
    """``get_or_create`` committed on its own (two imports creating one project both end up with it)."""

    def write() -> tuple[Any, bool]:
        with transaction.atomic():
            return model.objects.get_or_create(**lookup, defaults=defaults)

    return writing.write_retrying(write)


def _agent_for(
    project: models.Project | None, wanted: models.Agent | str, *, create: ImportRun | None
) -> models.Agent | None:
    """The agent (by slug or name) in the project (created for the run ``create``; None when it does not exist
    yet)."""
    if isinstance(wanted, models.Agent):
        if project is not None and wanted.project_id != project.pk:
            raise ImportFailed(f"agent: {wanted.slug!r} is not an agent of project {project.slug!r}")
        return wanted
    if project is None:
        return None
    slug = slugify(wanted)[:100]
    row = (
        models.Agent.objects.filter(project=project, slug=slug).first()
        or models.Agent.objects.filter(project=project, name=wanted).first()
    )
    if row is None and create is not None:
        row, made = _get_or_create(models.Agent, {"project": project, "slug": slug or "imported"},
                                   {"name": wanted[:200]})
        if made:
            create.agents.append(row.pk)
    return row


# --- helpers ----------------------------------------------------------------------------------------------


def _title_from(text: str, limit: int = 80) -> str:
    """A title from the first question, on one line, cut at a word near ``limit`` characters."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut + "…"


def _note_skips(report: ImportReport) -> None:
    for s in report.sessions:
        where = f"conversation {s.index + 1} ({s.title or s.external_id})"
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
            report.dropped.append(f"{where}: already imported as session {s.session_id}; nothing added")
        elif s.skipped:
            report.dropped.append(f"{where}: {s.skipped} message(s) not added: their id is already stored in the "
                                  "session or came earlier in the file")


def _source_label(source: Source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", "upload"))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
