"""The native decoder of OTLP trace bodies (agents/memory/_otlp_wire.c) against the protobuf library.

``_otlp_wire.decode_traces(body, Span)`` must return exactly the spans that ``decode(..., native=False)`` builds from
the library's messages, or None (decline) - always None when the library rejects the body. The comparisons are of
``repr``: it tells NaN, -0.0, True and 1, 1.0 and 1 apart, and shows the order of every dict.
"""
from __future__ import annotations

import gc
import gzip
import math
import random
import struct
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from agents.memory import _otlp_wire, otlp
from agents.memory.otlp import OtlpError, Span, decode
from tests import genai_spans, otlp_memory_spans
from tests.otlp_memory_spans import any_value

PROTOBUF = "application/x-protobuf"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")
SPAN_ID = bytes.fromhex("eee19b7ec3c1b174")
PARENT = bytes.fromhex("eee19b7ec3c1b173")


# ---- the two decoders -----------------------------------------------------------------------------------------------

def python_spans(body: bytes) -> list[Span]:
    return decode(body, signal="traces", content_type=PROTOBUF, native=False).spans


def native_spans(body: bytes) -> list[Span] | None:
    return _otlp_wire.decode_traces(body, Span)


def same(body: bytes) -> list[Span]:
    """Native accepts the body and reads it as the library does."""
    expected = python_spans(body)
    got = native_spans(body)
    assert got is not None, "native declined a body it should read"
    assert repr(got) == repr(expected)
    assert all(type(s) is Span for s in got)
    return got


def rejected(body: bytes) -> None:
    """The library rejects the body, and native declines it."""
    with pytest.raises(OtlpError):
        python_spans(body)
    assert native_spans(body) is None


def declined(body: bytes) -> list[Span]:
    """The library accepts what native declines; decode (native by default) still reads it, as the library does."""
    assert native_spans(body) is None
    expected = python_spans(body)
    assert repr(decode(body, signal="traces", content_type=PROTOBUF).spans) == repr(expected)
    return expected


def agrees(body: bytes) -> str:
    """The contract for any bytes: rejected by both, declined, or read alike. Says which."""
    got = native_spans(body)
    try:
        expected = python_spans(body)
    except OtlpError:
        assert got is None, f"native accepted a body the library rejects: {body!r}"
        return "rejected"
    if got is None:
        return "declined"
    assert repr(got) == repr(expected), body
    return "same"


# ---- wire bytes by hand ---------------------------------------------------------------------------------------------

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def ld(field: int, payload: bytes | str) -> bytes:
    raw = payload.encode() if isinstance(payload, str) else payload
    return tag(field, 2) + varint(len(raw)) + raw


def vi(field: int, n: int) -> bytes:
    return tag(field, 0) + varint(n)


def f64(field: int, n: int) -> bytes:
    return tag(field, 1) + struct.pack("<Q", n)


def dbl(field: int, x: float) -> bytes:
    return tag(field, 1) + struct.pack("<d", x)


def f32(field: int, n: int) -> bytes:
    return tag(field, 5) + struct.pack("<I", n)


# Unknown fields of every wire type, one of them not UTF-8 (unknown bytes are not checked).
UNKNOWN = vi(900, 7) + f64(901, 1) + ld(902, b"\xff\xc0 not utf-8") + f32(903, 2) + vi(2**29 - 1, 1)


def any_wire(value: Any) -> bytes:
    """An AnyValue's payload for a Python value (as any_value reads them back), unknown fields around."""
    if value is None:
        body = b""
    elif isinstance(value, bool):
        body = vi(2, int(value))
    elif isinstance(value, int):
        body = vi(3, value)
    elif isinstance(value, float):
        body = dbl(4, value)
    elif isinstance(value, str):
        body = ld(1, value)
    elif isinstance(value, bytes):
        body = ld(7, value)
    elif isinstance(value, list):
        body = ld(5, b"".join(UNKNOWN + ld(1, any_wire(v)) for v in value) + UNKNOWN)
    else:
        body = ld(6, b"".join(ld(1, UNKNOWN + kv_wire(k, v)) for k, v in value.items()) + UNKNOWN)
    return UNKNOWN + body + UNKNOWN


def kv_wire(key: str, value: Any) -> bytes:
    """A KeyValue's payload: the value before the key, unknown fields and the key_strindex between."""
    return ld(2, any_wire(value)) + UNKNOWN + vi(3, 5) + ld(1, key) + UNKNOWN


# ---- messages by the library ----------------------------------------------------------------------------------------

def key_values(values: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in values.items()]


VALUES: dict[str, Any] = {
    "string": "chat", "empty string": "", "unicode": "caf\u00e9 \u6f22\u5b57 \U0001f600 \U0010ffff \x00",
    "true": True, "false": False, "zero": 0, "negative": -42, "int64 min": INT64_MIN, "int64 max": INT64_MAX,
    "double": 0.5, "negative zero": -0.0, "inf": math.inf, "-inf": -math.inf, "tiny": 5e-324,
    "bytes": b"\x00\xab\xff", "empty bytes": b"", "no member": None,
    "array": [1, "two", [3.0, [None, b"\x01", True]], {"k": False, "nested": {"deeper": [INT64_MIN, ""]}}],
    "empty array": [], "kvlist": {"a": {"b": {"c": [1, {"d": "e"}]}}, "": "the empty key", "x": None},
    "empty kvlist": {},
}


