"""A loopback OTLP/HTTP endpoint that keeps every request's path, headers and body, for tests that need the bytes
a stock exporter really sends."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
