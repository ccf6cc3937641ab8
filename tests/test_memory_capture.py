"""Live memory (issue 26): memory spans posted to the real OTLP receiver become the ledger (stores, records, versions
in time order, recalls linked to the call and the message they fed, compactions), the same whatever order and
repetition the batches arrive in. The batches are those the real clients of tests/otel_clients sent (see
tests/test_memory_spans.py for what each client does); bad input is made by hand.
"""
from __future__ import annotations

import base64
import itertools
import json
import random
import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from agents import models
from agents.ledger import storing
from agents.memory import ledger as core
from agents.memory.llm_calls import extract, merge_calls
from agents.memory.memory_spans import extract_memory, link_reads, merge_extractions, to_document
from agents.memory.otlp import decode
from agents.projects import keys as projects_keys
from agents.store import reading
from tests.otel_clients.capture import OtlpCapture, trace_requests_one_span_each
from tests.otel_clients.runner import ensure_venvs, run_memory_client
from tests.otlp_memory_spans import JSON, PROTOBUF, T0, TRACE, post, request, sid, span


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# --- the importer's code, as live capture uses it -------------------------------------------------------------------


def store_document(project, document: core.MemoryDocument, session_at=None, call_named=None) -> storing.MemoryOutcome:
    def nowhere(key, pos, place):
        return None, None

    importer = storing.MemoryImport(project=project, document=document, agent_named=lambda name: None,
                                    default_agent=None, owner="test", call_named=call_named)
    with transaction.atomic():
        importer.stage(session_at or nowhere)
        importer.finish(session_at or nowhere)
    return importer.outcome


def prefs(*records: core.RecordIn) -> core.StoreIn:
    return core.StoreIn(key="prefs", name="prefs", kind="records", source_format="otel", scope={"store_id": "prefs"},
                        records=list(records))


def versions_of(record: models.MemoryRecord) -> list[tuple[int, str, str | None, datetime | None, bool]]:
    return [(v.number, v.op, v.text, v.at, v.body_captured) for v in record.versions.order_by("number")]


def test_it_places_a_version_that_arrives_late_by_its_time(project, make_session):
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])

    def session_at(key, pos, place):
        return (session, pos) if key == "conv" else (None, None)

    def recall(external_id: str, seconds: float) -> core.RecallIn:
        return core.RecallIn(session="conv", seq=1, store="prefs", at=at(seconds), external_id=external_id,
                             items=[core.RecallItemIn(text="Alice is vegan", rank=1, ref={"id": "r"})])

    update = core.RecordIn(external_id="r", versions=[
        core.VersionIn(op="UPDATE", text="Alice is vegan", at=at(3), external_id="span-update")])
    create = core.RecordIn(external_id="r", metadata={"source": "chat"}, versions=[
        core.VersionIn(op="ADD", text="Alice is vegetarian", at=at(1), external_id="span-add")])
    later = core.MemoryDocument(format="otel", stores=[prefs(update.model_copy(
        update={"text": "Alice is vegan", "updated_at": at(3)}))], recalls=[recall("read-4", 4), recall("read-2", 2)])
    store_document(project, later, session_at)
    record = models.MemoryRecord.objects.get()
    assert versions_of(record) == [(1, "UPDATE", "Alice is vegan", at(3), True)]
    # What each recall read then: at 4 the update; at 2 nothing the store holds yet.
    assert {i.recall.external_id: i.version for i in models.RecallItem.objects.all()} == {"read-4": 1, "read-2": None}

    earlier = core.MemoryDocument(format="otel", stores=[prefs(create.model_copy(
        update={"text": "Alice is vegetarian", "updated_at": at(1)}))])
    outcome = store_document(project, earlier, session_at)
    assert outcome.versions == 1
    record.refresh_from_db()
    # Numbered by time, not arrival; the record is what its last version (by time) says, metadata included (the
    # update's body came without any: the create's is not the record's now).
    assert versions_of(record) == [(1, "ADD", "Alice is vegetarian", at(1), True),
                                   (2, "UPDATE", "Alice is vegan", at(3), True)]
    assert (record.text, record.state, record.version_count, record.created_at, record.updated_at,
            record.metadata) == ("Alice is vegan", "active", 2, at(1), at(3), {})
    assert record.content_hash == core.content_hash("Alice is vegan")
    # The recalls read the version current at their time, numbered anew.
    assert {i.recall.external_id: i.version for i in models.RecallItem.objects.all()} == {"read-4": 2, "read-2": 1}
    assert models.MemoryStore.objects.get().version_count == 2

    # Sent again, either document adds nothing and restates nothing: the earlier one's record is not the latest.
    for document in (earlier, later):
        outcome = store_document(project, document, session_at)
        assert (outcome.versions, outcome.recalls) == (0, 0)
    record.refresh_from_db()
    assert record.text == "Alice is vegan" and versions_of(record)[1][1] == "UPDATE"
    assert models.Recall.objects.count() == 2


def test_it_renumbers_a_record_whose_versions_arrive_in_any_order(project):
    bodies = [("ADD", "one", 1), ("UPDATE", "two", 2), ("UPDATE", "three", 3), ("DELETE", None, 4),
              ("ADD", "five", 5)]
    for order in ([4, 2, 0, 3, 1], [1, 3, 0, 4, 2], [0, 1, 2, 3, 4]):
        models.MemoryStore.objects.all().delete()
        for i in order:
            op, text, seconds = bodies[i]
            version = core.VersionIn(op=op, text=text, at=at(seconds), external_id=f"span-{i}")
            store_document(project, core.MemoryDocument(format="otel", stores=[prefs(core.RecordIn(
                external_id="r", text=text or "", state="deleted" if op == "DELETE" else "active",
                versions=[version]))]))
        record = models.MemoryRecord.objects.get()
        assert [(n, op, text) for n, op, text, _, _ in versions_of(record)] == [
            (n, op, text) for n, (op, text, _) in enumerate(bodies, 1)], order
        assert (record.text, record.state, record.version_count) == ("five", "active", 5)


