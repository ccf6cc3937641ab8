"""What the record page shows, read and decided in one call from its view: one memory record with its versions as
a timeline, the word-level diff of any two, and every read (the query, rank, score, and the message or captured call
it fed; a read that sent an older version than the record had then is marked stale), each list paged by keyset
(``ledger.pages`` has the agent's memory page and what the memory pages share)."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db.models import F, OuterRef, Q, Subquery
from django.urls import reverse

from agents import models
from agents.access import User
from agents.ledger import findings, reading
from agents.ledger.pages import Fill, call_url, changed_lately, int_param, message_url, scope_text
from agents.memory.diff import Op, diff_text
from agents.memory.findings import NEAR_LIMIT

VERSIONS_PER_PAGE = 20
READS_PER_PAGE = 20
# A version's text longer than this is folded on the record page.
FOLD_CHARS = 600


# --- one record ----------------------------------------------------------------------------------------------------


@dataclass
class VersionRow:
    version: models.RecordVersion
    message_url: str  # the session page at the message that caused it
    call_url: str  # the captured call that caused it
    diff_url: str  # this version against the one before
    current: bool  # the record's latest
    folded: bool  # long: shown under <details>


@dataclass
class ReadRow:
    item: models.RecallItem
    current_then: int | None  # the record's version when the recall was made (None: not known)
    message_url: str  # the message that carried the recalled text
    call_url: str  # the captured call it fed
    version_url: str  # the version sent in the timeline: here when shown, else the page of versions holding it

    @property
    def stale(self) -> bool:
        """What was sent is an older version than the record had at that moment (findings' ``stale_recall``)."""
        return self.item.version is not None and self.current_then is not None and self.item.version < \
            self.current_then


@dataclass
class VersionsDiff:
    left: models.RecordVersion
    right: models.RecordVersion
    segments: list[tuple[Op, str]]  # ("=" | "-" | "+", text)
    removed: int  # words
    added: int

    @property
    def same(self) -> bool:
        return not (self.removed or self.added)


@dataclass
class Paging:
    newer_url: str = ""
    older_url: str = ""
    newest_url: str = ""


@dataclass
class RecordPage:
    record: models.MemoryRecord
    store: models.MemoryStore
    memory_url: str  # the agent's memory page at this store (none for a shared store: it has no agent)
    versions: list[VersionRow]
    versions_paging: Paging
    diff: VersionsDiff | None
    diff_from: int | None
    diff_to: int | None
    diff_error: str
    reads: list[ReadRow]
    reads_paging: Paging
    fill: Fill | None
    scope: str
    path: str
    json_url: str  # GET /api/memory/records/<id>/
    metadata_json: str  # the metadata and the raw value, pretty-printed ("" when there is none)
    value_json: str
    kept_for_diff: list[tuple[str, str]]  # what the diff's form sends again: where the versions and reads are paged
    findings: list[RecordFinding] = field(default_factory=list)  # ledger.findings of this record, in its store
    # Following it live (``record_follow``): the token of what is shown ("" when the page shows older versions or
    # reads, or a diff: nothing to follow there), whether it polls by itself (written or read lately, or asked
    # ``?follow=1``).
    follow_token: str = ""
    following: bool = False


@dataclass
class RecordFinding:
    """One finding of a record (a duplicate, a write that changed nothing, a block at its limit) with what to do."""

    kind: str
    message: str
    advice: str
    version: int | None
    version_url: str  # the version it is on, in the timeline ("" for a finding on the record as a whole)


def follow_token(record: models.MemoryRecord) -> str:
    """What changes when a version or a read of the record arrives: its counters and state, kept by the ledger's
    upkeep on the record's own row."""
    return f"{record.version_count}.{record.read_count}.{record.state}"


def record_follow(*, user: User, record_id: int, token: str) -> RecordPage | None:
    """The page following the record live: None while nothing arrived since ``token`` (one query: the record's row),
    else the record's newest versions and reads, to replace what is shown."""
    record = reading.record_for_user(user, record_id)
    if follow_token(record) == token:
        return None
    return memory_record_page(user=user, record_id=record_id, query={"follow": "1"}, record=record)


def memory_record_page(*, user: User, record_id: int, query: Mapping[str, str],
                       record: models.MemoryRecord | None = None) -> RecordPage:
    """A record (404 when its store is not in the user's projects): one page of its versions, newest first
    (``?versions_before=N`` / ``?versions_after=N``: numbers), the word diff of versions ``?from=`` and ``?to=``
    (the last two without them), and one page of its reads, newest first (``?reads_after=`` / ``?reads_before=``:
    a read's id), each with the version that was current when it was made."""
    if record is None:
        record = reading.record_for_user(user, record_id)
    store = record.store
    path = reverse("agents:memory_record", args=[record.pk])
    versions, versions_paging = _versions_page(record, query, path)
    diff_from, diff_to = int_param(query.get("from")), int_param(query.get("to"))
    diff, diff_error = _versions_diff(record, diff_from, diff_to)
    if diff is not None:
        diff_from, diff_to = diff.left.number, diff.right.number
    shown = {row.version.number for row in versions}
    reads, reads_paging = _reads_page(record, query, path, shown=shown)
    fill = None
    if record.char_limit:
        fill = Fill(chars=len(record.text), limit=record.char_limit, near_at=int(record.char_limit * NEAR_LIMIT))
    memory_url = ""
    if store.agent_id is not None:
        memory_url = f"{reverse('agents:agent_memory', args=[store.agent_id])}?{urlencode({'store': store.pk})}"
    newest = not any(query.get(k) for k in _RECORD_PARAMS)
    lately = changed_lately(record.updated_at, record.last_read_at)
    return RecordPage(
        follow_token=follow_token(record) if newest else "", following=newest and (lately or bool(query.get("follow"))),
        record=record, store=store, memory_url=memory_url, versions=versions, versions_paging=versions_paging,
        diff=diff, diff_from=diff_from, diff_to=diff_to, diff_error=diff_error, reads=reads,
        reads_paging=reads_paging, fill=fill, scope=scope_text(record.metadata), path=path,
        json_url=reverse("api:memory_record", args=[record.pk]),
        metadata_json=_pretty(record.metadata) if record.metadata else "",
        value_json=_pretty(record.value) if record.value not in (None, record.text) else "",
        kept_for_diff=[(k, str(query[k])) for k in _RECORD_PARAMS if k not in ("from", "to") and query.get(k)],
        findings=[RecordFinding(kind=f.kind, message=f.message, advice=findings.advice(f.kind), version=f.version,
                                version_url=_version_url(path, query, shown, f.version))
                  for f in findings.record_findings(record)],
    )


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _link(path: str, query: Mapping[str, str], drop: Iterable[str], **set_: Any) -> str:
    """``path`` with ``query`` kept but for ``drop``, and ``set_`` added: one part of the page pages, the others
    stay where they are (a shared link shows all three as they were)."""
    kept = {k: v for k, v in query.items() if k not in set(drop) and k in _RECORD_PARAMS and v != ""}
    kept |= {k: str(v) for k, v in set_.items() if v is not None}
    return f"{path}?{urlencode(kept)}" if kept else path


_RECORD_PARAMS = ("from", "to", "versions_before", "versions_after", "reads_before", "reads_after")


def _versions_page(record: models.MemoryRecord, query: Mapping[str, str], path: str
                   ) -> tuple[list[VersionRow], Paging]:
    before, after = int_param(query.get("versions_before")), int_param(query.get("versions_after"))
    versions = models.RecordVersion.objects.filter(record=record).select_related("session").defer(
        "value", "session__metadata", "session__violations")
    if after is not None and before is None:
        rows = list(versions.filter(number__gt=after).order_by("number")[: VERSIONS_PER_PAGE + 1])
        newer = len(rows) > VERSIONS_PER_PAGE
        rows = rows[:VERSIONS_PER_PAGE][::-1]
        older = True
    else:
        if before is not None:
            versions = versions.filter(number__lt=before)
        rows = list(versions.order_by("-number")[: VERSIONS_PER_PAGE + 1])
        older = len(rows) > VERSIONS_PER_PAGE
        rows = rows[:VERSIONS_PER_PAGE]
        newer = before is not None
    drop = ("versions_before", "versions_after")
    paging = Paging(
        newer_url=_link(path, query, drop, versions_after=rows[0].number) if newer and rows else "",
        older_url=_link(path, query, drop, versions_before=rows[-1].number) if older and rows else "",
        newest_url=_link(path, query, drop) if newer else "",
    )
    shown = [VersionRow(
        version=v, message_url=message_url(v.session, v.seq), call_url=call_url(v.session_id, v.llm_call_id),
        diff_url=_link(path, query, ("from", "to"), **{"from": v.number - 1, "to": v.number}) if v.number > 1 else "",
        current=v.number == record.version_count, folded=len(v.text or "") > FOLD_CHARS,
    ) for v in rows]
    return shown, paging


def _versions_diff(record: models.MemoryRecord, left: int | None, right: int | None
                   ) -> tuple[VersionsDiff | None, str]:
    if left is None and right is None:
        if record.version_count < 2:
            return None, ""
        left, right = record.version_count - 1, record.version_count
    elif left is None or right is None:
        return None, "Give both versions to compare: from and to."
    found = {v.number: v for v in models.RecordVersion.objects.filter(record=record, number__in=[left, right])}
    missing = [n for n in (left, right) if n not in found]
    if missing:
        return None, (f"No version {missing[0]}: this record has versions 1 to {record.version_count}."
                      if record.version_count else "This record has no versions.")
    a, b = found[left], found[right]
    segments = list(diff_text(a.text or "", b.text or "").segments)
    words = re.compile(r"\w+")
    return VersionsDiff(
        left=a, right=b, segments=segments,
        removed=sum(len(words.findall(t)) or bool(t.strip()) for op, t in segments if op == "-"),
        added=sum(len(words.findall(t)) or bool(t.strip()) for op, t in segments if op == "+"),
    ), ""


def _reads_page(record: models.MemoryRecord, query: Mapping[str, str], path: str, *, shown: set[int]
                ) -> tuple[list[ReadRow], Paging]:
    after, before = int_param(query.get("reads_after")), int_param(query.get("reads_before"))
    # The record's version when the recall was made is the one before the first version written after it (a
    # version without a time counts as written before, as findings.version_at reads it). Looked for from the version
    # the read sent, which existed then, upwards on (record, number): a read costs the versions written between what
    # it sent and what was current, not the record's whole history.
    first_later = models.RecordVersion.objects.filter(
        record=record, number__gt=OuterRef("version"), at__gt=OuterRef("recall__at")).order_by("number").values(
        "number")[:1]
    reads = models.RecallItem.objects.filter(record=record).select_related("recall", "recall__session").defer(
        "recall__params", "recall__session__metadata", "recall__session__violations").annotate(
        first_later=Subquery(first_later))
    anchor_id = before if before is not None else after
    anchor = None
    if anchor_id is not None:
        anchor = models.RecallItem.objects.filter(record=record, pk=anchor_id).values_list(
            "recall_id", "rank", "pk").first()
    newest_first = (F("recall_id").desc(), F("rank").asc(), F("pk").asc())
    if anchor is not None and before is not None:
        recall_id, rank, pk = anchor
        earlier = Q(recall_id__gt=recall_id) | Q(recall_id=recall_id, rank__lt=rank) | Q(
            recall_id=recall_id, rank=rank, pk__lt=pk)
        # recall_id__gte: the bound that starts the index range at the anchor (as Keyset.read).
        rows = list(reads.filter(earlier, recall_id__gte=recall_id).order_by("recall_id", "-rank", "-pk")[
            : READS_PER_PAGE + 1])
        newer = len(rows) > READS_PER_PAGE
        rows = rows[:READS_PER_PAGE][::-1]
        older = True
    else:
        if anchor is not None:
            recall_id, rank, pk = anchor
            reads = reads.filter(Q(recall_id__lt=recall_id) | Q(recall_id=recall_id, rank__gt=rank) | Q(
                recall_id=recall_id, rank=rank, pk__gt=pk), recall_id__lte=recall_id)
        rows = list(reads.order_by(*newest_first)[: READS_PER_PAGE + 1])
        older = len(rows) > READS_PER_PAGE
        rows = rows[:READS_PER_PAGE]
        newer = anchor is not None
    drop = ("reads_before", "reads_after")
    paging = Paging(
        newer_url=_link(path, query, drop, reads_before=rows[0].pk) if newer and rows else "",
        older_url=_link(path, query, drop, reads_after=rows[-1].pk) if older and rows else "",
        newest_url=_link(path, query, drop) if newer else "",
    )
    reads_shown = [ReadRow(item=item, current_then=_current_then(record, item),
                           message_url=message_url(item.recall.session, item.recall.seq),
                           call_url=call_url(item.recall.session_id, item.recall.llm_call_id),
                           version_url=_version_url(path, query, shown, item.version)) for item in rows]
    return reads_shown, paging


def _version_url(path: str, query: Mapping[str, str], shown: set[int], number: int | None) -> str:
    """A version in the timeline: an anchor when it is on the page shown, else the page of versions holding it."""
    if number is None:
        return ""
    if number in shown:
        return f"#v-{number}"
    return _link(path, query, ("versions_before", "versions_after"), versions_before=number + 1) + f"#v-{number}"


def _current_then(record: models.MemoryRecord, item: models.RecallItem) -> int | None:
    if item.version is None or item.recall.at is None:
        return None  # what was sent, or when, is not known
    later: int | None = item.first_later  # type: ignore[attr-defined]
    return later - 1 if later is not None else record.version_count
