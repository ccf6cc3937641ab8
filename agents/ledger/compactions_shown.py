"""The compactions a page of the session page shows in place: for the messages of a seq range, each compaction placed
before the message at its seq, with the summary that came in and what went out.

What went out is what the call after the compaction was not sent of the messages before it (its ``sent``, as live
capture saw it): the call that carried it when it was passed back in the input or flagged on the call, the next call
of the session when a reply brought it (the call that made the summary was still sent everything). A compaction read
from a file that says what went out (AgentScope's ``compressed`` marks: ``Compaction.went_out``) says it as the file
does. A compaction without either says only that a summary came in.

One query for the page (the range of the index on (session, seq), the carrying call joined), and none for a session
without compactions: ``has_compactions`` says in the session's own query whether it has any.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, JSONField, OuterRef, Subquery

from agents import models


@dataclass(frozen=True)
class CompactionShown:
    pk: int
    seq: int
    summary: str | None  # None: not captured (or encrypted)
    source: str
    # What went out: how many of the messages before it the call after it was not sent, the first and the last of
    # them (None: no captured call says; 0: nothing went out).
    went_out: int | None
    first_out: int | None = None
    last_out: int | None = None


def _went_out(seq: int, sent: list[object]) -> tuple[int, int | None, int | None]:
    """Of messages 0 to ``seq - 1``, how many are not in ``sent``, the first and the last: in steps bounded by what
    was sent, not by the session's length."""
    received = {s for s in sent if isinstance(s, int) and 0 <= s < seq}
    count = seq - len(received)
    if not count:
        return 0, None, None
    first = next(s for s in range(seq) if s not in received)
    last = next(s for s in range(seq - 1, -1, -1) if s not in received)
    return count, first, last


def has_compactions() -> Exists:
    """Whether a session has a compaction placed on a message: an EXISTS for the session's own query
    (``access.session_for_user(..., compacted=has_compactions())``), so that a page of a session without any reads
    none."""
    return Exists(models.Compaction.objects.filter(session=OuterRef("pk"), seq__isnull=False))


def session_compactions_shown(session: models.Session, first: int | None,
                              last: int | None) -> dict[int, list[CompactionShown]]:
    """The compactions placed on messages ``first`` to ``last``, by seq: one query (none when the range is empty)."""
    if first is None or last is None:
        return {}
    by_seq: dict[int, list[CompactionShown]] = {}
    next_call = Subquery(models.LlmCall.objects.filter(
        session=OuterRef("session"), reply_seq__gt=OuterRef("seq")).order_by("reply_seq").values("sent")[:1],
        output_field=JSONField())
    for pk, seq, summary, source, carried, following, runs in models.Compaction.objects.filter(
            session=session, seq__gte=first, seq__lte=last).annotate(next_sent=next_call).order_by(
            "seq", "at", "id").values_list("pk", "seq", "summary", "source", "llm_call__sent", "next_sent",
                                           "went_out"):
        assert seq is not None  # the range holds only compactions placed on a message
        sent = following if source == models.Compaction.Source.OUTPUT else carried
        if isinstance(runs, list) and runs:  # the file said what went out (AgentScope's compressed marks)
            went_out, first_out, last_out = sum(b - a + 1 for a, b in runs), runs[0][0], runs[-1][1]
        elif isinstance(sent, list) and sent:
            went_out, first_out, last_out = _went_out(seq, sent)
        else:
            went_out, first_out, last_out = None, None, None
        by_seq.setdefault(seq, []).append(CompactionShown(pk=pk, seq=seq, summary=summary, source=source or "",
                                                          went_out=went_out, first_out=first_out, last_out=last_out))
    return by_seq