def test_it_keeps_a_write_seen_without_its_body_as_such(project):
    record = core.RecordIn(external_id="r", versions=[
        core.VersionIn(op="ADD", text="Alice runs", at=at(1), external_id="a"),
        core.VersionIn(op="UPDATE", at=at(2), external_id="b", captured=False)])
    store_document(project, core.MemoryDocument(format="otel", stores=[prefs(record)]))
    stored = models.MemoryRecord.objects.get()
    assert versions_of(stored) == [(1, "ADD", "Alice runs", at(1), True), (2, "UPDATE", None, at(2), False)]
    # A late write before them: the record is still what its last (uncaptured) write left: unknown.
    store_document(project, core.MemoryDocument(format="otel", stores=[prefs(core.RecordIn(
        external_id="r", text="first", versions=[core.VersionIn(op="ADD", text="first", at=at(0), external_id="z")]))]))
    stored.refresh_from_db()
    assert [v[1:] for v in versions_of(stored)] == [("ADD", "first", at(0), True), ("ADD", "Alice runs", at(1), True),
                                                    ("UPDATE", None, at(2), False)]
    assert (stored.text, stored.value) == ("", None)


def test_it_stores_compactions_once(project, make_session):
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "summary"}])
    document = core.MemoryDocument(format="otel", compactions=[
        core.CompactionIn(external_id="t:part:cmp_1", at=at(1), summary="Alice is vegan", session="conv", seq=1,
                          source="output"),
        core.CompactionIn(external_id="t:span:k4", at=at(2), session="conv", source="flag"),
        core.CompactionIn(external_id="t:span:k9", at=at(3), session="elsewhere", source="flag")])

    def session_at(key, pos, place):
        return (session, pos) if key == "conv" else (None, None)

    assert store_document(project, document, session_at).compactions == 2
    assert store_document(project, document, session_at).compactions == 0
    assert [(c.external_id, c.seq, c.summary, c.source, c.at) for c in models.Compaction.objects.all()] == [
        ("t:part:cmp_1", 1, "Alice is vegan", "output", at(1)), ("t:span:k4", None, None, "flag", at(2))]


# --- the real clients' batches through the real receiver ----------------------------------------------------------



@pytest.fixture(scope="session")
def client_runs(tmp_path_factory):
    """Each client run once per test process: (what it did, the requests its exporters sent)."""
    pythons = ensure_venvs()
    made: dict[str, tuple[Any, list[Any]]] = {}

    def run(name: str):
        if name not in made:
            with OtlpCapture() as capture:
                done = run_memory_client(pythons, name, endpoint=capture.endpoint, api_key="mk_recorded",
                                         work=tmp_path_factory.mktemp(name))
            made[name] = (done, list(capture.requests))
        return made[name]

    return run


def as_json(body: bytes) -> bytes:
    """A protobuf request in OTLP JSON (ids in hex)."""
    document = json_format.MessageToDict(ExportTraceServiceRequest.FromString(body))
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for one in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in one:
                        one[key] = base64.b64decode(one[key]).hex()
    return json.dumps(document).encode()


def new_project(n: int) -> tuple[models.Project, str]:
    project = models.Project.objects.create(name=f"P{n}", slug=f"p{n}")
    return project, projects_keys.api_key_create(project=project, name="agent").key


def protobuf_bodies(requests) -> list[bytes]:
    return [r.body for r in requests if r.content_type == PROTOBUF]


def ledger_of(project: models.Project) -> dict[str, Any]:
    """Everything the ledger holds for a project, by names and span ids (no row ids): two projects fed the same
    spans in other orders must hold the same."""
    stores = {s.name: (s.kind, s.source_format, s.scope, s.agent_id, s.state, s.record_count, s.version_count,
                       s.read_count, s.last_write_at, s.last_read_at)
              for s in models.MemoryStore.objects.filter(project=project)}
    records = {}
    for record in models.MemoryRecord.objects.filter(store__project=project).select_related("store"):
        records[(record.store.name, record.external_id)] = (
            record.text, record.value, record.metadata, record.state, record.content_hash, record.created_at,
            record.updated_at, record.version_count, record.read_count, record.last_read_at,
            [(v.number, v.op, v.text, v.value, v.at, v.body_captured, v.external_id,
              # where it was written: the reply of the call it followed
              (v.session.external_id if v.session else None, v.seq, v.llm_call.span_id if v.llm_call else None))
             for v in record.versions.select_related("session", "llm_call").order_by("number")])
    recalls = {}
    for recall in models.Recall.objects.filter(session__agent__project=project).select_related(
            "session", "llm_call", "store"):
        call = recall.llm_call
        recalls[recall.external_id] = (
            recall.session.external_id, recall.seq, (call.trace_id, call.span_id) if call else None,
            recall.call_input, recall.store.name if recall.store else None, recall.query, recall.params,
            recall.placement, recall.at, recall.item_count,
            [(i.rank, i.record.external_id if i.record else None, i.version, i.score, i.text, i.ref)
             for i in recall.items.select_related("record").order_by("rank")])
    compactions = {
        c.external_id: (c.session.external_id, c.seq, c.llm_call.span_id if c.llm_call else None, c.call_input,
                        c.at, c.summary, c.source)
        for c in models.Compaction.objects.filter(session__agent__project=project).select_related(
            "session", "llm_call")}
    return {"stores": stores, "records": records, "recalls": recalls, "compactions": compactions}


