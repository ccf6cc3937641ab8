"""Memory and retrieval spans from real instrumented clients, read into the ledger (agents/memory/memory_spans.py).

Each client runs in a virtualenv of its own (tests/otel_clients/requirements-*.txt) against the scripted model
server and exports with its stock exporters to a capture endpoint on loopback; the bodies it sent are what is read:

- latitude-telemetry 3.8.4's memory telemetry (GenAI memory operation spans) and its OpenAI instrumentation;
- openinference-instrumentation-langchain 0.1.80 around two LangChain retrievers inside a create_agent agent;
- openlit 1.45.0 instrumenting mem0 2.2.1.

Each client prints what it did, read from the library itself; the ledger must say the same, version by version,
whatever the order and repetition in which the batches arrive.
"""
from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agents.memory.ledger import CompactionIn, MemoryDocument, VersionIn
from agents.memory.llm_calls import CapturedCall, extract, merge_calls
from agents.memory.memory_spans import (
    MAX_ITEMS,
    MemoryExtraction,
    carrying_input,
    extract_memory,
    link_reads,
    link_writes,
    merge_extractions,
    to_document,
)
from agents.memory.otlp import Batch, Span, decode
from agents.memory.schema import Message
from tests.otel_clients.capture import OtlpCapture, trace_requests_one_span_each
from tests.otel_clients.runner import ClientRun, ensure_venvs, run_memory_client

API_KEY = "mk_test"


@pytest.fixture(scope="session")
def pythons():
    return ensure_venvs()


@pytest.fixture(scope="session")
def client_runs(pythons, tmp_path_factory):
    """Each client run once per test process: (what it did, the requests its exporters sent)."""
    made: dict[str, tuple[ClientRun, list[Any]]] = {}

    def run(client: str):
        if client not in made:
            with OtlpCapture() as capture:
                done = run_memory_client(pythons, client, endpoint=capture.endpoint, api_key=API_KEY,
                                         work=tmp_path_factory.mktemp(client))
            assert capture.requests and {r.path for r in capture.requests} == {"/otlp/v1/traces"}
            assert {r.authorization for r in capture.requests} == {f"Bearer {API_KEY}"}
            made[client] = (done, list(capture.requests))
        return made[client]

    return run


def batches(requests, content_type: str | None = None) -> list[Batch]:
    return [decode(r.body, signal="traces", content_type=r.content_type) for r in requests
            if content_type is None or r.content_type == content_type]


def read_all(batch_list: list[Batch]) -> tuple[MemoryExtraction, list[CapturedCall]]:
    extraction = merge_extractions(extract_memory(b) for b in batch_list)
    calls = merge_calls(c for b in batch_list for c in extract(b).calls)
    return extraction, calls


def ledger(batch_list: list[Batch]) -> tuple[MemoryExtraction, dict[str, str], MemoryDocument]:
    extraction, calls = read_all(batch_list)
    links = link_reads(extraction.reads, calls, extraction.parents)
    return extraction, links, to_document(extraction, links, calls)


def otlp_json(body: bytes) -> bytes:
    """A protobuf request in OTLP JSON (ids in hex), for a client whose SDK no OTLP JSON exporter supports."""
    document = json_format.MessageToDict(ExportTraceServiceRequest.FromString(body))
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document).encode()


def by_start(calls: list[CapturedCall]) -> list[CapturedCall]:
    return sorted(calls, key=lambda c: (c.started_ns or 0, c.span_id))


def sent_text(call: CapturedCall) -> str:
    return "\n".join(str(m.content or "") for m in call.inputs or [])


# --- latitude-telemetry: the GenAI memory operations ------------------------------------------------------------


def expected_versions(done: list[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[str, Any]]]:
    """(store, record) -> [(op, content)] as the store did it, the wipe of a store included."""
    ops = {"create": "ADD", "update": "UPDATE", "upsert": "UPSERT", "delete": "DELETE"}
    out: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    for step in done:
        if step["op"] in ops:
            record = step.get("record") or {}
            out.setdefault((step["store"], step["id"]), []).append((ops[step["op"]], record.get("content")))
    return out


