"""The OTLP/HTTP receiver: real instrumented agents export to the live test server; the stored session must be
the conversation, once, whatever the span order; refused requests store nothing."""
from __future__ import annotations

import datetime as dt
import gzip
import json
import random
import threading

import pytest
from django.db import connection
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from agents import models
from agents.memory import otlp
from agents.memory.otlp import Batch
from agents.memory.schema import parse_messages
from agents.memory.stitch import message_key
from agents.projects import keys as projects_keys
from agents.store import reading
from tests.otel_clients.capture import OtlpCapture, log_requests_cut_at
from tests.otel_clients.runner import ensure_venvs, run_agent


@pytest.fixture(scope="session")
def pythons():
    return ensure_venvs()


@pytest.fixture
def key(project) -> str:
    return projects_keys.api_key_create(project=project, name="travel-agent").key


def stored_keys(session: models.Session) -> list[str]:
    return [message_key(m) for m in reading.session_messages(session)]


def keys(messages) -> list[str]:
    return [message_key(m) for m in messages]


def assert_conversation_stored(session: models.Session, run) -> None:
    assert stored_keys(session) == keys(parse_messages(run.history))
    calls = list(session.llm_calls.order_by("order_ns"))
    assert len(calls) == len(run.requests) == 7
    stored = reading.session_messages(session)
    for call, request in zip(calls, run.requests, strict=True):
        assert keys(stored[i] for i in call.sent) == keys(parse_messages(request["messages"]))
        assert stored[call.reply_seq].role == "assistant"
    assert session.message_count == len(run.history)
    assert session.token_total > 0 and session.violation_count == 0


@pytest.mark.parametrize("instrumentation", [
    "otel-genai", "otel-genai-events", "openinference", "openllmetry", "openllmetry-legacy", "langchain-openinference",
])
def test_it_stores_the_conversation_a_real_instrumented_agent_exports(
    pythons, live_server, project, key, instrumentation
):
    run = run_agent(pythons, instrumentation, endpoint=f"{live_server.url}/otlp",
                    headers=f"Authorization=Bearer%20{key}", args=["--session", "trip-7"])
    session = models.Session.objects.get(external_id="trip-7", agent__project=project)
    assert session.source_format == "otlp"
    assert_conversation_stored(session, run)
    assert session.last_activity_at is not None
    assert models.ApiKey.objects.get().last_used_at is not None


def test_it_shows_the_trimming_a_framework_did_on_the_calls_that_did_it(pythons, live_server, project, key):
    run = run_agent(pythons, "openinference", endpoint=f"{live_server.url}/otlp",
                    headers=f"Authorization=Bearer%20{key}", args=["--session", "trip-8", "--keep", "3"],
                    env={"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"})
    session = models.Session.objects.get(external_id="trip-8")
    assert stored_keys(session) == keys(parse_messages(run.history))
    calls = list(session.llm_calls.order_by("order_ns"))
    assert [call.reply_seq - len(call.sent) for call in calls] == [0, 1, 3, 5, 7, 9, 11]
    assert calls[-1].sent == [0, 12, 13, 14]


def real_trace_request(pythons, **options) -> ExportTraceServiceRequest:
    """The spans a real agent exported, as one request (the exporter may have sent several)."""
    with OtlpCapture() as capture:
        run = run_agent(pythons, "otel-genai", endpoint=capture.endpoint, headers="Authorization=Bearer%20x", **options)
    merged = ExportTraceServiceRequest()
    for request in capture.requests:
        part = ExportTraceServiceRequest()
        part.ParseFromString(request.body)
        merged.resource_spans.extend(part.resource_spans)
    return run, merged


def one_request_per_span(request: ExportTraceServiceRequest) -> list[bytes]:
    bodies = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                single = ExportTraceServiceRequest()
                rs = single.resource_spans.add()
                rs.resource.CopyFrom(resource_spans.resource)
                ss = rs.scope_spans.add()
                ss.scope.CopyFrom(scope_spans.scope)
                ss.spans.add().CopyFrom(span)
                bodies.append((span.name, single.SerializeToString()))
    return bodies


