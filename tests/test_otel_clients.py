"""Real instrumented agents, real exporters, real bodies: the core reads back the conversation each one had.

Each agent runs as a subprocess in a virtualenv of its own (tests/otel_clients/requirements-*.txt), talks to a
scripted chat-completions server on loopback (parallel tool calls, an error result, a repeated "Thanks!") and
exports with the stock OTLP/HTTP exporter to a capture endpoint on loopback; nothing on the wire is mocked.
"""
from __future__ import annotations

import random

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from agents.memory.llm_calls import extract, merge_calls, resolve
from agents.memory.otlp import decode
from agents.memory.schema import parse_messages
from agents.memory.stitch import Stitcher, message_key, stitch
from tests.otel_clients.capture import OtlpCapture, log_requests_cut_at
from tests.otel_clients.runner import ensure_venvs, run_agent


@pytest.fixture(scope="session")
def pythons():
    return ensure_venvs()


def captured(pythons, instrumentation: str, **options):
    with OtlpCapture() as capture:
        run = run_agent(
            pythons, instrumentation, endpoint=capture.endpoint, headers="Authorization=Bearer%20mk_test", **options
        )
    calls, links, rejected = [], {}, []
    for request in capture.requests:
        assert request.authorization == "Bearer mk_test"
        batch = decode(request.body, signal=request.path.rsplit("/", 1)[-1], content_type=request.content_type,
                       content_encoding=request.content_encoding)
        extraction = extract(batch)
        calls += extraction.calls
        rejected += extraction.rejected
        links.update({link.span_id: link for link in extraction.links})
    assert rejected == []
    return run, calls, links, capture.requests


def keys(messages) -> list[str]:
    return [message_key(m) for m in messages]


@pytest.mark.parametrize("instrumentation", [
    "otel-genai", "otel-genai-events", "openinference", "openllmetry", "openllmetry-legacy", "langchain-openinference",
])
def test_it_rebuilds_the_conversation_of_a_real_instrumented_agent(pythons, instrumentation):
    run, calls, links, requests = captured(pythons, instrumentation, args=["--session", "trip-7"])
    assert {r.path for r in requests} <= {"/otlp/v1/traces", "/otlp/v1/logs"}
    calls = merge_calls(calls)
    assert len(calls) == len(run.requests) == 7
    stitched = stitch(calls)
    expected = parse_messages(run.history)
    assert keys(stitched.messages) == keys(expected)
    assert [m.content for m in stitched.messages if m.role == "user"].count("Thanks!") == 2
    assert [m.role for m in stitched.messages].count("tool") == 4  # the parallel pair, the retry, the booking
    # Each call received exactly what the model server received, and its reply is the next assistant message.
    by_start = sorted(stitched.calls, key=lambda c: c.call.started_ns or c.call.observed_ns)
    for placed, request in zip(by_start, run.requests, strict=False):
        sent = [stitched.messages[i] for i in placed.placement.sent]
        assert keys(sent) == keys(parse_messages(request["messages"]))
        assert stitched.messages[placed.placement.reply].role == "assistant"
    sessions = {resolve(c, links)[0] for c in calls}
    assert sessions == {"trip-7"}


def test_it_finds_the_session_on_the_resource_and_reads_gzip_bodies(pythons):
    run, calls, links, requests = captured(
        pythons,
        "openllmetry",
        args=["--session", "trip-8", "--session-on", "resource"],
        env={"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
    )
    assert {r.content_encoding for r in requests} == {"gzip"}
    assert {resolve(c, links) for c in calls} == {("trip-8", "travel-agent")}
    assert keys(stitch(calls).messages) == keys(parse_messages(run.history))


def test_it_rebuilds_the_whole_conversation_from_a_run_that_trimmed_its_history(pythons):
    run, calls, links, _ = captured(pythons, "openinference", args=["--keep", "3", "--session", "trip-10"])
    stitched = stitch(calls)
    assert keys(stitched.messages) == keys(parse_messages(run.history))
    left_out = [(placed.placement.reply or 0) - len(placed.placement.sent)
                for placed in sorted(stitched.calls, key=lambda c: c.call.started_ns)]
    # The system message plus the last three: the first call sent all it had, the later ones left messages out.
    assert left_out == [0, 1, 3, 5, 7, 9, 11]
    assert {resolve(c, links)[0] for c in calls} == {"trip-10"}


def test_it_takes_the_trace_for_the_session_when_nothing_names_one(pythons):
    _, calls, links, _ = captured(pythons, "openinference")
    # Without an agent span around them, each call of this agent is a trace of its own.
    assert {resolve(c, links)[0] for c in calls} == {f"trace:{c.trace_id}" for c in calls}
    assert len({c.trace_id for c in calls}) == 7


def test_it_gives_the_same_chain_whatever_order_and_repetition_the_spans_arrive_in(pythons):
    run, calls, _, _ = captured(pythons, "otel-genai", args=["--session", "trip-9"])
    expected = keys(stitch(calls).messages)
    shuffler = random.Random(11)
    for _ in range(5):
        arrivals = calls + shuffler.sample(calls, 3)
        shuffler.shuffle(arrivals)
        incremental = Stitcher()
        for call in arrivals:
            incremental.add(call)
        assert keys(incremental.messages) == expected == keys(parse_messages(run.history))


def test_it_gives_the_same_chain_whatever_order_and_repetition_the_log_event_batches_arrive_in(pythons):
    # openai-v2 2.3 tells each call in log events, one per message, apart from its span; an exporter's batches cut
    # a call's events where its timer says, and a batch may be sent again.
    with OtlpCapture() as capture:
        run = run_agent(pythons, "otel-genai-events", endpoint=capture.endpoint, args=["--session", "trip-11"])
    batches = []
    for request in capture.requests:
        if request.path.endswith("/logs"):
            logs = ExportLogsServiceRequest()
            logs.ParseFromString(request.body)
            batches += [("logs", body) for body in log_requests_cut_at(logs, [5, 7, 16, 25, 26])]
        else:
            batches.append(("traces", request.body))
    calls = [extract(decode(body, signal=signal, content_type="application/x-protobuf")).calls
             for signal, body in batches]
    expected = keys(parse_messages(run.history))
    shuffler = random.Random(12)
    for _ in range(8):
        arrivals = calls + shuffler.sample(calls, 3)
        shuffler.shuffle(arrivals)
        incremental = Stitcher()
        for batch in arrivals:
            for call in batch:
                incremental.add(call)
        assert keys(incremental.messages) == expected
        assert len(incremental.calls) == len(run.requests) == 7
        for placed, request in zip(incremental.calls, run.requests, strict=True):
            assert keys(incremental.messages[i] for i in placed.placement.sent) == keys(
                parse_messages(request["messages"]))
            assert placed.call.model == "gpt-4o-mini" and placed.call.convention == "genai+genai_events"
