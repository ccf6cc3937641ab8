"""Live memory: what OTLP batches say of an agent's memory (``memory.memory_spans``), kept per trace and stored in
the ledger with the importer's code (``ledger.storing``).

Each request, after its calls are stored (``ingest``): ``extract_memory`` reads the same decoded batch; every span's
parent is kept (``CapturedSpan``: the tree that links a read to the call it fed, whichever batch brings the agent
and chain spans between them) and each memory span once (``CapturedMemorySpan``: its write, read or compactions as
JSON). Then each trace the batch touched (a span of it, or a call) that holds memory spans is built again from all
it holds: ``merge_extractions``, ``link_reads`` against the trace's stored calls (``LlmCall``), ``to_document`` with
them, stored by ``MemoryImport`` (stage, then finish). Everything is keyed by span ids, so that a batch sent again,
or a trace built again, adds nothing; versions take their place by time (``upkeep.records_reordered``); a read
becomes a recall once the call it fed is stored, in that call's session, at the message of the call's input that
carried it (``seq``, which follows the call's messages when a late call moves them: ``recalls_follow_calls``), and
moves to a nearer call when a later batch completes the span tree. A store emptied or deleted deletes every record it
held then, stored from any trace, with a DELETE version each (the rows and their history stay).

What cannot be used is answered in the OTLP partial-success message: spans not used at all are counted in
``rejected``; what was kept only in part (a read whose items are not JSON, records too big to read, a value the
database cannot hold, a delete of a record no batch has written) is named in the message.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import IntegrityError, OperationalError, connection, transaction

from agents import models
from agents.capture import ingest
from agents.ledger import findings, storing, upkeep
from agents.memory import ledger as core
from agents.memory.llm_calls import CapturedCall
from agents.memory.memory_spans import (
    FORMAT,
    Compaction,
    MemoryExtraction,
    MemoryItem,
    MemoryRead,
    MemoryWrite,
    as_data,
    extract_memory,
    link_reads,
    link_writes,
    merge_extractions,
    read_of,
    to_document,
    write_of,
)
from agents.memory.otlp import Batch
from agents.store import reading
from agents.store.mapping import value_problem

BATCH = 1000
Kind = models.CapturedMemorySpan.Kind


@dataclass
class MemoryReceipt:
    rejected: int = 0  # memory spans not used at all
    problems: list[str] = field(default_factory=list)  # why, and what was kept only in part
    traces: int = 0  # traces whose ledger was built again


def memory_ingest(*, project: models.Project, batch: Batch, calls: ingest.IngestResult,
                  extraction: MemoryExtraction | None = None) -> MemoryReceipt:
    """Keep the memory spans of one decoded request and bring the ledger of every trace it touched up to date.
    ``calls``: what ``ingest.otlp_ingest`` stored of the same request (the traces and sessions it touched);
    ``extraction``: the batch's memory read already (``extract_memory(batch)``)."""
    if extraction is None:
        extraction = extract_memory(batch)
    receipt = MemoryReceipt()
    writes, reads, compactions = _storable(extraction, receipt)
    touched = {s.trace_id for s in batch.spans if s.trace_id} | calls.traces
    if not touched and not calls.replayed:
        return receipt
    for attempt in range(ingest.ATTEMPTS):
        try:
            with ingest.session_writer(), transaction.atomic():
                _lock(project, [f"trace:{t}" for t in touched])
                _keep(project, batch, writes, reads, compactions)
                recalls_follow_calls(session_ids=calls.replayed)
                traces = sorted(models.CapturedMemorySpan.objects.filter(
                    project=project, trace_id__in=sorted(touched)).order_by().values_list(
                    "trace_id", flat=True).distinct())
                rebuilt = traces_ledger(project=project, trace_ids=traces) if traces else None
                problems = _unknown_deletes(project, writes)
                # The memory findings of what changed, as an import computes them (bounded: a big store, or one
                # many sessions read, is left to a worker); the sessions of the batch's calls too (a later reply
                # changes what a persisted recall piles up to).
                findings.findings_after_write(
                    sessions=calls.sessions | calls.replayed | (rebuilt.sessions if rebuilt else set()),
                    stores=rebuilt.stores if rebuilt else ())
            receipt.traces = len(traces)
            receipt.problems += problems
            return receipt
        except (IntegrityError, OperationalError):
            # A lost race for a new row, or PostgreSQL breaking a deadlock: the whole request's memory again.
            if attempt == ingest.ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _lock(project: models.Project, keys: Iterable[str]) -> None:
    """Requests that touch the same traces (their recalls), then the same stores (created on first sight, their
    records' versions numbered in order), one at a time; others go on side by side. Taken in a global order (every
    trace of a request before any store, each set sorted): no two requests wait for each other. PostgreSQL's
    transaction-scoped advisory locks; SQLite takes one writer at a time anyway."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for key in sorted(set(keys)):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))", [key, project.pk])


# --- what a request brings --------------------------------------------------------------------------------------


def _storable(extraction: MemoryExtraction, receipt: MemoryReceipt) -> tuple[
        list[MemoryWrite], list[MemoryRead], list[Compaction]]:
    """The extraction's writes, reads and compactions as the database can hold them: a value it cannot hold (a NUL
    character, NaN, infinity) is left out and named; a span whose ids cannot be held is not used."""
    problems: list[str] = []
    unused: set[tuple[str, str]] = set()

    def named(span_id: str, what: str, detail: str) -> None:
        problems.append(f"span {span_id} ({what}): {detail}")

    def usable(trace_id: str, span_id: str, what: str, *ids: str | None) -> bool:
        if len(trace_id) > 32 or len(span_id) > 16:
            named(span_id, what, "trace or span id longer than OTLP's 16 and 8 bytes: not read")
        elif any(value_problem(i) for i in ids if i):
            named(span_id, what, "a store or record id the database cannot hold (a NUL character): not read")
        else:
            return True
        unused.add((trace_id, span_id))
        return False

    def items(span_id: str, what: str, given: tuple[MemoryItem, ...]) -> tuple[MemoryItem, ...]:
        kept = []
        for item in given:
            problem = value_problem(item.content) or value_problem(item.metadata) or value_problem(item.id) or \
                value_problem(item.metadata_text)
            if problem:
                named(span_id, what, f"item {item.rank} {problem}: left out")
                continue
            if item.score is not None and not math.isfinite(item.score):
                named(span_id, what, f"item {item.rank}: score {item.score} is not a number: kept without it")
                item = item._replace(score=None)
            kept.append(item)
        return tuple(kept)

    def text(span_id: str, what: str, key: str, value: str | None) -> str | None:
        if value is not None and value_problem(value):
            named(span_id, what, f"{key} {value_problem(value)}: left out")
            return None
        return value

    writes = []
    for write in extraction.writes:
        if usable(write.trace_id, write.span_id, write.operation, write.store_id, write.record_id):
            records = items(write.span_id, write.operation, write.records)
            writes.append(write._replace(
                records=records, content_captured=write.content_captured and bool(records or not write.records),
                error=text(write.span_id, write.operation, "error", write.error)))
    reads = []
    for read in extraction.reads:
        if usable(read.trace_id, read.span_id, read.kind, read.store_id):
            reads.append(read._replace(
                items=items(read.span_id, read.kind, read.items),
                query=text(read.span_id, read.kind, "query", read.query),
                name=text(read.span_id, read.kind, "name", read.name) or "",
                error=text(read.span_id, read.kind, "error", read.error)))
    compactions = []
    for compaction in extraction.compactions:
        if usable(compaction.trace_id, compaction.span_id, "compaction", compaction.part_id):
            compactions.append(dataclasses.replace(
                compaction, summary=text(compaction.span_id, "compaction", "summary", compaction.summary)))
    # A span named in extraction.rejected and read into nothing was not used at all; the others were kept in part.
    kept = {(w.trace_id, w.span_id) for w in writes} | {(r.trace_id, r.span_id) for r in reads} | {
        (c.trace_id, c.span_id) for c in compactions}
    unused |= {(r.trace_id, r.span_id) for r in extraction.rejected} - kept
    receipt.rejected = len(unused)
    receipt.problems = [r.reason for r in extraction.rejected] + problems
    return writes, reads, compactions


def _keep(project: models.Project, batch: Batch, writes: Sequence[MemoryWrite], reads: Sequence[MemoryRead],
          compactions: Sequence[Compaction]) -> None:
    spans = {(s.trace_id, s.span_id): s.parent_span_id or "" for s in batch.spans
             if s.trace_id and s.span_id and len(s.trace_id) <= 32 and len(s.span_id) <= 16}
    models.CapturedSpan.objects.bulk_create(
        [models.CapturedSpan(project=project, trace_id=trace_id, span_id=span_id,
                             parent_span_id=parent if len(parent) <= 16 else "")
         for (trace_id, span_id), parent in spans.items()], batch_size=BATCH, ignore_conflicts=True)
    rows: dict[tuple[str, str], models.CapturedMemorySpan] = {}
    for write in writes:
        rows.setdefault((write.trace_id, write.span_id), models.CapturedMemorySpan(
            project=project, trace_id=write.trace_id, span_id=write.span_id,
            kind=Kind.WIPE if _is_wipe(write) else Kind.WRITE,
            store_id=(write.store_id or "")[:255], data=as_data(write)))
    for read in reads:
        rows.setdefault((read.trace_id, read.span_id), models.CapturedMemorySpan(
            project=project, trace_id=read.trace_id, span_id=read.span_id, kind=Kind.READ,
            store_id=(read.store_id or "")[:255], data=as_data(read)))
    by_span: dict[tuple[str, str], list[Compaction]] = {}
    for compaction in compactions:
        by_span.setdefault((compaction.trace_id, compaction.span_id), []).append(compaction)
    for (trace_id, span_id), found in by_span.items():
        rows.setdefault((trace_id, span_id), models.CapturedMemorySpan(
            project=project, trace_id=trace_id, span_id=span_id, kind=Kind.COMPACTION,
            data={"compactions": [dataclasses.asdict(c) for c in found]}))
    models.CapturedMemorySpan.objects.bulk_create(list(rows.values()), batch_size=BATCH, ignore_conflicts=True)


def _held(rows: Iterable[tuple[str, Any]]) -> MemoryExtraction:
    out = MemoryExtraction()
    for kind, data in rows:
        if kind in (Kind.WRITE, Kind.WIPE):
            out.writes.append(write_of(data))
        elif kind == Kind.READ:
            out.reads.append(read_of(data))
        else:
            out.compactions += [Compaction(**c) for c in data["compactions"]]
    return out


# --- a trace's ledger -----------------------------------------------------------------------------------------


class _TraceCalls:
    """The calls of some traces as the receiver stored them: for ``link_reads`` (``captured``) and to place what
    they fed (``session_at``: a document's conversation keys here are ``in:<span id>``, a position in that call's
    input, and ``out:<span id>``, its reply)."""

    def __init__(self, project: models.Project, trace_ids: Sequence[str]) -> None:
        rows = models.LlmCall.objects.filter(session__agent__project=project, trace_id__in=trace_ids).select_related(
            "session").order_by("pk")
        self.rows = {row.span_id: row for row in rows}
        by_session: dict[int, list[models.LlmCall]] = {}
        for row in self.rows.values():
            by_session.setdefault(row.session_id, []).append(row)
        self.captured: dict[str, CapturedCall] = {}
        for session_id, listed in by_session.items():
            messages = reading.session_message_loader(session_id)(sorted({s for r in listed for s in _seqs(r)}))
            for row in listed:
                self.captured[row.span_id] = ingest.call_from_row(row, messages)

    def call_named(self, span_id: str | None) -> int | None:
        row = self.rows.get(span_id or "")
        return row.pk if row is not None else None

    def session_at(self, key: str | None, pos: int | None, place: str) -> tuple[models.Session | None, int | None]:
        side, _, span_id = (key or "").partition(":")
        row = self.rows.get(span_id)
        if row is None:
            return None, None
        if side == "out":
            return row.session, row.reply_seq
        return row.session, _sent_seq(row, pos)


def _seqs(row: models.LlmCall) -> list[int]:
    return [*row.sent, *([row.reply_seq] if row.reply_seq is not None else [])]


def _sent_seq(row: models.LlmCall, pos: int | None) -> int | None:
    return row.sent[pos] if pos is not None and row.placed and pos < len(row.sent) else None


@dataclass
class Rebuilt:
    """What building some traces' ledger again stored, and what it touched: the stores of its document and the
    sessions of the traces' calls (where its recalls and compactions are)."""

    outcome: storing.MemoryOutcome
    stores: set[int]
    sessions: set[int]