def test_it_writes_every_version_latitude_memory_telemetry_sent(client_runs):
    run, requests = client_runs("latitude-memory")
    extraction, _, doc = ledger(batches(requests))
    assert extraction.rejected == []
    versions = {(store.key, record.external_id): record for store in doc.stores for record in store.records}
    expected = expected_versions(run.done["done"])
    assert set(versions) == set(expected)
    for key, wanted in expected.items():
        got = versions[key].ordered_versions()
        assert [v.op for v in got] == [op for op, _ in wanted], key
        for version, (op, content) in zip(got, wanted, strict=True):
            if op == "DELETE":
                assert version.text is None
            elif key == ("user-prefs", "mem-2") and version.number == 3:
                # Written with capture_content=False: the op and the record, not the body.
                assert (version.captured, version.text, version.value) == (False, None, None)
            else:
                assert version.captured and version.value == content
                assert version.text == (content if isinstance(content, str) else json.dumps(content))
        assert [v.at for v in got] == sorted(v.at for v in got)
    # The store as the backend holds it at the end: what is active, with the bodies that were captured.
    final = run.done["stores"]
    active = {key: r for key, r in versions.items() if r.state == "active"}
    assert set(active) == {(store, rid) for store, records in final.items() for rid in records}
    assert active[("user-prefs", "mem-1")].text == final["user-prefs"]["mem-1"]["content"] == "Alice is vegan"
    assert active[("user-prefs", "mem-1")].metadata == {"source": "chat", "turn": 2}
    # mem-2's last body was not captured: unknown, not the one before it, nor invented.
    assert (active[("user-prefs", "mem-2")].text, active[("user-prefs", "mem-2")].value,
            active[("user-prefs", "mem-2")].content_hash) == ("", None, None)
    assert versions[("scratch", "s-1")].state == "deleted"  # the store was emptied, then deleted
    # The refused update is in the trace with its error status, and nowhere in the ledger.
    assert [w.record_id for w in extraction.writes if w.error] == ["mem-404"]
    assert any("mem-404" in note and "no version written" in note for note in doc.notes)
    assert {s.key: s.scope for s in doc.stores} == {"scratch": {"store_id": "scratch"},
                                                    "user-prefs": {"store_id": "user-prefs"}}


def test_it_links_each_memory_search_to_the_call_it_fed(client_runs):
    run, requests = client_runs("latitude-memory")
    extraction, calls = read_all(batches(requests))
    links = link_reads(extraction.reads, calls, extraction.parents)
    doc = to_document(extraction, links, calls)
    searches = [step for step in run.done["done"] if step["op"] == "search"]
    ordered_calls = by_start(calls)
    assert len(doc.recalls) == len(searches) == len(ordered_calls) == len(run.requests) == 3
    for n, (recall, search, call) in enumerate(zip(doc.recalls, searches, ordered_calls, strict=True)):
        assert recall.llm_call == call.span_id and recall.external_id in links
        assert recall.store == "user-prefs"
        if n < 2:
            assert recall.query == search["query"]
            assert [(i.ref.get("id"), i.text, i.score) for i in recall.items] == [
                (r["id"], r["content"], r["score"]) for r in search["results"]]
            # What the search found is what the call it is linked to was sent.
            for item in recall.items:
                assert item.text in sent_text(call)
                assert item.text in run.requests[n]["messages"][0]["content"]
        else:  # capture off: the count, not the records nor the query
            assert recall.query is None and recall.items == []
            assert recall.params == {"record_count": len(search["results"]), "content_captured": False}
    # The first search found nothing (a zero-hit recall); the second's items are matched to their records at the
    # version current then: mem-1 was still "vegetarian" (version 1), its update came after the call.
    assert doc.recalls[0].items == [] and doc.recalls[0].params == {}
    # Where the found records went: the system prompt (the first message) of the call; unknown without content.
    assert [(r.call_input, r.placement) for r in doc.recalls] == [(None, "message"), (0, "system"),
                                                                  (None, "message")]
    assert [(i.record, i.version) for i in doc.recalls[1].items] == [("mem-2", 1), ("mem-1", 1), ("mem-3", 1)]


def test_it_reads_the_same_ledger_from_otlp_json(client_runs):
    _, requests = client_runs("latitude-memory")
    from_protobuf = ledger(batches(requests))
    as_json = [decode(otlp_json(r.body), signal="traces", content_type="application/json") for r in requests]
    assert ledger(as_json) == from_protobuf


def test_it_gives_the_same_ledger_whatever_order_and_repetition_the_spans_arrive_in(client_runs):
    for client in ("latitude-memory", "langchain-retriever"):
        _, requests = client_runs(client)
        protobuf = [r for r in requests if r.content_type == "application/x-protobuf"]
        expected = ledger(batches(protobuf))
        pieces = [piece for r in protobuf for piece in trace_requests_one_span_each(r.body)]
        assert len(pieces) >= 20
        shuffler = random.Random(26)
        for _ in range(6):
            arrivals = pieces + shuffler.sample(pieces, 8)
            shuffler.shuffle(arrivals)
            held: list[MemoryExtraction] = []
            calls: list[CapturedCall] = []
            for body in arrivals:  # as the receiver does: everything it holds for the trace, each time
                batch = decode(body, signal="traces", content_type="application/x-protobuf")
                held.append(extract_memory(batch))
                calls += extract(batch).calls
                merged = merge_extractions(held)
                link_reads(merged.reads, merge_calls(calls), merged.parents)
            merged = merge_extractions(held)
            links = link_reads(merged.reads, merge_calls(calls), merged.parents)
            assert (merged, links, to_document(merged, links, merge_calls(calls))) == expected