def every_kind_request() -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    first = request.resource_spans.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    first.resource.attributes.extend(key_values({"service.name": "travel-agent", "resource.values": VALUES}))
    first.resource.dropped_attributes_count = 3
    first.resource.entity_refs.add(schema_url="s", type="service", id_keys=["service.name", "\u00e9"],
                                   description_keys=["d"])
    scoped = first.scope_spans.add(schema_url="scope schema")
    scoped.scope.name, scoped.scope.version = "my.library \u6f22", "1.0.0"
    scoped.scope.attributes.extend(key_values({"scope.attr": [1, {"a": "b"}]}))
    scoped.scope.dropped_attributes_count = 1

    full = scoped.spans.add(trace_id=TRACE, span_id=SPAN_ID, parent_span_id=bytes(8), name="chat gpt-4o",
                            trace_state="rojo=00f067aa0ba902b7", kind=PbSpan.SPAN_KIND_CLIENT,
                            start_time_unix_nano=1_544_712_660_000_000_000, end_time_unix_nano=2**64 - 1,
                            dropped_attributes_count=1, dropped_events_count=2, dropped_links_count=3, flags=0x301)
    full.attributes.extend(key_values(VALUES))
    # a repeated key: its first place, the last value; a key without a value; the string index fields
    full.attributes.add(key="string", value=any_value("the last one"))
    full.attributes.add(key="no value")
    full.attributes.add(key="strindex", key_strindex=4, value=AnyValue(string_value_strindex=-7))
    full.status.code, full.status.message = Status.STATUS_CODE_ERROR, "upstream failed \U0001f4a5"
    event = full.events.add(time_unix_nano=5, name="gen_ai.choice \u00e9", dropped_attributes_count=1)
    event.attributes.extend(key_values({"event.values": VALUES}))
    link = full.links.add(trace_id=TRACE, span_id=PARENT, trace_state="a=b", flags=1, dropped_attributes_count=2)
    link.attributes.extend(key_values({"link.values": VALUES}))

    scoped.spans.add(name="no ids", status=Status(code=Status.STATUS_CODE_OK))  # "" and "", kept
    scoped.spans.add(trace_id=bytes(16), span_id=SPAN_ID, parent_span_id=PARENT, name="\U0001f600 zero trace",
                     status=Status(code=-1, message="negative code"))  # type: ignore[arg-type]
    scoped.spans.add(trace_id=TRACE, span_id=PARENT, status=Status(message="unset code"))  # same trace: reused
    scoped.spans.add(trace_id=TRACE[:3], span_id=b"\x00\x01", parent_span_id=b"\x00", name="short ids")

    unscoped = first.scope_spans.add()  # no scope at all: ""
    unscoped.spans.add(trace_id=TRACE, span_id=SPAN_ID, name="unscoped", status=Status(code=2**31 - 1))
    first.scope_spans.add()  # no spans

    second = request.resource_spans.add()  # no resource: {}
    second.scope_spans.add(scope={"name": "second"}).spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    second.scope_spans.add(scope={"version": "only a version"}).spans.add(name="scope without a name")
    third = request.resource_spans.add()  # a resource without spans
    third.resource.attributes.extend(key_values({"service.name": "idle"}))
    fourth = request.resource_spans.add()
    fourth.resource.attributes.extend(key_values({"service.name": "fourth", "dup": 1, "x": 2}))
    fourth.resource.attributes.add(key="dup", value=any_value("last"))
    fourth.scope_spans.add().spans.add(name="a")
    fourth.scope_spans.add().spans.add(name="b")
    return request


def test_every_kind_of_value_and_place() -> None:
    body = every_kind_request().SerializeToString()
    spans = same(body)
    assert [s.name for s in spans] == ["chat gpt-4o", "no ids", "\U0001f600 zero trace", "", "short ids",
                                       "unscoped", "", "scope without a name", "a", "b"]
    full = spans[0]
    assert (full.trace_id, full.span_id, full.parent_span_id) == (TRACE.hex(), SPAN_ID.hex(), None)
    assert (full.start_ns, full.end_ns) == (1_544_712_660_000_000_000, 2**64 - 1)
    assert full.status_error is True and full.status_message == "upstream failed \U0001f4a5"
    assert list(full.attributes) == [*VALUES, "no value", "strindex"]
    assert full.attributes["string"] == "the last one" and full.attributes["no value"] is None
    assert full.attributes["strindex"] == -7
    assert full.attributes["int64 min"] == INT64_MIN and full.attributes["int64 max"] == INT64_MAX
    assert full.attributes["bytes"] == "00abff" and full.attributes["empty bytes"] == ""
    assert full.attributes["array"] == [1, "two", [3.0, [None, "01", True]],
                                        {"k": False, "nested": {"deeper": [INT64_MIN, ""]}}]
    assert math.copysign(1, full.attributes["negative zero"]) == -1
    assert full.resource["resource.values"]["unicode"] == VALUES["unicode"]
    assert full.scope == "my.library \u6f22"
    assert (spans[1].trace_id, spans[1].span_id, spans[1].parent_span_id) == ("", "", None)
    assert (spans[2].trace_id, spans[2].span_id, spans[2].parent_span_id) == ("", SPAN_ID.hex(), PARENT.hex())
    assert [s.status_error for s in spans[1:6]] == [False, False, False, False, False]
    assert spans[4].parent_span_id is None and spans[4].trace_id == "5b8eff"
    assert spans[5].scope == "" and spans[6].scope == "second" and spans[7].scope == ""
    # one resource dict per ResourceSpans, shared by its spans; a new attributes dict per span
    assert spans[3].trace_id is full.trace_id  # one str for the spans of a trace
    assert spans[0].resource is spans[5].resource and spans[6].resource is spans[7].resource == {}
    assert spans[8].resource is spans[9].resource
    assert spans[8].resource == {"service.name": "fourth", "dup": "last", "x": 2}
    assert len({id(s.attributes) for s in spans}) == len(spans)


def test_nan() -> None:
    request = ExportTraceServiceRequest()
    one = request.resource_spans.add().scope_spans.add().spans.add(trace_id=TRACE, span_id=SPAN_ID)
    one.attributes.extend(key_values({"nan": math.nan, "in a list": [math.nan, -math.nan]}))
    spans = same(request.SerializeToString())
    assert math.isnan(spans[0].attributes["nan"])
    assert all(math.isnan(x) for x in spans[0].attributes["in a list"])


