"""reference/trimming-2026.md's canonical list: ``0`` system, ``1`` user, ``2`` assistant calls a,b, ``3`` tool a,
``4`` tool b, ``5`` assistant, ``6`` user, ``7`` assistant text + call c, ``8`` tool c, ``9`` assistant."""
from __future__ import annotations

from agents.memory.schema import parse_messages


def call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CANONICAL_DICTS = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Weather in Oslo and Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        call("a", "get_weather", '{"city": "Oslo"}'), call("b", "get_weather", '{"city": "Paris"}')]},
    {"role": "tool", "tool_call_id": "a", "content": "Oslo: 3°C, rain"},
    {"role": "tool", "tool_call_id": "b", "content": "Paris: 11°C, sun"},
    {"role": "assistant", "content": "Oslo is 3°C and rainy; Paris 11°C and sunny."},
    {"role": "user", "content": "Find me a hotel in Paris."},
    {"role": "assistant", "content": "Searching.", "tool_calls": [call("c", "search_hotels", '{"city": "Paris"}')]},
    {"role": "tool", "tool_call_id": "c", "content": "Hotel Lutetia 240 EUR; Hotel Regina 310 EUR"},
    {"role": "assistant", "content": "Hotel Lutetia at 240 EUR a night."},
]
CANONICAL = parse_messages(CANONICAL_DICTS)