# --- openinference-instrumentation-langchain: RETRIEVER spans -----------------------------------------------------


def test_it_reads_the_documents_each_langchain_retriever_returned(client_runs):
    run, requests = client_runs("langchain-retriever")
    extraction, calls = read_all(batches(requests, "application/x-protobuf"))
    assert extraction.rejected == [] and extraction.writes == []
    retrievals = run.done["retrievals"]
    assert len(extraction.reads) == len(retrievals) == 4
    for read, done in zip(extraction.reads, retrievals, strict=True):
        assert read.kind == "retriever"
        assert read.name == {"profile": "VectorStoreRetriever", "notes": "ScoredNotesRetriever"}[done["retriever"]]
        assert read.query == done["query"]
        # Ids from the span's output.value (the instrumentation writes no document.id); the score only in the
        # metadata, where the retriever put it (it writes no document.score either).
        assert [(i.id, i.text, i.metadata, i.score) for i in read.items] == [
            (d["id"], d["content"], d["metadata"] or None, None) for d in done["documents"]]
    doc = to_document(extraction, link_reads(extraction.reads, calls, extraction.parents))
    assert [r.store for r in doc.recalls] == [None] * 4
    assert [[i.ref for i in r.items] for r in doc.recalls] == [
        [{"id": d["id"]} for d in done["documents"]] for done in retrievals]


def test_it_links_each_retrieval_to_the_call_it_fed(client_runs):
    run, requests = client_runs("langchain-retriever")
    extraction, calls = read_all(batches(requests, "application/x-protobuf"))
    links = link_reads(extraction.reads, calls, extraction.parents)
    ordered = by_start(calls)
    assert len(ordered) == len(run.requests) == 4
    # Turn by turn: the profile read (a sibling of the agent graph under rag_turn) fed the turn's first call, through
    # the system prompt; the notes read (inside the search_notes tool, under the graph's tools node) fed the next
    # call, the model node after the tools node, through the tool result.
    assert [links[r.span_id] for r in extraction.reads] == [c.span_id for c in ordered]
    doc = to_document(extraction, links, calls)
    # The profile in the system prompt; the notes in the newest tool result (turn 2's call also holds turn 1's).
    assert [(r.call_input, r.placement) for r in doc.recalls] == [(0, "system"), (3, "tool_result"), (0, "system"),
                                                                  (7, "tool_result")]
    for read, call in zip(extraction.reads, ordered, strict=True):
        system = call.inputs[0].content
        tool_results = [m.content for m in call.inputs if m.role == "tool"]
        for item in read.items:
            if read.name == "VectorStoreRetriever":
                assert item.text in system
            else:
                assert item.text in tool_results[-1]


def test_it_reads_the_same_from_the_json_exporter_as_from_the_protobuf_one(client_runs):
    for client in ("langchain-retriever", "openlit-mem0"):
        _, requests = client_runs(client)
        assert {r.content_type for r in requests} == {"application/json", "application/x-protobuf"}
        protobuf = ledger(batches(requests, "application/x-protobuf"))
        assert ledger(batches(requests, "application/json")) == protobuf
        assert ledger(batches(requests)) == protobuf  # both sent: each span once


# --- openlit instrumenting mem0 ---------------------------------------------------------------------------------


def test_it_reads_openlit_mem0_searches_and_names_what_it_cannot_read(client_runs):
    run, requests = client_runs("openlit-mem0")
    batch_list = batches(requests, "application/x-protobuf")
    extraction, calls = read_all(batch_list)
    assert (extraction.writes, extraction.compactions, extraction.rejected, calls) == ([], [], [], [])
    # Each search: mem0's own result (ids, texts, scores, metadata); the query only when given by keyword, never
    # top_k nor the filters that say whose memories these are (so no store).
    positional, by_keyword = extraction.reads
    for read, result in ((positional, run.done["search"]), (by_keyword, run.done["search_by_keyword"])):
        assert (read.kind, read.store_id, read.top_k, read.content_captured) == ("mem0_search", None, None, True)
        assert [(i.id, i.text, i.score, i.metadata) for i in read.items] == [
            (r["id"], r["memory"], r["score"], r["metadata"]) for r in result["results"]]
    assert (positional.query, by_keyword.query) == (None, "is alice vegan")
    assert "I am vegan and allergic to peanuts" in [i.text for i in by_keyword.items]
    assert [note.split(" with ")[0] for note in extraction.notes] == [
        "spans 'memory add'", "spans 'memory delete'", "spans 'memory history'", "spans 'memory update'"]
    doc = to_document(extraction)
    assert doc.stores == [] and doc.notes == extraction.notes
    assert [(r.store, r.params, r.llm_call) for r in doc.recalls] == [(None, {"record_count": 3, "source":
                                                                             "openlit mem0"}, None),
                                                                      (None, {"record_count": 2, "source":
                                                                             "openlit mem0"}, None)]
    # What the writes carry, so that the notes are true: the record id, never its store nor its new text.
    spans = {s.name: s for b in batch_list for s in b.spans}
    first, second = (r["id"] for r in run.done["add_infer_false"]["results"])
    update = spans["memory update"].attributes
    assert update["db.update.id"] == first and update["gen_ai.operation.name"] == "memory"
    assert not any("vegan" in str(v) for v in update.values())
    assert spans["memory delete"].attributes["db.delete.id"] == second
    added = [s.attributes for b in batch_list for s in b.spans if s.name == "memory add"]
    assert not any(r["id"] in str(a) for a in added for r in run.done["add_infer_false"]["results"])
    assert {s.attributes.get("gen_ai.operation.name") for b in batch_list for s in b.spans} == {
        "memory", "invoke_workflow", "vectordb", None}