def test_span_type_is_any_tuple_subclass_and_arguments_are_checked() -> None:
    body = every_kind_request().SerializeToString()
    plain = _otlp_wire.decode_traces(body, tuple)  # type: ignore[arg-type]
    assert plain is not None and [tuple(s) for s in python_spans(body)] == plain
    assert type(plain[0]) is tuple
    assert _otlp_wire.decode_traces(b"", Span) == []
    assert _otlp_wire.decode_traces(bytearray(body), Span) == native_spans(body)
    for data, span_type in [("text", Span), (body, dict), (body, 5), (body, Span(*range(11))), (None, Span)]:
        with pytest.raises(TypeError):
            _otlp_wire.decode_traces(data, span_type)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _otlp_wire.decode_traces(body)  # type: ignore[call-arg]


# ---- hand-written bodies: other field orders, unknown fields everywhere ---------------------------------------------

def hand_span(*, name: str = "the name", trace: bytes = TRACE, span_id: bytes = SPAN_ID,
              attributes: dict[str, Any] | None = None, extra: bytes = b"") -> bytes:
    """A Span's payload: attributes before the name, the name twice (the last wins), the ids last, a status, unknown
    fields and known field numbers in other wire types (unknown to the library) between."""
    attrs = b"".join(ld(9, kv_wire(k, v)) for k, v in (attributes or {"k": 1}).items())
    return (UNKNOWN + attrs + vi(5, 3) + ld(5, "a first name") + f64(8, 2_000) + ld(5, name)
            + ld(11, f64(1, 9) + ld(2, "event") + ld(3, kv_wire("e", [1, {"x": "y"}])) + vi(4, 1) + UNKNOWN)
            + ld(13, ld(1, TRACE) + ld(2, PARENT) + ld(3, "k=v") + ld(4, kv_wire("l", "v")) + vi(5, 1)
                 + f32(6, 1) + UNKNOWN)
            + f64(7, 1_000) + vi(6, 2) + vi(10, 1) + vi(12, 1) + vi(14, 1) + f32(16, 0x100)
            + ld(15, UNKNOWN + ld(2, "status message") + vi(3, 2) + f64(3, 1) + UNKNOWN)
            + f32(15, 9) + vi(9, 1) + f32(1, 1) + vi(2, 1) + ld(3, "t=s") + ld(4, PARENT)
            + ld(1, trace) + ld(2, span_id) + extra + UNKNOWN)


def hand_scope(name: str = "scope") -> bytes:
    return UNKNOWN + ld(3, kv_wire("scope.attr", {"a": [1]})) + ld(1, name) + ld(2, "1.2.3") + vi(4, 2) + UNKNOWN


def hand_resource(attributes: dict[str, Any]) -> bytes:
    entity = ld(1, "url") + ld(2, "service") + ld(3, "id") + ld(3, "id2") + ld(4, "desc") + UNKNOWN
    return (UNKNOWN + ld(3, entity) + b"".join(ld(1, kv_wire(k, v)) for k, v in attributes.items()) + vi(2, 1)
            + vi(3, 1) + UNKNOWN)


def hand_request(*resource_spans: bytes) -> bytes:
    return UNKNOWN + b"".join(ld(1, rs) + UNKNOWN for rs in resource_spans) + vi(1, 4) + UNKNOWN


def hand_resource_spans(resource: bytes | None, *scope_spans: bytes) -> bytes:
    """The resource after the scope spans, and a resource field number in another wire type between."""
    return (UNKNOWN + b"".join(ld(2, s) for s in scope_spans) + vi(1, 5) + f32(1, 5)
            + (ld(1, resource) if resource is not None else b"") + ld(3, "schema url") + UNKNOWN)


def hand_scope_spans(scope: bytes | None, *spans: bytes) -> bytes:
    """The scope after the spans."""
    return (UNKNOWN + b"".join(ld(2, s) + UNKNOWN for s in spans) + vi(1, 1)
            + (ld(1, scope) if scope is not None else b"") + ld(3, "scope schema") + UNKNOWN)


def test_other_field_orders_and_unknown_fields_at_every_level() -> None:
    body = hand_request(
        hand_resource_spans(hand_resource({"service.name": "agent", "values": VALUES}),
                            hand_scope_spans(hand_scope(), hand_span(attributes=VALUES),
                                             hand_span(name="second", span_id=PARENT)),
                            hand_scope_spans(None, hand_span(name="")),
                            hand_scope_spans(hand_scope("\U0001f600"))),
        hand_resource_spans(None, hand_scope_spans(hand_scope("other"), hand_span(trace=bytes(16)))),
    )
    spans = same(body)
    assert [(s.name, s.scope, s.trace_id) for s in spans] == [
        ("the name", "scope", TRACE.hex()), ("second", "scope", TRACE.hex()), ("", "", TRACE.hex()),
        ("the name", "other", ""),
    ]
    first = spans[0]
    assert list(first.resource) == ["service.name", "values"] and first.resource["service.name"] == "agent"
    assert first.resource["values"]["int64 min"] == INT64_MIN and first.resource["values"]["bytes"] == "00abff"
    assert first.resource is spans[2].resource and spans[3].resource == {}
    assert first.attributes["int64 min"] == INT64_MIN and first.attributes["unicode"] == VALUES["unicode"]
    assert (first.start_ns, first.end_ns, first.parent_span_id) == (1_000, 2_000, PARENT.hex())
    assert first.status_error and first.status_message == "status message"


# ---- the wire format at its edges -----------------------------------------------------------------------------------

def one_span(span_payload: bytes) -> bytes:
    return ld(1, ld(2, ld(2, span_payload)))


def one_value(any_payload: bytes) -> bytes:
    return one_span(ld(1, TRACE) + ld(2, SPAN_ID) + ld(9, ld(1, "k") + ld(2, any_payload)))


def status(payload: bytes) -> bytes:
    return one_span(ld(1, TRACE) + ld(2, SPAN_ID) + ld(15, payload))


