"""OTLP trace requests made by hand for the live-memory tests (tests/test_memory_capture.py,
tests/test_session_compactions.py): spans with attributes, a request of them, posted to the real receiver."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TRACE = "ab" * 16
NS0 = int(T0.timestamp()) * 1_000_000_000


def post(client, key: str, body: bytes, content_type: str = PROTOBUF) -> ExportTraceServiceResponse:
    response = client.post("/otlp/v1/traces", data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200, response.content
    if content_type == JSON:
        return json_format.Parse(response.content, ExportTraceServiceResponse())
    return ExportTraceServiceResponse.FromString(response.content)


def sid(name: str) -> str:
    """A span id (16 hex digits) from a short name."""
    return name.encode().hex().ljust(16, "0")[:16]


def span(name: str, op_name: str, attributes: dict[str, Any], *, parent: str | None = None, start: float = 0,
         end: float | None = None, trace: str = TRACE, error: str = "") -> Any:
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    one = Span(trace_id=bytes.fromhex(trace), span_id=bytes.fromhex(sid(name)), name=op_name,
               start_time_unix_nano=NS0 + int(start * 1e9),
               end_time_unix_nano=NS0 + int((end if end is not None else start + 0.5) * 1e9))
    if parent:
        one.parent_span_id = bytes.fromhex(sid(parent))
    for key, value in attributes.items():
        one.attributes.add(key=key).value.CopyFrom(any_value(value))
    if error:
        one.status.code = Status.STATUS_CODE_ERROR
        one.status.message = error
    return one


def any_value(value: Any) -> AnyValue:
    """An OTLP AnyValue for a Python value, as ``otlp.any_value`` reads it back: None (no member), bool, int, float,
    str, bytes, list (an array), dict (a kvlist)."""
    out = AnyValue()
    if value is None:
        pass
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, bytes):
        out.bytes_value = value
    elif isinstance(value, list):
        out.array_value.SetInParent()
        out.array_value.values.extend(any_value(v) for v in value)
    else:
        out.kvlist_value.SetInParent()
        out.kvlist_value.values.extend(KeyValue(key=k, value=any_value(v)) for k, v in value.items())
    return out


def request(*spans: Any) -> bytes:
    body = ExportTraceServiceRequest()
    resource_spans = body.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "prefs-agent"
    resource_spans.scope_spans.add().spans.extend(spans)
    return body.SerializeToString()
