"""Small conversations that several test files share (OpenAI-shaped message dicts)."""
from __future__ import annotations

# A question, two parallel calls (the second fails), their results and the answer.
TRAVEL = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Weather in Paris and Tokyo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18°C"},
    {"role": "tool", "tool_call_id": "c2", "content": "timeout", "is_error": True},
    {"role": "assistant", "content": "Paris is 18°C; Tokyo timed out."},
]


_WEATHER_SYSTEM = {"role": "system", "content": "You are a travel assistant."}


def chat(turns: int) -> list[dict]:
    """A system prompt then ``turns`` user questions, each answered through a tool call."""
    messages = [_WEATHER_SYSTEM]
    for t in range(turns):
        call = f"call_{t}"
        messages += [
            {"role": "user", "content": f"Question {t}: weather in city {t}?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": f'{{"city": "c{t}"}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call, "content": f"{t}°C"},
            {"role": "assistant", "content": f"It is {t}°C in city {t}."},
        ]
    return messages