SAME = [
    status(vi(3, 2**32 + 2)),  # an int32 enum: the low 32 bits, 2
    status(vi(3, -1)),  # ten bytes
    status(tag(3, 0) + b"\xff" * 9 + b"\x7f"),  # a tenth byte above 1: its bits beyond 64 dropped
    one_value(tag(3, 0) + b"\x80" * 9 + b"\x03"),  # int64 min that way
    one_value(vi(2, 2**63)),  # a bool from a large varint
    one_value(vi(8, -1)),  # string_value_strindex, an int32 member
    one_value(vi(8, 2**32 + 5)),
    one_value(vi(1, 5)),  # string_value as a varint: unknown, no member set: None
    one_value(f32(4, 1) + vi(5, 1) + f64(3, 7)),
    one_value(ld(7, b"") + UNKNOWN),  # empty bytes: ""
    one_span(ld(1, TRACE) + ld(2, SPAN_ID) + f32(15, 2) + vi(5, 1) + f32(1, 3)),  # known numbers, other wire types
    b"\x8a\x80\x80\x80\x00" + varint(0),  # a tag in 5 bytes
    ld(1, b"") + tag(1, 2) + b"\x80" * 9 + b"\x00",  # a length in 10 bytes
    tag(2**29 - 1, 0) + b"\x01",  # the largest field number
    b"",
    one_span(ld(1, TRACE) + ld(2, SPAN_ID) + ld(3, "") + ld(5, "") + ld(1, b"") + ld(1, TRACE)),  # last wins
    one_span(ld(9, ld(1, "a") + ld(1, "b") + ld(1, "c") + ld(2, vi(3, 1)))),  # the last key
]

REJECTED = [
    status(tag(3, 0) + b"\xff" * 10 + b"\x01"),  # an 11-byte varint
    b"\x8a\x80\x80\x80\x80\x00" + varint(0),  # a tag in 6 bytes
    b"\x00\x01",  # field number 0
    b"\x02\x00",
    tag(2**29 - 1, 0)[:-1] + b"\x1f\x01",  # a tag beyond 32 bits
    b"\x0e", b"\x0f",  # wire types 6 and 7
    b"\x0c",  # an end group with no group
    one_span(tag(7, 1) + b"\x01\x02"),  # a truncated fixed64
    one_span(tag(16, 5) + b"\x01"),  # a truncated fixed32
    tag(1, 2) + varint(5) + b"\x00",  # a length beyond the end
    ld(1, tag(2, 2) + varint(2**31)),
    one_span(ld(5, b"\xff") + ld(5, "valid")),  # a name replaced by a valid one: the first was invalid still
    one_span(ld(9, ld(1, b"\xc0\x80") + ld(1, "k"))),  # a key likewise
    ld(1, ld(2, ld(1, ld(1, b"\xed\xa0\x80") + ld(1, "s")))),  # a scope name likewise
    one_value(tag(3, 0) + b"\x80" * 5),  # a truncated varint
    one_value(ld(1, b"ab\xe2\x82")),  # truncated UTF-8
]

DECLINED = [
    tag(5, 3) + vi(1, 1) + tag(5, 4),  # a group (unknown field): the library reads it, native declines groups
    one_span(tag(99, 3) + tag(99, 4)),
]


@pytest.mark.parametrize("body", SAME)
def test_wire_edges_read_alike(body: bytes) -> None:
    same(body)


@pytest.mark.parametrize("body", REJECTED)
def test_wire_edges_the_library_rejects(body: bytes) -> None:
    rejected(body)


@pytest.mark.parametrize("body", DECLINED)
def test_wire_edges_declined(body: bytes) -> None:
    declined(body)


def test_status_code_is_an_int32() -> None:
    assert [same(status(vi(3, code)))[0].status_error for code in (2, 2**32 + 2, -2, 2**31 + 2, 1, 0)] == [
        True, True, False, False, False, False]
    assert same(status(vi(3, 2)))[0].status_message == ""


# ---- what native declines, and decode still reads through the library -----------------------------------------------

MERGED = {
    "resource twice": ld(1, ld(1, ld(1, kv_wire("a", 1))) + ld(2, ld(2, b"")) + ld(1, ld(1, kv_wire("b", 2)))),
    "scope twice": ld(1, ld(2, ld(1, ld(1, "first") + ld(2, "v")) + ld(2, b"") + ld(1, ld(2, "v2")))),
    "status twice": one_span(ld(15, vi(3, 2)) + ld(15, ld(2, "m"))),
    "value twice": one_span(ld(9, ld(1, "k") + ld(2, ld(1, "s")) + ld(2, vi(3, 4)))),
    "two members": one_value(ld(1, "s") + vi(3, 4)),
    "a member twice": one_value(vi(3, 4) + vi(3, 5)),
    "a list twice": one_value(ld(5, ld(1, vi(3, 1))) + ld(5, ld(1, vi(3, 2)))),
    "a kvlist twice": one_value(ld(6, ld(1, kv_wire("a", 1))) + ld(6, ld(1, kv_wire("b", 2)))),
}


@pytest.mark.parametrize("case", MERGED)
def test_bodies_protobuf_merges_go_through_the_library(case: str) -> None:
    spans = declined(MERGED[case])
    gzipped = decode(gzip.compress(MERGED[case]), signal="traces", content_type=PROTOBUF, content_encoding="gzip")
    assert repr(gzipped.spans) == repr(spans)
    expected: dict[str, Callable[[list[Span]], bool]] = {
        "resource twice": lambda s: s[0].resource == {"a": 1, "b": 2},
        "scope twice": lambda s: s[0].scope == "first",
        "status twice": lambda s: s[0].status_error and s[0].status_message == "m",
        "value twice": lambda s: s[0].attributes == {"k": 4},
        "two members": lambda s: s[0].attributes == {"k": 4},
        "a member twice": lambda s: s[0].attributes == {"k": 5},
        "a list twice": lambda s: s[0].attributes == {"k": [1, 2]},
        "a kvlist twice": lambda s: s[0].attributes == {"k": {"a": 1, "b": 2}},
    }
    assert expected[case](spans), spans


