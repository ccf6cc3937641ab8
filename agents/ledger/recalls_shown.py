"""The recalls a page of the session page shows in place: for the messages of a seq range, the recalls they carry,
each with its store's name and its items (rank, score, text as sent, the record and version it matched); and the
persisted recalls carried before the range, whose carrying message every later reply was sent again.

Two queries whatever the session's length and wherever the page stands: the recalls of the range joined to their
items and store (one range of the index on (session, seq, id), a row per item), and the last few persisted recalls
before the range (the same index, read backwards). Each recall also says its first reply (the first assistant message
after its carrying message, a subquery of the same query): the reply that received it first, so that only the later
ones are marked as sent it again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef, Subquery

from agents import models

# The persisted recalls read from before the page: the replies name at most this many, and say when more came before.
EARLIER_READ = 3


@dataclass(frozen=True)
class ItemShown:
    rank: int
    score: float | None
    text: str
    record_id: int | None  # None: the item matches no record
    version: int | None


@dataclass
class RecallShown:
    pk: int
    seq: int
    store: str  # the store's name, "" when the recall read no known store
    query: str
    params: dict[str, Any]
    placement: str
    persisted: bool
    first_reply: int | None  # the first assistant message after the carrying one: it received the recall first
    items: list[ItemShown] = field(default_factory=list)


@dataclass
class RecallsShown:
    """``by_seq``: the recalls of the range, by carrying message; ``earlier``: the last EARLIER_READ persisted
    recalls before the range, latest first; ``more_earlier``: more persisted recalls came before those."""

    by_seq: dict[int, list[RecallShown]]
    earlier: list[RecallShown]
    more_earlier: bool

    def sent_again(self, reply: int, sent: set[int] | None = None) -> tuple[list[RecallShown], bool]:
        """The persisted recalls whose carrying message the reply ``reply`` (an assistant message's seq) was sent
        again, latest first, and whether more came before those read: each carried before an earlier reply
        received it first. ``sent``: the seqs the reply's captured call received, where known (a framework that
        trimmed the carrying message away did not send it again)."""
        again = [r for seq in sorted(self.by_seq, reverse=True) if seq < reply for r in reversed(self.by_seq[seq])
                 if r.persisted and r.first_reply is not None and r.first_reply < reply]
        again += [r for r in self.earlier if r.first_reply is not None and r.first_reply < reply]
        if sent is not None:
            again = [r for r in again if r.seq in sent]
        return again, self.more_earlier


NONE_SHOWN = RecallsShown(by_seq={}, earlier=[], more_earlier=False)


def _first_reply() -> Subquery:
    return Subquery(models.Message.objects.filter(
        session=OuterRef("session"), seq__gt=OuterRef("seq"), role="assistant").order_by("seq").values("seq")[:1])


def session_recalls_shown(session: models.Session, first: int | None, last: int | None) -> RecallsShown:
    """The recalls carried by messages ``first`` to ``last`` with their items, and the persisted ones before: two
    queries (none when the range is empty)."""
    if first is None or last is None:
        return NONE_SHOWN
    rows = models.Recall.objects.filter(session=session, seq__gte=first, seq__lte=last).annotate(
        first_reply=_first_reply()).order_by("seq", "id", "items__rank", "items__id").values_list(
        "pk", "seq", "store__name", "query", "params", "placement", "persisted", "first_reply",
        "items__id", "items__rank", "items__score", "items__text", "items__record_id", "items__version")
    by_seq: dict[int, list[RecallShown]] = {}
    current: RecallShown | None = None
    for (pk, seq, store, query, params, placement, persisted, first_reply,
         item, rank, score, text, record_id, version) in rows:
        assert seq is not None  # the range holds only recalls carried by a message
        if current is None or current.pk != pk:
            current = RecallShown(pk=pk, seq=seq, store=store or "", query=query or "",
                                  params=params if isinstance(params, dict) else {}, placement=placement,
                                  persisted=persisted, first_reply=first_reply)
            by_seq.setdefault(seq, []).append(current)
        if item is not None:
            current.items.append(ItemShown(rank=rank, score=score, text=text or "", record_id=record_id,
                                           version=version))
    earlier: list[RecallShown] = []
    for pk, seq, store, placement, first_reply in models.Recall.objects.filter(
            session=session, persisted=True, seq__lt=first).annotate(first_reply=_first_reply()).order_by(
            "-seq", "-id").values_list("pk", "seq", "store__name", "placement", "first_reply")[:EARLIER_READ + 1]:
        assert seq is not None  # seq < first
        earlier.append(RecallShown(pk=pk, seq=seq, store=store or "", query="", params={}, placement=placement,
                                   persisted=True, first_reply=first_reply))
    return RecallsShown(by_seq=by_seq, earlier=earlier[:EARLIER_READ], more_earlier=len(earlier) > EARLIER_READ)
