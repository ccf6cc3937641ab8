"""A chat-completions server on loopback that plays a scripted tool-calling conversation.

The agent scripts under this folder talk to it with the real ``openai`` SDK (or LangChain's ChatOpenAI): the
wire between them is real HTTP, only the model is scripted. Each request gets the next scripted reply; the
server keeps every request's messages so a test can compare them with what the spans say was sent.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The model's side of the conversation, one reply per call, in order. Parallel calls, an error result (the
# agent script answers ``get_weather("Atlantis")`` with an error), a retry, then two more turns; the user says
# "Thanks!" twice, genuinely, so the chain must keep both.
SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [("call_w1", "get_weather", {"city": "Paris"}), ("call_w2", "get_weather", {"city": "Atlantis"})]},
    {"tool_calls": [("call_w3", "get_weather", {"city": "Rome"})]},
    {"content": "Paris is 18°C and sunny, Rome 24°C; Atlantis could not be found."},
    {"tool_calls": [("call_b1", "book_table", {"city": "Rome", "people": 2})]},
    {"content": "Booked: a table for two in Rome at 20:00."},
    {"content": "You're welcome!"},
    {"content": "Anytime!"},
]


def completion(reply: dict[str, Any], n: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in reply["tool_calls"]
        ]
    return {
        "id": f"chatcmpl-stub-{n}",
        "object": "chat.completion",
        "created": 1767225600 + n,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}
        ],
        "usage": {"prompt_tokens": 100 + 10 * n, "completion_tokens": 20 + n, "total_tokens": 120 + 11 * n},
    }


class StubLlm:
    """``with StubLlm() as llm: llm.base_url`` serves ``SCRIPT`` (or ``script``) until the block ends."""

    def __init__(self, script: list[dict[str, Any]] | None = None) -> None:
        self.script = script or SCRIPT
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with stub._lock:
                    n = len(stub.requests)
                    stub.requests.append(body)
                if not self.path.endswith("/chat/completions") or n >= len(stub.script):
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(completion(stub.script[n], n, body.get("model", "gpt-stub"))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StubLlm:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