def traces_ledger(*, project: models.Project, trace_ids: Sequence[str]) -> Rebuilt:
    """The ledger of some traces built again from all the receiver holds of them, and stored as one document (what
    is stored already stays; a recall whose call is now nearer, or placed elsewhere, is moved)."""
    held = _held(models.CapturedMemorySpan.objects.filter(project=project, trace_id__in=trace_ids).order_by(
        "trace_id", "span_id").values_list("kind", "data"))
    held.parents = {span_id: parent or None for span_id, parent in models.CapturedSpan.objects.filter(
        project=project, trace_id__in=trace_ids).values_list("span_id", "parent_span_id")}
    extraction = merge_extractions([held])
    calls = _TraceCalls(project, trace_ids)
    links = link_reads(extraction.reads, calls.captured.values(), extraction.parents)
    write_links = link_writes(extraction.writes, calls.captured.values(), extraction.parents)
    document = to_document(extraction, links, calls.captured.values(), write_links=write_links)
    document.notes = []  # the receiver's answer names what a request could not use; a rebuild names nothing more
    wipes = {w.span_id for w in extraction.writes if _is_wipe(w)}
    document.stores = [_versions_placed(_without_wipes(store, wipes), calls) for store in document.stores]
    document.recalls = _recalls_placed(document.recalls, calls)
    document.compactions = [placed for c in document.compactions
                            if (placed := _compaction_placed(c, calls)) is not None]
    _lock(project, [f"store:{store.key}" for store in document.stores])
    importer = storing.MemoryImport(project=project, document=document, agent_named=lambda name: None,
                                    default_agent=None, owner="otlp", call_named=calls.call_named,
                                    partial_records=True)
    importer.stage(calls.session_at)
    importer.finish(calls.session_at)
    _versions_follow(document.stores, importer, calls)
    _compactions_follow(document.compactions, calls)
    wiped = _wipes_apply(project, {w.store_id for w in extraction.writes if w.store_id}, {
        w.span_id: calls.rows[write_links[w.span_id]] for w in extraction.writes
        if _is_wipe(w) and write_links.get(w.span_id) in calls.rows})
    return Rebuilt(outcome=importer.outcome, stores={row.row.pk for row in importer.stores.values()} | wiped,
                   sessions={row.session_id for row in calls.rows.values()})