def post(client, body: bytes, key: str, *, path="/otlp/v1/traces", content_type="application/x-protobuf", **headers):
    return client.post(path, data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {key}", **headers)


def test_it_stores_the_same_session_whatever_order_and_repetition_the_spans_arrive_in(pythons, client, project, key):
    run, request = real_trace_request(pythons, args=["--session", "trip-9"])
    bodies = one_request_per_span(request)
    # The agent span (with the session id) first, then the calls newest first, each twice.
    agent_span = [b for name, b in bodies if name.startswith("invoke_agent")]
    calls = [b for name, b in bodies if not name.startswith("invoke_agent")]
    for body in agent_span + calls[::-1] + calls[::2]:
        assert post(client, body, key).status_code == 200
    session = models.Session.objects.get(external_id="trip-9")
    assert_conversation_stored(session, run)
    assert models.Session.objects.count() == 1


def test_it_moves_calls_to_their_session_when_the_agent_span_naming_it_comes_after_them(pythons, client, project, key):
    run, request = real_trace_request(pythons, args=["--session", "trip-10"])
    bodies = one_request_per_span(request)
    agent_span = [b for name, b in bodies if name.startswith("invoke_agent")]
    calls = [b for name, b in bodies if not name.startswith("invoke_agent")]
    for body in calls[:4]:
        post(client, body, key)
    waiting = models.Session.objects.get()
    assert waiting.external_id.startswith("trace:") and waiting.llm_calls.count() == 4
    post(client, agent_span[0], key)
    for body in calls[4:]:
        post(client, body, key)
    session = models.Session.objects.get()
    assert session.external_id == "trip-10" and session.agent.slug == "travel-agent"
    assert_conversation_stored(session, run)


def genai_span(span_id: str, attributes: dict) -> dict:
    return {"traceId": "ab" * 16, "spanId": span_id, "name": "chat gpt-4o", "startTimeUnixNano": "1000",
            "endTimeUnixNano": "2000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}


def test_it_answers_partial_success_for_spans_it_could_not_read_and_keeps_the_others(client, project, key):
    good = genai_span("01" * 8, {
        "gen_ai.operation.name": "chat", "session.id": "s1",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hello"}]}]),
    })
    bad = genai_span("02" * 8, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[{oops"})
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [good, bad]}]}]}
    response = post(client, json.dumps(body).encode(), key, content_type="application/json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    answer = json.loads(response.content)
    assert answer["partialSuccess"]["rejectedSpans"] == "1"
    assert "gen_ai.input.messages: not JSON" in answer["partialSuccess"]["errorMessage"]
    session = models.Session.objects.get(external_id="s1")
    assert [m.content for m in reading.session_messages(session)] == ["Hi", "Hello"]
    assert session.agent.name == "OpenTelemetry"  # no agent name and no service.name


def test_a_batch_whose_session_goes_while_it_waits_for_it_is_tried_again(client, project, key, monkeypatch):
    # Two requests of one agent at once on PostgreSQL: one (traces) names the trace's session and moves the calls
    # of "trace:<id>" there, deleting it, while the other (logs) waits for that session's lock. The waiting one
    # got no row, a 500 (seen in CI): it is tried again now, and finds the named session.
    from agents.capture import ingest as capture_ingest

    waiting = models.Session.objects.create(agent=models.Agent.objects.create(project=project, name="Bot", slug="bot"),
                                            external_id="trace:" + "ab" * 16)
    real = models.Session.objects.select_for_update

    def after_a_move(*args, **kwargs):  # the other request's move, committed while this one waited
        models.Session.objects.filter(pk=waiting.pk).delete()
        return real(*args, **kwargs)

    monkeypatch.setattr(models.Session.objects, "select_for_update", after_a_move)
    with pytest.raises(capture_ingest.SessionMoved):
        capture_ingest._session(project, waiting.external_id, "Bot", [])
    monkeypatch.undo()

    ingest, attempts = capture_ingest._ingest, []

    def moved_once(*args, **kwargs):
        attempts.append(1)
        if len(attempts) == 1:
            raise capture_ingest.SessionMoved("gone")
        return ingest(*args, **kwargs)

    monkeypatch.setattr(capture_ingest, "_ingest", moved_once)
    span = genai_span("03" * 8, {
        "gen_ai.operation.name": "chat", "session.id": "s3",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
    })
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    response = post(client, json.dumps(body).encode(), key, content_type="application/json")
    assert response.status_code == 200 and len(attempts) == 2
    assert [m.content for m in reading.session_messages(models.Session.objects.get(external_id="s3"))] == ["Hi"]


def chat(span_id: str, start: int, inputs: list[tuple[str, str]], output: str) -> dict:
    span = genai_span(span_id, {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in inputs]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": output}]}]),
    })
    return {**span, "parentSpanId": "aa" * 8, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 500)}