def test_decode_reads_with_native_when_it_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []

    class Recording:
        @staticmethod
        def decode_traces(data: bytes, span_type: type[Span]) -> list[Span] | None:
            calls.append(data)
            return _otlp_wire.decode_traces(data, span_type)

    monkeypatch.setattr(otlp, "_otlp_wire", Recording)
    body = every_kind_request().SerializeToString()
    native = decode(gzip.compress(body), signal="traces", content_type=PROTOBUF, content_encoding="gzip")
    assert calls == [body]
    assert repr(native.spans) == repr(decode(body, signal="traces", content_type=PROTOBUF, native=False).spans)
    assert calls == [body]  # native=False: the library alone
    with pytest.raises(OtlpError):
        decode(b"\x0e", signal="traces", content_type=PROTOBUF)  # declined, then the library names the error


def nested(levels: int, kvlist: bool = False) -> bytes:
    """An AnyValue ``levels`` arrays (or kvlists) deep, 2 messages a level."""
    value = vi(3, 1)
    for _ in range(levels):
        value = ld(6, ld(1, ld(1, "k") + ld(2, value))) if kvlist else ld(5, ld(1, value))
    return value


@pytest.mark.parametrize("kvlist", [False, True])
def test_deep_nesting_both_ways(kvlist: bool) -> None:
    # A span's AnyValue is 5 messages below the request, and each level adds 2 messages (ArrayValue, AnyValue) or 3
    # (KeyValueList, KeyValue, AnyValue). Native reads up to 64 below the request; the library stops at 100.
    per_level = 3 if kvlist else 2
    read, too_deep, beyond = 59 // per_level, 80 // per_level, 120 // per_level
    value = same(one_value(nested(read, kvlist)))[0].attributes["k"]
    for _ in range(read):
        value = value["k"] if kvlist else value[0]
    assert value == 1
    declined(one_value(nested(too_deep, kvlist)))
    rejected(one_value(nested(beyond, kvlist)))
    declined(one_value(nested(read + 1, kvlist)))  # the first level native does not read
    # as deep in the parts native skips: validated all the same
    deep_event = one_span(ld(1, TRACE) + ld(2, SPAN_ID) + ld(11, ld(3, ld(1, "k") + ld(2, nested(too_deep, kvlist)))))
    declined(deep_event)
    rejected(one_span(ld(11, ld(3, ld(1, "k") + ld(2, nested(beyond, kvlist))))))
    same(one_span(ld(11, ld(3, ld(1, "k") + ld(2, nested(read, kvlist))))))
    in_scope = [ld(1, ld(2, ld(1, ld(3, ld(1, "k") + ld(2, nested(n, kvlist)))) + ld(2, ld(5, "n"))))
                for n in (read, too_deep, beyond)]
    same(in_scope[0])
    declined(in_scope[1])
    rejected(in_scope[2])


# ---- invalid UTF-8 in every string field ----------------------------------------------------------------------------

PLANT = "ZZZZ"
BAD_UTF8 = [b"a\xed\xa0\x80", b"ab\xc0\xaf", b"\xf4\x90\x80\x80", b"abc\xff", b"ab\xe2\x82", b"\xf0\x82\x82\xac",
            b"a\xe0\x80\xaf", b"\x80abc"]


def _plant_span_attr_key(r: ExportTraceServiceRequest) -> None:
    r.resource_spans[0].scope_spans[0].spans[0].attributes.add(key=PLANT, value=any_value(1))


PLANTS: dict[str, Callable[[ExportTraceServiceRequest], None]] = {
    "span name": lambda r: setattr(r.resource_spans[0].scope_spans[0].spans[0], "name", PLANT),
    "trace_state": lambda r: setattr(r.resource_spans[0].scope_spans[0].spans[0], "trace_state", PLANT),
    "status message": lambda r: setattr(r.resource_spans[0].scope_spans[0].spans[0].status, "message", PLANT),
    "span attribute key": _plant_span_attr_key,
    "span attribute value": lambda r: r.resource_spans[0].scope_spans[0].spans[0].attributes.extend(
        key_values({"v": PLANT})),
    "string in a nested kvlist": lambda r: r.resource_spans[0].scope_spans[0].spans[0].attributes.extend(
        key_values({"v": [1, {"a": {"b": PLANT}}]})),
    "key in a nested kvlist": lambda r: r.resource_spans[0].scope_spans[0].spans[0].attributes.extend(
        key_values({"v": {"a": [{PLANT: 1}]}})),
    "event name": lambda r: r.resource_spans[0].scope_spans[0].spans[0].events.add(name=PLANT),
    "event attribute": lambda r: r.resource_spans[0].scope_spans[0].spans[0].events.add().attributes.extend(
        key_values({"e": {"x": [PLANT]}})),
    "link trace_state": lambda r: r.resource_spans[0].scope_spans[0].spans[0].links.add(trace_state=PLANT),
    "link attribute key": lambda r: r.resource_spans[0].scope_spans[0].spans[0].links.add().attributes.extend(
        key_values({PLANT: 1})),
    "scope name": lambda r: setattr(r.resource_spans[0].scope_spans[0].scope, "name", PLANT),
    "scope version": lambda r: setattr(r.resource_spans[0].scope_spans[0].scope, "version", PLANT),
    "scope attribute": lambda r: r.resource_spans[0].scope_spans[0].scope.attributes.extend(
        key_values({"s": [PLANT]})),
    "scope spans schema_url": lambda r: setattr(r.resource_spans[0].scope_spans[0], "schema_url", PLANT),
    "resource spans schema_url": lambda r: setattr(r.resource_spans[0], "schema_url", PLANT),
    "resource attribute key": lambda r: r.resource_spans[0].resource.attributes.extend(key_values({PLANT: 1})),
    "resource attribute value": lambda r: r.resource_spans[0].resource.attributes.extend(
        key_values({"r": PLANT})),
    "entity ref schema_url": lambda r: r.resource_spans[0].resource.entity_refs.add(schema_url=PLANT),
    "entity ref type": lambda r: r.resource_spans[0].resource.entity_refs.add(type=PLANT),
    "entity ref id_keys": lambda r: r.resource_spans[0].resource.entity_refs.add(id_keys=["a", PLANT]),
    "entity ref description_keys": lambda r: r.resource_spans[0].resource.entity_refs.add(
        description_keys=[PLANT]),
    "a later resource spans": lambda r: r.resource_spans.add().scope_spans.add().spans.add(name=PLANT),
}


