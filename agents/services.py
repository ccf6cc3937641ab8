"""Logic shared by the pages, the API and the commands: access scoping and storing sessions.

Every query a view makes goes through ``user_projects`` / ``sessions_for_user`` so that a user only ever sees the
projects they belong to. ``messages_append`` is the one row writer (``session_store`` stores a whole schema
``Conversation`` with it; the importer calls it batch by batch while a ``ProtocolChecker`` streams over a huge
session), and ``session_row_batches`` the one reader of a stored session in order, a batch per query.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import json
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import groupby, islice
from typing import Any, NamedTuple, TypeVar

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AccountUser
from django.core.cache import caches
from django.core.exceptions import PermissionDenied
from django.db import DEFAULT_DB_ALIAS, DatabaseError, OperationalError, connections, transaction
from django.db.models import Case, Exists, F, Model, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from pydantic import BaseModel

from agents import models
from agents.memory import schema, structure
from agents.memory.chain import ProtocolChecker, ResultPlace, Violation, _gc_paused, place_results
from agents.memory.replay import Replay, replay, replay_call
from agents.memory.stored import DetachedTrim, StoredMessages, TrimmedMessages, has_content
from agents.memory.tokens import count_messages, get_counter, total_tokens
from agents.memory.trimming import (
    FALSE_WORDS,
    MEMORY_IDEMPOTENT,
    MEMORY_VIEW,
    TRUE_WORDS,
    StrategyError,
    StrategySpec,
    TrimResult,
    spec_from_query,
    spec_from_text,
    strategy_spec,
    trim,
)
from agents.memory.trimming.tool_runs import Grouped
from agents.sessions.find import NO_FILTER, ChainFilter


class KeyUser:
    """Who a request authenticated by an API key is: an editor of the key's one project, and no one else.

    Not a database user: the access functions below recognise it, and anything that records who did something
    takes ``acting_user`` (the key's creator, or None)."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, api_key: models.ApiKey) -> None:
        self.api_key = api_key
        self.project_id = api_key.project_id
        self.username = f"api key {api_key.prefix}"
        self.acting_user = api_key.created_by

    def __str__(self) -> str:
        return self.username

    def has_perm(self, perm: str, obj: object = None) -> bool:
        return False

    def has_module_perms(self, app_label: str) -> bool:
        return False


User = AccountUser | AnonymousUser | KeyUser
_Item = TypeVar("_Item")

# Messages per INSERT batch: bounded memory for a session streamed from a file, few round trips.
BATCH_SIZE = 2_000
# Rows per bulk_update statement (its CASE grows with the batch): live capture's keying of stored messages.
BULK_BATCH = 500
# Messages per page of the session page (and per "load more").
MESSAGE_PAGE_SIZE = 300


# --- access -------------------------------------------------------------------------------------------------


def user_projects(user: User) -> QuerySet[models.Project]:
    """The projects the user is a member of (none for an anonymous user; its one project for an API key)."""
    if isinstance(user, KeyUser):
        return models.Project.objects.filter(pk=user.project_id)
    if not user.is_authenticated:
        return models.Project.objects.none()
    return models.Project.objects.filter(memberships__user=user)


# The role policy: the least role each kind of action needs. Every role may do what the roles before it in
# ``Membership.ORDER`` may: a viewer reads; an annotator also labels, comments and sets a session's review status
# and assignee; an editor also imports, appends, deletes sessions and edits agents; an admin also manages members,
# labels and API keys. Views and endpoints ask ``require_role`` / ``role_allows``; nothing else decides.
LEAST_ROLE = {
    "read": models.Membership.Level.VIEWER,
    "annotate": models.Membership.Level.ANNOTATOR,
    "edit": models.Membership.Level.EDITOR,
    "admin": models.Membership.Level.ADMIN,
}


def roles_for(action: str) -> tuple[str, ...]:
    """The roles that may do ``action`` (one of LEAST_ROLE's keys)."""
    least = models.Membership.ORDER.index(LEAST_ROLE[action])
    return tuple(str(role) for role in models.Membership.ORDER[least:])


def role_allows(role: str | None, action: str) -> bool:
    return role is not None and role in roles_for(action)


ANNOTATE_ROLES = roles_for("annotate")
EDIT_ROLES = models.Membership.EDIT_ROLES
ADMIN_ROLES = models.Membership.ADMIN_ROLES
assert roles_for("edit") == EDIT_ROLES and roles_for("admin") == ADMIN_ROLES, (
    "Membership's role lists and LEAST_ROLE disagree"
)


def projects_with_role(user: User, roles: Iterable[str]) -> QuerySet[models.Project]:
    """The projects where the user's membership has one of ``roles`` (none for an anonymous user). An API key
    acts as an editor of its one project."""
    if isinstance(user, KeyUser):
        if models.Membership.Level.EDITOR not in roles:
            return models.Project.objects.none()
        return models.Project.objects.filter(pk=user.project_id)
    if not user.is_authenticated:
        return models.Project.objects.none()
    return models.Project.objects.filter(memberships__user=user, memberships__role__in=list(roles))


def project_role(user: User, project: models.Project) -> str | None:
    """The user's role in ``project`` (None when not a member). An API key is an editor of its one project."""
    if isinstance(user, KeyUser):
        return models.Membership.Level.EDITOR if user.project_id == project.pk else None
    if not user.is_authenticated:
        return None
    return models.Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()


def role_permissions(role: str | None) -> dict[str, bool]:
    """What a role may do, by action: what templates show (the views check again)."""
    return {action: role_allows(role, action) for action in LEAST_ROLE}


def require_role(user: User, project: models.Project, action: str) -> str:
    """The user's role in ``project`` when it allows ``action``; PermissionDenied (403) otherwise.

    Call it after loading the object through the user's scope: someone outside the project gets 404 there and
    never learns the project exists."""
    role = project_role(user, project)
    if not role_allows(role, action):
        needed = " or ".join(roles_for(action))
        raise PermissionDenied(f"this needs the {needed} role in project {project.slug}; yours is {role or 'none'}")
    return role or ""


def editable_projects(user: User) -> QuerySet[models.Project]:
    """The projects where the user may change data: import, edit agents (editor or admin)."""
    return projects_with_role(user, EDIT_ROLES)


def agents_for_user(user: User) -> QuerySet[models.Agent]:
    return models.Agent.objects.filter(project__in=user_projects(user)).select_related("project")


def agent_for_user(user: User, agent_id: int) -> models.Agent:
    """The agent, or Http404 when it does not exist or belongs to a project the user is not in."""
    try:
        return agents_for_user(user).get(pk=agent_id)
    except models.Agent.DoesNotExist:
        raise Http404("No such agent.") from None


def agent_editable(user: User, agent: models.Agent) -> bool:
    """Whether the user may change the agent: editor or admin of its project (an API key of the project too)."""
    return editable_projects(user).filter(pk=agent.project_id).exists()


# What a person may change about an agent (its project and slug name it and stay).
AGENT_FIELDS = ("name", "description", "model", "context_window", "token_counter")


def agent_update(*, agent: models.Agent, user: User, changes: dict[str, Any]) -> models.Agent:
    """Apply validated changes (``forms.AgentForm``'s cleaned data) to the agent's editable fields.

    PermissionDenied unless the user is an editor or admin of the agent's project."""
    if not agent_editable(user, agent):
        raise PermissionDenied("Changing an agent needs the editor or admin role in its project.")
    fields = [name for name in AGENT_FIELDS if name in changes]
    for name in fields:
        setattr(agent, name, changes[name])
    if fields:
        agent.save(update_fields=fields)
    return agent


def sessions_for_user(user: User) -> QuerySet[models.Session]:
    """Every ready session of the user's projects; the base of every session query. A session an import is still
    writing (``state=importing``) is seen by no one until the import completes."""
    return models.Session.objects.filter(
        agent__project__in=user_projects(user), state=models.Session.State.READY
    ).select_related("agent", "agent__project")


def session_for_user(user: User, session_id: int) -> models.Session:
    """The session, or Http404 when it does not exist or belongs to a project the user is not in."""
    try:
        return sessions_for_user(user).get(pk=session_id)
    except models.Session.DoesNotExist:
        raise Http404("No such session.") from None


def session_delete(*, user: User, session: models.Session) -> None:
    """Delete a session with its messages, calls and annotations (editor or admin of its project)."""
    require_role(user, session.agent.project, "edit")
    session.delete()


# --- the one mapping between schema messages and rows -------------------------------------------------------


def message_from_schema(
    message: schema.Message, *, session: models.Session, seq: int, token_count: int = 0, token_running: int = 0
) -> models.Message:
    """An unsaved Message row for a schema Message (``message_problem`` says whether the database can store it)."""
    content = message.content
    parts: list[dict[str, Any]] | None = None
    if isinstance(content, list):
        # The joined text goes in `content` so that search and display never parse parts.
        parts = content
        content = schema.content_text(content)
    return models.Message(
        session=session,
        seq=seq,
        role=message.role,
        content=content,
        content_parts=parts,
        name=message.name or "",
        tool_call_id=message.tool_call_id or "",
        tool_calls=[tc.model_dump() for tc in message.tool_calls],
        is_error=message.is_error,
        reasoning=message.reasoning or "",
        external_id=message.external_id or "",
        created_at=message.created_at,
        token_count=token_count,
        token_running=token_running,
        usage=message.usage,
        marks=list(message.marks),
        extra=dict(message.extra),
        has_content=has_content(message.content),
    )


# --- what the database cannot store, said before an INSERT fails --------------------------------------------
# PostgreSQL refuses NUL characters in text and JSON, and both databases refuse NaN and Infinity in JSON (SQLite
# through the JSON_VALID check Django puts on JSON columns): both refuse the same input, named by its place, so
# that a file the import preview accepts also imports, and a database switch breaks nothing. Column widths too:
# a longer value is refused, never cut silently.

MAX_ID_CHARS = 255
_MESSAGE_TEXT = ("name", "tool_call_id", "reasoning", "external_id")
_MESSAGE_JSON = ("usage", "marks", "extra")


def message_problem(message: schema.Message) -> str | None:
    """Why the database cannot store this message, as ``place: what`` (the place within the message), or None."""
    for name in ("name", "tool_call_id", "external_id"):
        value = getattr(message, name)
        if value and len(value) > MAX_ID_CHARS:
            return f"{name}: {len(value)} characters, longer than the {MAX_ID_CHARS} that can be stored"
    for i, call in enumerate(message.tool_calls):
        if len(call.id) > MAX_ID_CHARS or len(call.function.name) > MAX_ID_CHARS:
            return f"tool_calls[{i}]: call id or function name longer than {MAX_ID_CHARS} characters"
        for place, text in (("id", call.id), ("function.name", call.function.name),
                            ("function.arguments", call.function.arguments)):
            if "\x00" in text:
                return f"tool_calls[{i}].{place}: {_NUL}"
    for name in _MESSAGE_TEXT:
        value = getattr(message, name)
        if value and "\x00" in value:
            return f"{name}: {_NUL}"
    for name, value in (("content", message.content), *((n, getattr(message, n)) for n in _MESSAGE_JSON)):
        what = _json_problem(value) if value else None
        if what:
            return f"{name}: {what}"
    return None


def conversation_problem(conversation: schema.Conversation) -> str | None:
    """Why the database cannot store this conversation's session row (its messages aside), or None."""
    if conversation.external_id and len(conversation.external_id) > MAX_ID_CHARS:
        return (f"external_id: {len(conversation.external_id)} characters, longer than the {MAX_ID_CHARS} that can "
                "be stored")
    if conversation.source_format and len(conversation.source_format) > 40:
        return f"source_format: {conversation.source_format[:50]!r} is not a format name"
    for name in ("external_id", "title", "source_format", "agent", "project", "metadata", "tools"):
        value = getattr(conversation, name)
        what = _json_problem(value) if value else None
        if what:
            return f"{name}: {what}"
    return None


_NUL = "contains a NUL character (\\u0000), which the database cannot store"


def _json_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return _NUL if "\x00" in value else None
    if isinstance(value, float):
        if value != value:
            return "contains NaN, which JSON cannot hold"
        if value in (float("inf"), float("-inf")):
            return "contains Infinity, which JSON cannot hold"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            what = _json_problem(key) or _json_problem(item)
            if what:
                return what
    elif isinstance(value, list):
        for item in value:
            what = _json_problem(item)
            if what:
                return what
    return None


def message_to_schema(row: models.Message | Any) -> schema.Message:
    """The schema Message a row stores (the inverse of ``message_from_schema``): a model instance, or a named tuple
    of ``MESSAGE_FIELDS`` (``session_message_batches``).

    Built without validation (``_trusted``, what ``model_construct`` leaves): the row was validated as a schema
    Message when it was stored. The object is the one validation gives (the same values, the same nested ToolCall
    models, the same fields set: tests/test_export_service.py). A row that does not hold what
    ``message_from_schema`` stores (an unknown role, tool calls of another shape) is validated, and refused, as
    before."""
    calls = _stored_calls(row.tool_calls or [])
    fields = _message_fields(row)
    if calls is None or row.role not in _ROLES:
        fields["tool_calls"] = row.tool_calls or []
        return schema.Message(**fields)
    fields["tool_calls"] = [
        _trusted(schema.ToolCall, {"id": call_id, "type": "function",
                                   "function": _trusted(schema.FunctionCall, {"name": name, "arguments": arguments})})
        for call_id, name, arguments in calls
    ]
    return _trusted(schema.Message, fields)


def _message_fields(row: models.Message | Any) -> dict[str, Any]:
    """A row's schema fields, in the model's order (``tool_calls`` for the caller to fill)."""
    return {
        "role": row.role,
        "content": row.content_parts if row.content_parts is not None else row.content,
        "name": row.name or None,
        "tool_calls": None,
        "tool_call_id": row.tool_call_id or None,
        "external_id": row.external_id or None,
        "created_at": row.created_at,
        "is_error": row.is_error,
        "reasoning": row.reasoning or None,
        "usage": row.usage,
        "marks": row.marks or [],
        "extra": row.extra or {},
    }


def _stored_calls(stored: list[Any]) -> list[tuple[str, str, str]] | None:
    """The (id, name, arguments) of a row's tool calls as ``message_from_schema`` stores them (``model_dump()`` of
    each ToolCall); None when one is not in that shape (the caller validates)."""
    calls = []
    for call in stored:
        if type(call) is not dict or call.keys() != _TOOL_CALL_KEYS or call["type"] != "function":
            return None
        function, call_id = call["function"], call["id"]
        if type(function) is not dict or function.keys() != _FUNCTION_KEYS or type(call_id) is not str:
            return None
        name, arguments = function["name"], function["arguments"]
        if type(name) is not str or type(arguments) is not str:
            return None
        calls.append((call_id, name, arguments))
    return calls


_TOOL_CALL_KEYS = {"id", "type", "function"}
_FUNCTION_KEYS = {"name", "arguments"}
_Model = TypeVar("_Model", bound=BaseModel)


def _trusted(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """``cls.model_construct(**values)`` for ``values`` that name every field, in the fields' order: what
    model_construct leaves in the instance, without its loop over the fields' aliases and defaults (which costs
    twice the validation it saves)."""
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def message_rows(
    messages: Sequence[schema.Message],
    *,
    session: models.Session,
    start_seq: int = 0,
    token_counts: Sequence[int] | None = None,
    tokens_before: int = 0,
    content_keys: Sequence[str] | None = None,
) -> tuple[list[models.Message], list[models.ToolCall]]:
    """Unsaved Message rows (seq from ``start_seq``) and their ToolCall rows, ready for bulk_create.

    ``tokens_before`` is the running total of the session before ``start_seq`` (the ``token_running`` of the
    message at ``start_seq - 1``); each row's ``token_running`` continues it, so a caller storing a session in
    batches passes the running total it carried from the previous batch.

    The ToolCall rows point at the unsaved Message objects; once those are bulk-created (which sets their
    primary keys on SQLite and PostgreSQL) the ToolCall rows can be bulk-created too.
    """
    if token_counts is not None and len(token_counts) != len(messages):
        raise ValueError(f"token_counts has {len(token_counts)} entries for {len(messages)} messages")
    if tokens_before < 0:
        raise ValueError(f"tokens_before is {tokens_before}; a running total cannot be negative")
    rows: list[models.Message] = []
    calls: list[models.ToolCall] = []
    running = tokens_before
    for i, message in enumerate(messages):
        count = token_counts[i] if token_counts else 0
        running += count
        row = message_from_schema(message, session=session, seq=start_seq + i, token_count=count, token_running=running)
        if content_keys is not None:
            row.content_key = content_keys[i]
        rows.append(row)
        for position, tc in enumerate(message.tool_calls):
            calls.append(
                models.ToolCall(
                    session=session,
                    message=row,
                    call_id=tc.id,
                    name=tc.function.name,
                    arguments=tc.function.arguments,
                    position=position,
                )
            )
    return rows, calls


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


class _Insert:
    """A one-row INSERT of a model's concrete columns (primary key left to the database)."""

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


_MESSAGE_INSERT = _Insert(models.Message)
_TOOLCALL_INSERT = _Insert(models.ToolCall)


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


# --- reading ------------------------------------------------------------------------------------------------


# What message_to_schema reads, and the stored count: reading a session needs no more (token_running, ids and
# the session key stay in the database).
MESSAGE_FIELDS = (
    "role", "content", "content_parts", "name", "tool_call_id", "tool_calls", "is_error", "reasoning",
    "external_id", "created_at", "usage", "marks", "extra", "token_count",
)
# Rows fetched per query when a whole session is read: a 200,000-message session streams through in bounded
# batches instead of being held twice (rows and schema messages) at once.
SESSION_ROWS_PER_FETCH = 2_000


def session_row_batches(
    session: models.Session,
    *,
    after: int | None = None,
    size: int = SESSION_ROWS_PER_FETCH,
    fields: Sequence[str] = (),
) -> Iterator[list[models.Message]]:
    """The session's stored rows after seq ``after``, in order, ``size`` rows per query: ``seq > after ORDER BY
    seq LIMIT size`` (the unique (session, seq) index answers it), so that each batch costs the same however deep
    in a long session, and a reader holds one batch at a time. ``fields``: only these columns (and seq)."""
    # Not ``session.messages``: a related manager sets each row's session from its session_id, which only() would
    # leave out, so every row would cost one more query.
    qs = models.Message.objects.filter(session_id=session.pk).order_by("seq")
    if fields:
        qs = qs.only("seq", *fields)
    last = -1 if after is None else after
    while True:
        rows = list(qs.filter(seq__gt=last)[:size])
        if rows:
            yield rows
        if len(rows) < size:
            return
        last = rows[-1].seq


def session_message_batches(
    session: models.Session, *, size: int = SESSION_ROWS_PER_FETCH
) -> Iterator[tuple[list[schema.Message], list[int]]]:
    """The session's messages as schema Messages, in order, ``size`` per query (keyset, as ``session_row_batches``),
    with the token counts stored with them: the one reader of a whole stored conversation (export, trim). Rows are
    read as named tuples of ``MESSAGE_FIELDS``, not model instances, which cost as much again as the rest of an
    export's reading (bench/README.md, "Logins and page views during a big import")."""
    for rows in _session_message_rows(session, size=size):
        with _gc_paused():
            batch = [message_to_schema(row) for row in rows], [row.token_count for row in rows]
        yield batch


def session_message_json_batches(
    session: models.Session, *, size: int = SESSION_ROWS_PER_FETCH
) -> Iterator[list[dict[str, Any]]]:
    """The session's messages as ``model_dump(mode="json")`` gives them (``message_json``), in order, ``size`` per
    query: what the native export writes, made from the driver's rows (``message_json``)."""
    qs = models.Message.objects.filter(session_id=session.pk).order_by("seq").values_list("seq", *MESSAGE_FIELDS)
    last = -1
    while True:
        with _gc_paused():
            raw = _plain_rows(qs.filter(seq__gt=last)[:size])
            batch = [message_json(row) for row in raw]
        if raw:
            yield batch
        if len(raw) < size:
            return
        last = raw[-1][0]


def message_json(raw: tuple[Any, ...]) -> dict[str, Any]:
    """``message_to_schema(row).model_dump(mode="json")`` of a driver's row of ``("seq", *MESSAGE_FIELDS)``, made
    from the row without the model: what the native export writes of each message (building the model and dumping
    it again was a third of its CPU). The same dict, key for key: the time as pydantic writes it (ISO 8601, "Z" for
    UTC: SQLite's naive UTC datetimes, PostgreSQL's aware ones), the tool calls with their keys in the model's
    order. A row this does not cover (another offset, tool calls of another shape, an unknown role) goes through
    the model."""
    _seq, role, content, parts, name, call_id, tool_calls, is_error, reasoning, external_id, created, usage, marks, \
        extra, _count = raw
    stamp = None
    if created is not None:
        offset = created.utcoffset() if type(created) is dt.datetime else dt.timedelta(1)
        if offset is None:
            stamp = created.isoformat() + ("Z" if settings.USE_TZ else "")  # naive: UTC when time zones are on
        elif not offset:
            stamp = created.replace(tzinfo=None).isoformat() + "Z"
        else:
            return _model_json(raw)
    calls = _stored_calls(_json_value(tool_calls) or [])
    if calls is None or role not in _ROLES:
        return _model_json(raw)
    parts = _json_value(parts)
    return {
        "role": role,
        "content": parts if parts is not None else content,
        "name": name or None,
        "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls],
        "tool_call_id": call_id or None,
        "external_id": external_id or None,
        "created_at": stamp,
        "is_error": None if is_error is None else bool(is_error),
        "reasoning": reasoning or None,
        "usage": _json_value(usage),
        "marks": _json_value(marks) or [],
        "extra": _json_value(extra) or {},
    }


def _model_json(raw: tuple[Any, ...]) -> dict[str, Any]:
    return message_to_schema(_message_row(raw)).model_dump(mode="json")


def _session_message_rows(session: models.Session, *, size: int) -> Iterator[list[MessageRow]]:
    qs = models.Message.objects.filter(session_id=session.pk).order_by("seq").values_list("seq", *MESSAGE_FIELDS)
    last = -1
    while True:
        with _gc_paused():  # many small objects, none garbage (chain._gc_paused); not held across the yield
            rows = _message_rows(qs.filter(seq__gt=last)[:size])
        if rows:
            yield rows
        if len(rows) < size:
            return
        last = rows[-1].seq


class MessageRow(NamedTuple):
    """A stored message's row of ``MESSAGE_FIELDS`` after its seq, its values as Django's fields give them."""

    seq: int
    role: str
    content: str
    content_parts: list[Any] | None
    name: str
    tool_call_id: str
    tool_calls: list[Any]
    is_error: bool | None
    reasoning: str
    external_id: str
    created_at: dt.datetime | None
    usage: dict[str, Any] | None
    marks: list[str]
    extra: dict[str, Any]
    token_count: int


assert MessageRow._fields[1:] == MESSAGE_FIELDS
_JSON_AT = tuple(MessageRow._fields.index(name) for name in ("content_parts", "tool_calls", "usage", "marks", "extra"))
_IS_ERROR_AT = MessageRow._fields.index("is_error")
_CREATED_AT = MessageRow._fields.index("created_at")


def _json_value(value: Any) -> Any:
    """A JSON column's value as ``_plain_rows`` reads it: its text, decoded (an empty list or object without the
    decoder: most are), or what a driver that decodes it gave."""
    if not isinstance(value, str):
        return value
    return [] if value == "[]" else {} if value == "{}" else json.loads(value)


def _message_rows(qs: QuerySet[Any]) -> list[MessageRow]:
    """The rows of a ``values_list("seq", *MESSAGE_FIELDS)`` query, read as the driver returns them
    (``_plain_rows``) and converted here as Django's fields would: most JSON values are an empty list or object,
    decoded without the decoder, and the converters' per-value calls, 40% of a 5,000-message export's CPU time,
    go."""
    return [_message_row(raw) for raw in _plain_rows(qs)]


def _message_row(raw: tuple[Any, ...]) -> MessageRow:
    values = list(raw)
    for k in _JSON_AT:
        values[k] = _json_value(values[k])
    is_error = values[_IS_ERROR_AT]
    if is_error is not None:
        values[_IS_ERROR_AT] = bool(is_error)
    created = values[_CREATED_AT]
    if isinstance(created, str):  # SQLite: the stored text, UTC
        created = parse_datetime(created)
    if created is not None and settings.USE_TZ and timezone.is_naive(created):
        created = created.replace(tzinfo=dt.UTC)
    values[_CREATED_AT] = created
    return MessageRow._make(values)


def session_messages_with_counts(session: models.Session) -> tuple[list[schema.Message], list[int]]:
    """The session's messages in order, and the token counts stored with them (under ``session.token_counter``),
    so that a trim (lab, API, export) never recounts text."""
    messages: list[schema.Message] = []
    counts: list[int] = []
    for batch, batch_counts in session_message_batches(session):
        messages += batch
        counts += batch_counts
    return messages, counts


def session_messages(session: models.Session) -> list[schema.Message]:
    """The stored conversation as schema Messages, in order (for trimming and export)."""
    return session_messages_with_counts(session)[0]


# What a message's outline (memory/stored.py) is read from, with the stored count: no text. ``tool_calls`` keeps
# the calls' arguments (the protocol checker checks them).
OUTLINE_FIELDS = ("role", "name", "tool_call_id", "tool_calls", "is_error", "has_content", "token_count")


# Roles as one shared string each: a driver returns a new string per row, and a long session holds one per message.
_ROLES = {role: role for role in schema.ROLES}


def _plain_rows(qs: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """The rows of a ``values_list`` query as the database driver returns them, without Django's converters: per
    row and column, they were a fifth of a long session's preview (bench/README.md). JSON columns come back as
    their text (SQLite; psycopg as Django configures it), booleans as 0 and 1 on SQLite: ``_outline`` reads both."""
    sql, params = qs.query.sql_with_params()
    with connections[qs.db].cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def session_stored_messages(session: models.Session) -> tuple[StoredMessages, Sequence[int]]:
    """The session as a trim reads it: each message's outline and stored count (``session_structure``: one value,
    or its rows read in keyset batches without a text column when that value is not up to date), and its whole
    messages read by seq only where they are read (the kept ones of a trimmed list a page shows or a writer writes,
    or all of them for a strategy that reads text)."""
    outlines, counts = session_structure(session)
    return StoredMessages(outlines, session_message_loader(session.pk)), counts


def _outlines(rows: Iterable[tuple[Any, ...]]) -> tuple[Grouped, tuple[int, ...]]:
    """The outlines of rows read by ``_session_outline_rows`` (a seq or session id first) and their stored counts,
    as ``memory.structure`` builds them. Both are held immutable, the outlines Grouped (tool_runs): their units
    are found once, and every trim of them (a compare's columns, the report's strategies) shares them and the
    counts, uncopied, and finds AutoGen's and Strands' messages without reading a role."""
    return structure.outlines(rows, skip=1)


def session_structure(session: models.Session) -> tuple[Grouped, tuple[int, ...]]:
    """The session's outlines and stored counts from its stored structure (``models.SessionStructure``: one row,
    one value), when it was written at the session's current version, counter and size. One written before
    messages were only appended (no rewrite since: ``Session.rewritten_version``) is extended with the rows after
    it; else the structure is read from all the rows (keyset batches, no text column). Either is kept for the next
    trim."""
    found = (models.SessionStructure.objects.filter(session_id=session.pk)
             .values_list("content_version", "token_counter", "message_count", "value", "session__rewritten_version")
             .first())
    if found is not None:
        version, counter, count, value, rewritten = found
        try:
            if (version, counter, count) == _structure_stamp(session):
                return structure.decode(value)
            if counter == session.token_counter and version >= rewritten and count < session.message_count:
                return structure.decode(_structure_read(session, structure.Encoder.resume(value)))
        except structure.StructureError:
            pass  # written in another format, or damaged: read again from the rows, and replaced
    return structure.decode(_structure_read(session, structure.Encoder()))


def _structure_stamp(session: models.Session) -> tuple[int, str, int]:
    """What a stored structure must have been written at to be the session's (``SessionStructure``'s fields)."""
    return session.content_version, session.token_counter, session.message_count


def _structure_read(session: models.Session, encoder: structure.Encoder) -> bytes:
    """The session's structure: ``encoder``'s messages and the rows after them (keyset batches, no text column),
    kept when they are the session its summaries describe."""
    for rows in _session_outline_rows(session, after=len(encoder) - 1):
        encoder.add(rows, skip=1)
    value = encoder.value()
    if len(encoder) == session.message_count:
        _structure_keep([(session, value)])
    return value


def sessions_structure_keep(sessions: Sequence[models.Session]) -> None:
    """Read and keep the structures of sessions just written (an import, when it completes), so that their first
    trim reads one value: several sessions' rows per query, a long session's in keyset batches."""
    for batch in batches_by_messages(sessions, lambda s: s.message_count, most=SESSIONS_ROWS_PER_QUERY):
        if len(batch) == 1:
            _structure_read(batch[0], structure.Encoder())
        else:
            _structures_read(batch)


def _structures_read(batch: Sequence[models.Session]) -> dict[int, bytes]:
    """The structures of several sessions read from their rows in one query, and kept (one upsert)."""
    rows = _plain_rows(
        models.Message.objects.filter(session__in=[s.pk for s in batch])
        .order_by("session_id", "seq")
        .values_list("session_id", *OUTLINE_FIELDS)
    ) if batch else []
    by_session = {pk: list(group) for pk, group in groupby(rows, key=lambda r: r[0])}
    del rows
    read = {session.pk: structure.encode(by_session.pop(session.pk, []), skip=1) for session in batch}
    _structure_keep([(session, read[session.pk]) for session in batch
                     if structure.size(read[session.pk]) == session.message_count])
    return read


def _structure_keep(read: Sequence[tuple[models.Session, bytes]]) -> None:
    """Keep sessions' structures at their current versions, in one statement (an upsert); a request that cannot
    (a session went meanwhile, the database is busy) leaves them to the next."""
    if not read:
        return
    rows = []
    for session, value in read:
        version, counter, count = _structure_stamp(session)
        rows.append(models.SessionStructure(session_id=session.pk, content_version=version, token_counter=counter,
                                            message_count=count, value=value))
    try:
        with transaction.atomic():
            models.SessionStructure.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["session"],
                update_fields=["content_version", "token_counter", "message_count", "value"],
            )
    except DatabaseError:
        pass


def _session_outline_rows(session: models.Session, *, after: int = -1) -> Iterator[list[tuple[Any, ...]]]:
    """The session's rows of ``OUTLINE_FIELDS`` (after its seq) in keyset batches, as ``_plain_rows`` reads them:
    those after the seq ``after``."""
    qs = models.Message.objects.filter(session_id=session.pk).order_by("seq").values_list("seq", *OUTLINE_FIELDS)
    last = after
    while True:
        rows = _plain_rows(qs.filter(seq__gt=last)[:SESSION_ROWS_PER_FETCH])
        yield rows
        if len(rows) < SESSION_ROWS_PER_FETCH:
            return
        last = rows[-1][0]


def session_message_loader(session_id: int) -> Callable[[Sequence[int]], dict[int, schema.Message]]:
    """A ``memory.stored.Loader`` of the session's messages: the rows at these seqs (a run of seqs as a range)."""

    def load(seqs: Sequence[int]) -> dict[int, schema.Message]:
        if not seqs:
            return {}
        qs = models.Message.objects.filter(session_id=session_id).values_list("seq", *MESSAGE_FIELDS)
        low, high = min(seqs), max(seqs)
        if high - low + 1 == len(seqs):
            qs = qs.filter(seq__gte=low, seq__lte=high)
        else:
            qs = qs.filter(seq__in=list(seqs))
        return {row.seq: message_to_schema(row) for row in _message_rows(qs)}

    return load


# Message rows per query when many sessions are read for trimming (the lab's report): few queries, bounded memory.
SESSIONS_ROWS_PER_QUERY = 20_000


def sessions_stored_messages(
    sessions: Sequence[models.Session],
) -> Iterator[tuple[models.Session, StoredMessages, Sequence[int]]]:
    """Each session with its outlines and stored counts (``session_stored_messages``), several sessions' outlines
    per query."""
    for batch in batches_by_messages(sessions, lambda s: s.message_count, most=SESSIONS_ROWS_PER_QUERY):
        yield from _sessions_batch(batch)


def batches_by_messages(
    items: Iterable[_Item], messages: Callable[[_Item], int], *, most: int, count: int | None = None
) -> Iterator[list[_Item]]:
    """``items`` (sessions, or their ids) in order, in batches of at most ``most`` messages (a bigger item alone)
    and at most ``count`` items."""
    batch: list[_Item] = []
    size = 0
    for item in items:
        if batch and (size + messages(item) > most or (count is not None and len(batch) >= count)):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += messages(item)
    if batch:
        yield batch


def _sessions_batch(batch: list[models.Session]) -> Iterator[tuple[models.Session, StoredMessages, Sequence[int]]]:
    # The sessions' stored structures where they are up to date (one query), the rows of the others (one more).
    by_pk = {s.pk: s for s in batch}
    kept: dict[int, bytes] = {}
    stored = models.SessionStructure.objects.filter(session__in=list(by_pk)).values_list(
        "session_id", "content_version", "token_counter", "message_count", "value")
    for pk, version, counter, count, value in stored:
        if (version, counter, count) == _structure_stamp(by_pk[pk]) and structure.readable(value):
            kept[pk] = bytes(value)
    kept.update(_structures_read([s for s in batch if s.pk not in kept]))
    for session in batch:
        try:
            outlines, counts = structure.decode(kept.pop(session.pk))
        except structure.StructureError:  # a damaged value: read again from the rows, and replaced
            outlines, counts = structure.decode(_structures_read([session])[session.pk])
        yield session, StoredMessages(outlines, session_message_loader(session.pk)), counts


# --- trimming -----------------------------------------------------------------------------------------------


@dataclass
class SessionTrim:
    """A stored session as the trimmer read it, and what each spec made of it (in the order of the specs)."""

    session: models.Session
    messages: StoredMessages  # outlines, and whole messages read when read (memory/stored.py)
    counts: Sequence[int]  # under the trim's counter: the stored ones, or each message counted again (``recounted``)
    results: list[TrimResult]
    recounted: bool  # another counter than the session's: every message was counted again


def session_trim(
    *,
    session: models.Session,
    specs: Sequence[StrategySpec],
    counter: str | None = None,
    read: tuple[StoredMessages, Sequence[int]] | None = None,
) -> SessionTrim:
    """Read the session with its stored token counts, then trim it with each spec: the lab's pages, the trim API
    and trimmed exports. The session's own counter (the default) trims with the stored counts, so nothing is
    recounted; another ``counter`` (a preset's: ``trim_counter``) counts every message once, for every spec. ``read``:
    the messages and stored counts when the caller read them already (the report reads many sessions per query,
    ``sessions_stored_messages``).

    The session is read as outlines (``session_stored_messages``): a strategy that reads no text decides on them,
    and the contents of the kept messages are read when its trimmed list is read; another counter, or a strategy
    that reads text, reads every message (in batches)."""
    counter = counter or session.token_counter
    recounted = counter != session.token_counter
    cache = caches[TRIM_CACHE]
    keys = [_trim_key(session, spec, counter) for spec in specs]
    found = cache.get_many(keys)
    messages, counts = read if read is not None else session_stored_messages(session)
    if recounted:
        # Counted once here, the same rule as the lab's replay (``session_replay``): every message read whole.
        counts = count_messages(messages, get_counter(counter))
    results: list[TrimResult] = []
    for key, spec in zip(keys, specs, strict=True):
        if key in found:
            results.append(_attached(found[key], messages))
            continue
        result = trim(messages, spec, counter=counter, token_counts=counts)
        cache.set(key, _detached(result))
        results.append(result)
    return SessionTrim(session, messages, counts, results, recounted)



# Query keys of the trim endpoint that are not strategy parameters (format: DRF's ?format=json).
TRIM_QUERY_KEYS = frozenset({"strategy", "preset", "format", "counter", "detail", "messages"})
TRIM_DETAILS = ("compact", "full")
DEFAULT_TRIM_STRATEGY = "safe_token_budget"


class TrimRequestError(ValueError):
    """The trim API's query is wrong; ``str(e)`` names the parameter."""


def session_trim_answer(*, user: User, session_id: int, query: Any, strategies_url: str) -> dict[str, Any]:
    """The trim API's answer for the session (404 when not in the user's projects) and its query: the strategy
    and parameters (``strategy=NAME&<param>=<value>``, else the recommended one, said so with a link to
    ``strategies_url``) or a preset of the session's project (``preset=NAME``, with its counter unless
    ``counter=`` is given); ``detail=compact|full``; ``messages=1`` for the trimmed list. TrimRequestError when
    the query is wrong, checked before a large session is read."""
    session = session_for_user(user, session_id)
    detail = query.get("detail", "compact")
    if detail not in TRIM_DETAILS:
        raise TrimRequestError(f"detail={detail}: expected {' or '.join(TRIM_DETAILS)}")
    with_messages = query.get("messages", "0").strip().lower()
    if with_messages not in TRUE_WORDS | FALSE_WORDS | {""}:
        raise TrimRequestError(f"messages={with_messages}: expected 1 or 0")
    preset_name = query.get("preset", "").strip()
    preset = None
    if preset_name:
        # A preset of the session's project: its strategy, parameters and counter (a ?counter= still wins).
        extra = sorted(set(query) - TRIM_QUERY_KEYS)
        if "strategy" in query or extra:
            raise TrimRequestError(f"preset={preset_name}: give the preset or a strategy with its parameters, not both")
        try:
            preset = preset_by_name(user=None, name=preset_name, project=session.agent.project)
            spec = preset_spec(preset)
        except PresetError as exc:
            raise TrimRequestError(str(exc)) from None
    counter = trim_counter(preset, query.get("counter")) or session.token_counter
    try:
        get_counter(counter)
    except ValueError as exc:
        raise TrimRequestError(f"counter: {exc}") from None
    # Without a strategy (the URL the browsable API's own breadcrumbs link to): the recommended one, said so.
    named = query.get("strategy", "").strip()
    if preset is None:
        try:
            spec = spec_from_query(named or DEFAULT_TRIM_STRATEGY, query, other_keys=TRIM_QUERY_KEYS)
        except StrategyError as exc:
            raise TrimRequestError(str(exc)) from None
    trimmed = session_trim(session=session, specs=[spec], counter=counter)
    result, recounted = trimmed.results[0], trimmed.recounted
    del trimmed  # the input list can go before the answer is built (200,000 messages: hundreds of MB)
    if detail == "full":
        data = result.to_dict()
    else:
        data = result.to_compact_dict(messages=with_messages in TRUE_WORDS)
    data["detail"] = detail
    data["recounted"] = recounted
    if not named and preset is None:
        data["note"] = (f"no strategy given: {DEFAULT_TRIM_STRATEGY} (memoryviz's recommendation); name one with "
                        f"?strategy=NAME, listed at {strategies_url}")
    return data

# What a trim computed, per session version, counter, strategy and parameters (``session_trim``): the cache alias
# (settings.CACHES; the database cache serves several app servers). A session's outlines are not cached: they are
# stored (``session_structure``).
TRIM_CACHE = "trims"
_TRIM_CACHE_FORMAT = 4  # bumped when what is cached changes shape


def _trim_key(session: models.Session, spec: StrategySpec, counter: str) -> str:
    what = json.dumps([spec.strategy.name, spec.params.model_dump(mode="json")], sort_keys=True)
    digest = hashlib.sha256(what.encode()).hexdigest()[:32]
    return f"trim:{_session_key(session)}:{counter}:{digest}"


def _session_key(session: models.Session) -> str:
    # The import time too: an id can come back after a rolled-back import (SQLite), a time does not.
    stamp = session.imported_at.timestamp() if session.imported_at else 0
    return f"{_TRIM_CACHE_FORMAT}:{session.pk}:{stamp}:{session.content_version}:{session.token_counter}"


def _detached(result: TrimResult) -> tuple[TrimResult, DetachedTrim | None]:
    """The result as it is cached: a trimmed list over the stored messages keeps its positions, not the session."""
    if isinstance(result.messages, TrimmedMessages):
        return dataclasses.replace(result, messages=[]), result.messages.detached()
    return result, None


def _attached(cached: tuple[TrimResult, DetachedTrim | None], messages: StoredMessages) -> TrimResult:
    result, detached = cached
    if detached is not None:
        return dataclasses.replace(result, messages=detached.over(messages))
    return result


@dataclass
class SessionReplay:
    """A stored session's run replayed under a spec (the lab's slider), and what one call sent: ``result`` is the
    call at ``step`` (input indices, as ``replay_call``), or the whole list trimmed once when no step was asked for
    (``step`` None). ``counts`` are under the replay's counter (the stored ones for the session's own counter).
    ``messages`` is the stored list (outlines, whole messages read where read: ``sent`` gives the input of the
    shown result)."""

    session: models.Session
    messages: StoredMessages
    counts: Sequence[int]
    replay: Replay | None  # None: not replayed (``session_replay(replayed=False)``)
    step: int | None
    result: TrimResult
    recounted: bool

    @property
    def sent_from(self) -> int:
        """How many input messages the shown result is about: the messages before the chosen call."""
        if self.step is None or self.replay is None:
            return len(self.messages)
        return self.replay.steps[self.step].call

    @property
    def sent(self) -> StoredMessages:
        """The input messages the shown result is about (the messages before the chosen call)."""
        return self.messages.head(self.sent_from)


def replay_input(messages: StoredMessages, spec: StrategySpec, *, recounted: bool) -> Sequence[schema.Message]:
    """What a replay of a stored list runs on: the outlines when the strategy reads no text and the stored counts
    are used (``Strategy.reads_text``), else every whole message (read in batches)."""
    if spec.strategy.reads_text or recounted:
        return list(messages)
    return messages.outlines


def session_replay(
    *,
    session: models.Session,
    spec: StrategySpec,
    counter: str | None = None,
    step: int | None = None,
    replayed: bool = True,
) -> SessionReplay:
    """Read the session once, replay the spec on every call of the run (``memory.replay``) and trim what the
    chosen ``step`` sent (out of range or None: the whole list, as ``session_trim``). ``replayed=False`` with no
    ``step``: the whole list trimmed only (``session_trim``, its cache included), no replay (``replay`` None): the
    lab's first answer for a long session, whose replay follows in a second request. The session's own counter
    uses the stored counts; another counts every message once, for the replay and the trim alike.

    Read as ``session_trim`` reads: outlines in keyset batches, and for a strategy that reads no text under the
    stored counts, the replay runs on the outlines and the shown trim reads the contents of the rows a page
    renders only; a strategy that reads text, or another counter, reads every message. The replay is kept in the
    trim cache per session version, counter, strategy and parameters."""
    if not replayed and step is None:
        trimmed = session_trim(session=session, specs=[spec], counter=counter)
        return SessionReplay(session, trimmed.messages, trimmed.counts, None, None, trimmed.results[0],
                             trimmed.recounted)
    counter = counter or session.token_counter
    recounted = counter != session.token_counter
    cache = caches[TRIM_CACHE]
    key = "replay:" + _trim_key(session, spec, counter)
    run = cache.get(key)
    messages, counts = session_stored_messages(session)
    base: Sequence[schema.Message] | None = None
    if run is None or recounted or spec.strategy.reads_text:
        base = replay_input(messages, spec, recounted=recounted)
        if recounted:
            counts = count_messages(base, get_counter(counter))
    if run is None:
        assert base is not None
        run = replay(base, spec, counter=counter, token_counts=counts)
        cache.set(key, run)
    if step is not None and 0 <= step < len(run.steps):
        call = run.steps[step].call
        if base is None and spec.strategy.memory in (MEMORY_VIEW, MEMORY_IDEMPOTENT):
            # What the call sent is a trim of the messages before it: decided on their outlines.
            result = trim(messages.head(call), spec, counter=counter, token_counts=counts[:call])
        else:
            result = replay_call(base if base is not None else messages.outlines, spec, call=call, counter=counter,
                                 token_counts=counts)
    else:
        step = None
        if recounted:
            result = trim(messages, spec, counter=counter, token_counts=counts)
        else:
            result = session_trim(session=session, specs=[spec], read=(messages, counts)).results[0]
    return SessionReplay(session, messages, counts, run, step, result, recounted)


@dataclass
class MessagePage:
    """One page of a session's messages, for the session page."""

    rows: list[models.Message]
    after: int | None  # the seq the page starts after (None: from the start)
    next_after: int | None  # the seq to load the next page after (None: this is the last page)
    tokens_before: int  # the sum of token_count of the messages before this page (0 for an empty page)
    shown_through: int  # how many messages are shown once this page is on screen (from the start)


def session_message_page(
    session: models.Session, *, after: int | None = None, size: int = MESSAGE_PAGE_SIZE,
    within: ChainFilter = NO_FILTER,
) -> MessagePage:
    """``seq > after ORDER BY seq LIMIT size``: a page costs the same in a short session and a huge one.

    One query whatever the page's position: the running total before the page comes from its first row's
    stored ``token_running`` (set at import), not from summing every earlier message. With ``within`` (the
    page's role or tool filter), the same query over the messages it shows.
    """
    if within.active:
        shown = within.apply(models.Message.objects.filter(session_id=session.pk)).order_by("seq")
        rows = list(shown.filter(seq__gt=-1 if after is None else after)[: size + 1])
    else:
        rows = next(session_row_batches(session, after=after, size=size + 1), [])
    has_more = len(rows) > size
    rows = rows[:size]
    # An empty page (after the last message) shows no running total, so it needs none.
    tokens_before = rows[0].token_running - rows[0].token_count if rows else 0
    last_seq = rows[-1].seq if rows else (after if after is not None else -1)
    return MessagePage(
        rows=rows,
        after=after,
        next_after=rows[-1].seq if (has_more and rows) else None,
        tokens_before=tokens_before,
        shown_through=min(last_seq + 1, session.message_count) if session.message_count else len(rows),
    )


def session_filtered_page_before(
    session: models.Session, *, within: ChainFilter, before: int, size: int = MESSAGE_PAGE_SIZE
) -> tuple[int, int] | None:
    """For "load earlier" in a filtered chain: the ``after`` of the page of the ``size`` shown messages just
    before seq ``before``, and the seq of the last of them (None when the filter shows none before it). One query
    of at most ``size`` seqs."""
    shown = within.apply(models.Message.objects.filter(session_id=session.pk, seq__lt=before))
    seqs = list(shown.order_by("-seq").values_list("seq", flat=True)[:size])
    return (seqs[-1] - 1, seqs[0]) if seqs else None


@dataclass
class ChainPage:
    """A page of the session page: its messages, each tool result placed against its call (``ResultPlace``)."""

    page: MessagePage
    results: dict[int, ResultPlace]  # seq of each tool result on the page -> where its call is
    per_list: int  # the tokens the session's counter adds once per list (in the header's total, in no message)


def session_chain_page(
    session: models.Session, *, after: int | None = None, at: int | None = None, within: ChainFilter = NO_FILTER
) -> ChainPage:
    """The page of the session page after ``after`` or, for a permalink, the page holding message ``at``, with its
    tool results paired with their calls: right above, earlier on the page (a late result), or on another page,
    found with one query only when the page has such a result.

    Filtered (``within``): the shown messages from ``at`` on (the place a reload returns to is the page's first
    row), and each tool result linked to its call wherever it is, since the messages between are not shown."""
    if after is None and at is not None and at >= 0:
        if within.active:
            after = at - 1 if at > 0 else None
        else:
            # The page that starts at the page boundary holding ``at`` (the first page stays the plain URL's page,
            # so a permalink into it opens the same page the session link does).
            boundary = (at // MESSAGE_PAGE_SIZE) * MESSAGE_PAGE_SIZE
            after = boundary - 1 if boundary > 0 else None
    page = session_message_page(session, after=after, within=within)

    def calls_outside(ids: set[str]) -> dict[str, list[tuple[int, str]]]:
        found: dict[str, list[tuple[int, str]]] = {}
        calls = models.ToolCall.objects.filter(session=session, call_id__in=ids).order_by("message__seq", "position")
        for call_id, name, seq in calls.values_list("call_id", "name", "message__seq"):
            found.setdefault(call_id, []).append((seq, name))
        return found

    results: dict[int, ResultPlace] = {}
    if within.active:
        ids = {row.tool_call_id for row in page.rows if row.role == "tool" and row.tool_call_id}
        found = calls_outside(ids) if ids else {}
        for row in page.rows:
            if row.role != "tool":
                continue
            candidates = found.get(row.tool_call_id) or []
            before = [c for c in candidates if c[0] < row.seq]
            index, name = (before[-1] if before else candidates[0]) if candidates else (None, "")
            results[row.seq] = ResultPlace(name, False, index)
    else:
        start = page.rows[0].seq if page.rows else 0
        results = place_results([message_to_schema(row) for row in page.rows], start=start,
                                calls_outside=calls_outside)
    try:
        per_list = get_counter(session.token_counter).per_list
    except ValueError:  # a counter no longer installed: the header's total shows without it
        per_list = 0
    return ChainPage(page, results, per_list)


# --- the lab's report: strategies across sessions ----------------------------------------------------------

REPORT_SESSION_LIMIT = 200
# Reading and trimming costs about 0.1 ms per message and strategy: past this many messages a page would take
# too long, so the report stops there too (and says so) even before REPORT_SESSION_LIMIT sessions.
REPORT_MESSAGE_LIMIT = 100_000


@dataclass
class ReportCell:
    spec: StrategySpec
    tokens_after: int
    kept: int
    errors: int
    question_lost: bool | None
    budget_exceeded: bool
    error: str = ""  # the strategy failed on this session (should not happen; said rather than a 500)
    # Per-call mode: the first call of the replayed run that sent a list a provider rejects (its position in the
    # replay's steps, and the input index of the message that call produced), None when no call broke.
    first_broken_step: int | None = None
    first_broken_call: int | None = None
    # Counted with another counter than the session's (a preset's): the tokens before under it (what it saved
    # is measured against these); None: the row's.
    tokens_before: int | None = None


@dataclass
class ReportRow:
    session: models.Session
    tokens_before: int
    cells: list[ReportCell]


@dataclass
class ReportSummary:
    spec: StrategySpec
    broken: int = 0
    questions_lost: int = 0
    tokens_after_total: int = 0
    sessions: int = 0
    broken_some_call: int = 0  # per-call mode: sessions where some call of the replayed run broke the protocol

    @property
    def mean_tokens_after(self) -> float:
        return self.tokens_after_total / self.sessions if self.sessions else 0.0


@dataclass
class TrimmingReport:
    specs: list[StrategySpec]
    rows: list[ReportRow]
    summaries: list[ReportSummary]
    capped: bool
    limit: int
    per_call: bool = False


def trimming_report(
    sessions: QuerySet[models.Session],
    specs: Sequence[StrategySpec],
    *,
    limit: int | None = None,
    per_call: bool = False,
    counters: Sequence[str | None] | None = None,
) -> TrimmingReport:
    """Each spec over each session (at most ``limit``; ``sessions`` must already be scoped to the user).
    ``per_call``: also replay every call of each run (``memory.replay``): "breaks at some call" beside "breaks at
    the end". ``counters``: what each spec counts with (a preset's, ``trim_counter``); None: each session's own,
    with its stored counts."""
    spec_counters = list(counters) if counters is not None else [None] * len(specs)
    limit = limit or REPORT_SESSION_LIMIT
    chosen = list(sessions[: limit + 1])
    capped = len(chosen) > limit
    chosen = chosen[:limit]
    total = 0
    for k, session in enumerate(chosen):
        total += session.message_count
        if total > REPORT_MESSAGE_LIMIT and k > 0:
            chosen, capped, limit = chosen[:k], True, k
            break
    summaries = [ReportSummary(spec) for spec in specs]
    rows: list[ReportRow] = []
    for session, messages, counts in sessions_stored_messages(chosen):
        roles = messages.outlines
        newest_user = next((i for i in range(len(roles) - 1, -1, -1) if roles[i].role == "user"), None)
        cells: list[ReportCell] = []
        tokens_before = None
        for spec, summary, counter in zip(specs, summaries, spec_counters, strict=True):
            try:
                trimmed = session_trim(session=session, specs=[spec], read=(messages, counts), counter=counter)
            except ValueError as exc:  # a strategy that fails on this session (should not happen): said, not a 500
                cells.append(ReportCell(spec, 0, 0, 0, None, False, error=str(exc)))
                continue
            result = trimmed.results[0]
            if tokens_before is None and not trimmed.recounted:
                tokens_before = result.tokens_before  # the row's "before" is under the session's own counter
            errors = sum(1 for v in result.violations if v.severity == "error")
            lost = None if newest_user is None else newest_user not in set(result.kept)
            cell = ReportCell(spec, result.tokens_after, len(result.kept), errors, lost, result.budget_exceeded,
                              tokens_before=result.tokens_before if trimmed.recounted else None)
            if per_call:
                run = replay(replay_input(messages, spec, recounted=trimmed.recounted), spec, counter=result.counter,
                             token_counts=trimmed.counts)
                if run.first_violation is not None:
                    cell.first_broken_step = run.first_violation
                    cell.first_broken_call = run.steps[run.first_violation].call
                    summary.broken_some_call += 1
            cells.append(cell)
            summary.sessions += 1
            summary.tokens_after_total += result.tokens_after
            summary.broken += errors > 0
            summary.questions_lost += bool(lost)
        rows.append(ReportRow(session, session.token_total if tokens_before is None else tokens_before, cells))
    return TrimmingReport(list(specs), rows, summaries, capped, limit, per_call)


# --- the session list ---------------------------------------------------------------------------------------

# Sessions without a start time sort last either way, on SQLite and PostgreSQL alike.
SESSION_SORTS: dict[str, tuple[Any, ...]] = {
    "started": (F("started_at").asc(nulls_last=True), "id"),
    "-started": (F("started_at").desc(nulls_last=True), "-id"),
    "messages": ("message_count", "id"),
    "-messages": ("-message_count", "-id"),
    "tokens": ("token_total", "id"),
    "-tokens": ("-token_total", "-id"),
    "violations": ("violation_count", "id"),
    "-violations": ("-violation_count", "-id"),
    # Sessions that never received live messages sort by their import, which is when their messages came.
    "activity": (Coalesce("last_activity_at", "imported_at").asc(), "id"),
    "-activity": (Coalesce("last_activity_at", "imported_at").desc(), "-id"),
    # Review: unreviewed, in review, done (the order of the work), and assignees by name, nobody's last.
    "status": (Case(*(When(review_status=s, then=i) for i, s in enumerate(models.ReviewStatus.values))).asc(), "id"),
    "-status": (Case(*(When(review_status=s, then=i) for i, s in enumerate(models.ReviewStatus.values))).desc(), "-id"),
    "assignee": (F("assignee__username").asc(nulls_last=True), "id"),
    "-assignee": (F("assignee__username").desc(nulls_last=True), "-id"),
    # A session's first label by name (sessions without a label last).
    "label": (F("first_label").asc(nulls_last=True), "id"),
    "-label": (F("first_label").desc(nulls_last=True), "-id"),
}
DEFAULT_SESSION_SORT = "-started"


@dataclass
class SessionFilters:
    project: models.Project | None = None
    agent: models.Agent | None = None
    q: str = ""
    tool: str = ""
    has_violations: bool = False
    has_errors: bool = False
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    min_tokens: int | None = None
    max_tokens: int | None = None
    label: str = ""  # a label name: sessions annotated with it (on a message or the whole session)
    review_status: str = ""
    assignee: str = ""  # a username, or NOBODY
    sort: str = DEFAULT_SESSION_SORT

    @property
    def scope_project(self) -> models.Project | None:
        """The one project these filters keep the sessions to (the project's, or the agent's), if any."""
        if self.project is not None:
            return self.project
        return self.agent.project if self.agent is not None else None


NOBODY = "-"  # the assignee filter's "assigned to nobody"


def sessions_filtered(user: User, filters: SessionFilters) -> QuerySet[models.Session]:
    """The user's sessions narrowed by the list's filters, sorted."""
    qs = sessions_for_user(user)
    if filters.project is not None:
        qs = qs.filter(agent__project=filters.project)
    if filters.agent is not None:
        qs = qs.filter(agent=filters.agent)
    if filters.q:
        # A tool call id (as pasted from a log) names the session too; exact match serves the (session,
        # call_id) index.
        with_call = models.ToolCall.objects.filter(session=OuterRef("pk"), call_id=filters.q.strip())
        qs = qs.filter(
            Q(title__icontains=filters.q)
            | Q(external_id__icontains=filters.q)
            | _content_match(filters.q, scope=qs)
            | Exists(with_call)
        )
    if filters.tool:
        qs = qs.filter(Exists(models.ToolCall.objects.filter(session=OuterRef("pk"), name=filters.tool)))
    if filters.has_violations:
        qs = qs.filter(violation_count__gt=0)
    if filters.has_errors:
        qs = qs.filter(has_errors=True)
    # Day bounds as datetimes in the site's time zone, so that the started_at index serves the range.
    if filters.date_from is not None:
        qs = qs.filter(started_at__gte=_day_start(filters.date_from))
    if filters.date_to is not None:
        qs = qs.filter(started_at__lt=_day_start(filters.date_to + dt.timedelta(days=1)))
    if filters.min_tokens is not None:
        qs = qs.filter(token_total__gte=filters.min_tokens)
    if filters.max_tokens is not None:
        qs = qs.filter(token_total__lte=filters.max_tokens)
    if filters.label:
        qs = qs.filter(Exists(models.Annotation.objects.filter(session=OuterRef("pk"), label__name=filters.label)))
    if filters.review_status:
        qs = qs.filter(review_status=filters.review_status)
    if filters.assignee == NOBODY:
        qs = qs.filter(assignee__isnull=True)
    elif filters.assignee:
        qs = qs.filter(assignee__username=filters.assignee)
    sort = filters.sort if filters.sort in SESSION_SORTS else DEFAULT_SESSION_SORT
    if sort.lstrip("-") == "label":
        first = models.Annotation.objects.filter(session=OuterRef("pk"), label__isnull=False).order_by("label__name")
        qs = qs.annotate(first_label=Subquery(first.values("label__name")[:1]))
    return qs.order_by(*SESSION_SORTS[sort])


# A trigram index answers a text of at least this many characters; a shorter one is looked for by a plain scan.
TRIGRAM = 3
# Matching sessions are listed by id in the list's query when there are at most this many (the count and the page
# then reuse them); more are matched by a subquery, which each of the two queries runs again.
MATCHED_IDS_INLINE = 5_000


def _content_match(text: str, *, scope: QuerySet[models.Session]) -> Q:
    """Sessions with a message whose content contains ``text`` (case-insensitively, as ``icontains``).

    With a trigram index (``search_indexed``) the matching sessions are found once, from the index, and the list's
    count and page both reuse their ids: a request reads the matching messages once, not every message twice. A
    text shorter than a trigram, or a database without the index, is looked for by EXISTS over the session's
    messages, as before: the same sessions either way (``tests/test_search_index.py``)."""
    if len(text) < TRIGRAM or not search_indexed():
        return Q(Exists(models.Message.objects.filter(session=OuterRef("pk"), content__icontains=text)))
    matched = sessions_matching_text(text, scope=scope)
    if isinstance(matched, list) and connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        # The ids as one parameter, an array's text, not one placeholder each: psycopg parses again, at every
        # execution, a query too long for its cache (4 KB), Django prepares each id of an IN list for each of the
        # list's queries, and psycopg adapts a list of ints item by item (1,000 found sessions: 30 ms of a 130 ms
        # request).
        return Q(pk__in=RawSQL("SELECT unnest(%s::bigint[])", ("{" + ",".join(map(str, matched)) + "}",)))
    return Q(pk__in=matched)


def sessions_matching_text(text: str, *, scope: QuerySet[models.Session]) -> list[int] | QuerySet[Any]:
    """The ids of the sessions in ``scope`` with a message containing ``text``, found through the trigram index
    (``len(text) >= TRIGRAM``): a list when there are few enough to name, else the subquery that finds them."""
    messages = models.Message.objects.filter(session__in=scope.order_by().values("pk"))
    if connections[DEFAULT_DB_ALIAS].vendor == "sqlite":
        # The FTS5 trigram table finds candidates (it folds case more widely than LIKE does); LIKE, the plain
        # scan's own test, keeps exactly the messages the scan would keep.
        phrase = '"' + text.replace('"', '""') + '"'
        candidates = RawSQL("SELECT rowid FROM agents_message_fts WHERE agents_message_fts MATCH %s", (phrase,))
        messages = messages.filter(pk__in=candidates)
    # PostgreSQL answers icontains (UPPER(content) LIKE UPPER(...)) from its GIN index on UPPER(content).
    matching = messages.filter(content__icontains=text).order_by().values("session_id").distinct()
    if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        ids = _postgresql_sessions_matching(text, scope=scope)
    else:
        ids = list(matching.values_list("session_id", flat=True)[: MATCHED_IDS_INLINE + 1])
    return ids if len(ids) <= MATCHED_IDS_INLINE else matching


def _postgresql_sessions_matching(text: str, *, scope: QuerySet[models.Session]) -> list[int]:
    """Up to MATCHED_IDS_INLINE + 1 ids of the sessions in ``scope`` with a message containing ``text``: the
    matching messages found first, by themselves (a materialized CTE, planned alone: from the trigram index, or a
    scan when most rows match), then kept to the scope. Joined in one query, the planner could take the other
    order on a low guess of the scope's size and a high one of the text's matches (pg_trgm's guess moves with each
    ANALYZE): for each session in scope, every one of its messages read by the session's index and tested, 1.6 s
    instead of 15 ms at 1,000,000 messages."""
    hits = models.Message.objects.filter(content__icontains=text).order_by().values("session_id")
    hits_sql, hits_params = hits.query.sql_with_params()
    scope_sql, scope_params = scope.order_by().values("pk").query.sql_with_params()
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            f"WITH hits AS MATERIALIZED ({hits_sql}) "
            f"SELECT DISTINCT session_id FROM hits WHERE session_id IN ({scope_sql}) LIMIT %s",
            [*hits_params, *scope_params, MATCHED_IDS_INLINE + 1],
        )
        return [row[0] for row in cursor.fetchall()]


_SEARCH_INDEXED: dict[str, bool] = {}


def search_indexed() -> bool:
    """Whether this database has the trigram index of migration 0011 (and the setting allows using it)."""
    from django.conf import settings

    if not getattr(settings, "MEMORYVIZ_SEARCH_INDEX", True):
        return False
    db = connections[DEFAULT_DB_ALIAS]
    key = f"{db.vendor}:{db.settings_dict.get('NAME')}"
    if key not in _SEARCH_INDEXED:
        with db.cursor() as cursor:
            if db.vendor == "sqlite":
                cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'agents_message_fts'")
            elif db.vendor == "postgresql":
                cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'agents_message_content_trgm'")
            else:
                _SEARCH_INDEXED[key] = False
                return False
            _SEARCH_INDEXED[key] = cursor.fetchone() is not None
    return _SEARCH_INDEXED[key]


def _day_start(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def tool_names_for_user(user: User) -> list[str]:
    """The tool names used in the user's projects (the filter's suggestions), from the names stored per project
    as calls are written: a few rows, however many calls there are."""
    return list(
        models.ToolName.objects.filter(project__in=user_projects(user))
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()[:200]
    )


# --- API keys -----------------------------------------------------------------------------------------------

API_KEY_PREFIX = "mvz"
# Writing last_used_at on every request would turn each span batch into a write on the key: once a minute is
# enough to tell a key in use from a forgotten one.
API_KEY_TOUCH_EVERY = dt.timedelta(minutes=1)


@dataclass
class CreatedKey:
    api_key: models.ApiKey
    key: str  # shown once, never stored


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_key_create(*, project: models.Project, name: str, created_by: AccountUser | None = None) -> CreatedKey:
    """A new key for ``project``: ``mvz_<prefix>_<secret>``. The whole key is in the result and nowhere else."""
    name = name.strip()
    if not name:
        raise ValueError("name: a key needs a name (what uses it, e.g. 'travel-agent in production')")
    prefix = secrets.token_hex(6)
    key = f"{API_KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = models.ApiKey.objects.create(
        project=project, name=name[:200], prefix=prefix, hashed_secret=_key_hash(key), created_by=created_by
    )
    return CreatedKey(api_key=api_key, key=key)


def api_key_revoke(*, api_key: models.ApiKey) -> models.ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


class ApiKeyError(Exception):
    """A key that cannot be used; the message says why (to the caller, who holds the key)."""


def api_key_authenticate(*, key: str) -> models.ApiKey:
    """The active key that ``key`` is, or ApiKeyError. Touches ``last_used_at`` (at most once a minute)."""
    parts = key.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != API_KEY_PREFIX or not parts[1]:
        raise ApiKeyError("not a memoryviz API key (they look like mvz_<prefix>_<secret>)")
    api_key = models.ApiKey.objects.select_related("project", "created_by").filter(prefix=parts[1]).first()
    if api_key is None or not hmac.compare_digest(api_key.hashed_secret, _key_hash(key.strip())):
        raise ApiKeyError("unknown API key")
    if api_key.revoked_at is not None:
        raise ApiKeyError(f"API key {api_key.prefix} was revoked on {api_key.revoked_at:%Y-%m-%d %H:%M} UTC")
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at >= API_KEY_TOUCH_EVERY:
        models.ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key


def api_keys_for_admin(user: User, project: models.Project) -> QuerySet[models.ApiKey]:
    """The project's keys, for one of its admins (Http404 for anyone else: the project is not theirs to see)."""
    if not projects_with_role(user, ADMIN_ROLES).filter(pk=project.pk).exists():
        raise Http404("No such project.")
    return models.ApiKey.objects.filter(project=project).select_related("created_by")


# --- live capture: what each call was sent ------------------------------------------------------------------


def llm_calls_by_reply(session: models.Session, seqs: Iterable[int]) -> dict[int, models.LlmCall]:
    """The calls whose replies are among ``seqs`` (the messages on a page), by reply seq: one indexed query."""
    wanted = list(seqs)
    if not wanted:
        return {}
    rows = models.LlmCall.objects.filter(session=session, reply_seq__in=wanted).defer("input_times")
    return {row.reply_seq: row for row in rows if row.reply_seq is not None}


def llm_call_for_user(user: User, session_id: int, call_id: int) -> tuple[models.Session, models.LlmCall]:
    session = session_for_user(user, session_id)
    return session, get_object_or_404(models.LlmCall, session=session, pk=call_id)


def llm_call_sent_messages(call: models.LlmCall) -> list[models.Message]:
    """The stored messages the call was sent, in the order it received them (a message it received twice is
    listed twice)."""
    rows = {row.seq: row for row in models.Message.objects.filter(session_id=call.session_id, seq__in=set(call.sent))}
    return [rows[seq] for seq in call.sent if seq in rows]


# --- counting again ------------------------------------------------------------------------------------------


class RecountError(ValueError):
    """A recount that cannot be done; the text is a sentence a person reads."""


def session_recount(*, session: models.Session, counter: str, user: User) -> models.Session:
    """Count every stored message of the session again with ``counter`` and store the counts (token_count,
    token_running, the session's token_counter and token_total), so that the lab, the trim API and the session
    page use them without recounting per request. In one transaction, a batch of rows at a time: a reader sees the
    old counts or the new ones, never a mix. Editors and admins of the session's project only."""
    try:
        get_counter(counter)
    except ValueError as exc:
        raise RecountError(str(exc)) from None
    if not editable_projects(user).filter(pk=session.agent.project_id).exists():
        raise RecountError("Counting a session again needs the editor or admin role in its project.")
    with transaction.atomic():
        running = 0
        for rows in session_row_batches(session, fields=MESSAGE_FIELDS):
            counts = count_messages([message_to_schema(row) for row in rows], counter)
            for row, count in zip(rows, counts, strict=True):
                running += count
                row.token_count, row.token_running = count, running
            models.Message.objects.bulk_update(rows, ["token_count", "token_running"], batch_size=BULK_BATCH)
        session.token_counter = counter
        session.token_total = total_tokens([running], counter) if session.message_count else 0
        session.save(update_fields=["token_counter", "token_total"])
        session_changed(session)
    return session


# --- presets ------------------------------------------------------------------------------------------------


class PresetError(ValueError):
    """A preset that cannot be saved or is not there; the text is a sentence a person reads."""


def presets_for_user(user: User, *, project: models.Project | None = None) -> QuerySet[models.Preset]:
    """The presets of the user's projects (of one of them when ``project`` is given)."""
    qs = models.Preset.objects.filter(project__in=user_projects(user)).select_related("project", "created_by")
    return qs.filter(project=project) if project is not None else qs


# A column of compare or the report, or a strategy field, that names a preset instead of a strategy: "preset:NAME".
PRESET_PREFIX = "preset:"


def preset_by_name(
    *, user: User | None, name: str, project: models.Project | None = None, prefer: models.Project | None = None,
    choose: str = "name the project",
) -> models.Preset:
    """The preset called ``name`` among the user's projects (or in ``project``); ``user=None``: any project (the
    management commands, run by the operator). ``prefer``: the project whose preset wins when several projects have
    one of that name (the one a list's filters keep the sessions to). PresetError when there is none, or several
    projects have one; ``choose`` ends that sentence with how to pick one."""
    name = name.strip()
    qs = (presets_for_user(user, project=project) if user is not None else
          models.Preset.objects.select_related("project", "created_by").filter(
              **({"project": project} if project is not None else {})))
    found = list(qs.filter(name=name).order_by("project__name")[:10])
    if not found:
        where = f"project {project.name}" if project is not None else ("your projects" if user else "any project")
        raise PresetError(f"There is no preset named \u201c{name}\u201d in {where}.")
    preferred = [p for p in found if prefer is not None and p.project_id == prefer.pk]
    if len(found) > 1 and not preferred:
        raise PresetError(f"Several projects have a preset named \u201c{name}\u201d "
                          f"({', '.join(p.project.slug for p in found)}): {choose}.")
    return (preferred or found)[0]


def spec_or_preset(
    *, user: User | None, text: str, project: models.Project | None = None, filters: SessionFilters | None = None
) -> tuple[StrategySpec, models.Preset | None]:
    """A strategy's text (``buffered:buffer_size=5``) or a preset (``preset:NAME``) → the spec to run, and the
    preset (count with ``trim_counter(preset)``). ``filters``: a list's filters, for the sessions they keep (the
    report, an export of the list): a name several of the user's projects share is the filtered project's preset.
    StrategyError or PresetError say what is wrong."""
    text = text.strip()
    if text.startswith(PRESET_PREFIX):
        name = text[len(PRESET_PREFIX):]
        if filters is None:
            preset = preset_by_name(user=user, name=name, project=project)
        else:
            preset = preset_by_name(user=user, name=name, project=project, prefer=filters.scope_project,
                                    choose="filter the sessions by project")
        return preset_spec(preset), preset
    return spec_from_text(text), None


def trim_counter(preset: models.Preset | None, counter: str | None = None) -> str | None:
    """What a trim counts with: ``counter`` when one is asked for, else the preset's own (a preset is a strategy
    with its parameters *and* counter: the lab, ``trim --preset`` and the trim API count with it), else None: the
    session's own, with its stored counts. Pass it to ``session_trim``, which recounts when it differs."""
    if counter:
        return counter
    return preset.counter if preset is not None else None


def preset_create(
    *, user: User, project: models.Project, name: str, strategy: str, params: dict[str, Any], counter: str
) -> models.Preset:
    """Save a strategy with its parameters and counter under ``name`` in ``project``. The parameters are
    validated by the core and stored whole (defaults included). PresetError says what is wrong."""
    name = name.strip()
    if not name:
        raise PresetError("A preset needs a name.")
    if len(name) > 100:
        raise PresetError("A preset's name has at most 100 characters.")
    if not editable_projects(user).filter(pk=project.pk).exists():
        raise PresetError(f"Saving a preset in project {project.name} needs the editor or admin role there.")
    try:
        get_counter(counter)
    except ValueError as exc:
        raise PresetError(str(exc)) from None
    try:
        resolved = strategy_spec(strategy, params).params
    except StrategyError as exc:
        raise PresetError(str(exc)) from None
    if models.Preset.objects.filter(project=project, name=name).exists():
        raise PresetError(f"Project {project.name} already has a preset named \u201c{name}\u201d.")
    return models.Preset.objects.create(
        project=project, name=name, strategy=strategy, params=resolved.model_dump(mode="json"), counter=counter,
        created_by=_recorded_user(user),
    )


def preset_spec(preset: models.Preset) -> StrategySpec:
    """The preset's strategy with its stored parameters (validated again: a strategy may have changed since)."""
    try:
        return strategy_spec(preset.strategy, preset.params)
    except StrategyError as exc:
        raise PresetError(f"Preset \u201c{preset.name}\u201d no longer applies: {exc}") from None


def _recorded_user(user: User) -> Any:
    """Who to record as having done something: an API key records the user who created it."""
    if isinstance(user, KeyUser):
        return user.acting_user
    return user if user.is_authenticated else None
