"""Retrieval quality from QA (issue 27), read and written for the recall page and the API: QA people mark each item
of a recall relevant or not (``RecallItemMark``, one per item and person, changeable) and say how many records of
the store answer its query (``RecallJudgement``); the figures (``agents.memory.quality``) come from those marks, for
one recall and, per period and per query, for a store.

Marks are an annotation: the review roles write them (``access.require_role(..., "annotate")``: annotator, editor,
admin; an API key as its project's editor, recorded as the user who made it), every member reads them. Recalls are
reached through the sessions the user may see, stores through their projects: anything else is 404.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User as AccountUser
from django.core.exceptions import PermissionDenied
from django.db.models import Max, Q
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils import timezone

from agents import access, models
from agents.access import User
from agents.ledger.reading import store_for_user
from agents.memory import quality
from agents.memory.quality import Aggregate, Mark, QueryQuality, RecallQuality

# The queries a store's quality lists, the most recalled first.
QUERIES_LISTED = 100
K_MAX = 100


def recall_for_user(user: User, recall_id: int) -> models.Recall:
    """The recall, or Http404 when it does not exist or its session is not one the user may see."""
    try:
        return models.Recall.objects.select_related(
            "session", "session__agent", "session__agent__project", "store",
        ).defer("session__metadata", "session__violations").get(
            pk=recall_id, session__in=access.sessions_for_user(user))
    except models.Recall.DoesNotExist:
        raise Http404("No such recall.") from None


def recall_to_mark(user: User, recall_id: int) -> models.Recall:
    """The recall, for a user who may mark its items: 404 as ``recall_for_user``, then 403 without the annotate
    role (so that a viewer learns that before anything about the mark they sent)."""
    recall = recall_for_user(user, recall_id)
    _author(user, recall)
    return recall


def check_k(k: int | None) -> int | None:
    if k is not None and not 1 <= k <= K_MAX:
        raise ValueError(f"k: from 1 to {K_MAX} (or leave it out: every item the recall returned)")
    return k


# --- one recall ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemMarks:
    relevant: int  # people who marked it relevant
    not_relevant: int
    mine: Mark  # the user's own mark (None: not marked by them)

    @property
    def relevance(self) -> Mark:
        """What most of its marks say (``quality.item_relevance``)."""
        return quality.item_relevance([True] * self.relevant + [False] * self.not_relevant)


@dataclass(frozen=True)
class RecallMarks:
    items: list[models.RecallItem]  # by rank
    marks: dict[int, ItemMarks]  # by item id; every item has one
    relevant_total: int | None  # the most relevant records anyone counted (None: nobody did)
    judgements: int
    my_total: int | None  # the user's own count
    quality: QueryQuality


def recall_marks(recall: models.Recall, *, user: User, k: int | None = None) -> RecallMarks:
    """The recall's items by rank, their marks (counts and the user's own), the relevant records counted and the
    figures: three queries."""
    items = list(models.RecallItem.objects.filter(recall=recall).select_related("record").order_by("rank", "pk"))
    me = access.recorded_user(user)
    counts: dict[int, list[int]] = {item.pk: [0, 0] for item in items}
    mine: dict[int, bool] = {}
    for item_id, author_id, relevant in models.RecallItemMark.objects.filter(item__recall=recall).values_list(
            "item_id", "author_id", "relevant"):
        counts[item_id][0 if relevant else 1] += 1
        if me is not None and author_id == me.pk:
            mine[item_id] = relevant
    totals = dict(models.RecallJudgement.objects.filter(recall=recall).values_list("author_id", "relevant_total"))
    marks = {pk: ItemMarks(relevant=yes, not_relevant=no, mine=mine.get(pk)) for pk, (yes, no) in counts.items()}
    relevant_total = max(totals.values()) if totals else None
    return RecallMarks(
        items=items, marks=marks, relevant_total=relevant_total, judgements=len(totals),
        my_total=totals.get(me.pk) if me is not None else None,
        quality=quality.query_quality([marks[item.pk].relevance for item in items], k=check_k(k),
                                      relevant_total=relevant_total),
    )


def _author(user: User, recall: models.Recall) -> AccountUser:
    access.require_role(user, recall.session.agent.project, "annotate")
    author = access.recorded_user(user)
    if author is None:
        raise PermissionDenied("marks are recorded under a user: this API key was made on the command line, by no "
                               "user; use a key made on the project's settings page, or log in")
    return author


def recall_item_for_mark(recall: models.Recall, *, item_id: int | None = None,
                         rank: int | None = None) -> models.RecallItem:
    """The item of ``recall`` named by its id or its rank (ValueError naming the field when none is)."""
    if (item_id is None) == (rank is None):
        raise ValueError("item: give the item's id (item) or its rank (rank), one of them")
    rows = models.RecallItem.objects.filter(recall=recall)
    if item_id is not None:
        found = rows.filter(pk=item_id).first()
    else:
        found = rows.filter(rank=int(rank or 0)).order_by("pk").first()
    if found is None:
        ranks = list(rows.order_by("rank").values_list("rank", flat=True)[:50])
        listed = ", ".join(str(r) for r in ranks) if ranks else "none: the recall returned nothing"
        if item_id is not None:
            raise ValueError(f"item: no item {item_id} in recall {recall.pk}; its ranks: {listed}")
        raise ValueError(f"rank: no item at rank {rank} in recall {recall.pk}; its ranks: {listed}")
    return found


def recall_item_mark(*, user: User, recall: models.Recall, item: models.RecallItem,
                     relevant: bool | None) -> None:
    """The user's mark on ``item``: set (a second mark changes the first, never adds one), or cleared (None)."""
    author = _author(user, recall)
    if item.recall_id != recall.pk:
        raise ValueError(f"item: no item {item.pk} in recall {recall.pk}")
    if relevant is None:
        models.RecallItemMark.objects.filter(item=item, author=author).delete()
        return
    models.RecallItemMark.objects.update_or_create(item=item, author=author,
                                                   defaults={"relevant": relevant, "at": timezone.now()})