# --- bad input, by hand ---------------------------------------------------------------------------------------------


def span(span_id: str, name: str, attributes: dict[str, Any], *, parent: str | None = None, start: int = 1,
         end: int | None = None, trace: str = "t" * 32, error: str = "") -> Span:
    return Span(trace_id=trace, span_id=span_id, parent_span_id=parent, name=name, start_ns=start * 1_000_000,
                end_ns=(end if end is not None else start + 1) * 1_000_000, attributes=attributes,
                resource={"service.name": "agent"}, scope="test", status_error=bool(error), status_message=error)


def write(span_id: str, op: str, record: str | None, records: Any = None, store: str | None = "s", **kw: Any) -> Span:
    attributes: dict[str, Any] = {"gen_ai.operation.name": op}
    if store is not None:
        attributes["gen_ai.memory.store.id"] = store
    if record is not None:
        attributes["gen_ai.memory.record.id"] = record
    if records is not None:
        attributes["gen_ai.memory.records"] = records if isinstance(records, str) else json.dumps(records)
    return span(span_id, op, attributes, **kw)


def test_it_names_a_write_without_a_store_and_keeps_the_rest_of_the_batch():
    batch = Batch(spans=[
        write("a1", "create_memory", "r1", [{"id": "r1", "content": "kept"}], start=1),
        write("a2", "update_memory", "r1", [{"id": "r1", "content": "lost"}], store=None, start=3),
        write("a3", "delete_memory", "r9", store=None, start=4),
    ])
    extraction = extract_memory(batch)
    assert [w.span_id for w in extraction.writes] == ["a1"]
    assert [r.reason for r in extraction.rejected] == [
        "span a2 (update_memory): gen_ai.memory.record.id 'r1' without gen_ai.memory.store.id: no store to place it in",
        "span a3 (delete_memory): gen_ai.memory.record.id 'r9' without gen_ai.memory.store.id: no store to place it in",
    ]
    [record] = to_document(extraction).stores[0].records
    assert [(v.op, v.text) for v in record.versions] == [("ADD", "kept")]


def test_it_keeps_a_read_whose_items_are_not_json_without_its_items():
    batch = Batch(spans=[
        span("b1", "search_memory", {"gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "s",
                                     "gen_ai.memory.query.text": "diet", "gen_ai.memory.records": "[{'id': 1"}),
        span("b2", "search_memory", {"gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "s",
                                     "gen_ai.memory.records": json.dumps([{"id": "x", "content": "ok", "score": 0.5},
                                                                          {"id": "y"}, "text", {"content": None}])},
             start=5),
    ])
    extraction = extract_memory(batch)
    first, second = extraction.reads
    assert (first.query, first.items, first.content_captured) == ("diet", (), False)
    assert [(i.id, i.text, i.score) for i in second.items] == [("x", "ok", 0.5), (None, "", None)]
    assert [r.reason for r in extraction.rejected] == [
        "span b1 (search_memory): gen_ai.memory.records: not JSON (Expecting property name enclosed in double quotes "
        "at column 3): kept without its records",
        "span b2 (search_memory): gen_ai.memory.records[1]: no content (required)",
        "span b2 (search_memory): gen_ai.memory.records[2]: expected an object, got str",
    ]
    recalls = to_document(extraction).recalls
    assert recalls[0].params == {"content_captured": False} and [i.rank for i in recalls[1].items] == [1, 2]


