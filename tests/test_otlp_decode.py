"""Decoding OTLP/HTTP bodies: protobuf and OTLP JSON, gzip or not, and clear errors for everything else."""
from __future__ import annotations

import base64
import gzip
import json

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agents.memory.otlp import OtlpError, decode

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"

# An OTLP JSON traces request as the specification's example writes one: hex ids, lowerCamelCase fields, 64-bit
# integers as strings, and a field this receiver does not know (which it must ignore).
TRACES_JSON = {
    "resourceSpans": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "travel-agent"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "my.library", "version": "1.0.0"},
                    "spans": [
                        {
                            "traceId": TRACE_ID,
                            "spanId": SPAN_ID,
                            "parentSpanId": PARENT_ID,
                            "name": "chat gpt-4o",
                            "kind": 3,
                            "startTimeUnixNano": "1544712660000000000",
                            "endTimeUnixNano": "1544712661000000000",
                            "attributes": [
                                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "42"}},
                                {"key": "gen_ai.usage.cost", "value": {"doubleValue": 0.5}},
                                {
                                    "key": "gen_ai.response.finish_reasons",
                                    "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}},
                                },
                                {
                                    "key": "flags",
                                    "value": {
                                        "kvlistValue": {"values": [{"key": "cached", "value": {"boolValue": True}}]}
                                    },
                                },
                            ],
                            "status": {"code": 2, "message": "rate limited"},
                            "someFutureField": {"x": 1},
                        }
                    ],
                }
            ],
        }
    ],
}


def traces_protobuf() -> bytes:
    request = ExportTraceServiceRequest()
    document = json.loads(json.dumps(TRACES_JSON))
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    del span["someFutureField"]
    for key in ("traceId", "spanId", "parentSpanId"):
        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    json_format.ParseDict(document, request)
    return request.SerializeToString()


def decoded_span(body: bytes, content_type: str, encoding: str = ""):
    batch = decode(body, signal="traces", content_type=content_type, content_encoding=encoding)
    assert len(batch.spans) == 1
    return batch.spans[0]


@pytest.mark.parametrize("content_type, make_body, encoding", [
    ("application/x-protobuf", traces_protobuf, ""),
    ("application/x-protobuf", lambda: gzip.compress(traces_protobuf()), "gzip"),
    ("application/json", lambda: json.dumps(TRACES_JSON).encode(), ""),
    ("application/json; charset=utf-8", lambda: gzip.compress(json.dumps(TRACES_JSON).encode()), "gzip"),
])
def test_it_reads_the_same_span_from_every_encoding(content_type, make_body, encoding):
    span = decoded_span(make_body(), content_type, encoding)
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE_ID, SPAN_ID, PARENT_ID)
    assert span.name == "chat gpt-4o"
    assert span.start_ns == 1544712660000000000 and span.end_ns == 1544712661000000000
    assert span.attributes == {
        "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 42, "gen_ai.usage.cost": 0.5,
        "gen_ai.response.finish_reasons": ["stop"], "flags": {"cached": True},
    }
    assert span.resource == {"service.name": "travel-agent"}
    assert span.scope == "my.library"
    assert span.status_error and span.status_message == "rate limited"


def test_it_reads_log_records_with_their_event_name_from_the_field_or_the_attribute():
    request = ExportLogsServiceRequest()
    scope_logs = request.resource_logs.add().scope_logs.add()
    first = scope_logs.log_records.add(event_name="gen_ai.user.message", trace_id=bytes.fromhex(TRACE_ID),
                                       span_id=bytes.fromhex(SPAN_ID), observed_time_unix_nano=7)
    first.body.kvlist_value.values.add(key="content").value.string_value = "Hi"
    second = scope_logs.log_records.add(time_unix_nano=9)
    second.attributes.add(key="event.name").value.string_value = "gen_ai.choice"
    batch = decode(request.SerializeToString(), signal="logs", content_type="application/x-protobuf")
    assert [(r.event_name, r.time_ns, r.order) for r in batch.logs] == [
        ("gen_ai.user.message", 7, 0),
        ("gen_ai.choice", 9, 1),
    ]
    assert batch.logs[0].body == {"content": "Hi"}
    assert (batch.logs[0].trace_id, batch.logs[0].span_id) == (TRACE_ID, SPAN_ID)
    assert batch.logs[1].trace_id is None


def test_it_reads_an_empty_request_as_no_spans():
    assert decode(b"", signal="traces", content_type="application/x-protobuf").spans == []
    assert decode(b"{}", signal="logs", content_type="application/json").logs == []


@pytest.mark.parametrize("body, content_type, encoding, status, words", [
    (b"\x0a\xff\xff\xff\xff\x0f", "application/x-protobuf", "", 400, "malformed protobuf"),
    (b'{"resourceSpans": [', "application/json", "", 400, "malformed JSON at line 1 column 20"),
    (b'[1, 2]', "application/json", "", 400, "expected an object, got list"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "not-hex"}]}]}]}', "application/json", "", 400,
     "resourceSpans[0].scopeSpans[0].spans[0].traceId: ids are hex strings"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}', "application/json", "", 400,
     "malformed OTLP JSON traces request"),
    (b'\xff\xfe{', "application/json", "", 400, "not UTF-8"),
    (b"{}", "text/plain", "", 415, "unsupported content type text/plain"),
    (b"{}", "", "", 415, "unsupported content type none"),
    (b"{}", "application/json", "br", 415, "unsupported content encoding br"),
    (b"not gzip at all", "application/json", "gzip", 400, "malformed gzip body"),
    (gzip.compress(b"{}", mtime=0)[:-6], "application/json", "gzip", 400, "malformed gzip body"),
])
def test_it_says_what_is_wrong_with_a_body_it_cannot_read(body, content_type, encoding, status, words):
    with pytest.raises(OtlpError) as caught:
        decode(body, signal="traces", content_type=content_type, content_encoding=encoding)
    assert caught.value.status == status
    assert words in str(caught.value)


def test_it_refuses_a_body_over_the_limit_before_or_after_decompressing():
    with pytest.raises(OtlpError, match="body too large: 2000 bytes, the limit is 1000") as caught:
        decode(b" " * 2000, signal="traces", content_type="application/json", max_bytes=1000)
    assert caught.value.status == 413
    bomb = gzip.compress(b" " * 10_000_000)  # 10 MB of spaces in about 10 kB
    with pytest.raises(OtlpError, match="once decompressed") as caught:
        decode(bomb, signal="traces", content_type="application/json", content_encoding="gzip", max_bytes=1_000_000)
    assert caught.value.status == 413


def test_the_capture_core_imports_no_django():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, agents.memory.otlp, agents.memory.llm_calls, agents.memory.stitch; "
            "assert not [m for m in sys.modules if m.split('.')[0] == 'django'], 'django imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
