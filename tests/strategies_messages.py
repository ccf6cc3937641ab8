"""Hypothesis strategies for message lists that keep the tool-calling protocol.

``valid_conversations()`` draws lists of schema ``Message``: an optional system (or developer) prompt, then user
turns; in each turn zero or more tool exchanges (one to ``max_calls`` parallel calls, results right after the
call in any order, some marked ``is_error``), then an assistant answer. With ``pending`` the list ends in the
middle of a tool loop: a last exchange with some (never all) of its results. Call ids are unique per list.

Such a list has no violation under either provider profile, except ``pending_tool_call`` warnings when pending.

Broken lists: ``messy_conversations()`` (any order of roles, ids reused), ``broken_unique_id_conversations()``
(any order, every call id used once); ``conversations`` mixes valid, pending and messy ones.
``strategy_and_params(total_tokens)`` draws a registered strategy with parameters that exercise it.
"""
from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from agents.memory.schema import FunctionCall, Message, ToolCall
from agents.memory.trimming import STRATEGIES

# Text a person or a model writes: plain, accented, CJK, emoji, code, newlines.
_SAMPLES = (
    "What's the weather in Paris?",
    "Météo à Zürich, s'il vous plaît",
    "東京の天気は？",
    "Ça va 🙂👍",
    "def f(x):\n    return x * 2\n",
    "SELECT * FROM t WHERE id = 3;",
    "line one\nline two",
)
texts = st.one_of(st.sampled_from(_SAMPLES), st.text(min_size=1, max_size=40))
# Assistant answers must not be blank (a blank one is empty_assistant).
answers = st.one_of(st.sampled_from(_SAMPLES), st.text(max_size=40).map(lambda s: s + " ok"))
tool_names = st.sampled_from(["get_weather", "search", "read_file", "run_python", "lookup_order"])
_json_values = st.one_of(
    st.integers(-1000, 1000),
    st.text(max_size=20),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
arguments = st.one_of(
    st.just("{}"),
    st.builds(
        lambda d, ascii_only: json.dumps(d, ensure_ascii=ascii_only),
        st.dictionaries(st.text(min_size=1, max_size=8), _json_values, max_size=3),
        st.booleans(),
    ),
)


@st.composite
def _content(draw: st.DrawFn, text: st.SearchStrategy[str], parts: bool) -> str | list[dict[str, Any]]:
    value = draw(text)
    if parts and draw(st.booleans()):
        return [{"type": "text", "text": value}]
    return value


@st.composite
def valid_conversations(
    draw: st.DrawFn,
    *,
    system: bool | None = None,
    pending: bool | None = False,
    min_turns: int = 0,
    max_turns: int = 4,
    max_exchanges: int = 3,
    max_calls: int = 3,
    errors: bool = True,
    content_parts: bool = False,
) -> list[Message]:
    """A protocol-valid message list. ``system``/``pending`` None means drawn; ``pending`` defaults to False."""
    if system is None:
        system = draw(st.booleans())
    if pending is None:
        pending = draw(st.booleans())
    id_style = draw(st.sampled_from(["call_", "toolu_", "fc_", "c"]))
    counter = iter(range(1_000_000))

    def new_id() -> str:
        return f"{id_style}{next(counter)}"

    def exchange(calls: int, answered: int) -> list[Message]:
        tool_calls = [
            ToolCall(id=new_id(), function=FunctionCall(name=draw(tool_names), arguments=draw(arguments)))
            for _ in range(calls)
        ]
        content = draw(st.one_of(st.none(), answers))
        out = [Message(role="assistant", content=content, tool_calls=tool_calls)]
        order = draw(st.permutations(range(calls)))[:answered]
        for k in order:
            is_error = True if errors and draw(st.integers(0, 4)) == 0 else None
            out.append(Message(role="tool", tool_call_id=tool_calls[k].id, content=draw(texts), is_error=is_error))
        return out

    messages: list[Message] = []
    if system:
        role = draw(st.sampled_from(["system", "system", "developer"]))
        messages.append(Message(role=role, content=draw(texts)))
    for _ in range(draw(st.integers(min_turns, max_turns))):
        messages.append(Message(role="user", content=draw(_content(texts, content_parts))))
        for _ in range(draw(st.integers(0, max_exchanges))):
            calls = draw(st.integers(1, max_calls))
            messages.extend(exchange(calls, calls))
        messages.append(Message(role="assistant", content=draw(_content(answers, content_parts))))
    if pending:
        messages.append(Message(role="user", content=draw(_content(texts, content_parts))))
        for _ in range(draw(st.integers(0, max_exchanges - 1))):
            calls = draw(st.integers(1, max_calls))
            messages.extend(exchange(calls, calls))
        calls = draw(st.integers(1, max_calls))
        messages.extend(exchange(calls, draw(st.integers(0, calls - 1))))
    return messages


@st.composite
def broken_unique_id_conversations(draw: st.DrawFn, max_size: int = 14) -> list[Message]:
    """Any order of roles, but every call id is used by one call only: results late, early (before their call),
    twice, missing, orphaned; leading results, system messages mid-list, empty assistants. (messy lists that
    reuse ids are messy_conversations.)"""
    ids = [f"call_{k}" for k in range(8)]
    unused = iter(ids)
    out: list[Message] = []
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(st.sampled_from(["system", "user", "assistant", "call", "call", "tool", "tool", "tool"]))
        if kind == "call":
            calls = [c for c in (next(unused, None) for _ in range(draw(st.integers(1, 2)))) if c is not None]
            if calls:
                out.append(Message(role="assistant", content=draw(st.sampled_from([None, "Checking."])), tool_calls=[
                    ToolCall(id=c, function=FunctionCall(name="f", arguments=draw(st.sampled_from(["{}", "[1]"]))))
                    for c in calls
                ]))
        elif kind == "tool":
            out.append(Message(role="tool", tool_call_id=draw(st.sampled_from(ids)), content="result"))
        else:
            out.append(Message(role=kind, content=draw(st.sampled_from(["", "hello"]))))
    return out


@st.composite
def messy_conversations(draw: st.DrawFn) -> list[Message]:
    """Any order of roles: leading and orphan tool results, interrupted and pending exchanges, system mid-list."""
    ids = [f"call_{k}" for k in range(6)]
    out: list[Message] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["system", "developer", "user", "assistant", "call", "call", "tool", "tool"]))
        text = draw(st.sampled_from(["", "ok", "hello there", "a longer message with several words in it", "x" * 90]))
        if kind == "call":
            calls = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3))
            out.append(Message(
                role="assistant", content=text or None,
                tool_calls=[ToolCall(id=c, function=FunctionCall(name="f", arguments='{"a": 1}')) for c in calls],
            ))
        elif kind == "tool":
            out.append(Message(role="tool", tool_call_id=draw(st.sampled_from(ids)), content=text))
        else:
            out.append(Message(role=kind, content=text))
    return out


