"""Retrieval quality from QA's marks (agents.memory.quality): hand-made recalls whose figures are written as their
arithmetic, the unmarked items' rule, the means per store, query and period, and every figure of fully marked
recalls against trec_eval (pytrec-eval-terrier), the reference implementation of these measures."""
from __future__ import annotations

import datetime as dt
import itertools
import math

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory.quality import (
    RecallQuality,
    aggregate,
    by_period,
    by_query,
    item_relevance,
    period_end,
    period_start,
    query_quality,
)
from agents.memory.retrieval_what_if import WhatIfItem, what_if

T, F, U = True, False, None


def log2(x: float) -> float:
    return math.log2(x)


def test_it_computes_a_fully_marked_recall():
    q = query_quality([T, F, T])
    assert q.k == 3
    assert q.precision == pytest.approx(2 / 3)
    assert q.recall is None  # nobody counted the store's relevant records
    assert q.reciprocal_rank == 1
    assert q.ndcg == pytest.approx((1 + 1 / log2(4)) / (1 + 1 / log2(3)))
    assert q.hit == 1


def test_it_cuts_at_k_and_divides_recall_by_the_relevant_records_counted():
    q = query_quality([F, T, F, T], k=2, relevant_total=5)
    assert q.precision == pytest.approx(1 / 2)
    assert q.recall == pytest.approx(1 / 5)
    assert q.reciprocal_rank == pytest.approx(1 / 2)
    # Two items are relevant, so the ideal of the first two is both relevant.
    assert q.ndcg == pytest.approx((1 / log2(3)) / (1 + 1 / log2(3)))
    assert q.hit == 1


def test_it_divides_precision_by_k_when_fewer_items_came_back():
    q = query_quality([T], k=3)
    assert q.precision == pytest.approx(1 / 3)
    assert q.ndcg == 1  # the ideal of its own items: the one relevant item first
    assert q.hit == 1


def test_it_gives_zeros_when_nothing_is_relevant():
    q = query_quality([F, F], relevant_total=2)
    assert (q.precision, q.recall, q.reciprocal_rank, q.ndcg, q.hit) == (0, 0, 0, 0, 0)


def test_a_recall_that_returned_nothing_found_nothing():
    q = query_quality([], relevant_total=3)
    assert (q.precision, q.recall, q.reciprocal_rank, q.ndcg, q.hit) == (0, 0, 0, 0, 0)
    assert query_quality([]).recall is None


def test_a_count_below_the_relevant_items_found_gives_recall_1():
    q = query_quality([T, T, F], relevant_total=1)
    assert q.relevant_total == 1  # as counted
    assert q.recall == 1  # min(1, 2 / 1): the count fell short


def test_recall_is_not_given_when_nothing_is_to_be_found():
    assert query_quality([F, F], relevant_total=0).recall is None


def test_an_unmarked_item_leaves_out_only_the_figures_it_could_change():
    q = query_quality([U, T])
    assert (q.precision, q.reciprocal_rank, q.ndcg) == (None, None, None)
    assert q.hit == 1  # a relevant item is among them, whatever the first is
    q = query_quality([T, U])
    assert (q.precision, q.ndcg) == (None, None)
    assert q.reciprocal_rank == 1  # the first is relevant: the second cannot change it
    q = query_quality([T, U], k=1)
    assert (q.precision, q.reciprocal_rank, q.ndcg, q.hit) == (1, 1, 1, 1)
    q = query_quality([F, U], k=1)
    assert q.precision == 0 and q.hit == 0
    assert q.reciprocal_rank is None  # the second could be the first relevant one
    assert q.ndcg == 0  # nothing relevant in the first: 0 whatever the second is
    q = query_quality([T, F, U], k=2)
    assert q.ndcg is None  # a relevant third item would enter the ideal of the first two
    assert query_quality([T, T, U], k=2).ndcg == 1  # two relevant already fill the ideal
    q = query_quality([F, U, F])
    assert (q.precision, q.reciprocal_rank, q.ndcg, q.hit) == (None, None, None, None)
    assert query_quality([U, U], relevant_total=3).recall is None
    assert query_quality([T, U], relevant_total=1).recall == 1  # the count is reached: 1 whatever #2 is
    assert query_quality([T, U, F]).marked == 2


def test_an_item_is_what_most_of_its_marks_say():
    assert item_relevance([True, False, True]) is True
    assert item_relevance([False]) is False
    assert item_relevance([True, False]) is None  # split evenly: disputed, counted as not marked
    assert item_relevance([]) is None


