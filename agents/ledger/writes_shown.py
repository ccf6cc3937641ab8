"""The memory writes a page of the session page shows where they were written: for the messages of a seq range, the
record versions those messages caused (a Letta block edited by a tool call, a mem0 ADD after a reply, a version the
write API or a live ``create_memory`` span placed at a message), each with its store, record, op, version number and
the text it left.

One query for the page (the range of the index on (session, seq), the record and store joined), and none for a
session that wrote nothing: ``has_writes`` says in the session's own query whether it has any.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef

from agents import models

# A text longer than this is folded under a <details> with a one-line preview on the page.
PREVIEW_CHARS = 160


@dataclass(frozen=True)
class WriteShown:
    record_id: int
    record: str  # the record's id in its library
    store: str
    store_kind: str
    number: int
    op: str
    text: str | None  # None: the write left no text (a delete) or its body was not captured
    body_captured: bool


def has_writes() -> Exists:
    """Whether a session caused a record version at one of its messages: an EXISTS for the session's own query
    (``access.session_for_user(..., wrote=has_writes())``), so that a page of a session without any reads none."""
    return Exists(models.RecordVersion.objects.filter(session=OuterRef("pk"), seq__isnull=False))


def session_writes_shown(session: models.Session, first: int | None, last: int | None) -> dict[int, list[WriteShown]]:
    """The versions caused by messages ``first`` to ``last``, by seq, in the order they were written: one query
    (none when the range is empty)."""
    if first is None or last is None:
        return {}
    by_seq: dict[int, list[WriteShown]] = {}
    for seq, record_id, record, store, kind, number, op, text, captured in models.RecordVersion.objects.filter(
            session=session, seq__gte=first, seq__lte=last,
            record__store__project_id=session.agent.project_id).order_by("seq", "at", "id").values_list(
            "seq", "record_id", "record__external_id", "record__store__name", "record__store__kind", "number", "op",
            "text", "body_captured"):
        assert seq is not None  # the range holds only versions caused by a message
        by_seq.setdefault(seq, []).append(WriteShown(
            record_id=record_id, record=record, store=store, store_kind=kind, number=number, op=op, text=text,
            body_captured=captured))
    return by_seq