conversations = st.one_of(
    valid_conversations(system=None, pending=None, max_turns=5),
    valid_conversations(system=True, pending=True, min_turns=1, max_turns=3, max_calls=4),
    messy_conversations(),
)


@st.composite
def strategy_and_params(
    draw: st.DrawFn, total_tokens: int, names: list[str] | None = None
) -> tuple[str, dict[str, Any]]:
    """A registered strategy (one of ``names``) with parameters that exercise it."""
    name = draw(st.sampled_from(sorted(names or STRATEGIES)))
    budget = draw(st.integers(1, max(1, total_tokens + 10)))
    small = st.integers(1, 12)
    params: dict[str, Any] = {"pin_system": draw(st.booleans())}
    params.update({
        "openmanus_window": lambda: {"max_messages": draw(st.integers(0, 12))},
        "buffered": lambda: {"buffer_size": draw(small)},
        "head_and_tail": lambda: {"head_size": draw(small), "tail_size": draw(small)},
        "token_limited": lambda: {"token_limit": budget},
        "langchain_last": lambda: {"max_tokens": budget, "include_system": draw(st.booleans()),
                                   "start_on": draw(st.sampled_from([None, "human", ["human", "ai"]])),
                                   "end_on": draw(st.sampled_from([None, "ai", ["human", "tool"]]))},
        "langchain_first": lambda: {"max_tokens": budget, "end_on": draw(st.sampled_from([None, "ai", "tool"]))},
        "safe_window": lambda: {"max_messages": draw(small)},
        "last_turns": lambda: {"max_turns": draw(st.integers(1, 4))},
        "sk_truncation": lambda: {"target_count": draw(small), "threshold_count": draw(st.integers(0, 3))},
        "llamaindex_buffer": lambda: {"token_limit": budget},
        "safe_token_budget": lambda: {"max_tokens": budget},
        "langchain_summarization": lambda: {"trigger_tokens": budget, "keep_messages": draw(small),
                                            "trim_tokens_to_summarize": budget},
        "langchain_clear_tool_uses": lambda: {"trigger": budget // 2, "keep": draw(st.integers(0, 3)),
                                              "clear_tool_inputs": draw(st.booleans())},
        "openai_session_limit": lambda: {"limit": draw(st.one_of(st.none(), st.integers(0, 12)))},
        "openai_tool_output_trimmer": lambda: {"recent_turns": draw(st.integers(1, 3)),
                                               "max_output_chars": draw(st.integers(1, 40)),
                                               "preview_chars": draw(st.integers(0, 10))},
        "anthropic_clear_tool_uses": lambda: {"trigger_tool_uses": draw(st.integers(0, 3)),
                                              "keep_tool_uses": draw(st.integers(0, 3)),
                                              "clear_tool_inputs": draw(st.sampled_from([True, False, ["f"]]))},
        "anthropic_clear_thinking": lambda: {"keep_thinking_turns": draw(st.sampled_from([1, 2, "all"]))},
        "strands_sliding_window": lambda: {"window_size": draw(st.integers(0, 12)),
                                           "pin_first": draw(st.sampled_from([None, 1, 2])),
                                           "context_overflow": draw(st.booleans())},
        "strands_summarizing": lambda: {"summary_ratio": draw(st.sampled_from([0.1, 0.3, 0.8])),
                                        "preserve_recent_messages": draw(st.integers(0, 6))},
        "maf_sliding_window": lambda: {"keep_last_groups": draw(small), "preserve_system": draw(st.booleans())},
        "maf_truncation": lambda: {"max_n": 6, "compact_to": draw(st.integers(1, 6))},
        "maf_selective_tool_calls": lambda: {"keep_last_tool_call_groups": draw(st.integers(0, 2))},
        "maf_tool_result_compaction": lambda: {"keep_last_tool_call_groups": draw(st.integers(0, 2))},
        "maf_summarization": lambda: {"target_count": draw(st.integers(1, 4)), "threshold": draw(st.integers(0, 2))},
        "adk_compaction": lambda: {"compaction_interval": draw(st.integers(1, 3)),
                                   "overlap_size": draw(st.integers(0, 2))},
    }.get(name, dict)())
    return name, params