def differences(left: Any, right: Any, path: str = "") -> list[str]:
    """Where two ledgers differ, leaf by leaf (for the assertion's message)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return [d for k in sorted(set(left) | set(right), key=repr)
                for d in differences(left.get(k, "<missing>"), right.get(k, "<missing>"), f"{path}[{k!r}]")]
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)) and len(left) == len(right):
        return [d for i, (a, b) in enumerate(zip(left, right, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]


def core_document(bodies: list[bytes]) -> core.MemoryDocument:
    """What the core makes of all the bodies at once: the ledger the receiver must reach."""
    batches = [decode(body, signal="traces", content_type=PROTOBUF) for body in bodies]
    extraction = merge_extractions(extract_memory(b) for b in batches)
    calls = merge_calls(c for b in batches for c in extract(b).calls)
    return to_document(extraction, link_reads(extraction.reads, calls, extraction.parents), calls)


def assert_ledger_is_the_cores(project: models.Project, document: core.MemoryDocument) -> None:
    """Stores, records and their versions as the core says; each recall linked to the call the core links it to,
    at the message of that call's input that carries its items, which holds them."""
    ledger = ledger_of(project)
    assert {s.name: (s.kind, s.scope) for s in document.stores} == {
        name: (kind, scope) for name, (kind, _, scope, *_) in ledger["stores"].items()}
    expected = {(store.name, r.external_id): r for store in document.stores for r in store.records}
    assert set(ledger["records"]) == set(expected)
    for key, record in expected.items():
        text, value, metadata, state, *_, versions = ledger["records"][key]
        assert (text, value, metadata, state) == (record.text, record.value, record.metadata, record.state), key
        assert [(v[1], v[2], v[3], v[4], v[5], v[6]) for v in versions] == [
            (v.op, v.text, v.value, v.at, v.captured, v.external_id) for v in record.ordered_versions()], key
    linked = [r for r in document.recalls if r.llm_call is not None]
    assert set(ledger["recalls"]) == {r.external_id for r in linked}
    calls = {(c.trace_id, c.span_id): c for c in models.LlmCall.objects.filter(session__agent__project=project)}
    for recall in linked:
        session, seq, call, call_input, store, query, params, placement, when, count, items = ledger["recalls"][
            recall.external_id]
        assert call is not None and call[1] == recall.llm_call
        assert (call_input, store, query, params, placement, when, count) == (
            recall.call_input, recall.store, recall.query or "", recall.params, recall.placement, recall.at,
            len(recall.items))
        assert [(rank, record, version, score, text, ref) for rank, record, version, score, text, ref in items] == [
            (i.rank, i.record, i.version, i.score, i.text, i.ref) for i in recall.items]
        row = calls[call]
        assert seq == (row.sent[call_input] if call_input is not None else None)
        if seq is not None:
            [message] = reading.session_messages(row.session)[seq:seq + 1]
            for item in recall.items:
                assert core.folded(item.text) in core.folded(str(message.content))


def arrivals(bodies: list[bytes], seed: int) -> list[tuple[bytes, str]]:
    """One span per request, shuffled, some sent twice, some as OTLP JSON."""
    pieces = [piece for body in bodies for piece in trace_requests_one_span_each(body)]
    shuffler = random.Random(seed)
    sent = pieces + shuffler.sample(pieces, min(8, len(pieces)))
    shuffler.shuffle(sent)
    return [(as_json(p), JSON) if shuffler.random() < 0.3 else (p, PROTOBUF) for p in sent]


@pytest.mark.parametrize("name", ["latitude-memory", "langchain-retriever"])
def test_it_stores_the_ledger_a_real_client_sent_the_same_in_any_order(client_runs, client, db, name):
    _, requests = client_runs(name)
    bodies = protobuf_bodies(requests)
    document = core_document(bodies)
    project, key = new_project(0)
    for body in bodies:
        reply = post(client, key, body)
        assert (reply.partial_success.rejected_spans, reply.partial_success.error_message) == (0, "")
    assert_ledger_is_the_cores(project, document)
    expected = ledger_of(project)
    assert expected["recalls"] and expected == ledger_of(project)
    orders = [[(b, PROTOBUF) for b in bodies][::-1], [(as_json(b), JSON) for b in bodies] + [(b, PROTOBUF) for b in
                                                                                         bodies]]
    orders += [arrivals(bodies, seed) for seed in (1, 2, 3)]
    for n, order in enumerate(orders, 1):
        project, key = new_project(n)
        for body, content_type in order:
            assert post(client, key, body, content_type).partial_success.rejected_spans == 0
        got = ledger_of(project)
        assert got == expected, (n, differences(got, expected))


def test_it_links_latitudes_searches_and_keeps_its_writes_version_by_version(client_runs, client, db):
    run, requests = client_runs("latitude-memory")
    project, key = new_project(0)
    for body in protobuf_bodies(requests):
        post(client, key, body)
    ledger = ledger_of(project)
    # The store as the client's backend did it, the wipe of "scratch" included; mem-2's capture-off update as such.
    versions = {key: [(v[1], v[2], v[5]) for v in record[-1]] for key, record in ledger["records"].items()}
    assert versions[("user-prefs", "mem-1")] == [("ADD", "Alice is vegetarian", True), ("UPDATE", "Alice is vegan",
                                                                                          True)]
    assert versions[("user-prefs", "mem-2")][-1] == ("UPDATE", None, False)
    assert versions[("scratch", "s-1")] == [("ADD", "temporary note", True), ("DELETE", None, True)]
    assert ledger["records"][("user-prefs", "mem-2")][:2] == ("", None)  # its last body was not captured
    # Three searches, each linked to the call it fed, in the session the spans name; the second read mem-1 when it
    # was still vegetarian (version 1), at the system prompt of its call.
    recalls = sorted(ledger["recalls"].values(), key=lambda r: r[8])
    assert [r[0] for r in recalls] == ["prefs-1"] * 3
    assert [(r[3], r[7]) for r in recalls] == [(None, "message"), (0, "system"), (None, "message")]
    assert [(i[1], i[2]) for i in recalls[1][-1]] == [("mem-2", 1), ("mem-1", 1), ("mem-3", 1)]
    calls = models.LlmCall.objects.filter(session__external_id="prefs-1").order_by("order_ns")
    assert [r[2][1] for r in recalls] == [c.span_id for c in calls]
    assert ledger["stores"]["user-prefs"][5:8] == (3, 7, 3)  # records, versions, reads
    assert models.RecordVersion.objects.filter(record__store__project=project, op="UPDATE",
                                               record__external_id="mem-404").count() == 0


