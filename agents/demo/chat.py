"""A small conversation builder: messages with realistic ids and timestamps."""
from __future__ import annotations

import datetime as dt
import json
import random
import string
from typing import Any

from agents.memory.schema import FunctionCall, Message, ToolCall

# --- a small conversation builder ---------------------------------------------------------------------------


# A fixed epoch keeps the data identical from run to run (and machine to machine).
EPOCH = dt.datetime(2026, 11, 2, 8, 0, tzinfo=dt.UTC)

class Chat:
    """Appends messages with realistic ids and timestamps."""

    def __init__(self, rng: random.Random, start: dt.datetime, id_style: str = "openai") -> None:
        self.rng = rng
        self.now = start
        self.messages: list[Message] = []
        self.id_style = id_style

    def _tick(self, low: float = 1.0, high: float = 20.0) -> dt.datetime:
        self.now += dt.timedelta(seconds=round(self.rng.uniform(low, high), 3))
        return self.now

    def call_id(self) -> str:
        alphabet = string.ascii_letters + string.digits
        if self.id_style == "anthropic":
            return "toolu_" + "".join(self.rng.choice(alphabet) for _ in range(24))
        return "call_" + "".join(self.rng.choice(alphabet) for _ in range(24))

    def _add(self, **fields: Any) -> Message:
        message = Message(external_id=f"msg_{len(self.messages):05d}", created_at=self._tick(), **fields)
        self.messages.append(message)
        return message

    def system(self, text: str) -> None:
        self._add(role="system", content=text)

    def user(self, text: str) -> None:
        self._add(role="user", content=text)

    def assistant(self, text: str | None, reasoning: str | None = None, usage: dict[str, Any] | None = None) -> None:
        self._add(role="assistant", content=text, reasoning=reasoning, usage=usage)

    def call(
        self, calls: list[tuple[str, dict[str, Any]]], text: str | None = None, reasoning: str | None = None,
        ids: list[str] | None = None, raw_arguments: list[str | None] | None = None,
    ) -> list[str]:
        call_ids = ids or [self.call_id() for _ in calls]
        tool_calls = []
        for i, (name, args) in enumerate(calls):
            given = raw_arguments[i] if raw_arguments else None
            raw = given if given is not None else json.dumps(args, ensure_ascii=False)
            tool_calls.append(ToolCall(id=call_ids[i], function=FunctionCall(name=name, arguments=raw)))
        self._add(role="assistant", content=text, tool_calls=tool_calls, reasoning=reasoning)
        return call_ids

    def result(self, call_id: str, content: Any, is_error: bool | None = None) -> None:
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        self.now += dt.timedelta(seconds=round(self.rng.uniform(0.2, 4.0), 3))
        self._add(role="tool", content=text, tool_call_id=call_id, is_error=is_error)