def test_it_reads_each_item_field_as_json_gives_it():
    """Scores as floats (ints widened, bools and text dropped, an integer past a float's range dropped, not raised),
    ids as text (0 kept, "" none), content that is not text shown as its JSON, metadata kept as written when it is not
    an object."""
    records = ('[{"content": "a", "score": 1, "id": 0}, {"content": "b", "score": true, "id": ""},'
               ' {"content": "c", "score": "0.5", "id": 7.5}, {"content": {"k": [1, 2]}, "score": 1' + "0" * 400 +
               '}, {"content": null, "metadata": "plain"}, {"content": "d", "score": 12345678901234567890123,'
               ' "metadata": {"n": 123456789012345678901234567890}}]')
    [read] = extract_memory(Batch(spans=[span("s1", "search_memory", {
        "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "s", "gen_ai.memory.records": records,
    })])).reads
    assert [(i.rank, i.id, i.score, i.text, i.metadata, i.metadata_text) for i in read.items] == [
        (1, "0", 1.0, "a", None, None), (2, None, None, "b", None, None), (3, "7.5", None, "c", None, None),
        (4, None, None, '{"k": [1, 2]}', None, None), (5, None, None, "", None, "plain"),
        (6, None, 1.2345678901234568e22, "d", {"n": 123456789012345678901234567890}, None),
    ]
    assert type(read.items[0].score) is float


def test_it_caps_a_huge_records_attribute_and_keeps_the_write_without_its_body():
    huge = json.dumps([{"id": "r1", "content": "x" * 2_000_000}])
    many = json.dumps([{"id": f"m{i}", "content": f"fact {i}"} for i in range(MAX_ITEMS + 5)])
    extraction = extract_memory(Batch(spans=[write("c1", "create_memory", "r1", huge),
                                             write("c2", "create_memory", None, many, start=3)]))
    big, listed = extraction.writes
    assert (big.content_captured, big.records, big.record_id) == (False, (), "r1")
    assert len(listed.records) == MAX_ITEMS
    assert [r.reason for r in extraction.rejected] == [
        "span c1 (create_memory): gen_ai.memory.records: 2,000,029 characters, more than the 1,048,576 read: kept "
        "without its records",
        "span c2 (create_memory): gen_ai.memory.records: 10,005 entries, the first 10,000 read",
    ]
    store = to_document(extraction).stores[0]
    record = next(r for r in store.records if r.external_id == "r1")
    assert [(v.op, v.captured, v.text) for v in record.versions] == [("ADD", False, None)]
    assert len(store.records) == 1 + MAX_ITEMS


def test_it_keeps_metadata_that_is_not_json_as_text():
    batch = Batch(spans=[span("d1", "retriever", {
        "openinference.span.kind": "RETRIEVER", "input.value": "q",
        "retrieval.documents.0.document.id": "doc-1", "retrieval.documents.0.document.content": "one",
        "retrieval.documents.0.document.score": 0.9, "retrieval.documents.0.document.metadata": "{source: wiki",
        "retrieval.documents.1.document.id": "doc-2", "retrieval.documents.1.document.content": "two",
        "retrieval.documents.1.document.metadata": '{"page": 3}'})])
    extraction = extract_memory(batch)
    [read] = extraction.reads
    assert [(i.id, i.score, i.metadata, i.metadata_text) for i in read.items] == [
        ("doc-1", 0.9, None, "{source: wiki"), ("doc-2", None, {"page": 3}, None)]
    assert [r.reason for r in extraction.rejected] == [
        "span d1 (retriever): retrieval.documents.0.document.metadata: not a JSON object: kept as text"]
    assert to_document(extraction).recalls[0].items[0].metadata == {"metadata_text": "{source: wiki"}


def test_it_reads_a_reranker_and_a_retrieval_of_a_data_source():
    batch = Batch(spans=[
        span("e1", "reranker", {"openinference.span.kind": "RERANKER", "reranker.query": "q", "reranker.top_k": 1,
                                "reranker.input_documents.0.document.content": "a",
                                "reranker.input_documents.1.document.content": "b",
                                "reranker.output_documents.0.document.content": "b",
                                "reranker.output_documents.0.document.score": 0.8}),
        span("e2", "retrieval kb", {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "kb",
                                    "gen_ai.request.top_k": 2.0, "gen_ai.retrieval.query.text": "q",
                                    "gen_ai.retrieval.documents": [{"id": "d7", "score": 0.4}]}, start=3),
    ])
    rerank, retrieval = extract_memory(batch).reads
    assert (rerank.kind, rerank.top_k, [(i.text, i.score) for i in rerank.items]) == ("reranker", 1, [("b", 0.8)])
    assert (retrieval.store_id, retrieval.top_k, [(i.id, i.score, i.text) for i in retrieval.items]) == (
        "kb", 2, [("d7", 0.4, "")])
    doc = to_document(extract_memory(batch))
    assert [(s.key, s.kind, s.scope) for s in doc.stores] == [("data_source:kb", "knowledge",
                                                                {"data_source_id": "kb"})]
    assert [r.params for r in doc.recalls] == [{"top_k": 1, "record_count": 1, "reranker": "reranker"},
                                               {"top_k": 2}]