def planted(where: str) -> bytes:
    request = ExportTraceServiceRequest()
    first = request.resource_spans.add()
    first.resource.attributes.extend(key_values({"service.name": "agent"}))
    first.scope_spans.add(scope={"name": "lib"}).spans.add(trace_id=TRACE, span_id=SPAN_ID, name="chat")
    PLANTS[where](request)
    body = request.SerializeToString()
    assert body.count(PLANT.encode()) == 1
    return body


@pytest.mark.parametrize("where", PLANTS)
def test_invalid_utf8_in_every_string_field(where: str) -> None:
    body = planted(where)
    same(body.replace(PLANT.encode(), "\U0001f600".encode()))  # four valid bytes in its place: read alike
    for bad in BAD_UTF8:
        rejected(body.replace(PLANT.encode(), bad))


def test_invalid_utf8_in_bytes_and_unknown_fields_is_fine() -> None:
    body = planted("span name")
    for bad in BAD_UTF8:
        same(one_value(ld(7, bad)))
        same(one_span(ld(1, bad + bad) + ld(2, bad) + ld(4, bad) + ld(99, bad)))
        same(body.replace(PLANT.encode(), b"abcd") + ld(777, bad))


# ---- random requests over the whole schema --------------------------------------------------------------------------

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_ENUM: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (INT64_MIN, INT64_MAX), FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1), FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}
_TEXT = ["", "a", "b", "gen_ai.operation.name", "caf\u00e9", "\u6f22", "\U0001f600", "\x00"]


def _scalar(rnd: random.Random, field: FieldDescriptor) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        if rnd.random() < 0.7:
            return rnd.choice(_TEXT)
        return "".join(chr(rnd.choice([rnd.randrange(32, 127), rnd.randrange(0xA0, 0xD800),
                                       rnd.randrange(0xE000, 0x110000)])) for _ in range(rnd.randrange(8)))
    if kind == FieldDescriptor.TYPE_BYTES:
        choice = rnd.randrange(4)
        if choice == 0:
            return b""
        if choice == 1:
            return bytes(rnd.choice([1, 8, 16]))
        return rnd.randbytes(rnd.choice([8, 16, rnd.randrange(1, 20)]))
    if kind == FieldDescriptor.TYPE_BOOL:
        return rnd.random() < 0.5
    if kind == FieldDescriptor.TYPE_DOUBLE:
        return rnd.choice([0.0, -0.0, 1.5, math.inf, -math.inf, math.nan, 5e-324, rnd.uniform(-1e300, 1e300)])
    low, high = _INT_RANGES[kind]
    return rnd.choice([0, 1, 2, -1 if low else 3, low, high, rnd.randint(low, high)])


def fill(rnd: random.Random, message: Message, depth: int) -> None:
    """Random values in random fields of ``message`` (``depth`` messages below the request), every field in reach."""
    descriptor: Descriptor = message.DESCRIPTOR
    for field in descriptor.fields:
        if field.containing_oneof is not None:
            continue
        if field.message_type is not None and depth >= 9:
            continue
        if field.label == FieldDescriptor.LABEL_REPEATED:
            counts = [0, 1, 1, 2, 2, 3] if depth < 4 else [0, 1, 2] if depth < 7 else [0, 1]
            for _ in range(rnd.choice(counts)):
                if field.message_type is not None:
                    fill(rnd, getattr(message, field.name).add(), depth + 1)
                else:
                    getattr(message, field.name).append(_scalar(rnd, field))
        elif rnd.random() < 0.6:
            if field.message_type is not None:
                getattr(message, field.name).SetInParent()
                fill(rnd, getattr(message, field.name), depth + 1)
            else:
                setattr(message, field.name, _scalar(rnd, field))
    for oneof in descriptor.oneofs:
        members = [f for f in oneof.fields if f.message_type is None or depth < 9]
        member = rnd.choice([None, *members])
        if member is None:
            continue
        if member.message_type is not None:
            getattr(message, member.name).SetInParent()
            fill(rnd, getattr(message, member.name), depth + 1)
        else:
            setattr(message, member.name, _scalar(rnd, member))


def random_request(rnd: random.Random) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    fill(rnd, request, 0)
    return request


def wire_fields(data: bytes) -> list[tuple[int, int, bytes]]:
    """(field number, wire type, value bytes: the payload of a length-delimited field) of a well-formed message."""
    out, at = [], 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, end = _read_varint(data, at)
        elif wire_type == 1:
            end = at + 8
        elif wire_type == 5:
            end = at + 4
        else:
            size, at = _read_varint(data, at)
            end = at + size
        out.append((number, wire_type, data[at:end]))
        at = end
    return out


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def reorder(data: bytes, descriptor: Descriptor, rnd: random.Random) -> bytes:
    """The same message in another field order (each field number's own order kept), unknown fields sprinkled in."""
    groups: dict[int, list[bytes]] = {}
    for number, wire_type, raw in wire_fields(data):
        field = descriptor.fields_by_number.get(number)
        if wire_type == 2:
            if field is not None and field.message_type is not None:
                raw = reorder(raw, field.message_type, rnd)
            raw = varint(len(raw)) + raw
        groups.setdefault(number, []).append(tag(number, wire_type) + raw)
    out = []
    while groups:
        number = rnd.choice(list(groups))
        out.append(groups[number].pop(0))
        if not groups[number]:
            del groups[number]
        if rnd.random() < 0.1:
            out.append(rnd.choice([vi(900, 1), f64(901, 2), ld(902, b"\xff"), f32(903, 3)]))
    return b"".join(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False), st.booleans())
