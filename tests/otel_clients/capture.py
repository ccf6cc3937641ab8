"""A loopback OTLP/HTTP endpoint that keeps every request's path, headers and body, for tests that need the bytes
a stock exporter really sends."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass
class Captured:
    path: str
    content_type: str
    content_encoding: str
    authorization: str
    body: bytes


class OtlpCapture:
    def __init__(self) -> None:
        self.requests: list[Captured] = []
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                capture.requests.append(Captured(self.path, self.headers.get("Content-Type", ""),
                                                 self.headers.get("Content-Encoding", ""),
                                                 self.headers.get("Authorization", ""), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/otlp"

    def __enter__(self) -> OtlpCapture:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def log_requests_cut_at(request: ExportLogsServiceRequest, cuts: list[int]) -> list[bytes]:
    """The log records of ``request`` re-sent as several requests, cut before each record position in ``cuts``
    (a batch processor cuts where its timer or its size says, in the middle of a call's events as well)."""
    records = [(rl.resource, sl.scope, record) for rl in request.resource_logs for sl in rl.scope_logs
               for record in sl.log_records]
    bodies = []
    for low, high in zip([0, *cuts], [*cuts, len(records)], strict=True):
        part = ExportLogsServiceRequest()
        for resource, scope, record in records[low:high]:
            rl = part.resource_logs.add()
            rl.resource.CopyFrom(resource)
            sl = rl.scope_logs.add()
            sl.scope.CopyFrom(scope)
            sl.log_records.add().CopyFrom(record)
        bodies.append(part.SerializeToString())
    return bodies


def trace_requests_one_span_each(body: bytes) -> list[bytes]:
    """The spans of a traces request re-sent one per request, with their resource and scope (a batch processor
    exports what has ended when its timer fires: a parent after its children, a trace across several requests)."""
    request = ExportTraceServiceRequest.FromString(body)
    bodies = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                part = ExportTraceServiceRequest()
                rs = part.resource_spans.add()
                rs.resource.CopyFrom(resource_spans.resource)
                ss = rs.scope_spans.add()
                ss.scope.CopyFrom(scope_spans.scope)
                ss.spans.add().CopyFrom(span)
                bodies.append(part.SerializeToString())
    return bodies