def test_it_keeps_openlits_mem0_searches_without_inventing_where_they_went(client_runs, client, db):
    _, requests = client_runs("openlit-mem0")
    project, key = new_project(0)
    for sent in requests:
        reply = post(client, key, sent.body, sent.content_type)
        assert (reply.partial_success.rejected_spans, reply.partial_success.error_message) == (0, "")
    # openlit traces mem0 alone: two searches with mem0's results, but no store named and no model call they fed,
    # so no recall; its writes name neither store nor body (memory_spans' notes): nothing is made of them.
    assert ledger_of(project) == {"stores": {}, "records": {}, "recalls": {}, "compactions": {}}
    held = models.CapturedMemorySpan.objects.filter(project=project)
    assert sorted(held.values_list("kind", flat=True)) == ["read", "read"]
    assert {len(r.data["items"]) for r in held} == {3, 2}
    spans = {s.span_id for r in requests if r.content_type == PROTOBUF
             for s in decode(r.body, signal="traces", content_type=PROTOBUF).spans}
    assert set(models.CapturedSpan.objects.filter(project=project).values_list("span_id", flat=True)) == spans


# --- by hand: the span tree, late calls, wipes, compactions ---------------------------------------------------------



def write(name: str, op: str, record: str | None, content: Any = None, *, store: str | None = "prefs",
          start: float = 0, parent: str | None = "turn", raw: str | None = None, **kw: Any) -> Any:
    attributes: dict[str, Any] = {"gen_ai.operation.name": op}
    if store is not None:
        attributes["gen_ai.memory.store.id"] = store
    if record is not None:
        attributes["gen_ai.memory.record.id"] = record
    if raw is not None or content is not None:
        attributes["gen_ai.memory.records"] = raw if raw is not None else json.dumps([{"id": record,
                                                                                        "content": content}])
    return span(name, op, attributes, start=start, parent=parent, **kw)


def search(name: str, query: str, found: list[tuple[str, str, float]] | None, *, start: float, parent: str = "turn",
           raw: str | None = None, trace: str = TRACE) -> Any:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "prefs",
                                  "gen_ai.memory.query.text": query}
    if raw is not None or found is not None:
        attributes["gen_ai.memory.records"] = raw if raw is not None else json.dumps(
            [{"id": i, "content": c, "score": sc} for i, c, sc in found or []])
    return span(name, "search_memory", attributes, start=start, parent=parent, trace=trace)


def chat(name: str, *, start: float, system: str, question: str, answer: str = "ok", parent: str = "turn",
         history: tuple[tuple[str, str], ...] = (), trace: str = TRACE, **attributes: Any) -> Any:
    messages = [("system", system), *history, ("user", question)]
    return span(name, "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "session.id": "prefs-1",
        "gen_ai.input.messages": json.dumps([{"role": r, "parts": [{"type": "text", "content": c}]}
                                             for r, c in messages]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]),
        **attributes}, start=start, parent=parent, trace=trace)


def recalls_of(project: models.Project) -> list[tuple[str | None, int | None, int | None, list[Any]]]:
    return [(r.llm_call.span_id if r.llm_call else None, r.seq, r.call_input,
             [(i.record.external_id if i.record else None, i.version) for i in r.items.order_by("rank")])
            for r in models.Recall.objects.filter(session__agent__project=project).order_by("at")]


def test_it_links_a_read_when_the_call_it_fed_arrives_later(client, db):
    project, key = new_project(1)
    post(client, key, request(write("w1", "create_memory", "mem-1", "Alice is vegan", start=1)))
    post(client, key, request(search("s1", "diet", [("mem-1", "Alice is vegan", 0.9)], start=2)))
    # No call yet: the read is kept, not a recall (a recall is a read that fed a call).
    assert recalls_of(project) == [] and models.CapturedMemorySpan.objects.filter(kind="read").count() == 1
    post(client, key, request(chat("c1", start=3, system="Known: Alice is vegan", question="Dinner?")))
    [(call, seq, call_input, items)] = recalls_of(project)
    assert (call, call_input, items) == (sid("c1"), 0, [("mem-1", 1)])
    message = models.Message.objects.get(session__agent__project=project, seq=seq)
    assert (message.role, message.content) == ("system", "Known: Alice is vegan")
    post(client, key, request(chat("c1", start=3, system="Known: Alice is vegan", question="Dinner?")))
    assert len(recalls_of(project)) == 1 and models.RecallItem.objects.count() == 1


def test_it_moves_a_recall_to_a_nearer_call_when_the_span_tree_completes(client, db):
    # turn ─┬─ step ─┬─ tool ── search s1 (1)
    #       │        └─ chat near (4)          under the search's grandparent
    #       └─ chat far (3)                    under its great-grandparent only, though earlier
    project, key = new_project(1)
    post(client, key, request(write("w1", "create_memory", "mem-1", "Alice is vegan", start=0)))
    post(client, key, request(
        search("s1", "diet", [("mem-1", "Alice is vegan", 0.9)], start=1, parent="tool"),
        chat("far", start=3, system="Known: Alice is vegan", question="Q1", parent="turn"),
        chat("near", start=4, system="Known: Alice is vegan", question="Q2", parent="step",
             history=(("user", "Q1"), ("assistant", "ok")))))
    # Without the tool and step spans, the read's branch and the calls' meet nowhere known: the earliest call.
    assert [r[0] for r in recalls_of(project)] == [sid("far")]
    post(client, key, request(span("tool", "execute_tool", {}, parent="step", start=0.9, end=2),
                              span("step", "agent_step", {}, parent="turn", start=0.8, end=5)))
    [(call, seq, call_input, _)] = recalls_of(project)
    near = models.LlmCall.objects.get(span_id=sid("near"))
    assert (call, call_input, seq) == (sid("near"), 0, near.sent[0])
    assert models.Recall.objects.count() == 1