def test_random_requests_over_the_whole_schema(rnd: random.Random, shuffled: bool) -> None:
    request = random_request(rnd)
    body = request.SerializeToString()
    if shuffled:
        body = reorder(body, ExportTraceServiceRequest.DESCRIPTOR, rnd)
        again = ExportTraceServiceRequest.FromString(body)
        again.DiscardUnknownFields()
        assert again == request
    same(body)


# ---- the caches of a call: keys, values, whole attributes, ids -------------------------------------------------------

def plain_span(span_id: bytes, attributes: list[bytes], *, parent: bytes = b"", name: str = "op",
               between: bytes = b"") -> bytes:
    """A Span's payload from KeyValue payloads, ``between`` after every attribute."""
    return (ld(1, TRACE) + ld(2, span_id) + (ld(4, parent) if parent else b"") + ld(5, name)
            + b"".join(ld(9, kv) + between for kv in attributes))


def many_spans(*spans: bytes) -> bytes:
    return hand_request(hand_resource_spans(None, hand_scope_spans(hand_scope(), *spans)))


def test_repeated_keys_values_and_attributes_across_spans() -> None:
    # lengths about the edges of the caches' hashing (8, 16 bytes a step) and limits (64 bytes, a whole KeyValue of
    # 160), the same bytes as a key and as a value, values differing in one middle byte, every kind of value repeated
    texts = ["x" * n for n in (0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 150, 200)]
    texts += ["gen_ai.memory.store.id", "gen_ai.memory.query.id", "caf\u00e9" * 9, "\U0001f600" * 16]
    kvs = [kv_wire(t, t) for t in texts] + [kv_wire("v", t) for t in texts]
    kvs += [kv_wire(f"key {n}", v) for n, v in enumerate([1, -1, 0.5, True, None, b"\x00", [1], {"a": 1}, ""])]
    kvs += [ld(1, "k" * n) + ld(2, ld(1, "v" * (150 - n))) for n in range(140, 150)]  # whole KeyValues about 160 bytes
    spans = []
    for n in range(12):
        rnd = random.Random(n)
        chosen = rnd.sample(kvs, 20) + kvs[n::7]
        spans.append(plain_span(SPAN_ID[:-1] + bytes([n]), chosen, parent=SPAN_ID[:-1] + bytes([n // 3]),
                                name=rnd.choice(["search_memory", "x" * 64, "x" * 65, ""])))
    got = same(many_spans(*spans))
    assert got[4].parent_span_id == got[1].span_id and got[0].parent_span_id == got[0].span_id


def test_repeated_lists_and_dicts_are_not_shared() -> None:
    # compact KeyValues (kv_wire's unknown fields would make them too long for the cache of whole KeyValues)
    attributes = [ld(1, "list") + ld(2, ld(5, ld(1, vi(3, 1)) + ld(1, ld(1, "a")))),
                  ld(1, "dict") + ld(2, ld(6, ld(1, ld(1, "a") + ld(2, ld(5, ld(1, vi(3, 1))))))),
                  ld(1, "s") + ld(2, ld(1, "shared"))]
    first, second = same(many_spans(plain_span(SPAN_ID, attributes), plain_span(PARENT, attributes)))
    assert first.attributes["s"] is second.attributes["s"]  # equal strs may be one object: they cannot change
    assert first.attributes["list"] is not second.attributes["list"]
    assert first.attributes["dict"] is not second.attributes["dict"]
    assert first.attributes["dict"]["a"] is not second.attributes["dict"]["a"]
    first.attributes["list"].append(2)
    first.attributes["dict"]["a"].append(2)
    assert second.attributes["list"] == [1, "a"] and second.attributes["dict"] == {"a": [1]}


@pytest.mark.parametrize("count", [0, 1, 31, 32, 33, 80])
def test_many_attributes_in_order_with_other_fields_between(count: int) -> None:
    # the first walk keeps the places of 32 attributes: more are found by a second walk
    kvs = [kv_wire(f"k{n % 45}", n) for n in range(count)]  # keys repeat past 45: the last value wins, first place
    between = UNKNOWN + ld(5, "a name") + ld(11, ld(2, "event")) + f64(7, 5)
    got = same(many_spans(plain_span(SPAN_ID, kvs, between=between), plain_span(PARENT, kvs[::-1])))
    expected = [(f"k{n}", n + 45 if n + 45 < count else n) for n in range(min(count, 45))]
    assert list(got[0].attributes.items()) == expected


def test_more_keys_than_the_caches_hold() -> None:
    # 700 different keys and values, some differing in one middle byte only: slots are taken over, never confused
    kvs = [kv_wire(f"attribute.{n:04d}.name", f"value {n % 300:03d} of the attribute") for n in range(700)]
    same(many_spans(*(plain_span(bytes([n + 1]) * 8, kvs[n * 100:n * 100 + 150] + kvs[:20]) for n in range(6))))


def test_the_caches_do_not_outlive_a_call() -> None:
    # the same spans after other bodies, after declined ones, from a new buffer at the same address or not
    body = many_spans(plain_span(SPAN_ID, [kv_wire("k", "v"), kv_wire("n", 1)]),
                      plain_span(PARENT, [kv_wire("k", "v")]))
    other = many_spans(plain_span(PARENT, [kv_wire("k", "w"), kv_wire("n", 2)], name="other"))
    expected = repr(python_spans(body))
    for _ in range(3):
        assert repr(native_spans(bytes(body))) == expected
        assert native_spans(other[:-1]) is None
        assert repr(native_spans(bytearray(other))) == repr(python_spans(other))
        assert native_spans(body + b"\x0e") is None


def test_a_pair_read_above_is_still_declined_too_deep() -> None:
    # the innermost KeyValue of nested(20, kvlist) is the attribute k=1 read at the top: there, 64 below the request,
    # its value is one level too deep for native (the whole KeyValue must not come from the cache)
    top = ld(1, "k") + ld(2, vi(3, 1))
    assert nested(1, kvlist=True) == ld(6, ld(1, top))
    for levels, outcome in ((19, same), (20, declined)):
        outcome(many_spans(plain_span(SPAN_ID, [top, ld(1, "d") + ld(2, nested(levels, kvlist=True)), top])))


def test_a_call_inside_a_call_has_its_own_caches() -> None:
    # A call reached while another runs (here a gc callback during an allocation, on Pythons that collect there; a
    # finalizer would do the same) must not use the running call's caches.
    outer_body = many_spans(*(plain_span(bytes([n + 1]) * 8, [kv_wire("k", f"v{n % 3}"), kv_wire("l", [n])] * 3)
                              for n in range(40)))
    inner_body = many_spans(*(plain_span(bytes([n + 1]) * 8, [kv_wire("k", f"w{n % 5}"), kv_wire("x", n)])
                              for n in range(10)))
    outer_expected, inner_expected = repr(python_spans(outer_body)), repr(python_spans(inner_body))
    inner: list[tuple[bool, str]] = []
    running = False

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and len(inner) < 200:
            inner.append((running, repr(_otlp_wire.decode_traces(inner_body, Span))))

    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1)
    try:
        outer = []
        for _ in range(5):
            running = True
            got = _otlp_wire.decode_traces(outer_body, Span)
            running = False
            outer.append(repr(got))
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)
    assert outer == [outer_expected] * 5
    assert inner and all(result == inner_expected for _, result in inner)
    if sys.version_info < (3, 12):  # 3.11 collects in allocations; 3.12 on at the next bytecode
        assert any(within for within, _ in inner)