def spans_batch(*spans: dict) -> Batch:
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]}
    return otlp.decode(json.dumps(body).encode(), signal="traces", content_type="application/json", max_bytes=10**6)


@pytest.mark.django_db(transaction=True)
def test_a_call_stored_while_its_trace_moves_to_its_named_session_is_moved_with_it(project, key, monkeypatch):
    # CI, PostgreSQL: the agent's last spans (naming the session) and the log events of its last calls arrived
    # together. The spans' request read the calls waiting in "trace:<id>", the logs' request stored two more calls
    # there and committed, and the move deleted "trace:<id>" with them: the session lost its last five messages.
    # Here the second request runs in another thread at that very moment, and must not be lost.
    from agents.capture import ingest as capture_ingest

    api_key = models.ApiKey.objects.get(project=project)
    first = chat("01" * 8, 1000, [("user", "Hi")], "Hello")
    second = chat("02" * 8, 3000, [("user", "Hi"), ("assistant", "Hello"), ("user", "More")], "Sure")
    named = {**genai_span("aa" * 8, {"session.id": "s9"}), "name": "invoke_agent Bot"}
    capture_ingest.otlp_ingest(api_key=api_key, batch=spans_batch(first))
    assert models.Session.objects.get().external_id == "trace:" + "ab" * 16

    real, other = capture_ingest.stored_calls, []

    def stored_calls_then_another_request(session):
        calls = real(session)
        if not other:  # the logs' request, while the move holds what it read
            thread = threading.Thread(target=lambda: (
                capture_ingest.otlp_ingest(api_key=api_key, batch=spans_batch(second)), connection.close()))
            other.append(thread)
            thread.start()
            thread.join(timeout=1.5)  # it stored and committed, unless it waits for the session the move holds
        return calls

    monkeypatch.setattr(capture_ingest, "stored_calls", stored_calls_then_another_request)
    capture_ingest.otlp_ingest(api_key=api_key, batch=spans_batch(named))
    other[0].join(timeout=30)
    assert not other[0].is_alive()
    session = models.Session.objects.get()
    assert session.external_id == "s9"
    assert [m.content for m in reading.session_messages(session)] == ["Hi", "Hello", "More", "Sure"]
    assert session.llm_calls.count() == 2 and session.message_count == 4