def recall_judgement_set(*, user: User, recall: models.Recall, relevant_total: int | None) -> None:
    """How many records of the store answer the recall's query, as the user counted them (None: take it back)."""
    author = _author(user, recall)
    if relevant_total is None:
        models.RecallJudgement.objects.filter(recall=recall, author=author).delete()
        return
    if relevant_total < 0:
        raise ValueError("relevant_total: 0 or more")
    models.RecallJudgement.objects.update_or_create(recall=recall, author=author,
                                                    defaults={"relevant_total": relevant_total, "at": timezone.now()})


# --- a store -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreQuality:
    store: models.MemoryStore
    period: str
    k: int | None
    overall: Aggregate
    periods: list[tuple[dt.date | None, Aggregate]]
    queries: list[tuple[str, Aggregate]]  # the QUERIES_LISTED most recalled
    queries_total: int


def store_recall_qualities(store: models.MemoryStore, *, k: int | None = None) -> list[RecallQuality]:
    """The figures of every recall of the store that someone marked or counted for (the others give none): four
    queries whatever the store's size, each as long as QA's marks (bounded by people's work, not by the store). A
    recall's time is when it was made, else when its session started."""
    # From the marks and counts to their recalls, never through the store's recalls: QA's marks are few, a store's
    # recalls may be millions.
    touched = models.Recall.objects.filter(
        Q(pk__in=models.RecallItemMark.objects.filter(item__recall__store=store).values("item__recall_id"))
        | Q(pk__in=models.RecallJudgement.objects.filter(recall__store=store).values("recall_id")))
    recalls = list(touched.annotate(when=Coalesce("at", "session__started_at")).order_by("pk").values_list(
        "pk", "query", "when"))
    items: dict[int, list[int]] = {}
    for recall_id, item_id in models.RecallItem.objects.filter(recall__in=touched.values("pk")).order_by(
            "recall_id", "rank", "pk").values_list("recall_id", "pk"):
        items.setdefault(recall_id, []).append(item_id)
    votes: dict[int, list[bool]] = {}
    for item_id, relevant in models.RecallItemMark.objects.filter(item__recall__store=store).values_list(
            "item_id", "relevant"):
        votes.setdefault(item_id, []).append(relevant)
    totals = dict(models.RecallJudgement.objects.filter(recall__store=store).values("recall").annotate(
        n=Max("relevant_total")).values_list("recall", "n"))
    return [RecallQuality(
        recall=pk, store=store.pk, query=query or "", at=when,
        quality=quality.query_quality([quality.item_relevance(votes.get(i, [])) for i in items.get(pk, [])], k=k,
                                      relevant_total=totals.get(pk)),
    ) for pk, query, when in recalls]


def store_quality(*, user: User, store_id: int, period: str = "week", k: int | None = None) -> StoreQuality:
    """A store of the user's projects (404 for any other): its figures overall, per period and per query."""
    if period not in quality.PERIODS:
        raise ValueError(f"period: one of {', '.join(quality.PERIODS)}")
    store = store_for_user(user, store_id)
    rows = store_recall_qualities(store, k=check_k(k))
    queries = quality.by_query(rows)
    return StoreQuality(store=store, period=period, k=k, overall=quality.aggregate(r.quality for r in rows),
                        periods=quality.by_period(rows, period), queries=queries[:QUERIES_LISTED],
                        queries_total=len(queries))


def period_bounds(start: dt.date | None, period: str) -> tuple[dt.date | None, dt.date | None]:
    if start is None:
        return None, None
    return start, quality.period_end(start, period)


# --- as the pages show them ----------------------------------------------------------------------------------------


def shown_figure(value: float | None) -> str:
    """A figure as the page writes it: three decimals at most, "—" where it is not given."""
    if value is None:
        return "—"
    return f"{value:.3f}".rstrip("0").rstrip(".")


AGGREGATE_FIGURES = (("precision", "precision"), ("recall", "recall"), ("mrr", "reciprocal_rank"), ("ndcg", "ndcg"),
                     ("hit_rate", "hit"))


def aggregate_cells(agg: Aggregate) -> list[tuple[str, int]]:
    """Precision, recall, MRR, nDCG and hit rate as shown, each with the recalls its mean is over."""
    return [(shown_figure(getattr(agg, name)), agg.counted.get(counted, 0)) for name, counted in AGGREGATE_FIGURES]


@dataclass(frozen=True)
class PeriodRow:
    start: Any  # dt.date | None: recalls of no known time
    end: Any
    figures: Aggregate

    @property
    def cells(self) -> list[tuple[str, int]]:
        return aggregate_cells(self.figures)


# The store's weeks the recall page shows (the JSON has them all).
STORE_WEEKS_SHOWN = 12


def store_over_time(store: models.MemoryStore | None,
               query: str) -> tuple[list[PeriodRow], int, Aggregate | None]:
    """The store's figures per week (the latest STORE_WEEKS_SHOWN, newest first) and for ``query``: four queries,
    as long as QA's marks (store_recall_qualities): the recall page and the memory page's health show them."""
    if store is None:
        return [], 0, None
    rows = store_recall_qualities(store)
    weeks = quality.by_period(rows, "week")
    shown = [PeriodRow(start=start, end=quality.period_end(start, "week") if start else None, figures=agg)
             for start, agg in reversed(weeks)][:STORE_WEEKS_SHOWN]
    same = [r.quality for r in rows if r.query.strip() == query.strip()]
    return shown, len(weeks), quality.aggregate(same) if same else None
