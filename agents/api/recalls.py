"""The API's recall page twins and retrieval quality (issue 27): one recall with its items, QA's marks and the figures
they give; marking an item relevant or not and counting a query's relevant records (the review roles); the
retrieval what-if; and a store's figures per period and per query. Each endpoint makes one call into
``agents.ledger`` (``quality``, ``recall_page``), which scopes to the caller's projects (404 for anything else) and
checks the annotate role (403) for a write."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel, ConfigDict, Field
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.endpoints import api, body_as, documented, query_as, query_parameters, write_api
from agents.api.memory import Time, api_url, examples
from agents.ledger import quality, recall_page
from agents.memory.quality import PERIODS, Aggregate, QueryQuality

# --- shapes ----------------------------------------------------------------------------------------------------------


class QualityOut(BaseModel):
    """One recall's figures from QA's marks; null where an unmarked item could change the figure (recall: also where
    nobody counted the store's relevant records)."""

    k: int = Field(description="The cut-off: k asked, or every item the recall returned.")
    items: int
    marked: int = Field(description="Items with a mark (what most of their marks say; a tie counts as unmarked).")
    relevant: int = Field(description="Items marked relevant.")
    relevant_total: int | None = Field(description="Relevant records of the store, as QA counted them (the most).")
    precision: float | None
    recall: float | None
    reciprocal_rank: float | None
    ndcg: float | None
    hit: float | None


class MarksOut(BaseModel):
    relevant: int = Field(description="People who marked it relevant.")
    not_relevant: int
    relevance: bool | None = Field(description="What most marks say; null: not marked, or split evenly.")
    mine: bool | None = Field(description="Your own mark.")


class RecallDetailItemOut(BaseModel):
    id: int
    rank: int
    score: float | None
    text: str = Field(description="The text as sent.")
    record: int | None = Field(description="The record it matched; null: no record of the store holds it.")
    version: int | None
    record_url: str | None
    metadata: dict[str, Any] = Field(description="What the item's library gave with it, as stored.")
    marks: MarksOut


class RecallDetailOut(BaseModel):
    """A recall, its items by rank with QA's marks, and the figures the marks give."""

    model_config = examples({
        "id": 17, "session": 12, "seq": 7, "call": None, "store": 3, "query": "Make me a plan for the trip.",
        "params": {"limit": 3}, "placement": "message", "persisted": True, "at": "2026-12-01T09:00:00+00:00",
        "page_url": "https://memoryviz.example/memory/recalls/17/",
        "items": [{"id": 90, "rank": 1, "score": 0.82, "text": "User is vegan", "record": 41, "version": 1,
                   "record_url": "https://memoryviz.example/api/memory/records/41/", "metadata": {"category": "diet"},
                   "marks": {"relevant": 2, "not_relevant": 0, "relevance": True, "mine": True}},
                  {"id": 91, "rank": 2, "score": 0.4, "text": "User likes trains", "record": 42, "version": 2,
                   "record_url": "https://memoryviz.example/api/memory/records/42/", "metadata": {},
                   "marks": {"relevant": 0, "not_relevant": 1, "relevance": False, "mine": None}}],
        "judgements": 1, "my_relevant_total": None,
        "quality": {"k": 2, "items": 2, "marked": 2, "relevant": 1, "relevant_total": 3, "precision": 0.5,
                    "recall": 0.3333333333333333, "reciprocal_rank": 1.0, "ndcg": 1.0, "hit": 1.0},
        "marks_url": "https://memoryviz.example/api/memory/recalls/17/marks/",
        "what_if_url": "https://memoryviz.example/api/memory/recalls/17/what-if/",
    })

    id: int
    session: int
    seq: int | None
    call: int | None
    store: int | None
    query: str
    params: dict[str, Any]
    placement: str
    persisted: bool
    at: Time
    page_url: str
    items: list[RecallDetailItemOut]
    judgements: int = Field(description="How many people counted the store's relevant records.")
    my_relevant_total: int | None
    quality: QualityOut
    marks_url: str
    what_if_url: str


class KQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    k: int | None = Field(default=None, ge=1, le=quality.K_MAX,
                          description="Cut-off of precision, recall, nDCG and hit (default: every item)")


class MarkIn(BaseModel):
    """Your mark on one item, named by ``item`` (its id) or ``rank``: ``relevant`` true or false; null takes your mark
    back. Marking again changes your mark. Or, with ``relevant_total`` alone, how many records of the store answer
    the query (null takes your count back)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"rank": 1, "relevant": True}, {"item": 91, "relevant": False}, {"relevant_total": 3}]})

    item: int | None = Field(default=None, ge=1)
    rank: int | None = Field(default=None, ge=0)
    relevant: bool | None = None
    relevant_total: int | None = Field(default=None, ge=0)


class WhatIfItemOut(BaseModel):
    id: int
    rank: int
    score: float | None
    tokens: int = Field(description="Its text's tokens, with the session's counter (without a message's overhead).")
    kept: bool
    reason: str = Field(description="Why dropped: 'past the limit' or 'below the threshold'; '' when kept.")
    unscored: bool = Field(description="No score: kept whatever the threshold.")


class WindowOut(BaseModel):
    call: int | None = Field(description="The captured call that received the recall, where the recall names one.")
    seq: int | None = Field(description="The reply.")
    part: str = Field(description="recalled_memory, or retrieved_documents for a knowledge store.")
    window: int
    counter: str
    part_before: int
    part_after: int
    total_before: int
    total_after: int


class WhatIfOut(BaseModel):
    """Which items a limit (the first N by rank) and a score threshold (scores below it dropped; an item without a
    score kept) would have kept, and the window of the call that received the recall before and after."""

    model_config = examples({
        "recall": 17, "limit": 1, "score_threshold": None,
        "items": [{"id": 90, "rank": 1, "score": 0.82, "tokens": 4, "kept": True, "reason": "", "unscored": False},
                  {"id": 91, "rank": 2, "score": 0.4, "tokens": 4, "kept": False, "reason": "past the limit",
                   "unscored": False}],
        "kept": 1, "dropped": 1, "tokens_dropped": 4,
        "window": {"call": None, "seq": 9, "part": "recalled_memory", "window": 128000, "counter": "cl100k",
                   "part_before": 46, "part_after": 42, "total_before": 305, "total_after": 301},
        "window_note": "",
    })

    recall: int
    limit: int | None
    score_threshold: float | None
    items: list[WhatIfItemOut]
    kept: int
    dropped: int
    tokens_dropped: int
    window: WindowOut | None
    window_note: str = Field(description="Why there are no window figures, when there are none.")


class AggregateOut(BaseModel):
    recalls: int = Field(description="Recalls marked or counted for.")
    precision: float | None
    recall: float | None
    mrr: float | None = Field(description="Mean reciprocal rank.")
    ndcg: float | None
    hit_rate: float | None
    counted: dict[str, int] = Field(description="Over how many recalls each mean is (those where it is given).")


class PeriodOut(AggregateOut):
    start: str | None = Field(description="The period's first day (UTC); null: recalls of no known time.")
    end: str | None = Field(description="The day after its last.")


class QueryAggregateOut(AggregateOut):
    query: str


class StoreQualityOut(BaseModel):
    """A store's retrieval quality from QA's marks: overall, per period (oldest first) and per query (the most
    recalled first, at most 100)."""

    model_config = examples({
        "store": 3, "period": "week", "k": None,
        "overall": {"recalls": 2, "precision": 0.75, "recall": 0.3333333333333333, "mrr": 1.0, "ndcg": 0.95,
                    "hit_rate": 1.0, "counted": {"precision": 2, "recall": 1, "reciprocal_rank": 2, "ndcg": 2,
                                                 "hit": 2}},
        "periods": [{"start": "2026-11-30", "end": "2026-12-07", "recalls": 2, "precision": 0.75,
                     "recall": 0.3333333333333333, "mrr": 1.0, "ndcg": 0.95, "hit_rate": 1.0,
                     "counted": {"precision": 2, "recall": 1, "reciprocal_rank": 2, "ndcg": 2, "hit": 2}}],
        "queries": [{"query": "Make me a plan for the trip.", "recalls": 2, "precision": 0.75,
                     "recall": 0.3333333333333333, "mrr": 1.0, "ndcg": 0.95, "hit_rate": 1.0,
                     "counted": {"precision": 2, "recall": 1, "reciprocal_rank": 2, "ndcg": 2, "hit": 2}}],
        "queries_total": 1,
    })

    store: int
    period: str
    k: int | None
    overall: AggregateOut
    periods: list[PeriodOut]
    queries: list[QueryAggregateOut]
    queries_total: int


class StoreQualityQuery(KQuery):
    period: str = Field(default="week", description=f"One of {', '.join(PERIODS)} (UTC; a week starts on Monday)")


# --- shaping -----------------------------------------------------------------------------------------------------


def _quality(q: QueryQuality) -> QualityOut:
    return QualityOut(k=q.k, items=q.items, marked=q.marked, relevant=q.relevant, relevant_total=q.relevant_total,
                      precision=q.precision, recall=q.recall, reciprocal_rank=q.reciprocal_rank, ndcg=q.ndcg,
                      hit=q.hit)


def _aggregate(agg: Aggregate) -> dict[str, Any]:
    return {"recalls": agg.recalls, "precision": agg.precision, "recall": agg.recall, "mrr": agg.mrr,
            "ndcg": agg.ndcg, "hit_rate": agg.hit_rate, "counted": agg.counted}


def _recall_detail(request: Request, recall_id: int, k: int | None) -> dict[str, Any]:
    recall = quality.recall_for_user(request.user, recall_id)
    marks = quality.recall_marks(recall, user=request.user, k=k)
    return RecallDetailOut(
        id=recall.pk, session=recall.session_id, seq=recall.seq, call=recall.llm_call_id, store=recall.store_id,
        query=recall.query, params=recall.params if isinstance(recall.params, dict) else {},
        placement=recall.placement, persisted=recall.persisted, at=recall.at,
        page_url=request.build_absolute_uri(recall_page.recall_path(recall)),
        items=[RecallDetailItemOut(
            id=item.pk, rank=item.rank, score=item.score, text=item.text, record=item.record_id,
            version=item.version,
            record_url=api_url(request, "memory_record", item.record_id) if item.record_id else None,
            metadata=item.metadata if isinstance(item.metadata, dict) else {},
            marks=MarksOut(relevant=marks.marks[item.pk].relevant, not_relevant=marks.marks[item.pk].not_relevant,
                           relevance=marks.marks[item.pk].relevance, mine=marks.marks[item.pk].mine),
        ) for item in marks.items],
        judgements=marks.judgements, my_relevant_total=marks.my_total, quality=_quality(marks.quality),
        marks_url=api_url(request, "memory_recall_marks", recall.pk),
        what_if_url=api_url(request, "memory_recall_what_if", recall.pk),
    ).model_dump(mode="json")


# --- the endpoints -------------------------------------------------------------------------------------------------


@documented("memory_recall", "A recall with its items, QA's marks and the figures they give", 400, 401, 404,
            response=RecallDetailOut, parameters=query_parameters(KQuery))
@api
def memory_recall(request: Request, recall_id: int) -> Response:
    """The recall (its session and message, store, query, parameters), its items by rank with how many people
    marked each relevant or not and your own mark, how many records of the store answer the query where someone
    counted, and the figures: precision@k, recall@k, reciprocal rank, nDCG@k and hit (null where an unmarked item
    could change them)."""
    query = query_as(request, KQuery)
    return Response(_recall_detail(request, recall_id, query.k))


@documented("memory_recall_marks", "Mark a recalled item relevant or not (annotator and up)", 400, 401, 403, 404,
            method="POST", request=MarkIn, response=RecallDetailOut)
@write_api(["POST"])
def memory_recall_marks(request: Request, recall_id: int) -> Response:
    """``{"rank": 1, "relevant": true}`` or ``{"item": 90, "relevant": false}``: your mark on the item (marking
    again changes it; ``relevant`` null takes it back). ``{"relevant_total": 3}``: how many records of the store
    answer the query, as you counted them. Needs the annotator, editor or admin role in the project (403 otherwise).
    Answers the recall as ``GET`` does, with the figures after the mark."""
    recall = quality.recall_to_mark(request.user, recall_id)
    body = body_as(request, MarkIn)
    if body.item is None and body.rank is None:
        if "relevant_total" not in body.model_fields_set:
            raise ValueError("item: give the item's id (item) or its rank (rank), or relevant_total alone")
        quality.recall_judgement_set(user=request.user, recall=recall, relevant_total=body.relevant_total)
    else:
        if "relevant" not in body.model_fields_set:
            raise ValueError("relevant: true, false, or null to take your mark back")
        item = quality.recall_item_for_mark(recall, item_id=body.item, rank=body.rank)
        quality.recall_item_mark(user=request.user, recall=recall, item=item, relevant=body.relevant)
    return Response(_recall_detail(request, recall.pk, None))


@documented("memory_recall_what_if", "What a different limit or score threshold would have kept", 400, 401, 404,
            response=WhatIfOut, parameters=query_parameters(recall_page.WhatIfQuery))
@api
def memory_recall_what_if(request: Request, recall_id: int) -> Response:
    """Each item kept or dropped under ``limit`` (the first N by rank) and ``score_threshold`` (scores below it
    dropped; an item without a score is kept, the threshold cannot judge it), its tokens, and the window of the call
    that received the recall (its captured call, else the first reply after the carrying message): the recalled
    part's tokens and the call's total before and after. A limit above the items returned keeps them all."""
    query = recall_page.what_if_query(request.query_params)
    recall = quality.recall_for_user(request.user, recall_id)
    items = quality.recall_marks(recall, user=request.user).items
    shown = recall_page.recall_what_if(user=request.user, recall=recall, items=items, query=query)
    ids = {item.rank: item.pk for item in items}
    w = shown.window
    return Response(WhatIfOut(
        recall=recall.pk, limit=query.limit, score_threshold=query.score_threshold,
        items=[WhatIfItemOut(id=ids[f.item.rank], rank=f.item.rank, score=f.item.score, tokens=f.item.tokens,
                             kept=f.kept, reason=f.reason, unscored=f.unscored) for f in shown.result.items],
        kept=len(shown.result.kept), dropped=len(shown.result.dropped), tokens_dropped=shown.result.tokens_dropped,
        window=WindowOut(call=w.call, seq=w.seq, part=w.part, window=w.window, counter=w.counter,
                         part_before=w.part_before, part_after=w.part_after, total_before=w.total_before,
                         total_after=w.total_after) if w else None,
        window_note=shown.window_note,
    ).model_dump(mode="json"))


@documented("memory_store_quality", "A store's retrieval quality from QA's marks, over time and per query", 400, 401,
            404, response=StoreQualityOut,
            parameters=[OpenApiParameter("period", str, enum=list(PERIODS), description="Default week (UTC)"),
                        OpenApiParameter("k", int, description="Cut-off (default: every item of each recall)")])
@api
def memory_store_quality(request: Request, store_id: int) -> Response:
    """Precision@k, recall@k (where the relevant records were counted), MRR, nDCG@k and hit rate, each the mean over
    the store's recalls where QA's marks give it: overall, per ``period`` (day, week or month, UTC; recalls of no
    known time last) and per query."""
    query = query_as(request, StoreQualityQuery)
    shown = quality.store_quality(user=request.user, store_id=store_id, period=query.period, k=query.k)
    periods = []
    for start, agg in shown.periods:
        first, end = quality.period_bounds(start, shown.period)
        periods.append(PeriodOut(start=first.isoformat() if first else None, end=end.isoformat() if end else None,
                                 **_aggregate(agg)))
    return Response(StoreQualityOut(
        store=shown.store.pk, period=shown.period, k=shown.k, overall=AggregateOut(**_aggregate(shown.overall)),
        periods=periods, queries=[QueryAggregateOut(query=q, **_aggregate(agg)) for q, agg in shown.queries],
        queries_total=shown.queries_total,
    ).model_dump(mode="json"))