def test_it_keeps_a_delete_of_a_record_it_never_saw_written():
    doc = to_document(extract_memory(Batch(spans=[write("f1", "delete_memory", "old-7")])))
    [record] = doc.stores[0].records
    assert (record.external_id, record.state, [v.op for v in record.versions]) == ("old-7", "deleted", ["DELETE"])
    assert any("'old-7', not written in this document" in note for note in doc.notes)


def test_it_never_raises_on_odd_values():
    odd: list[Any] = [5, {"a": 1}, [1, 2], "", "null", [{"content": {"deep": [1, {"x": None}]}}]]
    spans = [write(f"g{i}", "create_memory", f"r{i}", value, start=i) for i, value in enumerate(odd)]
    spans += [span("h1", "search_memory", {"gen_ai.operation.name": "search_memory", "gen_ai.memory.records": 7}),
              span("", "no id", {"gen_ai.operation.name": "create_memory"}),
              span("h2", "chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": 'not json "compaction"'}),
              span("h4", "listed", {"gen_ai.operation.name": ["create_memory"], "openinference.span.kind": {"a": 1}}),
              span("h5", "retrieval kb", {"gen_ai.operation.name": "retrieval", "gen_ai.request.top_k": float("inf"),
                                          "gen_ai.retrieval.documents": [{"id": {"x": 1}, "score": float("nan")}]})]
    spans.append(Span(trace_id="t" * 32, span_id="h3", parent_span_id=None, name="x", start_ns=0, end_ns=0,
                      attributes={"gen_ai.operation.name": "update_memory", "gen_ai.memory.store.id": "s",
                                  "gen_ai.memory.record.count": "many"}, resource={}, scope=""))
    extraction = extract_memory(Batch(spans=spans))
    doc = to_document(extraction)
    assert len(extraction.writes) == len(odd) + 1 and len(extraction.reads) == 2
    assert (extraction.reads[1].top_k, extraction.reads[1].items[0].id) == (None, "{'x': 1}")
    assert [w.content_captured for w in extraction.writes[: len(odd)]] == [False, False, True, False, False, True]
    assert doc.stores[0].records  # what could be placed is placed


def test_it_keeps_an_openlit_mem0_search_whose_result_it_cannot_read():
    def mem0_search(span_id: str, output: Any, **more: Any) -> Span:
        attributes = {"gen_ai.operation.name": "memory", "gen_ai.provider.name": "mem0", **more}
        if output is not None:
            attributes["gen_ai.output.messages"] = output
        return span(span_id, "memory search", attributes)

    extraction = extract_memory(Batch(spans=[
        mem0_search("i1", "{'results': []}"), mem0_search("i2", json.dumps({"answer": 1})),
        mem0_search("i3", None, **{"gen_ai.memory.operation.result_count": 4}),
        mem0_search("i4", json.dumps([{"id": "m", "memory": "Alice runs", "score": 0.3}]),
                    **{"gen_ai.memory.search.query": "runs", "gen_ai.memory.search.limit": 5}),
    ]))
    assert [(r.content_captured, r.record_count, r.query, r.top_k, [(i.id, i.text) for i in r.items])
            for r in extraction.reads] == [(False, None, None, None, []), (False, None, None, None, []),
                                           (False, 4, None, None, []), (True, None, "runs", 5, [("m", "Alice runs")])]
    assert [r.reason.split(": ", 1)[1] for r in extraction.rejected] == [
        "gen_ai.output.messages: not JSON (Expecting property name enclosed in double quotes at column 2): kept "
        "without its records",
        "gen_ai.output.messages: not mem0's search result (results): kept without its records"]


def test_it_says_where_a_recall_went_in_the_call_it_fed():
    [read] = extract_memory(Batch(spans=[span("j1", "search_memory", {
        "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "s",
        "gen_ai.memory.records": json.dumps([{"id": "a", "content": "Alice  is\nvegan"}])})])).reads

    def fed(*messages: tuple[str, str]) -> CapturedCall:
        return CapturedCall(trace_id="t" * 32, span_id="c", inputs=[Message(role=r, content=c) for r, c in messages])

    assert carrying_input(read, fed(("system", "Known: Alice is vegan."), ("user", "hi"))) == (0, "system")
    assert carrying_input(read, fed(("user", "Memories: Alice is vegan. Lunch?"))) == (0, "message")
    assert carrying_input(read, fed(("system", "x"), ("assistant", "Alice is vegan"), ("user", "ok"))) is None
    assert carrying_input(read, CapturedCall(trace_id="t", span_id="c")) is None