def session_turns() -> list[bytes]:
    """Two turns of one session, each a trace, a span a request: a search feeding a call, writes after it; the
    second turn's search reads the first turn's records, one updated since; the store is emptied in turn 2, then
    written again, and another store deleted."""
    one, two = "01" * 16, "02" * 16
    return [request(each) for each in (
        span("turn1", "turn-1", {"session.id": "prefs-1"}, start=0, end=4, trace=one),
        search("s1", "diet", [], start=0.5, parent="turn1", trace=one),
        chat("c1", start=1, system="Known: (none)", question="Dinner?", parent="turn1", trace=one),
        write("w1", "create_memory", "mem-1", "Alice is vegetarian", start=2, parent="turn1", trace=one),
        write("w2", "create_memory", "mem-2", "Alice runs", start=2.5, parent="turn1", trace=one),
        write("x1", "create_memory", "x-1", "scratch note", store="scratch", start=3, parent="turn1", trace=one),
        span("turn2", "turn-2", {"session.id": "prefs-1"}, start=5, end=12, trace=two),
        write("w3", "update_memory", "mem-1", "Alice is vegan", start=5.5, parent="turn2", trace=two),
        search("s2", "diet", [("mem-1", "Alice is vegan", 0.8), ("mem-2", "Alice runs", 0.2)], start=6,
               parent="turn2", trace=two),
        chat("c2", start=7, system="Known: Alice is vegan\nAlice runs", question="Breakfast?", parent="turn2",
             history=(("user", "Dinner?"), ("assistant", "ok")), trace=two),
        write("w4", "delete_memory", None, start=8, parent="turn2", trace=two),
        write("w5", "create_memory", "mem-3", "Alice moved to Rome", start=9, parent="turn2", trace=two),
        write("w6", "delete_memory_store", None, store="scratch", start=9.5, parent="turn2", trace=two),
    )]


def test_it_places_every_version_and_recall_of_a_session_the_same_in_any_order(client, db):
    bodies = session_turns()
    expected = None
    shuffler = random.Random(26)
    for n in range(6):
        order = list(bodies) if n == 0 else list(reversed(bodies)) if n == 1 else shuffler.sample(
            bodies, len(bodies)) + shuffler.sample(bodies, 4)
        project, key = new_project(n)
        for body in order:
            post(client, key, body)
        got = ledger_of(project)
        if expected is None:
            expected = got
            continue
        assert got == expected, (n, differences(got, expected))
    assert expected is not None
    versions = {k: [(v[0], v[1], v[2]) for v in r[-1]] for k, r in expected["records"].items()}
    assert versions == {
        ("prefs", "mem-1"): [(1, "ADD", "Alice is vegetarian"), (2, "UPDATE", "Alice is vegan"), (3, "DELETE", None)],
        ("prefs", "mem-2"): [(1, "ADD", "Alice runs"), (2, "DELETE", None)],
        ("prefs", "mem-3"): [(1, "ADD", "Alice moved to Rome")],
        ("scratch", "x-1"): [(1, "ADD", "scratch note"), (2, "DELETE", None)]}
    # Each version written after a call, at that call's reply (its trace's last call before it, nearest in the span
    # tree): turn 1's writes after c1; turn 2's update came before c2 and follows no call of its trace; mem-3 after c2.
    # A store's wipe deletes what every trace wrote (_wipes_apply), whichever came first: those deletions follow the
    # call the wipe followed (c2 for w4 and w6), even where the records they delete came after the wipe's trace.
    replies = {c.span_id: c.reply_seq for c in models.LlmCall.objects.filter(session__agent__project__slug="p0")}
    placed = {(k[1], v[0]): v[-1] for k, r in expected["records"].items() for v in r[-1]}
    after_c1, after_c2 = ("prefs-1", replies[sid("c1")], sid("c1")), ("prefs-1", replies[sid("c2")], sid("c2"))
    assert placed == {
        ("mem-1", 1): after_c1, ("mem-1", 2): (None, None, None), ("mem-1", 3): after_c2, ("mem-2", 1): after_c1,
        ("mem-2", 2): after_c2, ("mem-3", 1): after_c2, ("x-1", 1): after_c1, ("x-1", 2): after_c2}
    assert replies[sid("c1")] is not None and replies[sid("c2")] is not None
    # Deleted records keep the body they had; their history stays.
    assert {k: r[:4:3] for k, r in expected["records"].items()} == {
        ("prefs", "mem-1"): ("Alice is vegan", "deleted"), ("prefs", "mem-2"): ("Alice runs", "deleted"),
        ("prefs", "mem-3"): ("Alice moved to Rome", "active"), ("scratch", "x-1"): ("scratch note", "deleted")}
    first, second = sorted(expected["recalls"].values(), key=lambda r: r[8])
    assert (first[2][1], first[-1]) == (sid("c1"), [])
    assert (second[2][1], second[3], [(i[1], i[2]) for i in second[-1]]) == (sid("c2"), 0, [("mem-1", 2),
                                                                                           ("mem-2", 1)])