def test_it_averages_each_figure_over_the_recalls_that_give_it():
    a = query_quality([T, F, T])
    b = query_quality([F, T], relevant_total=4)
    c = query_quality([U, F])
    agg = aggregate([a, b, c])
    assert agg.recalls == 3
    assert agg.precision == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert agg.recall == pytest.approx((1 / 4) / 1)
    assert agg.mrr == pytest.approx((1 + 1 / 2) / 2)
    assert agg.ndcg == pytest.approx(((1 + 1 / log2(4)) / (1 + 1 / log2(3)) + (1 / log2(3)) / 1) / 2)
    assert agg.hit_rate == pytest.approx((1 + 1) / 2)
    assert agg.counted == {"precision": 2, "recall": 1, "reciprocal_rank": 2, "ndcg": 2, "hit": 2}
    empty = aggregate([])
    assert empty.recalls == 0 and empty.precision is None


def test_it_groups_by_week_month_day_and_query():
    monday = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)
    rows = [
        RecallQuality(recall=1, store=1, query="trip plan", at=monday, quality=query_quality([T, F])),
        RecallQuality(recall=2, store=1, query="trip plan ", at=monday + dt.timedelta(days=6, hours=15),
                      quality=query_quality([T, T])),
        RecallQuality(recall=3, store=1, query="diet", at=monday + dt.timedelta(days=7),
                      quality=query_quality([F, F])),
        RecallQuality(recall=4, store=1, query="diet", at=None, quality=query_quality([T])),
    ]
    weeks = by_period(rows, "week")
    assert [start for start, _ in weeks] == [dt.date(2026, 11, 30), dt.date(2026, 12, 7), None]
    assert weeks[0][1].precision == pytest.approx((1 / 2 + 2 / 2) / 2)
    assert weeks[1][1].precision == 0
    assert weeks[2][1].precision == 1
    months = by_period(rows, "month")
    assert [start for start, _ in months] == [dt.date(2026, 11, 1), dt.date(2026, 12, 1), None]
    assert months[0][1].recalls == 1 and months[1][1].recalls == 2
    assert len(by_period(rows, "day")) == 4
    queries = dict(by_query(rows))
    assert queries["trip plan"].recalls == 2 and queries["diet"].recalls == 2
    assert queries["diet"].hit_rate == pytest.approx((0 + 1) / 2)
    with pytest.raises(ValueError, match="^period: "):
        by_period(rows, "year")


def test_periods_start_and_end_in_utc():
    evening = dt.datetime(2026, 12, 6, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5)))  # Monday 04:30 UTC
    assert period_start(evening, "week") == dt.date(2026, 12, 7)
    assert period_end(dt.date(2026, 12, 1), "month") == dt.date(2027, 1, 1)
    assert period_end(dt.date(2026, 2, 1), "month") == dt.date(2026, 3, 1)
    assert period_end(dt.date(2026, 12, 7), "week") == dt.date(2026, 12, 14)


def test_bad_k_and_totals_are_refused():
    with pytest.raises(ValueError, match="^k: "):
        query_quality([T], k=0)
    with pytest.raises(ValueError, match="^relevant_total: "):
        query_quality([T], relevant_total=-1)


@settings(max_examples=400, deadline=None)
@given(marks=st.lists(st.sampled_from([T, F, U]), max_size=7), k=st.one_of(st.none(), st.integers(1, 8)),
       total=st.one_of(st.none(), st.integers(0, 8)))
def test_a_figure_is_given_exactly_when_every_way_of_marking_the_rest_agrees(marks, k, total):
    """The unmarked rule: each figure of every completion of the unmarked items (each True or False) against the
    figure of the partly marked recall: given, it is theirs; not given, they disagree (nDCG: given, it is theirs)."""
    unknown = [i for i, m in enumerate(marks) if m is None]
    completions = []
    for bits in itertools.product([True, False], repeat=len(unknown)):
        filled = list(marks)
        for i, bit in zip(unknown, bits, strict=True):
            filled[i] = bit
        completions.append(query_quality(filled, k=k, relevant_total=total))
    partial = query_quality(marks, k=k, relevant_total=total)
    for name in ("precision", "recall", "reciprocal_rank", "ndcg", "hit"):
        values = {None if (v := c.figure(name)) is None else round(v, 12) for c in completions}
        given = partial.figure(name)
        if given is not None:
            assert values == {round(given, 12)}, (name, given, values)  # never a guess
        elif name != "ndcg":  # nDCG may be left out where all agree (the module's docstring says when)
            assert len(values) > 1 or values == {None}, (name, values)


