"""What the recall page (``/memory/recalls/<id>/``) and its JSON twins show, read and decided in one call from each
view: one recall (its session and message, store, query, parameters, when), its items by rank with QA's marks and
the figures they give (``ledger.quality``), and the retrieval what-if: which items a different ``limit`` or
``score_threshold`` would have kept (``memory.retrieval_what_if``) and what dropping the others changes in the window
of the call that received the recall (``ledger.context.reply_context``: the recalled part's tokens and the call's
total, before and after, against the agent's window)."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import Http404
from django.urls import reverse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agents import access, models
from agents.access import User
from agents.ledger import context
from agents.ledger.health import text_tokens
from agents.ledger.pages import call_url, message_url
from agents.ledger.quality import (
    PeriodRow,
    RecallMarks,
    aggregate_cells,
    recall_for_user,
    recall_item_for_mark,
    recall_item_mark,
    recall_judgement_set,
    recall_marks,
    recall_to_mark,
    shown_figure,
    store_over_time,
)
from agents.memory.quality import Aggregate, QueryQuality
from agents.memory.retrieval_what_if import WhatIf, WhatIfItem, what_if
from agents.memory.schema import describe_validation_error
from agents.memory.tokens import TokenCounter, get_counter

# An item's text longer than this is folded on the page.
FOLD_CHARS = 600
# An item's metadata is shown up to this many characters of its JSON.
METADATA_CHARS = 300


class WhatIfQuery(BaseModel):
    """The what-if's parameters, from the page's form or the API's query string (blank: not applied)."""

    model_config = ConfigDict(extra="ignore")

    limit: int | None = Field(default=None, ge=0, description="Keep the first N items by rank (blank: all)")
    score_threshold: float | None = Field(default=None, allow_inf_nan=False,
                                          description="Drop items scored below this (blank: none)")

    @field_validator("limit", "score_threshold", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


def what_if_query(query: Mapping[str, Any]) -> WhatIfQuery:
    """The what-if's parameters; ValueError naming the field (``limit: ...``) for a bad one."""
    try:
        return WhatIfQuery.model_validate({name: query.get(name) for name in ("limit", "score_threshold")
                                           if query.get(name) is not None})
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc, prefix="")) from None


@dataclass(frozen=True)
class WindowWhatIf:
    """The call that received the recall, before and after the what-if: ``part`` (recalled_memory, or
    retrieved_documents for a knowledge store) in tokens, and the call's total, against the agent's window."""

    call: int | None  # the captured call, where the recall names one
    seq: int | None  # the reply
    url: str  # the call's page, or the session page at the reply
    part: str
    window: int
    counter: str
    part_before: int
    part_after: int
    total_before: int
    total_after: int

    @property
    def part_label(self) -> str:
        return self.part.replace("_", " ").capitalize()

    def share(self, tokens: int) -> float | None:
        return 100 * tokens / self.window if self.window else None

    @property
    def share_before(self) -> float | None:
        return self.share(self.total_before)

    @property
    def share_after(self) -> float | None:
        return self.share(self.total_after)


@dataclass(frozen=True)
class WhatIfShown:
    result: WhatIf
    tokens: dict[int, int]  # each item's tokens, by rank
    window: WindowWhatIf | None
    window_note: str  # why no window figures, when there are none


def _counter(session: models.Session) -> TokenCounter:
    try:
        return get_counter(session.token_counter)
    except ValueError:  # a counter this process does not have: the default, as store health does
        return get_counter("cl100k")


def _first_reply(recall: models.Recall) -> int | None:
    if recall.seq is None:
        return None
    return models.Message.objects.filter(session=recall.session, seq__gt=recall.seq, role="assistant").order_by(
        "seq").values_list("seq", flat=True).first()