# --- the call a read fed ------------------------------------------------------------------------------------------


def call(span_id: str, parent: str | None, start: int, trace: str = "t" * 32) -> CapturedCall:
    return CapturedCall(trace_id=trace, span_id=span_id, parent_span_id=parent, started_ns=start * 1_000_000,
                        ended_ns=(start + 1) * 1_000_000)


def read_span(span_id: str, parent: str | None, start: int) -> Span:
    return span(span_id, "search_memory", {"gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "s"},
                parent=parent, start=start)


def test_it_links_a_read_to_the_nearest_call_in_the_tree_then_the_earliest():
    # agent ─┬─ step1 ─┬─ read r1 (1-2)    ─── call c1 (5) under step1: r1's sibling
    #        │         └─ call c1 (5)
    #        ├─ tool ── read r2 (6-7)        r2: no sibling call; the parent's next child: step2's c2
    #        ├─ step2 ── call c2 (9)
    #        └─ call c0 (8)                  c0 under agent is as near to r2 as c2 and earlier: it wins
    # another trace ── call x (3)            never linked
    tree = {"step1": "agent", "tool": "agent", "step2": "agent", "agent": None}
    reads = [read_span("r1", "step1", 1), read_span("r2", "tool", 6), read_span("r3", "agent", 20)]
    extraction = extract_memory(Batch(spans=reads))
    extraction.parents.update(tree)
    calls = [call("c1", "step1", 5), call("c2", "step2", 9), call("c0", "agent", 8), call("x", None, 3, "u" * 32),
             call("early", "step1", 0)]
    assert link_reads(extraction.reads, calls, extraction.parents) == {"r1": "c1", "r2": "c0"}
    # Without the tree, only what the spans themselves say: r2's parent is unknown, so the earliest call after it.
    assert link_reads(extraction.reads, calls) == {"r1": "c1", "r2": "c0"}
    without_c0 = [c for c in calls if c.span_id != "c0"]
    assert link_reads(extraction.reads, without_c0, extraction.parents) == {"r1": "c1", "r2": "c2"}


def test_it_links_a_write_to_the_nearest_call_before_it_then_the_latest():
    # agent ─┬─ step1 ─┬─ call c1 (1-2)    ─── write w1 (6) under step1: c1 is its sibling
    #        │         └─ write w1 (6)
    #        ├─ step2 ── call c2 (3-4)        w2: no sibling call; the parent's earlier children: c2 and c0
    #        ├─ call c0 (4-5)                 c0 under agent is as near to w2 as c2 and later: it wins
    #        └─ tool ── write w2 (7)
    #           write w0 (0)                  before any call: not linked
    # another trace ── call x (5)            never linked
    tree = {"step1": "agent", "tool": "agent", "step2": "agent", "agent": None}
    writes = [write(name, "create_memory", f"m-{name}", json.dumps([{"id": f"m-{name}", "content": name}]),
                    parent=parent, start=start) for name, parent, start in
              (("w1", "step1", 6), ("w2", "tool", 7), ("w0", "agent", 0))]
    extraction = extract_memory(Batch(spans=writes))
    extraction.parents.update(tree)
    calls = [call("c1", "step1", 1), call("c2", "step2", 3), call("c0", "agent", 4), call("x", None, 5, "u" * 32),
             call("late", "step1", 9)]
    assert link_writes(extraction.writes, calls, extraction.parents) == {"w1": "c1", "w2": "c0"}
    without_c0 = [c for c in calls if c.span_id != "c0"]
    assert link_writes(extraction.writes, without_c0, extraction.parents) == {"w1": "c1", "w2": "c2"}
    assert link_writes(extraction.writes, list(reversed(calls)), extraction.parents) == {"w1": "c1", "w2": "c0"}
    # Each version of a linked write names the call; the versions of w0 none.
    document = to_document(extraction, write_links=link_writes(extraction.writes, calls, extraction.parents))
    named = {v.external_id: v.llm_call for store in document.stores for r in store.records for v in r.versions}
    assert named == {"w1": "c1", "w2": "c0", "w0": None}


def test_it_links_the_same_whatever_order_the_spans_come_in():
    tree = {"a": None, "b": "a", "c": "a", "d": "c", "e": "a", "f": "e"}
    reads = [read_span(f"r{i}", parent, start) for i, (parent, start) in
             enumerate([("b", 1), ("d", 3), ("a", 10), ("f", 4), ("b", 12)])]
    calls = [call(f"c{i}", parent, start) for i, (parent, start) in
             enumerate([("b", 2), ("c", 5), ("e", 6), ("a", 11), ("f", 5), ("b", 13), ("d", 13)])]
    extraction = extract_memory(Batch(spans=reads))
    expected = link_reads(extraction.reads, calls, tree)
    # r1's sibling call c6 comes long after c1 under its grandparent: the sibling is nearer.
    assert expected == {"r0": "c0", "r1": "c6", "r2": "c3", "r3": "c4", "r4": "c5"}
    shuffler = random.Random(3)
    for _ in range(20):
        shuffled_reads, shuffled_calls = list(extraction.reads), calls + shuffler.sample(calls, 3)
        shuffler.shuffle(shuffled_reads)
        shuffler.shuffle(shuffled_calls)
        items = list(tree.items())
        shuffler.shuffle(items)
        assert link_reads(shuffled_reads + shuffled_reads[:2], shuffled_calls, dict(items)) == expected


def test_it_takes_a_calls_span_start_over_the_time_its_log_events_were_seen():
    [read] = extract_memory(Batch(spans=[read_span("r", "p", 1)])).reads
    from_events = CapturedCall(trace_id="t" * 32, span_id="late", observed_ns=3 * 1_000_000)
    from_span = call("late", "p", 9)
    other = call("other", "p", 5)
    for calls in ([from_events, from_span, other], [other, from_span, from_events]):
        assert link_reads([read], calls) == {"r": "other"}  # "late" started at 9, though its events came at 3


def test_it_tells_a_retriever_that_found_nothing_from_one_whose_outputs_were_hidden():
    found_nothing = span("n1", "retriever", {"openinference.span.kind": "RETRIEVER", "input.value": "q",
                                             "output.value": '{"documents": []}'})
    hidden = span("n2", "retriever", {"openinference.span.kind": "RETRIEVER", "input.value": "q"}, start=3)
    redacted = span("n3", "retriever", {"openinference.span.kind": "RETRIEVER", "output.value": "__REDACTED__"},
                    start=5)
    reads = extract_memory(Batch(spans=[found_nothing, hidden, redacted])).reads
    assert [(r.content_captured, r.record_count, r.items) for r in reads] == [
        (True, 0, ()), (False, None, ()), (False, None, ())]


# --- compaction ---------------------------------------------------------------------------------------------------


def chat(span_id: str, start: int, inputs: list[Any], outputs: list[Any], **attributes: Any) -> Span:
    return span(span_id, "chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(inputs),
                                  "gen_ai.output.messages": json.dumps(outputs), **attributes}, start=start)