# --- against trec_eval -------------------------------------------------------------------------------------------


def trec_eval(marks: list[bool], k: int, relevant_total: int) -> dict[str, float]:
    """trec_eval's P@k, recall@k, reciprocal rank, nDCG@k and success@k of a run returning items d0, d1, ... in
    order. nDCG takes the ideal from the judged documents, so its judgements are the recall's own items; recall's
    add the relevant records the recall did not return."""
    run = {"q": {f"d{i}": float(len(marks) - i) for i in range(len(marks))}}
    own = {"q": {f"d{i}": int(m) for i, m in enumerate(marks)}}
    measures = {f"P_{k}", "recip_rank", f"ndcg_cut_{k}", f"success_{k}"}
    out = pytrec_eval.RelevanceEvaluator(own, measures).evaluate(run)["q"]
    missing = relevant_total - sum(marks)
    store = {"q": {**own["q"], **{f"x{i}": 1 for i in range(missing)}}}
    out |= pytrec_eval.RelevanceEvaluator(store, {f"recall_{k}"}).evaluate(run)["q"]
    return out


@settings(max_examples=300, deadline=None)
@given(marks=st.lists(st.booleans(), min_size=1, max_size=12), k=st.integers(1, 15), extra=st.integers(0, 5))
def test_it_agrees_with_trec_eval_on_fully_marked_recalls(marks, k, extra):
    total = sum(marks) + extra
    q = query_quality(marks, k=k, relevant_total=total)
    ref = trec_eval(marks, k, total)
    assert q.precision == pytest.approx(ref[f"P_{k}"])
    assert q.reciprocal_rank == pytest.approx(ref["recip_rank"])
    assert q.ndcg == pytest.approx(ref[f"ndcg_cut_{k}"])
    assert q.hit == pytest.approx(ref[f"success_{k}"])
    if total:
        assert q.recall == pytest.approx(ref[f"recall_{k}"])
    else:
        assert q.recall is None


def test_trec_eval_agrees_on_the_hand_made_case():
    ref = trec_eval([F, T, F, T], 2, 5)
    assert ref["P_2"] == pytest.approx(1 / 2)
    assert ref["recall_2"] == pytest.approx(1 / 5)
    assert ref["ndcg_cut_2"] == pytest.approx((1 / log2(3)) / (1 + 1 / log2(3)))


# --- retrieval what-if ---------------------------------------------------------------------------------------------


ITEMS = [WhatIfItem(rank=1, score=0.9, tokens=10), WhatIfItem(rank=2, score=0.5, tokens=7),
         WhatIfItem(rank=3, score=None, tokens=4), WhatIfItem(rank=4, score=0.2, tokens=3)]


def test_a_limit_keeps_the_first_items_by_rank():
    w = what_if(list(reversed(ITEMS)), limit=2)
    assert [f.item.rank for f in w.kept] == [1, 2]
    assert [(f.item.rank, f.reason) for f in w.dropped] == [(3, "past the limit"), (4, "past the limit")]
    assert w.tokens_dropped == 4 + 3
    assert what_if(ITEMS, limit=10).dropped == []  # what lay past the items returned is not recorded
    assert [f.item.rank for f in what_if(ITEMS, limit=0).dropped] == [1, 2, 3, 4]


def test_a_threshold_drops_lower_scores_and_keeps_unscored_items():
    w = what_if(ITEMS, score_threshold=0.5)
    assert [f.item.rank for f in w.kept] == [1, 2, 3]  # 0.5 is at the threshold: kept
    assert [(f.item.rank, f.reason) for f in w.dropped] == [(4, "below the threshold")]
    assert [f.item.rank for f in w.items if f.unscored] == [3]
    assert w.unscored == 1
    both = what_if(ITEMS, limit=3, score_threshold=0.6)
    assert [f.item.rank for f in both.kept] == [1, 3]
    assert both.tokens_dropped == 7 + 3
    assert what_if(ITEMS).dropped == [] and what_if(ITEMS).unscored == 0
    with pytest.raises(ValueError, match="^limit: "):
        what_if(ITEMS, limit=-1)