def recall_what_if(*, user: User, recall: models.Recall, items: list[models.RecallItem],
                   query: WhatIfQuery) -> WhatIfShown:
    """The what-if of ``query`` on ``recall`` (its ``items`` by rank): each item kept or dropped, its tokens with the
    session's counter (the text alone, without a message's overhead), and the window of the call that received
    the recall first: its captured call where the recall names one, else the first reply after the carrying
    message (which was sent every message before it)."""
    counter = _counter(recall.session)
    tokens = {item.rank: text_tokens(item.text, counter) if item.text else 0 for item in items}
    result = what_if([WhatIfItem(rank=item.rank, score=item.score, tokens=tokens[item.rank]) for item in items],
                     limit=query.limit, score_threshold=query.score_threshold)
    seq = None
    if recall.llm_call_id is None:
        seq = _first_reply(recall)
        if seq is None:
            note = ("No call is known to have received this recall: no message carries it"
                    if recall.seq is None else f"No reply after message #{recall.seq}: no call received this recall")
            return WhatIfShown(result=result, tokens=tokens, window=None, window_note=note)
    try:
        composition = context.reply_context(user=user, session_id=recall.session_id, seq=seq,
                                            call_id=recall.llm_call_id)
    except (context.ContextRequestError, Http404) as exc:
        return WhatIfShown(result=result, tokens=tokens, window=None, window_note=str(exc))
    part_name = "retrieved_documents" if recall.store and recall.store.kind == "knowledge" else "recalled_memory"
    part = next(p for p in composition.parts if p.part == part_name)
    dropped = result.tokens_dropped
    url = (call_url(recall.session_id, recall.llm_call_id) if recall.llm_call_id is not None
           else message_url(recall.session, seq))
    return WhatIfShown(result=result, tokens=tokens, window=WindowWhatIf(
        call=recall.llm_call_id, seq=composition.seq, url=url, part=part_name, window=composition.window,
        counter=recall.session.token_counter, part_before=part.tokens, part_after=max(0, part.tokens - dropped),
        total_before=composition.total, total_after=max(0, composition.total - dropped),
    ), window_note="")


# --- the page ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRow:
    item: models.RecallItem
    relevant: int
    not_relevant: int
    mine: bool | None
    relevance: bool | None
    record_url: str  # the record page at the version sent
    folded: bool
    metadata: str  # the item's metadata as compact JSON, cut (where items carry metadata)


@dataclass(frozen=True)
class Figure:
    name: str
    label: str
    value: float | None
    help: str

    @property
    def shown(self) -> str:
        return shown_figure(self.value)


@dataclass(frozen=True)
class RecallPage:
    recall: models.Recall
    session: models.Session
    store: models.MemoryStore | None
    rows: list[ItemRow]
    marks: RecallMarks
    figures: list[Figure]
    can_annotate: bool
    message_url: str
    call_url: str
    memory_url: str
    params: list[tuple[str, str]]
    path: str
    json_url: str
    store_quality_url: str
    what_if_query: dict[str, str]  # the form's values as given
    what_if: WhatIfShown | None
    what_if_error: str
    what_if_json_url: str
    over_time: list[PeriodRow]  # the store's weeks, the latest STORE_WEEKS_SHOWN
    weeks_total: int
    this_query: Aggregate | None  # the recalls of the store with this query, where any was marked
    error: str = ""

    @property
    def this_query_cells(self) -> list[tuple[str, int]]:
        return aggregate_cells(self.this_query) if self.this_query else []


def recall_path(recall: models.Recall) -> str:
    return reverse("agents:memory_recall", args=[recall.pk])


def record_url(item: models.RecallItem) -> str:
    if item.record_id is None:
        return ""
    url = reverse("agents:memory_record", args=[item.record_id])
    return url + (f"#v-{item.version}" if item.version is not None else "")


def _metadata(item: models.RecallItem) -> str:
    value = item.metadata  # what the item's library gave with it (AutoGen's mime_type, a document's metadata)
    if not value:
        return ""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= METADATA_CHARS else text[:METADATA_CHARS] + "…"


def figures(q: QueryQuality) -> list[Figure]:
    at = f"@{q.k}"
    return [
        Figure("precision", f"Precision{at}", q.precision,
               f"Items marked relevant among the first {q.k}, over {q.k}"),
        Figure("recall", f"Recall{at}", q.recall,
               "Items marked relevant among the first k, over the relevant records of the store (where counted)"),
        Figure("reciprocal_rank", "Reciprocal rank", q.reciprocal_rank, "1 / the rank of the first relevant item"),
        Figure("ndcg", f"nDCG{at}", q.ndcg, "Binary gains, log2 discount, against the ideal order of these items"),
        Figure("hit", f"Hit{at}", q.hit, "1 when an item among the first k is relevant"),
    ]


def _params(params: Any) -> list[tuple[str, str]]:
    if not isinstance(params, dict):
        return []
    return [(str(key), (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))[:80])
            for key, value in list(params.items())[:12]]