def test_a_records_metadata_is_its_last_whole_bodys_in_any_order(client, db):
    # The symptom latitude's run showed: mem-2's metadata 'source' depended on the order its traces arrived in.
    # Each record's metadata is that of its last body seen whole (none is none), whichever trace brings it when.
    one, two, three = "11" * 16, "22" * 16, "33" * 16

    def body(name: str, op: str, record: str, content: Any, metadata: dict[str, Any] | None, start: float,
             trace: str) -> Any:
        entry = {"id": record, "content": content, **({"metadata": metadata} if metadata is not None else {})}
        return write(name, op, record, raw=json.dumps([entry]), start=start, trace=trace)

    t1 = [body("a1", "create_memory", "mem-1", "Alice is vegetarian", {"source": "chat", "turn": 1}, 1, one),
          body("b1", "create_memory", "mem-2", "Alice runs", {"source": "chat"}, 1.5, one)]
    t2 = [body("a2", "upsert_memory", "mem-1", {"diet": "vegan"}, None, 5, two),
          body("b2", "update_memory", "mem-2", "Alice runs on Sundays", {"turn": 2}, 5.5, two)]
    t3 = [write("a3", "update_memory", "mem-1", start=9, trace=three),  # content capture off
          write("b3", "delete_memory", "mem-2", start=9.5, trace=three)]
    bodies = {"1": request(*t1), "2": request(*t2), "3": request(*t3), "12": request(*t1, *t2),
              "23": request(*t2, *t3), "all": request(*t3, *t1, *t2)}
    orders = [list(p) for p in itertools.permutations("123")] + [
        ["12", "3"], ["3", "12"], ["23", "1"], ["1", "23"], ["all"], ["3", "all", "2"], ["2", "1", "all", "3"]]
    expected = None
    for n, order in enumerate(orders):
        project, key = new_project(n)
        for name in order:
            # (a delete that comes before its record's writes is said so: test_it_keeps_a_delete_of_an_unknown...)
            assert post(client, key, bodies[name]).partial_success.rejected_spans == 0
        got = ledger_of(project)
        if expected is None:
            expected = got
        assert got == expected, (order, differences(got, expected))
    assert expected is not None
    records = expected["records"]
    # mem-1: its last body seen whole is the upsert's (no metadata); the update after it came without a body.
    assert records[("prefs", "mem-1")][:4] == ("", None, {}, "active")
    assert [(v[1], v[5]) for v in records[("prefs", "mem-1")][-1]] == [("ADD", True), ("UPSERT", True),
                                                                        ("UPDATE", False)]
    # mem-2: deleted, keeps the body and metadata of its update.
    assert records[("prefs", "mem-2")][:4] == ("Alice runs on Sundays", "Alice runs on Sundays", {"turn": 2},
                                               "deleted")


def test_it_makes_each_kind_of_read_a_recall_matched_by_id_then_content(client, db):
    # A memory search (one item without an id, one naming a record no batch wrote), a GenAI retrieval of a data
    # source and an OpenInference reranker, all feeding one call: three recalls linked to it, their items matched
    # to the store's records by id, then by text; what matches nothing kept as such, with what the span said of it.
    project, key = new_project(1)
    found = json.dumps([{"content": "Alice is vegan", "score": 0.9}, {"id": "mem-1", "content": "Alice is vegan"},
                        {"id": "mem-404", "content": "Alice likes cats", "score": 0.1}])
    documents = json.dumps([{"id": "doc-1", "score": 0.7, "content": "Trains to Rome leave hourly"}])
    batch = (
        write("w1", "create_memory", "mem-1", "Alice is vegan", start=0),
        search("s1", "diet", None, raw=found, start=1),
        span("r1", "retrieval kb", {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "kb",
                                    "gen_ai.request.top_k": 2, "gen_ai.retrieval.query.text": "rome trains",
                                    "gen_ai.retrieval.documents": documents}, parent="turn", start=1.5),
        span("k1", "reranker", {"openinference.span.kind": "RERANKER", "reranker.query": "rome", "reranker.top_k": 1,
                                "reranker.input_documents.0.document.content": "Trains to Rome leave hourly",
                                "reranker.output_documents.0.document.content": "Trains to Rome leave hourly",
                                "reranker.output_documents.0.document.score": 0.8}, parent="turn", start=2),
        chat("c1", start=3, system="Known: Alice is vegan\nAlice likes cats",
             question="Context: Trains to Rome leave hourly. When do I go?"),
    )
    for _ in range(2):  # sent again: nothing twice
        assert answer(client, key, *batch) == (0, "")
    recalls = models.Recall.objects.filter(session__agent__project=project).order_by("at")
    assert [(r.llm_call.span_id, r.store.name if r.store else None, r.store.kind if r.store else None, r.query,
             r.params, r.placement, r.call_input) for r in recalls] == [
        (sid("c1"), "prefs", "records", "diet", {}, "system", 0),
        (sid("c1"), "kb", "knowledge", "rome trains", {"top_k": 2}, "message", 1),
        (sid("c1"), None, None, "rome", {"top_k": 1, "record_count": 1, "reranker": "reranker"}, "message", 1)]
    items = [[(i.rank, i.record.external_id if i.record else None, i.version, i.score, i.text, i.ref)
              for i in r.items.order_by("rank").select_related("record")] for r in recalls]
    assert items == [
        [(1, "mem-1", 1, 0.9, "Alice is vegan", {}), (2, "mem-1", 1, None, "Alice is vegan", {"id": "mem-1"}),
         (3, None, None, 0.1, "Alice likes cats", {"id": "mem-404"})],
        [(1, None, None, 0.7, "Trains to Rome leave hourly", {"id": "doc-1"})],
        [(1, None, None, 0.8, "Trains to Rome leave hourly", {})]]
    record = models.MemoryRecord.objects.get(store__project=project, external_id="mem-1")
    assert (record.read_count, models.RecallItem.objects.filter(recall__session__agent__project=project).count()) \
        == (2, 5)


