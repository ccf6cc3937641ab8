"""Reading stored sessions: ``session_row_batches`` and ``session_message_batches`` are the one reader of a stored
session in order, a batch per query (keyset), its rows read as the driver gives them where Django's converters
cost too much."""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

from django.conf import settings
from django.db import connections
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agents import models
from agents.memory import schema
from agents.memory.chain import _gc_paused
from agents.store.mapping import _ROLES, _stored_calls, message_to_schema

_Item = TypeVar("_Item")


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


def _plain_rows(qs: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """The rows of a ``values_list`` query as the database driver returns them, without Django's converters: per
    row and column, they were a fifth of a long session's preview (bench/README.md). JSON columns come back as
    their text (SQLite; psycopg as Django configures it), booleans as 0 and 1 on SQLite: ``_outline`` reads both."""
    sql, params = qs.query.sql_with_params()
    with connections[qs.db].cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


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