# ---- mutations ------------------------------------------------------------------------------------------------------

def corpus() -> list[bytes]:
    chat = [genai_spans.chat_span(n, [genai_spans.text("user", f"q{n} \u00e9")], genai_spans.text("assistant", "a"),
                                  trace="ab" * 16, session_id="s-1", model="gpt-4o") for n in range(3)]
    request = ExportTraceServiceRequest()
    scoped = request.resource_spans.add().scope_spans.add(scope={"name": "test"})
    for one in chat:
        scoped.spans.add(trace_id=bytes.fromhex(one.trace_id), span_id=bytes.fromhex(one.span_id), name=one.name,
                         start_time_unix_nano=one.start_ns, end_time_unix_nano=one.end_ns,
                         attributes=key_values(one.attributes))
    memory = otlp_memory_spans.request(
        otlp_memory_spans.span("search", "search_memory", {"gen_ai.memory.query.text": "likes", "n": 5,
                                                           "score": 0.5, "ok": True}),
        otlp_memory_spans.span("write", "create_memory", {"gen_ai.memory.record.id": "r1"}, parent="search",
                               error="boom"),
    )
    rnd = random.Random(7)
    bodies = [every_kind_request().SerializeToString(), request.SerializeToString(), memory,
              hand_request(hand_resource_spans(hand_resource({"r": [1, {"a": "b"}]}),
                                               hand_scope_spans(hand_scope(), hand_span(attributes={"x": {"y": 1}})))),
              *SAME, *MERGED.values()]
    while len(bodies) < 40:
        body = random_request(rnd).SerializeToString()
        if 20 < len(body) < 3000:
            bodies.append(body)
    return bodies


INTERESTING = [0x00, 0x01, 0x02, 0x08, 0x0A, 0x12, 0x7F, 0x80, 0xFF, 0xC0, 0xED, 0xF4, 0x0B, 0x0C, 0x0E]


def mutate(rnd: random.Random, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(rnd.choice([1, 1, 1, 2, 3])):
        at = rnd.randrange(len(data) + 1)
        op = rnd.randrange(6)
        if op == 0 and data:  # flip a bit
            at = min(at, len(data) - 1)
            data[at] ^= 1 << rnd.randrange(8)
        elif op == 1:  # insert a byte
            data[at:at] = bytes([rnd.choice(INTERESTING) if rnd.random() < 0.5 else rnd.randrange(256)])
        elif op == 2:  # delete bytes
            del data[at:at + rnd.choice([1, 1, 2, 4])]
        elif op == 3:  # truncate
            del data[at:]
        elif op == 4 and data:  # overwrite a byte
            at = min(at, len(data) - 1)
            data[at] = rnd.choice(INTERESTING)
        else:  # duplicate a slice somewhere else
            size = rnd.randrange(1, 16)
            data[rnd.randrange(len(data) + 1):0] = data[at:at + size]
    return bytes(data)


def test_mutated_bodies_are_rejected_declined_or_read_alike() -> None:
    rnd = random.Random(2026)
    outcomes = {"rejected": 0, "declined": 0, "same": 0}
    for body in corpus():
        assert agrees(body) == "same" or body in MERGED.values()
        for _ in range(150):
            outcomes[agrees(mutate(rnd, body))] += 1
    # the mutations reach every outcome: the check above ran on bodies native read as well as on broken ones
    assert outcomes["rejected"] > 1000 and outcomes["same"] > 500 and outcomes["declined"] > 50, outcomes


# ---- reference counts -----------------------------------------------------------------------------------------------

def test_no_leak_on_reading_or_declining() -> None:
    good = every_kind_request().SerializeToString()
    late = [good + ld(1, ld(2, ld(2, ld(3, bad)))) for bad in BAD_UTF8]  # declined after every span was built
    late += [good + MERGED["resource twice"], good + one_value(nested(40)), good + b"\x0e", good[:-3]]

    def run() -> None:
        for body in [good, *late]:
            _otlp_wire.decode_traces(body, Span)

    for body in late:
        assert native_spans(body) is None
    run()
    types_before = sys.getrefcount(Span)
    tracemalloc.start()
    try:
        for _ in range(20):
            run()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            run()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000, grown  # a leak of the spans of one body each run would be megabytes
    assert sys.getrefcount(Span) == types_before