def test_it_answers_protobuf_with_an_empty_response_when_everything_was_used(client, project, key):
    request = ExportTraceServiceRequest()
    request.resource_spans.add().resource.attributes.add(key="service.name").value.string_value = "idle"
    response = post(client, request.SerializeToString(), key)
    assert response.status_code == 200 and response["Content-Type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(response.content)
    assert not answer.HasField("partial_success")
    logs_request = ExportLogsServiceRequest()
    logs_request.resource_logs.add().resource.attributes.add(key="service.name").value.string_value = "idle"
    logs = post(client, logs_request.SerializeToString(), key, path="/otlp/v1/logs")
    assert logs.status_code == 200
    parsed = ExportLogsServiceResponse()
    parsed.ParseFromString(logs.content)
    assert not parsed.HasField("partial_success")
    assert models.Session.objects.count() == 0


def decode_status(response) -> tuple[int, str]:
    if response["Content-Type"] == "application/json":
        body = json.loads(response.content)
        return body["code"], body["message"]
    data = response.content
    assert data[0] == 0x08 and data[2] == 0x12
    return data[1], data[4:].decode() if data[3] < 0x80 else data[5:].decode()


@pytest.mark.parametrize("case, status, words", [
    ("no key", 401, "missing API key"),
    ("unknown key", 401, "unknown API key"),
    ("revoked key", 401, "was revoked"),
    ("wrong content type", 415, "unsupported content type text/plain"),
    ("malformed protobuf", 400, "malformed protobuf"),
    ("malformed json", 400, "malformed JSON at line 1"),
    ("malformed gzip", 400, "malformed gzip body"),
    ("too large", 413, "body too large"),
    ("too large once inflated", 413, "once decompressed"),
    ("get", 405, "takes POST"),
])
def test_it_refuses_a_bad_request_with_a_status_that_says_why_and_stores_nothing(
    client, project, key, settings, case, status, words
):
    settings.MEMORYVIZ_OTLP_MAX_BYTES = 10_000
    valid = json.dumps(
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                genai_span(
                                    "01" * 8,
                                    {
                                        "gen_ai.operation.name": "chat",
                                        "gen_ai.input.messages": "[]",
                                        "gen_ai.output.messages": json.dumps(
                                            [{"role": "assistant", "parts": [{"type": "text", "content": "x"}]}]
                                        ),
                                    },
                                )
                            ]
                        }
                    ]
                }
            ]
        }
    )
    kwargs = {"data": valid.encode(), "content_type": "application/json", "HTTP_AUTHORIZATION": f"Bearer {key}"}
    if case == "no key":
        del kwargs["HTTP_AUTHORIZATION"]
    elif case == "unknown key":
        kwargs["HTTP_AUTHORIZATION"] = f"Bearer {key[:-4]}abcd"
    elif case == "revoked key":
        projects_keys.api_key_revoke(api_key=models.ApiKey.objects.get())
    elif case == "wrong content type":
        kwargs["content_type"] = "text/plain"
    elif case == "malformed protobuf":
        kwargs.update(data=b"\x0a\xff\xff\xff\xff\x0f", content_type="application/x-protobuf")
    elif case == "malformed json":
        kwargs["data"] = valid.encode()[:-3]
    elif case == "malformed gzip":
        kwargs["HTTP_CONTENT_ENCODING"] = "gzip"
    elif case == "too large":
        kwargs["data"] = valid.encode() + b" " * 10_000
    elif case == "too large once inflated":
        kwargs.update(data=gzip.compress(valid.encode() + b" " * 100_000), HTTP_CONTENT_ENCODING="gzip")
    if case == "get":
        response = client.get("/otlp/v1/traces", HTTP_AUTHORIZATION=f"Bearer {key}")
    else:
        response = client.post("/otlp/v1/traces", **kwargs)
    assert response.status_code == status
    code, message = decode_status(response)
    assert words in message
    assert models.Session.objects.count() == 0 and models.Message.objects.count() == 0
    assert models.LlmCall.objects.count() == 0


def test_it_answers_a_protobuf_refusal_in_protobuf(client, project):
    response = client.post("/otlp/v1/traces", data=b"", content_type="application/x-protobuf")
    assert response.status_code == 401 and response["Content-Type"] == "application/x-protobuf"
    code, message = decode_status(response)
    assert code == 16 and "missing API key" in message
    assert response["WWW-Authenticate"] == 'Bearer realm="otlp"'


def test_it_stores_a_key_s_calls_only_in_its_own_project(client, project, other_project):
    other_key = projects_keys.api_key_create(project=other_project, name="beta").key
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            genai_span(
                                "01" * 8,
                                {
                                    "gen_ai.operation.name": "chat",
                                    "session.id": "s1",
                                    "gen_ai.input.messages": "[]",
                                    "gen_ai.output.messages": json.dumps(
                                        [{"role": "assistant", "parts": [{"type": "text", "content": "x"}]}]
                                    ),
                                },
                            )
                        ]
                    }
                ]
            }
        ]
    }
    post(client, json.dumps(body).encode(), other_key, content_type="application/json")
    assert models.Session.objects.get().agent.project == other_project


# --- the older GenAI log events, in batches that arrive out of order and repeated ----------------------------------