def _recalls_placed(recalls: list[core.RecallIn], calls: _TraceCalls) -> list[core.RecallIn]:
    """The recalls to store: those whose call is stored, named by it (the version each item read is the store's
    to say: a document of one trace does not hold every version). A recall stored already is moved where its link
    now points (another call, the call placed, its messages moved) and left out."""
    fed = [r for r in recalls if calls.call_named(r.llm_call) is not None]
    stored = {r.external_id: r for r in models.Recall.objects.filter(
        session_id__in={row.session_id for row in calls.rows.values()},
        external_id__in=[r.external_id for r in fed if r.external_id])}
    out = []
    for recall in fed:
        placed = recall.model_copy(update={
            "session": f"in:{recall.llm_call}", "seq": recall.call_input,
            "items": [i.model_copy(update={"version": None}) for i in recall.items]})
        row = stored.get(recall.external_id or "")
        if row is None:
            out.append(placed)
            continue
        session, seq = calls.session_at(placed.session, placed.seq, "")
        assert session is not None
        wanted = {"session_id": session.pk, "seq": seq, "llm_call_id": calls.call_named(recall.llm_call),
                  "call_input": recall.call_input, "placement": recall.placement}
        if any(getattr(row, name) != value for name, value in wanted.items()):
            models.Recall.objects.filter(pk=row.pk).update(**wanted)
    return out