def test_it_reads_a_compaction_once_though_every_later_call_passes_it_back():
    part = {"type": "compaction", "id": "cmp_1", "content": "Alice is vegan; booked Rome."}
    user = {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    spans = [
        chat("k1", 1, [user], [{"role": "assistant", "parts": [part]}]),
        chat("k2", 3, [{"role": "user", "parts": [part]}, user], []),
        chat("k3", 5, [{"role": "user", "parts": [part]}, user], []),
        chat("k4", 7, [user], [], **{"gen_ai.conversation.compacted": True}),
        chat("k5", 9, [{"role": "user", "parts": [{"type": "compaction"}]}], []),  # encrypted: no content, no id
    ]
    forward = merge_extractions(extract_memory(Batch(spans=[s])) for s in spans)
    backward = merge_extractions(extract_memory(Batch(spans=[s])) for s in reversed(spans))
    assert forward == backward
    assert [(c.span_id, c.source, c.summary) for c in forward.compactions] == [
        ("k1", "output", "Alice is vegan; booked Rome."), ("k4", "flag", None), ("k5", "input", None)]
    doc = to_document(forward)
    assert [(c.llm_call, c.summary, c.at) for c in doc.compactions] == [
        ("k1", "Alice is vegan; booked Rome.", datetime(1970, 1, 1, 0, 0, 0, 2000, tzinfo=UTC)),
        ("k4", None, datetime(1970, 1, 1, 0, 0, 0, 7000, tzinfo=UTC)),
        ("k5", None, datetime(1970, 1, 1, 0, 0, 0, 9000, tzinfo=UTC))]
    assert all(isinstance(c, CompactionIn) for c in doc.compactions) and not doc.is_empty()


def test_it_keeps_span_times_to_the_microsecond():
    nanos = 1_796_619_363_780_721_994
    [version] = to_document(extract_memory(Batch(spans=[Span(
        trace_id="t" * 32, span_id="m1", parent_span_id=None, name="create_memory", start_ns=nanos - 10,
        end_ns=nanos, attributes={"gen_ai.operation.name": "create_memory", "gen_ai.memory.store.id": "s",
                                  "gen_ai.memory.records": json.dumps([{"id": "r", "content": "x"}])},
        resource={}, scope="")]))).stores[0].records[0].versions
    assert version.at == datetime(2026, 12, 7, 4, 56, 3, 780721, tzinfo=UTC)  # a float would say ...722
    assert VersionIn(op="ADD").captured is True

