"""Retrieval quality from QA's marks (issue 27): for one recall, precision@k, recall@k, reciprocal rank, nDCG@k and
hit; over many, their means per store, per query and per period, as Phoenix computes them for retrievers.

Plain values in, plain values out: a recall is its items' relevance in rank order (``True`` relevant, ``False`` not,
``None`` not marked yet) and, where a QA person counted them, how many records of the store answer the query.

What each figure is, at ``k`` (None: every item the recall returned):

- precision@k: items marked relevant among the first k, over k. A recall that returned fewer than k items still
  divides by k (as trec_eval and Phoenix do: the positions it left empty found nothing);
- recall@k: items marked relevant among the first k, over the relevant records of the store (``relevant_total``).
  Only where that total is known (None otherwise) and not zero (nothing to find: None). A count below the items
  marked relevant among the first k gives 1 (the count fell short: the marks show they exist);
- reciprocal rank: 1 / the rank of the first relevant item (0 when none is relevant), over every item returned;
- nDCG@k: binary gains (1 relevant, 0 not), log2 discount (rank r weighs 1 / log2(r + 1)), over the ideal order of
  the recall's own items, as Phoenix (scikit-learn's ``ndcg_score``) does: the records it did not return do not
  enter the ideal. 0 when none is relevant;
- hit: 1 when an item among the first k is relevant, else 0; its mean is the hit rate.

Unmarked items: a figure that an unmarked item could change is not given (None), never guessed. Phoenix does the
same (a missing evaluation makes its precision and nDCG NaN, and its reciprocal rank NaN when one comes before the
first hit). Counting an unmarked item as not relevant would make every recall QA has not finished look bad; leaving
it out of precision's denominator would rank a recall with one relevant item marked (and nine to go) as perfect. So:
precision@k needs the first k marked; recall@k too, unless the relevant items marked among them already reach the
count (1 whatever the rest); reciprocal rank needs every item before the first relevant one marked (or every item,
when none is relevant); hit needs a relevant one among the first k, or all k marked. Each of these four is given
exactly when every way of marking the unmarked items gives it the same value. nDCG@k needs the first k marked and,
while fewer than k items are marked relevant, the rest too (they enter the ideal), unless none of the first k is
relevant (0 whatever the rest): never given where two ways of marking disagree, though left out in a few cases where
they all agree (a relevant item first and unmarked ones after it). tests/test_retrieval_quality.py checks both.
A recall that returned nothing has 0 for each (nothing relevant was found), recall@k aside.

The means (``aggregate``) are over the recalls where the figure is given; ``counted`` says how many that is, for
each figure.
"""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

Mark = bool | None

METRICS = ("precision", "recall", "reciprocal_rank", "ndcg", "hit")
PERIODS = ("day", "week", "month")


def item_relevance(votes: Iterable[bool]) -> Mark:
    """One item's relevance from the marks of several QA people: what most of them said; None when nobody marked
    it or they are split evenly (a disputed item counts as not marked)."""
    yes = no = 0
    for vote in votes:
        if vote:
            yes += 1
        else:
            no += 1
    if yes == no:
        return None
    return yes > no


def _plain(relevant: Sequence[bool], cut: int,
           total: int | None) -> tuple[float, float | None, float, float]:
    """Precision, recall, reciprocal rank and hit at ``cut`` of a fully marked recall."""
    found = sum(relevant[:cut])
    first = next((rank for rank, yes in enumerate(relevant, start=1) if yes), None)
    return (found / cut, min(1.0, found / total) if total else None, 1 / first if first else 0.0,
            1.0 if found else 0.0)


def _dcg(gains: Sequence[int]) -> float:
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


@dataclass(frozen=True)
class QueryQuality:
    """One recall's figures (None: not given, see the module's docstring), with what they were computed from."""

    k: int  # the cut-off used: the ``k`` asked, or the recall's item count
    items: int
    marked: int
    relevant: int  # items marked relevant (all of them, not only the first k)
    relevant_total: int | None  # relevant records of the store, where counted
    precision: float | None
    recall: float | None
    reciprocal_rank: float | None
    ndcg: float | None
    hit: float | None

    def figure(self, name: str) -> float | None:
        value: float | None = getattr(self, name)
        return value