def real_log_event_requests(pythons, **options):
    """What openai-v2 2.3 really exported for a run in its log-event mode: its span requests and its log requests,
    each parsed (the exporter may have sent several of each)."""
    with OtlpCapture() as capture:
        run = run_agent(pythons, "otel-genai-events", endpoint=capture.endpoint, headers="Authorization=Bearer%20x",
                        **options)
    spans, logs = ExportTraceServiceRequest(), ExportLogsServiceRequest()
    for request in capture.requests:
        part = ExportTraceServiceRequest() if request.path.endswith("/traces") else ExportLogsServiceRequest()
        part.ParseFromString(request.body)
        if isinstance(part, ExportTraceServiceRequest):
            spans.resource_spans.extend(part.resource_spans)
        else:
            logs.resource_logs.extend(part.resource_logs)
    return run, spans, logs


@pytest.fixture(scope="module")
def log_event_run(pythons):
    return real_log_event_requests(pythons, args=["--session", "trip-11"])


def log_event_arrivals(log_event_run, order: str) -> list[tuple[str, bytes]]:
    _, spans, logs = log_event_run
    span_bodies = [("/otlp/v1/traces", body) for _, body in one_request_per_span(spans)]
    count = sum(len(sl.log_records) for rl in logs.resource_logs for sl in rl.scope_logs)
    # Cut inside calls: between a call's inputs, between its last input and its choice, and on a call's edge.
    cuts = [5, 7, 16, 25, 26, 40, 52, 60]
    assert cuts[-1] < count
    log_bodies = [("/otlp/v1/logs", body) for body in log_requests_cut_at(logs, cuts)]
    if order == "logs before their spans":
        return log_bodies + span_bodies
    if order == "spans before their logs":
        return span_bodies + log_bodies
    if order == "newest first":
        return log_bodies[::-1] + span_bodies[::-1]
    if order == "each batch twice":
        return [b for body in log_bodies + span_bodies for b in (body, body)]
    if order == "everything twice":
        return (log_bodies + span_bodies) * 2
    shuffler = random.Random(order)
    arrivals = log_bodies + span_bodies
    arrivals += shuffler.sample(arrivals, 4)
    shuffler.shuffle(arrivals)
    return arrivals


@pytest.mark.parametrize("order", [
    "logs before their spans", "spans before their logs", "newest first", "each batch twice", "everything twice",
    "shuffled 1", "shuffled 2", "shuffled 3", "shuffled 4",
])
def test_it_stores_the_conversation_told_by_log_events_whatever_order_and_repetition_the_batches_arrive_in(
    log_event_run, client, project, key, order
):
    run = log_event_run[0]
    for path, body in log_event_arrivals(log_event_run, order):
        assert post(client, body, key, path=path).status_code == 200
    session = models.Session.objects.get()
    assert session.external_id == "trip-11"
    stored = reading.session_messages(session)
    expected = parse_messages(run.history)
    assert [(m.role, m.content, m.tool_call_id, [c.id for c in m.tool_calls]) for m in stored] == [
        (m.role, m.content, m.tool_call_id, [c.id for c in m.tool_calls]) for m in expected]
    assert_conversation_stored(session, run)
    # Each call once, described as it was whatever came first: its span's times, its messages stamped with them.
    chat_spans = {span.span_id: span for span in otlp.decode(log_event_run[1].SerializeToString(), signal="traces",
                                                             content_type=otlp.PROTOBUF).spans
                  if span.name.startswith("chat")}
    calls = list(session.llm_calls.all())
    assert sorted(call.span_id for call in calls) == sorted(chat_spans)
    for call in calls:
        span = chat_spans[call.span_id]
        assert (call.convention, call.model, call.placed) == ("genai+genai_events", "gpt-4o-mini", True)
        assert call.usage == {"input_tokens": span.attributes["gen_ai.usage.input_tokens"],
                              "output_tokens": span.attributes["gen_ai.usage.output_tokens"]}
        assert (call.started_at, call.started_at + call.duration) == (at(span.start_ns), at(span.end_ns))
        brought = [seq for seq in call.sent if seq >= call.chain_start]
        assert {stored[seq].created_at for seq in brought} == {call.started_at}
        assert stored[call.reply_seq].created_at == call.started_at + call.duration
    assert session.started_at == at(min(span.start_ns for span in chat_spans.values()))
    assert session.title == "What's the weather in Paris and Atlantis?"


def at(ns: int) -> dt.datetime:
    """A time in ns as the database keeps it, to the microsecond."""
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=ns // 1000)
