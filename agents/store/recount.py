"""Counting a stored session again with another counter, and storing the counts."""
from __future__ import annotations

from django.db import transaction

from agents import models
from agents.access import User, editable_projects
from agents.memory.tokens import count_messages, get_counter, total_tokens
from agents.store.mapping import message_to_schema
from agents.store.reading import MESSAGE_FIELDS, session_row_batches
from agents.store.writing import BULK_BATCH, session_changed

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
