"""Decoding OTLP/HTTP request bodies (traces and logs) into plain spans and log records.

Both encodings of the OTLP/HTTP specification are read: binary protobuf (``application/x-protobuf``) and OTLP
JSON (``application/json``), each gzip-compressed or not. JSON goes through the same protobuf messages (the
``opentelemetry-proto`` package), after the one rewrite the OTLP JSON mapping asks for: trace and span ids are
hex strings there, not base64. Unknown JSON fields are ignored, as the specification requires of receivers.

Every failure raises ``OtlpError`` with a sentence for the sender and the HTTP status the receiver should answer.
"""
from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

try:  # the native decoder of trace bodies, built by `make` where a C compiler is (agents/memory/native_build.py)
    from . import _otlp_wire
except ImportError:  # pragma: no cover - no compiler: the protobuf library's parser alone, the same spans
    _otlp_wire = None  # type: ignore[assignment]

Signal = Literal["traces", "logs"]
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# What a body may grow to once decompressed; the receiver passes its own limit.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})


class OtlpError(ValueError):
    """A body the receiver cannot use. ``status`` is the HTTP status to answer with (400, 413 or 415)."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Span(NamedTuple):
    """One span, as plain values. A named tuple, not a dataclass: a request holds hundreds, and the native decoder
    (``_otlp_wire``) makes them as tuples."""

    trace_id: str  # hex, as every OpenTelemetry tool shows it
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str
    status_error: bool = False
    status_message: str = ""


@dataclass(frozen=True)
class LogRecord:
    trace_id: str | None
    span_id: str | None
    time_ns: int  # the record's time, else the time it was observed
    event_name: str  # the ``event_name`` field, else the ``event.name`` attribute, else ""
    body: Any
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str
    order: int = 0  # position in its request: events of one call come in the order they were emitted


@dataclass
class Batch:
    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)


def decode(body: bytes, *, signal: Signal, content_type: str, content_encoding: str = "",
           max_bytes: int = DEFAULT_MAX_BYTES, native: bool = True) -> Batch:
    """Decode one OTLP/HTTP export request body for ``signal`` (the path it was posted to).

    A protobuf trace body is read by the native decoder when it is built (``native``; False: the protobuf library
    alone): the same spans, several times faster. It declines what it does not read the way the protobuf library does
    (a malformed body, a field sent twice that protobuf would merge, invalid UTF-8 anywhere): those go through the
    protobuf library, which accepts them or names the error."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in (PROTOBUF, JSON):
        shown = media_type or "none"
        raise OtlpError(f"unsupported content type {shown}: OTLP/HTTP takes {PROTOBUF} or {JSON}", status=415)
    data = _decompress(body, content_encoding.strip().lower(), max_bytes)
    if native and _otlp_wire is not None and media_type == PROTOBUF and signal == "traces":
        spans = _otlp_wire.decode_traces(data, Span)
        if spans is not None:
            return Batch(spans=spans)
    message = ExportTraceServiceRequest() if signal == "traces" else ExportLogsServiceRequest()
    if media_type == PROTOBUF:
        try:
            message.ParseFromString(data)
        except (DecodeError, RuntimeError) as exc:
            raise OtlpError(f"malformed protobuf: not an OTLP {signal} export request ({exc})") from None
    else:
        _parse_json(data, message, signal)
    if isinstance(message, ExportTraceServiceRequest):
        return _batch_from_traces(message)
    return _batch_from_logs(message)


def _decompress(body: bytes, encoding: str, max_bytes: int) -> bytes:
    if encoding in ("", "identity"):
        if len(body) > max_bytes:
            raise OtlpError(f"body too large: {len(body)} bytes, the limit is {max_bytes}", status=413)
        return body
    if encoding != "gzip":
        raise OtlpError(f"unsupported content encoding {encoding}: send gzip or no encoding", status=415)
    # Inflate at most max_bytes + 1 so that a small bomb cannot fill the memory.
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise OtlpError(f"malformed gzip body: {exc}") from None
    if len(data) > max_bytes:
        raise OtlpError(f"body too large once decompressed: more than {max_bytes} bytes", status=413)
    if not inflater.eof:
        raise OtlpError("malformed gzip body: it ends before the compressed stream does")
    return data


