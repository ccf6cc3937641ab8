"""Recalls under a trim, as the lab's pages show them: the session's recalls read from the rows, handed to the core's
``memory.trimmed_recalls`` with the trim's kept and dropped messages (a stored message's seq is its input index).

One session (the lab, compare): its recalls with their items' texts in one query. Many sessions (the report):
the carrying seqs only, in one query for the sessions that have recalls."""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby

from django.db.models import Exists, F, OuterRef

from agents import access, models
from agents.lab.previews import PreviewRow
from agents.memory.findings import ItemFacts, RecallFacts
from agents.memory.trimmed_recalls import RecallsInTrim, recalls_in_trim
from agents.memory.trimming import TrimResult

# The lab lists at most this many recalls of each kind (kept, dropped); the counts cover them all.
RECALLS_SHOWN = 100


@dataclass(frozen=True)
class StoredRecall:
    """A recall row as the lab lists it; ``facts`` is what the core reads."""

    pk: int
    store: str  # the store's name ("" when the recall read no known store)
    placement: str
    facts: RecallFacts

    @property
    def seq(self) -> int | None:
        return self.facts.seq

    @property
    def query(self) -> str:
        return self.facts.query or ""

    @property
    def item_count(self) -> int:
        return len(self.facts.items)


def session_for_lab(user: access.User, session_id: int) -> models.Session:
    """The session (404 outside the user's projects), told by the same query whether it has recalls
    (``has_recalls``): the lab reads none for a session without memory."""
    return access.session_for_user(user, session_id, has_recalls=Exists(
        models.Recall.objects.filter(session=OuterRef("pk"))))


def session_recalls_read(session: models.Session) -> list[StoredRecall]:
    """The session's recalls in the order of the messages carrying them (those on no message last), each with its
    items' texts: one query (recalls joined to their items, a row per item), none for a session read by
    ``session_for_lab`` that has no recall."""
    if not getattr(session, "has_recalls", True):
        return []
    rows = models.Recall.objects.filter(session=session).order_by(
        F("seq").asc(nulls_last=True), "id", "items__rank", "items__id").values_list(
        "pk", "seq", "store__name", "placement", "persisted", "query",
        "items__id", "items__text", "items__record__external_id", "items__version")
    key = str(session.pk)
    out: list[StoredRecall] = []
    for pk, group in groupby(rows.iterator(chunk_size=2000), key=lambda row: row[0]):
        first, *rest = list(group)
        _pk, seq, store, placement, persisted, query = first[:6]
        items = [ItemFacts(text or "", record, version)
                 for *_recall, item, text, record, version in (first, *rest) if item is not None]
        out.append(StoredRecall(pk, store or "", placement, RecallFacts(
            session=key, seq=seq, store=store, at=None, items=items, persisted=persisted, query=query or None)))
    return out


@dataclass
class TrimRecalls:
    """What the lab shows of the recalls under one trim."""

    found: RecallsInTrim
    recalls: Sequence[StoredRecall]

    @property
    def any(self) -> bool:
        return bool(self.recalls)

    @property
    def kept(self) -> list[tuple[StoredRecall, bool]]:
        """The kept recalls shown (at most RECALLS_SHOWN), each with whether its message is sent edited."""
        return [(self.recalls[p.index], p.edited) for p in self.found.kept[:RECALLS_SHOWN]]

    @property
    def dropped(self) -> list[StoredRecall]:
        return [self.recalls[p.index] for p in self.found.dropped[:RECALLS_SHOWN]]

    @property
    def kept_count(self) -> int:
        return len(self.found.kept)

    @property
    def dropped_count(self) -> int:
        return len(self.found.dropped)

    @property
    def elsewhere_count(self) -> int:
        return len(self.found.elsewhere)


def trim_recalls(recalls: Sequence[StoredRecall], result: TrimResult, *, sent_before: int) -> TrimRecalls:
    """The recalls under ``result``, a trim of the first ``sent_before`` messages of the session."""
    found = recalls_in_trim((r.facts for r in recalls), kept=result.kept, dropped=_DroppedRuns(result),
                            edited={e.index for e in result.edited}, sent_before=sent_before)
    return TrimRecalls(found, recalls)


class _DroppedRuns:
    """The dropped input indices as the result's runs: ``in`` by bisection, no object per dropped message."""

    def __init__(self, result: TrimResult) -> None:
        runs = result.dropped_runs()
        self.starts = [run["from"] for run in runs]
        self.ends = [run["to"] for run in runs]

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int):
            return False
        k = bisect_right(self.starts, index) - 1
        return k >= 0 and index <= self.ends[k]


def has_placed_recalls() -> Exists:
    """An annotation: whether the session has a recall carried by a message (``sessions_recall_seqs`` reads only
    the sessions that do)."""
    return Exists(models.Recall.objects.filter(session=OuterRef("pk"), seq__isnull=False))


def sessions_recall_seqs(sessions: Iterable[models.Session]) -> dict[int, list[RecallFacts]]:
    """For the report: each session's recalls as the messages carrying them (no items), for the given sessions that
    have recalls carried by a message, in one query."""
    key = {session.pk: str(session.pk) for session in sessions}
    out: dict[int, list[RecallFacts]] = {}
    if not key:
        return out
    for session_id, seq in models.Recall.objects.filter(session_id__in=list(key), seq__isnull=False).order_by(
            "session_id", "seq", "id").values_list("session_id", "seq"):
        out.setdefault(session_id, []).append(RecallFacts(session=key[session_id], seq=seq, store=None, at=None,
                                                          items=()))
    return out


def recalls_dropped(recalls: Sequence[RecallFacts], result: TrimResult) -> int:
    """How many of the recalls ``result`` drops (``recall_trimmed``)."""
    if not recalls:
        return 0
    return len(recalls_in_trim(recalls, kept=result.kept, dropped=_DroppedRuns(result)).dropped)


def mark_rows(items: Iterable[object], found: TrimRecalls) -> None:
    """On each preview row whose message carries recalls, the stores they read: a dropped row then says it took
    recalled memory with it (``recall_trimmed``), a kept one that it holds it."""
    by_seq: dict[int, list[str]] = {}
    for recall in found.recalls:
        if recall.seq is not None:
            by_seq.setdefault(recall.seq, []).append(recall.store)
    if not by_seq:
        return
    for item in items:
        if isinstance(item, PreviewRow) and item.index is not None and item.index in by_seq:
            item.recalls = by_seq[item.index]