def query_quality(marks: Sequence[Mark], *, k: int | None = None, relevant_total: int | None = None) -> QueryQuality:
    """The figures of one recall whose items, in rank order, are marked ``marks``."""
    if k is not None and k < 1:
        raise ValueError("k: at least 1")
    if relevant_total is not None and relevant_total < 0:
        raise ValueError("relevant_total: at least 0")
    cut = len(marks) if k is None else k
    top = list(marks[:cut])
    relevant = sum(1 for m in marks if m is True)
    total = relevant_total
    top_known = all(m is not None for m in top)
    top_relevant = sum(1 for m in top if m is True)

    if not marks:
        # Nothing returned: nothing relevant found.
        return QueryQuality(k=cut, items=0, marked=0, relevant=0, relevant_total=total, precision=0.0,
                            recall=0.0 if total else None, reciprocal_rank=0.0, ndcg=0.0, hit=0.0)

    # Precision, recall, reciprocal rank and hit never fall when an item turns relevant: the unmarked items all not
    # relevant give each its least, all relevant its most; equal, that is the figure whatever they turn out to be.
    least = _plain([m is True for m in marks], cut, total)
    most = _plain([m is not False for m in marks], cut, total)
    precision, recall, reciprocal_rank, hit = (lo if lo == hi else None for lo, hi in zip(least, most, strict=True))

    ndcg: float | None = None
    rest_known = all(m is not None for m in marks[cut:])
    if top_known and not top_relevant:
        ndcg = 0.0
    elif top_known and (relevant >= cut or rest_known):
        ideal = _dcg([1] * min(relevant, cut))
        ndcg = _dcg([1 if m else 0 for m in top]) / ideal if ideal else 0.0

    return QueryQuality(k=cut, items=len(marks), marked=sum(1 for m in marks if m is not None), relevant=relevant,
                        relevant_total=total, precision=precision, recall=recall, reciprocal_rank=reciprocal_rank,
                        ndcg=ndcg, hit=hit)


# --- over many recalls ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Aggregate:
    """Means of the figures over ``recalls`` recalls; each over those where it is given (``counted``). ``mrr`` is the
    mean reciprocal rank, ``hit_rate`` the mean hit."""

    recalls: int
    precision: float | None
    recall: float | None
    mrr: float | None
    ndcg: float | None
    hit_rate: float | None
    counted: dict[str, int] = field(default_factory=dict)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(qualities: Iterable[QueryQuality]) -> Aggregate:
    rows = list(qualities)
    given = {name: [v for q in rows if (v := q.figure(name)) is not None] for name in METRICS}
    return Aggregate(
        recalls=len(rows), precision=_mean(given["precision"]), recall=_mean(given["recall"]),
        mrr=_mean(given["reciprocal_rank"]), ndcg=_mean(given["ndcg"]), hit_rate=_mean(given["hit"]),
        counted={name: len(values) for name, values in given.items()},
    )


@dataclass(frozen=True)
class RecallQuality:
    """One recall's figures with what the aggregates group by."""

    recall: int
    store: int | None
    query: str
    at: dt.datetime | None
    quality: QueryQuality


def period_start(at: dt.datetime, period: str) -> dt.date:
    """The first day (UTC) of the period holding ``at``: the day, the week's Monday, the month's first."""
    day = (at.astimezone(dt.UTC) if at.tzinfo else at).date()
    if period == "day":
        return day
    if period == "week":
        return day - dt.timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    raise ValueError(f"period: one of {', '.join(PERIODS)}")


def period_end(start: dt.date, period: str) -> dt.date:
    """The first day after the period that starts on ``start``."""
    if period == "day":
        return start + dt.timedelta(days=1)
    if period == "week":
        return start + dt.timedelta(days=7)
    if period == "month":
        return (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    raise ValueError(f"period: one of {', '.join(PERIODS)}")


def _grouped(rows: Iterable[RecallQuality], key: Callable[[RecallQuality], object]) -> dict[object, Aggregate]:
    groups: dict[object, list[QueryQuality]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row.quality)
    return {name: aggregate(qualities) for name, qualities in groups.items()}


def by_period(rows: Iterable[RecallQuality], period: str = "week") -> list[tuple[dt.date | None, Aggregate]]:
    """The means per period, oldest first; recalls without a time together last (period None)."""
    if period not in PERIODS:
        raise ValueError(f"period: one of {', '.join(PERIODS)}")
    groups = _grouped(rows, lambda r: period_start(r.at, period) if r.at is not None else None)
    dated = sorted((start, agg) for start, agg in groups.items() if isinstance(start, dt.date))
    undated = [(None, groups[None])] if None in groups else []
    return [*dated, *undated]


def by_query(rows: Iterable[RecallQuality]) -> list[tuple[str, Aggregate]]:
    """The means per query text (as written, spaces at either end aside), the most recalled first."""
    groups = _grouped(rows, lambda r: r.query.strip())
    return sorted(((str(q), agg) for q, agg in groups.items()), key=lambda pair: (-pair[1].recalls, pair[0]))
