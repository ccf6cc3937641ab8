"""Hypothesis conversations for the 2026 strategies: valid ones (parallel calls, pending calls) and broken ones.

``sessions()`` starts from ``valid_conversations`` and applies a few drawn mutations: a result removed (a call
without its result), a call message removed (orphan results), parallel calls split over two assistant messages,
a user message inside an exchange, long multi-line texts (partial reads, truncated and trimmed outputs), tool
names on results. ``messy()`` is any order of roles at all.
"""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agents.memory.schema import FunctionCall, Message, ToolCall
from tests.strategies_messages import valid_conversations

WORDS = ("weather", "Oslo", "Paris", "3°C", "rain", "hotel", "Lutetia", "東京", "🙂", "price", "240", "EUR", "ok")


@st.composite
def long_texts(draw: st.DrawFn) -> str:
    lines = draw(st.lists(
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=30).map(" ".join), min_size=1, max_size=12,
    ))
    text = "\n".join(lines)
    if draw(st.booleans()):
        text += "x" * draw(st.integers(0, 900))
    return text or "x"


MUTATIONS = ("drop_result", "drop_call", "split_calls", "user_inside", "long_text", "long_results", "long_results",
             "tool_names")


@st.composite
def sessions(draw: st.DrawFn, *, max_turns: int = 5, mutations: int = 3) -> list[Message]:
    messages = list(draw(valid_conversations(system=None, pending=None, max_turns=max_turns, max_calls=3)))
    for kind in draw(st.lists(st.sampled_from(MUTATIONS), max_size=mutations)):
        tools = [i for i, m in enumerate(messages) if m.role == "tool"]
        calls = [i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls]
        if kind == "drop_result" and tools:
            del messages[draw(st.sampled_from(tools))]
        elif kind == "drop_call" and calls:
            del messages[draw(st.sampled_from(calls))]
        elif kind == "split_calls":
            multi = [i for i in calls if len(messages[i].tool_calls) > 1]
            if multi:
                i = draw(st.sampled_from(multi))
                m = messages[i]
                k = draw(st.integers(1, len(m.tool_calls) - 1))
                first = m.model_copy(update={"tool_calls": m.tool_calls[:k]})
                second = Message(role="assistant", content=None, tool_calls=m.tool_calls[k:])
                messages[i : i + 1] = [first, second]
        elif kind == "user_inside" and calls:
            i = draw(st.sampled_from(calls))
            messages.insert(i + 1, Message(role="user", content=draw(st.sampled_from(["wait", "and Rome?"]))))
        elif kind == "long_text" and messages:
            i = draw(st.integers(0, len(messages) - 1))
            if messages[i].role != "assistant" or not messages[i].tool_calls or draw(st.booleans()):
                messages[i] = messages[i].model_copy(update={"content": draw(long_texts())})
        elif kind == "long_results":
            messages = [m.model_copy(update={"content": draw(long_texts())})
                        if m.role == "tool" and draw(st.booleans()) else m for m in messages]
        elif kind == "tool_names" and tools:
            names = {tc.id: tc.function.name for m in messages for tc in m.tool_calls}
            messages = [
                m.model_copy(update={"name": names.get(m.tool_call_id or "")}) if m.role == "tool" else m
                for m in messages
            ]
    return messages


@st.composite
def messy(draw: st.DrawFn, *, unique_calls: bool = False) -> list[Message]:
    """Any order of roles: leading and orphan tool results, interrupted and pending exchanges, system mid-list.
    ``unique_calls``: no call id in two calls (results may still repeat one)."""
    ids = [f"call_{k}" for k in range(6)]
    used: set[str] = set()
    out: list[Message] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["system", "user", "user", "assistant", "call", "call", "tool", "tool"]))
        text = draw(st.sampled_from(["", "ok", "hello there", "a longer message\nwith two lines", "x" * 450]))
        if kind == "call":
            free = [c for c in ids if c not in used] if unique_calls else ids
            if not free:
                continue
            picked = draw(st.lists(st.sampled_from(free), min_size=1, max_size=3, unique=True))
            used.update(picked)
            out.append(Message(
                role="assistant", content=text or None,
                tool_calls=[ToolCall(id=c, function=FunctionCall(name=draw(st.sampled_from(["f", "g"])),
                                                                 arguments='{"a": 1}')) for c in picked],
            ))
        elif kind == "tool":
            out.append(Message(role="tool", tool_call_id=draw(st.sampled_from(ids)), content=text))
        else:
            out.append(Message(role=kind, content=text))
    return out


conversations = st.one_of(sessions(), sessions(max_turns=8, mutations=1), messy())
# For frameworks that key calls by id across messages (the Agents SDK keeps one call per id): no id in two calls.
conversations_unique_calls = st.one_of(sessions(), sessions(max_turns=8, mutations=1), messy(unique_calls=True))


def counters() -> Any:
    return st.sampled_from(["messages", "approx"])