def test_it_stores_compactions_and_writes_seen_without_their_body(client, db):
    project, key = new_project(1)
    part = {"type": "compaction", "id": "cmp_1", "content": "Alice is vegan; booked Rome."}
    compacting = span("k1", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "session.id": "prefs-1",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Go on"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Alice is vegan; booked Rome."}, part]}])}, start=1)
    passed_back = span("k2", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "session.id": "prefs-1", "gen_ai.conversation.compacted": True,
        "gen_ai.input.messages": json.dumps([
            {"role": "user", "parts": [{"type": "text", "content": "Go on"}]},
            {"role": "assistant", "parts": [{"type": "text", "content": "Alice is vegan; booked Rome."}, part]},
            {"role": "user", "parts": [{"type": "text", "content": "And then?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Ok"}]}]),
    }, start=3)
    quiet = write("q1", "update_memory", "mem-1", start=4)  # content capture off: no gen_ai.memory.records
    for body in (request(passed_back), request(quiet), request(compacting), request(passed_back, compacting)):
        reply = post(client, key, body)
        assert (reply.partial_success.rejected_spans, reply.partial_success.error_message) == (0, "")
    [compaction] = models.Compaction.objects.filter(session__agent__project=project)
    reply_seq = models.LlmCall.objects.get(span_id=sid("k1")).reply_seq
    assert (compaction.external_id, compaction.summary, compaction.source, compaction.seq, compaction.llm_call.span_id,
            compaction.session.external_id) == (f"{TRACE}:part:cmp_1", "Alice is vegan; booked Rome.", "output",
                                                reply_seq, sid("k1"), "prefs-1")
    [record] = models.MemoryRecord.objects.filter(store__project=project)
    assert [(v.op, v.text, v.value, v.body_captured) for v in record.versions.all()] == [("UPDATE", None, None, False)]
    assert (record.external_id, record.text, record.state) == ("mem-1", "", "active")


# --- bad input: stored as far as it is valid, the rest answered ---------------------------------------------------


def answer(client, key: str, *spans: Any) -> tuple[int, str]:
    reply = post(client, key, request(*spans))
    return reply.partial_success.rejected_spans, reply.partial_success.error_message


def test_it_answers_a_write_with_a_record_id_and_no_store_and_keeps_the_rest(client, db):
    project, key = new_project(1)
    batch = (write("w1", "create_memory", "mem-1", "Alice is vegan", start=1),
             write("w2", "update_memory", "mem-1", "lost", store=None, start=2),
             chat("c1", start=3, system="Known: Alice is vegan", question="Dinner?"))
    for _ in range(2):  # sent again: the same answer, nothing stored twice
        rejected, message = answer(client, key, *batch)
        assert rejected == 1
        assert message == (f"span {sid('w2')} (update_memory): gen_ai.memory.record.id 'mem-1' without "
                           "gen_ai.memory.store.id: no store to place it in")
        [record] = models.MemoryRecord.objects.filter(store__project=project)
        assert [(v.op, v.text) for v in record.versions.all()] == [("ADD", "Alice is vegan")]
        assert models.LlmCall.objects.filter(session__agent__project=project).count() == 1


def test_it_keeps_a_delete_of_an_unknown_record_as_such_and_says_so(client, db):
    project, key = new_project(1)
    rejected, message = answer(client, key, write("d1", "delete_memory", "mem-9", start=5),
                               write("w1", "create_memory", "mem-1", "Alice is vegan", start=1))
    assert rejected == 0
    assert message == (f"span {sid('d1')} (delete_memory): record 'mem-9' of store 'prefs' was never written: kept "
                       "as deleted (its writes, if they come, are placed before the delete)")
    gone = models.MemoryRecord.objects.get(store__project=project, external_id="mem-9")
    assert (gone.state, [v.op for v in gone.versions.all()]) == ("deleted", ["DELETE"])
    assert models.MemoryRecord.objects.get(store__project=project, external_id="mem-1").state == "active"
    # Its write comes after all (from another batch of the agent): placed before the delete; nothing to say now.
    assert answer(client, key, write("w9", "create_memory", "mem-9", "Alice runs", start=2)) == (0, "")
    gone.refresh_from_db()
    assert [(v.number, v.op, v.text) for v in gone.versions.all()] == [(1, "ADD", "Alice runs"), (2, "DELETE", None)]
    assert (gone.state, gone.text) == ("deleted", "Alice runs")
    assert answer(client, key, write("d1", "delete_memory", "mem-9", start=5)) == (0, "")
    assert gone.versions.count() == 2


def test_it_keeps_a_read_whose_items_are_not_json_without_them(client, db):
    project, key = new_project(1)
    batch = (search("s1", "diet", None, raw="[{'id': 'mem-1'", start=1),
             search("s2", "runs", [("mem-2", "Alice runs", 0.5)], start=1.5),
             chat("c1", start=2, system="Known: Alice runs", question="Dinner?"))
    for _ in range(2):
        rejected, message = answer(client, key, *batch)
        assert rejected == 0
        assert message == (f"span {sid('s1')} (search_memory): gen_ai.memory.records: not JSON (Expecting property "
                           "name enclosed in double quotes at column 3): kept without its records")
        recalls = models.Recall.objects.filter(session__agent__project=project).order_by("at")
        assert [(r.query, r.params, r.item_count, r.llm_call.span_id) for r in recalls] == [
            ("diet", {"content_captured": False}, 0, sid("c1")), ("runs", {}, 1, sid("c1"))]


