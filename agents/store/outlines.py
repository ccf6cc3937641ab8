"""A stored session as a trim reads it: each message's outline and stored count (the stored structure,
``models.SessionStructure``, kept up to date as messages are appended), and its whole messages read where they
are read."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from typing import Any

from django.db import DatabaseError, transaction

from agents import models
from agents.memory import structure
from agents.memory.stored import StoredMessages
from agents.memory.trimming.tool_runs import Grouped
from agents.store.reading import SESSION_ROWS_PER_FETCH, _plain_rows, batches_by_messages, session_message_loader

# What a message's outline (memory/stored.py) is read from, with the stored count: no text. ``tool_calls`` keeps
# the calls' arguments (the protocol checker checks them).
OUTLINE_FIELDS = ("role", "name", "tool_call_id", "tool_calls", "is_error", "has_content", "token_count")


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


# Message rows per query when many sessions are read for trimming (the lab's report): few queries, bounded memory.
SESSIONS_ROWS_PER_QUERY = 20_000


def sessions_stored_messages(
    sessions: Sequence[models.Session],
) -> Iterator[tuple[models.Session, StoredMessages, Sequence[int]]]:
    """Each session with its outlines and stored counts (``session_stored_messages``), several sessions' outlines
    per query."""
    for batch in batches_by_messages(sessions, lambda s: s.message_count, most=SESSIONS_ROWS_PER_QUERY):
        yield from _sessions_batch(batch)


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
