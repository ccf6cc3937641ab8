"""What one import writes, hidden until it completes: the sessions of a run stay ``state=importing`` (seen by no
reader) until :meth:`ImportRun.complete` makes them ready in one short transaction; a failure removes them, and
the sessions of an import whose process is gone are removed by :func:`imports_cleanup`."""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from agents import models
from agents.ledger import upkeep
from agents.memory.schema import Conversation
from agents.store import outlines, writing
from agents.transfer.import_report import ImportFailed, SessionOutcome

# --- a run: what one import writes, hidden until it completes --------------------------------------------------


@dataclass
class Staged:
    """A hidden session of a run: a new session (made ready under ``external_id``), or new messages for
    ``target`` (moved into it, which must still end at ``expected_count`` messages)."""

    session: models.Session
    outcome: SessionOutcome
    external_id: str = ""
    content_named: bool = False  # external_id is the content hash: a collision means "already imported"
    target: models.Session | None = None
    expected_count: int = 0
    summaries: dict[str, Any] = field(default_factory=dict)
    tool_names: set[str] = field(default_factory=set)


class ImportRun:
    """The sessions (and the projects and agents) one import writes. They stay hidden from every reader until
    :meth:`complete` makes them ready in one short transaction; :meth:`discard` removes them."""

    def __init__(self) -> None:
        self.owner = writing.process_owner()
        self.staged: list[Staged] = []
        self.hidden: list[int] = []  # every session this run started, staged or not
        self.projects: list[int] = []  # created by this run: removed again on failure when left empty
        self.agents: list[int] = []
        # What else the run writes beside its sessions (a file's memory layers): each finished inside the
        # transaction that makes the sessions ready, after them (and tried again with it, so idempotent), and
        # discarded with them.
        self.finishers: list[Callable[[], None]] = []
        self.discarders: list[Callable[[], None]] = []

    def session_start(
        self,
        *,
        agent: models.Agent,
        conversation: Conversation,
        counter: str | None,
        append_to: models.Session | None = None,
    ) -> models.Session:
        def create() -> models.Session:
            with transaction.atomic():
                return writing.session_create(
                    agent=agent, conversation=conversation, counter=counter,
                    external_id=f"pending:{uuid.uuid4().hex}", state=models.Session.State.IMPORTING,
                    import_owner=self.owner, append_to=append_to,
                )

        session = writing.write_retrying(create)
        self.hidden.append(session.pk)
        return session

    def session_named(self, agent: models.Agent, external_id: str) -> models.Session | None:
        """The new session this run writes for the agent under ``external_id``, if any."""
        for item in self.staged:
            if item.target is None and item.external_id == external_id and item.session.agent_id == agent.pk:
                return item.session
        return None

    def session_discard(self, session: models.Session) -> None:
        session_remove(session.pk)
        self.hidden.remove(session.pk)

    def complete(self) -> None:
        """Make every staged session ready (or move its messages into its target), in one transaction."""
        writing.write_retrying(self._complete)
        for item in self.staged:
            if item.tool_names:
                writing.write_retrying(functools.partial(
                    writing.tool_names_note, project_id=item.session.agent.project_id, names=item.tool_names))
        if sum(item.outcome.added for item in self.staged) >= writing.ANALYZE_AFTER_MESSAGES:
            writing.tables_analyze()
        written = [item.outcome.session_id for item in self.staged
                   if item.outcome.added and item.outcome.status != "already imported"]
        self.staged, self.hidden, self.finishers, self.discarders = [], [], [], []
        # Each session's structure, kept now: its first trim reads one value, not every row. The import is complete
        # already: when this fails, the first trim of a session reads its rows instead.
        with contextlib.suppress(DatabaseError):
            outlines.sessions_structure_keep(list(models.Session.objects.filter(pk__in=written).order_by("pk")))

    def _complete(self) -> None:
        Session = models.Session
        with transaction.atomic():
            for item in self.staged:
                outcome = item.outcome
                if item.target is not None:
                    target = Session.objects.select_for_update().get(pk=item.target.pk)
                    if target.message_count != item.expected_count:
                        raise ImportFailed(
                            f"conversation {outcome.index + 1}: session {target.pk} received messages from "
                            "elsewhere while this file was imported; nothing of the file was saved: import it again")
                    models.Message.objects.filter(session_id=item.session.pk).update(session_id=target.pk)
                    models.ToolCall.objects.filter(session_id=item.session.pk).update(session_id=target.pk)
                    writing.session_changed(target)  # what was computed from its old messages is not used again
                    writing.session_finish(session=target, **item.summaries)
                    Session.objects.filter(pk=item.session.pk).delete()
                    outcome.session_id = target.pk
                    continue
                try:
                    with transaction.atomic():
                        Session.objects.filter(pk=item.session.pk).update(
                            external_id=item.external_id, state=Session.State.READY, import_owner="",
                            import_heartbeat=None)
                except IntegrityError:
                    other = Session.objects.filter(agent_id=item.session.agent_id, external_id=item.external_id).first()
                    if not item.content_named or other is None:
                        raise ImportFailed(
                            f"conversation {outcome.index + 1}: another import stored a session with the id "
                            f"{item.external_id!r} meanwhile; nothing of the file was saved: import it again to add "
                            "what is new") from None
                    # The same messages were imported by another run at the same time: this copy goes.
                    outcome.status, outcome.session_id = "already imported", other.pk
                    outcome.skipped, outcome.added, outcome.violations = outcome.messages, 0, []
                    item.tool_names = set()
                    models.ToolCall.objects.filter(session_id=item.session.pk).delete()
                    models.Message.objects.filter(session_id=item.session.pk)._raw_delete("default")
                    Session.objects.filter(pk=item.session.pk).delete()
            for finish in self.finishers:
                finish()

    def discard(self) -> None:
        """Remove what the run wrote: its hidden sessions, then the projects and agents it created, if empty."""
        for discard in self.discarders:
            discard()
        for pk in reversed(self.hidden):
            session_remove(pk)
        self.staged, self.hidden, self.finishers, self.discarders = [], [], [], []
        for pk in reversed(self.agents):
            writing.write_retrying(models.Agent.objects.filter(pk=pk, sessions=None).delete)
        for pk in reversed(self.projects):
            writing.write_retrying(models.Project.objects.filter(pk=pk, agents=None).delete)


