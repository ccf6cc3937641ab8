"""GenAI-convention chat spans for the live-capture tests (the server tests and the browser test share them)."""
from __future__ import annotations

import json

from agents.memory.otlp import Span


def text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def chat_span(n: int, inputs: list[dict], output: dict, *, trace: str, session_id: str,
              model: str | None = None) -> Span:
    """The ``n``-th chat call of a run: sent ``inputs``, answered ``output`` (``model``: gen_ai.request.model)."""
    attributes = {"gen_ai.operation.name": "chat", "session.id": session_id,
                  "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps([output])}
    if model is not None:
        attributes["gen_ai.request.model"] = model
    return Span(trace_id=trace, span_id=f"{n:016x}", parent_span_id=None, name="chat gpt-4o",
                start_ns=n * 1_000_000_000, end_ns=n * 1_000_000_000 + 5_000_000, scope="test",
                resource={"service.name": "travel-agent"}, attributes=attributes)
