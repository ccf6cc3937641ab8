"""What each captured call was sent: the calls behind a page's messages, and the stored messages one call received."""
from __future__ import annotations

from collections.abc import Iterable

from django.shortcuts import get_object_or_404

from agents import models
from agents.access import User, session_for_user

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