def _parse_json(data: bytes, message: Any, signal: Signal) -> None:
    try:
        document = json.loads(data)
    except UnicodeDecodeError as exc:
        raise OtlpError(f"malformed JSON: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise OtlpError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(document, dict):
        raise OtlpError(f"malformed OTLP JSON: expected an object, got {type(document).__name__}")
    try:
        json_format.ParseDict(_ids_to_base64(document, "$"), message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise OtlpError(f"malformed OTLP JSON {signal} request: {exc}") from None


def _ids_to_base64(value: Any, place: str) -> Any:
    """OTLP JSON writes ids as hex; the protobuf JSON parser expects base64 for bytes fields."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _ID_FIELDS and isinstance(item, str):
                try:
                    out[key] = base64.b64encode(bytes.fromhex(item)).decode()
                except ValueError:
                    raise OtlpError(
                        f"malformed OTLP JSON at {place}.{key}: ids are hex strings, got {item[:40]!r}"
                    ) from None
            else:
                out[key] = _ids_to_base64(item, f"{place}.{key}")
        return out
    if isinstance(value, list):
        return [_ids_to_base64(item, f"{place}[{i}]") for i, item in enumerate(value)]
    return value


# bytes -> digits as b"0", the rest as b".": a run of 19 digits may be an integer past 64 bits (below -2**63 already),
# which orjson would read as a float. The native module tells it without encoding the text (has_long_number).
_DIGITS = bytes(48 if 48 <= i <= 57 else 46 for i in range(256))
_LONG_NUMBER = b"0" * 19


def _has_long_number(text: str) -> bool:
    return _LONG_NUMBER in text.encode("utf-8", "surrogatepass").translate(_DIGITS)


has_long_number: Callable[[str], bool] = _otlp_wire.has_long_number if _otlp_wire is not None else _has_long_number


def loads_attribute(text: str) -> Any:
    """A JSON text an attribute carries (messages, records, documents): the value ``json.loads`` gives, or its
    ``json.JSONDecodeError``, three times faster. orjson reads it; ``json.loads`` reads what orjson refuses (NaN,
    Infinity, lone surrogates, numbers out of range: the same value or error as always) and texts with a run of 19
    digits or more, whose integers orjson may turn into floats."""
    if not has_long_number(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as plain Python: str, bool, int, float, list, dict, bytes as hex, or None."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return binascii.hexlify(value.bytes_value).decode()
    return getattr(value, kind)


_SCALARS = frozenset({"int_value", "bool_value", "double_value"})


def _attributes(key_values: Any) -> dict[str, Any]:
    # any_value, with its common cases inline: this loop is most of what decoding a request costs.
    out: dict[str, Any] = {}
    for kv in key_values:
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "string_value":
            out[kv.key] = value.string_value
        elif kind in _SCALARS:
            out[kv.key] = getattr(value, kind)
        else:
            out[kv.key] = any_value(value)
    return out


def _hex(raw: bytes) -> str | None:
    return raw.hex() if raw and any(raw) else None


def _batch_from_traces(request: ExportTraceServiceRequest) -> Batch:
    batch = Batch()
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                trace_id, span_id = _hex(span.trace_id), _hex(span.span_id)
                if trace_id is None or span_id is None:
                    # Kept, so that the caller can count it as rejected; an id is all the extraction needs.
                    trace_id, span_id = trace_id or "", span_id or ""
                batch.spans.append(Span(
                    trace_id=trace_id, span_id=span_id, parent_span_id=_hex(span.parent_span_id), name=span.name,
                    start_ns=span.start_time_unix_nano, end_ns=span.end_time_unix_nano,
                    attributes=_attributes(span.attributes), resource=resource, scope=scope,
                    status_error=span.status.code == 2, status_message=span.status.message,
                ))
    return batch


def _batch_from_logs(request: ExportLogsServiceRequest) -> Batch:
    batch = Batch()
    order = 0
    for resource_logs in request.resource_logs:
        resource = _attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope.name
            for record in scope_logs.log_records:
                attributes = _attributes(record.attributes)
                event_name = record.event_name or str(attributes.get("event.name") or "")
                batch.logs.append(LogRecord(
                    trace_id=_hex(record.trace_id), span_id=_hex(record.span_id),
                    time_ns=record.time_unix_nano or record.observed_time_unix_nano, event_name=event_name,
                    body=any_value(record.body), attributes=attributes, resource=resource, scope=scope, order=order,
                ))
                order += 1
    return batch