def _versions_placed(store: core.StoreIn, calls: _TraceCalls) -> core.StoreIn:
    """A trace's store with each version whose call is stored placed at that call's reply (``out:<span id>``), as a
    new version is stored; ``_versions_follow`` then moves those stored before."""
    def placed(version: core.VersionIn) -> core.VersionIn:
        if calls.call_named(version.llm_call) is None:
            return version
        return version.model_copy(update={"session": f"out:{version.llm_call}", "seq": None})

    return store.model_copy(update={"records": [
        record.model_copy(update={"versions": [placed(v) for v in record.versions]}) for record in store.records]})


def _versions_follow(stores: Sequence[core.StoreIn], importer: storing.MemoryImport, calls: _TraceCalls) -> None:
    """Each version a write of the trace made, at the reply of the call it followed (``link_writes``), as the trace
    now tells it: stored before that call came, or linked since to a later one, or with the call's messages moved."""
    for store in stores:
        wanted = {v.external_id: v.llm_call for record in store.records for v in record.versions
                  if v.llm_call is not None and v.external_id and calls.call_named(v.llm_call) is not None}
        staged = importer.stores.get(store.key)
        if not wanted or staged is None:
            continue
        for pk, external_id, session_id, seq, llm_call_id in models.RecordVersion.objects.filter(
                record__store=staged.row, external_id__in=sorted(wanted)).values_list(
                "pk", "external_id", "session_id", "seq", "llm_call_id"):
            row = calls.rows[wanted[external_id]]
            if (session_id, seq, llm_call_id) != (row.session_id, row.reply_seq, row.pk):
                models.RecordVersion.objects.filter(pk=pk).update(session_id=row.session_id, seq=row.reply_seq,
                                                                  llm_call_id=row.pk)


