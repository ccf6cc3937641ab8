"""Live capture over HTTP: the OTLP/HTTP receiver (a project's API keys are on its settings page: ``projects``).

The receiver answers as the OTLP/HTTP specification says: 200 with an Export*ServiceResponse in the request's
encoding (``partial_success`` says how many spans or log records could not be used, and why), and for a request
it refuses a 4xx whose body is a ``google.rpc.Status`` (``{"code", "message"}`` in JSON), stored nothing.
"""
from __future__ import annotations

import json

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from agents.capture import receiver
from agents.memory import otlp

# google.rpc.Code numbers for the Status body of a refusal.
_RPC_CODES = {400: 3, 401: 16, 403: 7, 413: 8, 415: 3, 405: 12}


def _status_body(status: int, message: str, as_json: bool) -> tuple[bytes, str]:
    code = _RPC_CODES.get(status, 2)
    if as_json:
        return json.dumps({"code": code, "message": message}).encode(), otlp.JSON
    # google.rpc.Status { int32 code = 1; string message = 2; }: two fields, encoded by hand (the package that
    # ships the message is not worth a dependency).
    text = message.encode()
    return bytes([0x08, code, 0x12]) + _varint(len(text)) + text, otlp.PROTOBUF


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _refuse(status: int, message: str, as_json: bool) -> HttpResponse:
    body, content_type = _status_body(status, message, as_json)
    response = HttpResponse(body, status=status, content_type=content_type)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="otlp"'
    return response


def _receive(request: HttpRequest, signal: otlp.Signal) -> HttpResponse:
    content_type = request.META.get("CONTENT_TYPE", "")
    as_json = content_type.split(";", 1)[0].strip().lower() == otlp.JSON
    if request.method != "POST":
        return _refuse(405, "OTLP/HTTP takes POST", as_json)
    receipt = receiver.otlp_receive(
        signal=signal, authorization=request.META.get("HTTP_AUTHORIZATION", ""),
        declared_length=request.META.get("CONTENT_LENGTH") or "0", read=request.read, content_type=content_type,
        content_encoding=request.META.get("HTTP_CONTENT_ENCODING", ""),
    )
    if receipt.status != 200:
        return _refuse(receipt.status, receipt.message, as_json)
    traces = signal == "traces"
    reply = ExportTraceServiceResponse() if traces else ExportLogsServiceResponse()
    if receipt.rejected or receipt.error_message:
        # With nothing rejected, the message is a warning (what was kept only in part), as OTLP allows.
        setattr(reply.partial_success, "rejected_spans" if traces else "rejected_log_records", receipt.rejected)
        reply.partial_success.error_message = receipt.error_message
    if as_json:
        return HttpResponse(json_format.MessageToJson(reply), content_type=otlp.JSON)
    return HttpResponse(reply.SerializeToString(), content_type=otlp.PROTOBUF)


@csrf_exempt
@login_not_required
def otlp_traces(request: HttpRequest) -> HttpResponse:
    return _receive(request, "traces")


@csrf_exempt
@login_not_required
def otlp_logs(request: HttpRequest) -> HttpResponse:
    return _receive(request, "logs")


