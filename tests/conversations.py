"""Small conversations that several test files share (OpenAI-shaped message dicts)."""
from __future__ import annotations

import copy

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


DIFF_FILLER = [
    {"role": "user" if k % 2 == 0 else "assistant", "content": f"Small talk {k // 2}: the hotel, the trains, the food."}
    for k in range(16)
]


def two_runs() -> tuple[list[dict], list[dict]]:
    """Two runs of one task for the diff: other call ids, a changed argument, a result and a reply changed, a
    message left out."""
    first = TRAVEL + DIFF_FILLER + [{"role": "user", "content": "Book the 9:00 train to Lyon."},
                                    {"role": "assistant", "content": "Booked the 9:00 train to Lyon, seat 42."}]
    second = copy.deepcopy(first)
    for m in second:  # another run: other call ids
        for call in m.get("tool_calls") or []:
            call["id"] = "r2-" + call["id"]
        if m.get("tool_call_id"):
            m["tool_call_id"] = "r2-" + m["tool_call_id"]
    second[2]["tool_calls"][1]["function"]["arguments"] = '{"city": "Osaka", "units": "C"}'
    second[5]["content"] = "Paris is 18°C; Osaka timed out."
    second[-1]["content"] = "Booked the 10:30 train to Lyon, seat 42, window."
    del second[8]
    return first, second
