"""An OpenAI-compatible chat-completions server on 127.0.0.1 for the summary endpoint's tests (never the network).

``summary_endpoint`` (a pytest fixture, imported by the tests that use it) starts one per test on a free port,
points the ``MEMORYVIZ_SUMMARY_*`` environment at it, and records every request; a test sets ``answer`` (the
JSON body or raw bytes), ``status`` or ``delay`` to make it fail.
"""
from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class StubEndpoint:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)  # {"path", "headers", "body"}
    answer: Any = None  # None: a completion whose text is ``text``
    text: str = "The user asked about the weather; the assistant called get_weather."
    status: int = 200
    delay: float = 0.0

    def body(self) -> bytes:
        if isinstance(self.answer, bytes):
            return self.answer
        data = self.answer if self.answer is not None else {
            "id": "chatcmpl-stub", "object": "chat.completion", "model": "stub-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.text},
                         "finish_reason": "stop"}],
        }
        return json.dumps(data).encode()


def _handler(stub: StubEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            stub.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)})
            if stub.delay:
                time.sleep(stub.delay)
            body = stub.body()
            self.send_response(stub.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up (a timeout test)
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def summary_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubEndpoint]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    stub = StubEndpoint(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    server.RequestHandlerClass = _handler(stub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_BASE_URL", stub.base_url)
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_MODEL", "stub-model")
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_API_KEY", "sk-test-stub")
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_TIMEOUT", "5")
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