def test_it_keeps_a_write_whose_records_are_too_big_without_its_body(client, db):
    project, key = new_project(1)
    huge = json.dumps([{"id": "mem-1", "content": "x" * 2_000_000}])
    batch = (write("w1", "create_memory", "mem-1", raw=huge, start=1),
             write("w2", "create_memory", "mem-2", "Alice runs", start=2))
    for _ in range(2):
        rejected, message = answer(client, key, *batch)
        assert rejected == 0
        assert message == (f"span {sid('w1')} (create_memory): gen_ai.memory.records: 2,000,032 characters, more "
                           "than the 1,048,576 read: kept without its records")
        records = {r.external_id: r for r in models.MemoryRecord.objects.filter(store__project=project)}
        assert [(v.op, v.text, v.body_captured) for v in records["mem-1"].versions.all()] == [("ADD", None, False)]
        assert [(v.op, v.text) for v in records["mem-2"].versions.all()] == [("ADD", "Alice runs")]


def test_it_leaves_out_what_the_database_cannot_hold_and_keeps_the_rest(client, db):
    project, key = new_project(1)
    records = json.dumps([{"id": "mem-1", "content": "nul \u0000 here"}, {"id": "mem-2", "content": "fine"}])
    found = '[{"id": "mem-2", "content": "fine", "score": NaN}]'
    rejected, message = answer(client, key, write("w1", "create_memory", None, raw=records, start=1),
                               search("s1", "q", None, raw=found, start=2),
                               chat("c1", start=3, system="Known: fine", question="?"))
    assert rejected == 0
    assert message == (f"span {sid('w1')} (create_memory): item 1 contains a NUL character (\\u0000), which the "
                       f"database cannot store: left out; span {sid('s1')} (search_memory): item 1: score nan is not "
                       "a number: kept without it")
    [record] = models.MemoryRecord.objects.filter(store__project=project)
    assert (record.external_id, record.text) == ("mem-2", "fine")
    [recall] = models.Recall.objects.filter(session__agent__project=project)
    assert [(i.text, i.score, i.record_id) for i in recall.items.all()] == [("fine", None, record.pk)]


def test_a_write_matches_what_its_store_recalled_before_reading_that_stores_recalls_alone(client, db):
    project, key = new_project(1)
    post(client, key, request(search("s1", "olives", [("mem-9", "Alice hates olives", 0.8)], start=1),
                              chat("c1", start=2, system="Known: Alice hates olives", question="Pizza?")))
    other = span("r1", "retrieval", {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "docs",
                                     "gen_ai.retrieval.query.text": "menu", "gen_ai.retrieval.documents": json.dumps(
                                         [{"id": "doc-1", "content": "Alice hates olives"}])}, start=3, parent="turn")
    post(client, key, request(other, chat("c2", start=4, system="Docs: Alice hates olives", question="Menu?")))
    assert [items for *_, items in recalls_of(project)] == [[(None, None)], [(None, None)]]
    with CaptureQueriesContext(connection) as queries:
        post(client, key, request(write("w1", "create_memory", "mem-9", "Alice hates olives", start=5)))
    # The prefs store's item is matched to the record written (no version of it was current when it was recalled);
    # the docs store's is not its to match.
    assert [items for *_, items in recalls_of(project)] == [[("mem-9", None)], [(None, None)]]
    [sql] = [q["sql"] for q in queries.captured_queries
             if q["sql"].startswith('SELECT "agents_recallitem"') and '"record_id" IS NULL' in q["sql"]]
    # Driven from the store's recalls, not from every unmatched item of the database.
    assert re.search(r'"recall_id" IN \(SELECT .*"store_id" = ', sql)
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql.replace("%", "%%"))
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
        assert "agents_recall_store_id" in plan and "(record_id=? AND recall_id=?)" in plan


def test_items_no_id_names_are_matched_by_text_in_as_many_queries_for_ten_as_for_one(client, db):
    asked = {}
    for n in (1, 10):
        project, key = new_project(n)
        # Written in a trace of their own: the search's trace holds no record to match its items against.
        post(client, key, request(*(write(f"w{i}", "create_memory", f"mem-{i}", f"Alice fact {i}", start=1,
                                          trace="cd" * 16) for i in range(n))))
        found = [(f"elsewhere-{i}", f"Alice fact {i}", 0.5) for i in range(n)]  # no record has the id; one has the text
        with CaptureQueriesContext(connection) as queries:
            post(client, key, request(search("s1", "facts", found, start=2),
                                      chat("c1", start=3, system="Known: Alice's facts", question="Which?")))
        [(*_, items)] = recalls_of(project)
        assert items == [(f"mem-{i}", 1) for i in range(n)]
        asked[n] = sum('"agents_memoryrecord"."content_hash"' in q["sql"] for q in queries.captured_queries)
    assert asked[1] == asked[10] <= 2


def test_the_session_page_shows_what_a_live_write_wrote_on_the_reply_it_followed(client, alice_client, alice, db):
    project, key = new_project(1)
    models.Membership.objects.create(user=alice, project=project, role="viewer")
    for body in reversed(session_turns()):  # the writes before their calls
        post(client, key, body)
    call = models.LlmCall.objects.get(session__agent__project=project, span_id=sid("c1"))
    version = models.RecordVersion.objects.get(record__external_id="mem-1", number=1)
    assert (version.session_id, version.seq, version.llm_call_id) == (call.session_id, call.reply_seq, call.pk)
    html = alice_client.get(call.session.get_absolute_url()).content.decode()
    shown = re.search(rf'<article id="m-{call.reply_seq}".*?</article>', html, re.S)
    assert shown and "Wrote to memory" in shown.group(0)
    assert f'href="/memory/records/{version.record_id}/?versions_before=2#v-1"' in shown.group(0)
    assert "Alice is vegetarian" in shown.group(0)
    before = re.search(rf'<article id="m-{call.reply_seq - 1}".*?</article>', html, re.S)
    assert before and "Wrote to memory" not in before.group(0)