def _compaction_placed(compaction: core.CompactionIn, calls: _TraceCalls) -> core.CompactionIn | None:
    """A compaction named by the call that carried it first: its reply (a compaction part it returned), the input
    message that passed the summary back, or the call alone (a flag). None until that call is stored."""
    if calls.call_named(compaction.llm_call) is None:
        return None
    if compaction.source == "output":
        return compaction.model_copy(update={"session": f"out:{compaction.llm_call}", "seq": None})
    return compaction.model_copy(update={"session": f"in:{compaction.llm_call}",
                                         "seq": _input_holding(calls.captured.get(compaction.llm_call or ""),
                                                               compaction.summary)})


def _input_holding(call: CapturedCall | None, summary: str | None) -> int | None:
    if call is None or not call.inputs or not summary:
        return None
    wanted = core.folded(summary)
    for index, message in enumerate(call.inputs):
        if wanted in core.folded(message.content if isinstance(message.content, str) else str(message.content)):
            return index
    return None


def _compactions_follow(compactions: Sequence[core.CompactionIn], calls: _TraceCalls) -> None:
    """Each compaction as the trace now tells it: a later batch may bring an earlier sighting (the reply that
    returned it, where the calls after passed it back) or move its call's messages."""
    for compaction in compactions:
        session, seq = calls.session_at(compaction.session, compaction.seq, "")
        if session is None:
            continue
        wanted = {"seq": seq, "call_input": compaction.seq if compaction.source != "output" else None,
                  "llm_call_id": calls.call_named(compaction.llm_call), "at": compaction.at,
                  "summary": compaction.summary, "source": compaction.source}
        models.Compaction.objects.filter(session=session, external_id=compaction.external_id[:255]).exclude(
            **wanted).update(**wanted)


def recalls_follow_calls(*, session_ids: Iterable[int]) -> int:
    """The recalls, versions and compactions of sessions whose calls were placed again (a call that arrived late goes
    before later ones, which are replayed after it): each at the message its call's input or reply now has there.
    Returns how many moved."""
    ids = sorted(set(session_ids))
    if not ids:
        return 0
    moved = 0
    for recall in models.Recall.objects.filter(session_id__in=ids, llm_call__isnull=False).select_related(
            "llm_call").only("pk", "seq", "call_input", "llm_call__placed", "llm_call__sent"):
        assert recall.llm_call is not None
        seq = _sent_seq(recall.llm_call, recall.call_input)
        if seq != recall.seq:
            models.Recall.objects.filter(pk=recall.pk).update(seq=seq)
            moved += 1
    for version in models.RecordVersion.objects.filter(session_id__in=ids, llm_call__isnull=False).select_related(
            "llm_call").only("pk", "seq", "llm_call__reply_seq"):
        assert version.llm_call is not None
        if version.seq != version.llm_call.reply_seq:
            models.RecordVersion.objects.filter(pk=version.pk).update(seq=version.llm_call.reply_seq)
            moved += 1
    for compaction in models.Compaction.objects.filter(session_id__in=ids, llm_call__isnull=False).select_related(
            "llm_call").only("pk", "seq", "source", "call_input", "llm_call__placed", "llm_call__sent",
                             "llm_call__reply_seq"):
        assert compaction.llm_call is not None
        seq = compaction.llm_call.reply_seq if compaction.source == "output" else _sent_seq(
            compaction.llm_call, compaction.call_input)
        if seq != compaction.seq:
            models.Compaction.objects.filter(pk=compaction.pk).update(seq=seq)
            moved += 1
    return moved