def recall_page(*, user: User, recall_id: int, query: Mapping[str, Any], error: str = "") -> RecallPage:
    """The recall page of a recall the user may see (404 otherwise), with the what-if ``query`` asks for."""
    recall = recall_for_user(user, recall_id)
    session = recall.session
    marks = recall_marks(recall, user=user)
    rows = [ItemRow(item=item, relevant=marks.marks[item.pk].relevant, not_relevant=marks.marks[item.pk].not_relevant,
                    mine=marks.marks[item.pk].mine, relevance=marks.marks[item.pk].relevance,
                    record_url=record_url(item), folded=len(item.text) > FOLD_CHARS or item.text.count("\n") > 8,
                    metadata=_metadata(item)) for item in marks.items]
    given = {name: str(query.get(name) or "") for name in ("limit", "score_threshold")}
    shown, what_if_error = None, ""
    if any(given.values()):
        try:
            shown = recall_what_if(user=user, recall=recall, items=marks.items, query=what_if_query(given))
        except ValueError as exc:
            what_if_error = str(exc)
    store = recall.store
    memory_url = ""
    if store is not None and store.agent_id is not None:
        memory_url = f"{reverse('agents:agent_memory', args=[store.agent_id])}?{urlencode({'store': store.pk})}"
    path = recall_path(recall)
    over_time, weeks_total, this_query = store_over_time(store, recall.query)
    return RecallPage(
        recall=recall, session=session, store=store, rows=rows, marks=marks, figures=figures(marks.quality),
        can_annotate=access.role_allows(access.project_role(user, session.agent.project), "annotate"),
        message_url=message_url(session, recall.seq), call_url=call_url(session.pk, recall.llm_call_id),
        memory_url=memory_url, params=_params(recall.params), path=path,
        json_url=reverse("api:memory_recall", args=[recall.pk]),
        store_quality_url=reverse("api:memory_store_quality", args=[store.pk]) if store is not None else "",
        what_if_query=given, what_if=shown, what_if_error=what_if_error,
        what_if_json_url=reverse("api:memory_recall_what_if", args=[recall.pk]) + (
            f"?{urlencode(given)}" if any(given.values()) else ""),
        over_time=over_time, weeks_total=weeks_total, this_query=this_query, error=error,
    )


# --- the page's forms ------------------------------------------------------------------------------------------------


RELEVANT_VALUES = {"yes": True, "no": False, "": None}


@dataclass(frozen=True)
class MarkAnswer:
    recall: models.Recall
    error: str  # "field: what is wrong", or ""
    anchor: str  # where the page goes back to


def recall_marked(*, user: User, recall_id: int, data: Mapping[str, Any]) -> MarkAnswer:
    """The page's mark form: ``item`` (an item's id) and ``relevant`` (yes, no, or blank to take the mark back).
    404 outside the user's sessions, 403 (PermissionDenied) without the annotate role."""
    recall = recall_to_mark(user, recall_id)
    anchor = "quality"
    try:
        said = str(data.get("relevant", "")).strip()
        if said not in RELEVANT_VALUES:
            raise ValueError("relevant: yes, no, or blank to take the mark back")
        relevant = RELEVANT_VALUES[said]
        try:
            item_id = int(str(data.get("item", "")))
        except ValueError:
            raise ValueError("item: the id of one of the recall's items") from None
        item = recall_item_for_mark(recall, item_id=item_id)
        anchor = f"item-{item.rank}"
        recall_item_mark(user=user, recall=recall, item=item, relevant=relevant)
    except ValueError as exc:
        return MarkAnswer(recall=recall, error=str(exc), anchor=anchor)
    return MarkAnswer(recall=recall, error="", anchor=anchor)


def recall_judged(*, user: User, recall_id: int, data: Mapping[str, Any]) -> MarkAnswer:
    """The page's form for how many records of the store answer the query: ``relevant_total`` (blank: take it
    back)."""
    recall = recall_to_mark(user, recall_id)
    raw = str(data.get("relevant_total", "")).strip()
    try:
        total: int | None = None
        if raw:
            try:
                total = int(raw)
            except ValueError:
                raise ValueError("relevant_total: a whole number, 0 or more (blank: not counted)") from None
        recall_judgement_set(user=user, recall=recall, relevant_total=total)
    except ValueError as exc:
        return MarkAnswer(recall=recall, error=str(exc), anchor="quality")
    return MarkAnswer(recall=recall, error="", anchor="quality")