def session_remove(session_id: int) -> None:
    """Delete a hidden session and its rows a batch at a time, each batch a short transaction of its own, so
    that removing a million messages never holds the write lock for long."""
    Message, ToolCall = models.Message, models.ToolCall

    def batch() -> bool:
        with transaction.atomic():
            ids = list(Message.objects.filter(session_id=session_id).order_by().values_list("pk", flat=True)
                       [:writing.BATCH_SIZE])
            if not ids:
                models.Session.objects.filter(pk=session_id).delete()
                return False
            ToolCall.objects.filter(message_id__in=ids).delete()
            # The tool calls are gone: the rows go without Django loading each to collect what cascades.
            Message.objects.filter(pk__in=ids)._raw_delete(Message.objects.db)
            return True

    while writing.write_retrying(batch):
        pass


def imports_cleanup(*, stale_after: dt.timedelta | None = None, now: dt.datetime | None = None) -> list[int]:
    """Remove the hidden sessions of imports that will never complete: their process on this host is gone (a
    ``kill -9``, a crash), or no batch was committed for ``stale_after`` (a process on another host). Returns
    the ids of the sessions removed."""
    from django.conf import settings

    if stale_after is None:
        stale_after = dt.timedelta(seconds=settings.MEMORYVIZ_IMPORT_STALE_SECONDS)
    limit = (now or timezone.now()) - stale_after
    removed = []
    for pk, owner, beat in models.Session.objects.filter(state=models.Session.State.IMPORTING).values_list(
        "pk", "import_owner", "import_heartbeat"
    ):
        alive = writing.process_alive(owner)
        if alive is False or (alive is None and (beat is None or beat < limit)):
            session_remove(pk)
            removed.append(pk)
    # The memory stores such an import was writing, hidden too (a store written from another host is left to its
    # own host's cleanup: it holds no heartbeat to judge it by).
    upkeep.stores_cleanup(lambda owner: writing.process_alive(owner) is False)
    return removed