# --- stores emptied or deleted ------------------------------------------------------------------------------------


def _is_wipe(write: MemoryWrite) -> bool:
    return write.error is None and (write.op == "DELETE_STORE" or (write.op == "DELETE" and not write.record_id))


def _without_wipes(store: core.StoreIn, wipes: set[str]) -> core.StoreIn:
    """A trace's store without the DELETE versions its wipes made (keyed ``<wipe span>:<record>``): which records a
    wipe deletes depends on every trace's writes of the store, so ``_wipes_apply`` decides them all."""
    records = []
    for record in store.records:
        kept = [v for v in record.versions
                if not (v.op == "DELETE" and (v.external_id or "").partition(":")[0] in wipes)]
        if len(kept) != len(record.versions):
            record = record.model_copy(update={"versions": kept, "state": core.record_state(kept),
                                               "updated_at": kept[-1].at if kept else record.updated_at})
        if record.versions:
            records.append(record)
    return store.model_copy(update={"records": records})


def _wipes_apply(project: models.Project, store_ids: set[str],
                 followed: Mapping[str, models.LlmCall] | None = None) -> set[int]:
    """Every record a store held when it was emptied or deleted (a ``delete_memory`` without a record id, a
    ``delete_memory_store``), whichever trace wrote it and whenever that arrived, has a DELETE version at that
    moment, keyed by the wipe's span and the record (as ``to_document`` keys them), and only those: a record
    deleted already then (by its own delete, or an earlier wipe that arrived later) gets none. The rows and their
    history stay. Each of those versions is placed at the reply of the call its wipe followed, as a write's own
    versions are: ``followed`` names it for the wipes of the traces being built (wipe span -> call), and a wipe of
    another trace that deletes a record only now is linked from its own trace's calls. Returns the stores it wrote
    to."""
    followed = dict(followed or {})
    written: set[int] = set()
    by_store: dict[str, list[MemoryWrite]] = {}
    for data in models.CapturedMemorySpan.objects.filter(
            project=project, kind=Kind.WIPE, store_id__in=sorted(store_ids)).values_list("data", flat=True):
        wipe = write_of(data)
        by_store.setdefault(wipe.store_id or "", []).append(wipe)
    for store_id, wipes in sorted(by_store.items()):
        scope = {"store_id": store_id}
        store = models.MemoryStore.objects.filter(
            project=project, kind="records", source_format=FORMAT, scope_key=storing.scope_key(scope),
            state=models.MemoryStore.State.READY).order_by("id").first()
        if store is None:
            continue
        spans = {w.span_id for w in wipes}
        moments = sorted((_time(w.ended_ns), w.span_id) for w in wipes if w.ended_ns)
        history: dict[int, list[tuple[int, str, datetime | None, str]]] = {}
        for pk, record_id, op, when, external_id in models.RecordVersion.objects.filter(
                record__store=store).order_by("record_id", "number").values_list(
                "pk", "record_id", "op", "at", "external_id"):
            history.setdefault(record_id, []).append((pk, op, when, external_id))
        rows = {r.pk: r for r in models.MemoryRecord.objects.filter(pk__in=list(history))}
        stale: list[int] = []
        missing: dict[int, list[core.VersionIn]] = {}
        for record_id, versions in history.items():
            external_id = rows[record_id].external_id
            made = {e: pk for pk, op, _, e in versions if op == "DELETE" and e.partition(":")[0] in spans
                    and e.partition(":")[2] == external_id}
            wanted = _wiped(((when, op) for pk, op, when, e in versions if e not in made), moments, external_id)
            stale += [pk for key, pk in made.items() if key not in wanted]
            missing[record_id] = [core.VersionIn(op="DELETE", at=when, external_id=key)
                                  for key, when in wanted.items() if key not in made]
        if stale:
            touched = {record_id for record_id, versions in history.items() for pk, *_ in versions if pk in stale}
            models.RecordVersion.objects.filter(pk__in=stale).delete()
            upkeep.records_reordered(dict.fromkeys(touched, ({}, None)))
            upkeep.items_reversioned(sorted(touched))
        records = [core.RecordIn(
            external_id=rows[record_id].external_id, text=rows[record_id].text, value=rows[record_id].value,
            metadata=rows[record_id].metadata, state="deleted", versions=versions)
            for record_id, versions in sorted(missing.items()) if versions]
        new_for = {(v.external_id or "").partition(":")[0] for versions in missing.values() for v in versions}
        place: dict[str, models.LlmCall | None] = {w.span_id: followed[w.span_id] for w in wipes
                                                   if w.span_id in followed}
        place.update(_wipes_followed(project, [w for w in wipes if w.span_id not in place and w.span_id in new_for]))
        if not (stale or records):
            _wipe_versions_placed(store, place)
            continue
        document = core.MemoryDocument(format=FORMAT, stores=[core.StoreIn(
            key=store_id, name=store_id, kind="records", source_format=FORMAT, scope=scope, external_id=store_id,
            records=records)])
        importer = storing.MemoryImport(project=project, document=document, agent_named=lambda name: None,
                                        default_agent=None, owner="otlp:wipe", partial_records=True)
        importer.stage(_nowhere)
        importer.finish(_nowhere)  # the store's summaries, after a DELETE went too
        _wipe_versions_placed(store, place)
        written.add(store.pk)
    return written


def _wipes_followed(project: models.Project, wipes: Sequence[MemoryWrite]) -> dict[str, models.LlmCall | None]:
    """The calls some wipes of traces not being built followed (``link_writes`` on those traces' calls and spans, read
    once for all)."""
    if not wipes:
        return {}
    trace_ids = sorted({w.trace_id for w in wipes})
    calls = _TraceCalls(project, trace_ids)
    parents = {span_id: parent or None for span_id, parent in models.CapturedSpan.objects.filter(
        project=project, trace_id__in=trace_ids).values_list("span_id", "parent_span_id")}
    links = link_writes(wipes, calls.captured.values(), parents)
    return {w.span_id: calls.rows.get(links.get(w.span_id, "")) for w in wipes}


def _wipe_versions_placed(store: models.MemoryStore, place: Mapping[str, models.LlmCall | None]) -> None:
    """The DELETE versions of each wipe at the reply of the call it followed (none: left where they are)."""
    for span_id, call in sorted(place.items()):
        if call is None:
            continue
        models.RecordVersion.objects.filter(record__store=store, op="DELETE", external_id__startswith=f"{span_id}:") \
            .exclude(session_id=call.session_id, seq=call.reply_seq, llm_call_id=call.pk) \
            .update(session_id=call.session_id, seq=call.reply_seq, llm_call_id=call.pk)


def _wiped(versions: Iterable[tuple[datetime | None, str]], moments: Sequence[tuple[datetime | None, str]],
           external_id: str) -> dict[str, datetime | None]:
    """The wipes that deleted a record (key -> when): those at which it was active, by its own versions (a write at
    the wipe's very moment counts as before it) and the wipes before."""
    events = sorted([(when, 0, op) for when, op in versions if when is not None] +
                    [(when, 1, span_id) for when, span_id in moments if when is not None])
    active = False
    wanted: dict[str, datetime | None] = {}
    for when, kind, what in events:
        if kind == 0:
            active = what.upper() != "DELETE"
        elif active:
            wanted[f"{what}:{external_id}"] = when
            active = False
    return wanted


def _nowhere(key: str | None, pos: int | None, place: str) -> tuple[models.Session | None, int | None]:
    return None, None


def _unknown_deletes(project: models.Project, writes: Sequence[MemoryWrite]) -> list[str]:
    """The deletes of this request whose record no batch has written (yet): kept as deleted, and said so."""
    problems = []
    for write in writes:
        if write.op != "DELETE" or not write.record_id or write.error is not None or write.store_id is None:
            continue
        ops = set(models.RecordVersion.objects.filter(
            record__store__project=project, record__store__source_format=FORMAT,
            record__store__scope_key=storing.scope_key({"store_id": write.store_id}),
            record__external_id=write.record_id[:255]).values_list("op", flat=True))
        if ops <= {"DELETE"}:
            problems.append(f"span {write.span_id} ({write.operation}): record {write.record_id!r} of store "
                            f"{write.store_id!r} was never written: kept as deleted (its writes, if they come, are "
                            "placed before the delete)")
    return problems


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _time(ns: int) -> datetime | None:
    """A span's time to the microsecond, as ``memory_spans.to_document`` gives its versions."""
    return _EPOCH + timedelta(microseconds=ns // 1000) if ns else None
