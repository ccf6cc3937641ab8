"""The OpenAI Agents SDK's session limit and ToolOutputTrimmer against openai-agents 0.24.0 itself (the reference
oracle), and the reference's worked examples."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agents.memory.schema import Message, parse_messages
from agents.memory.trimming import strategy_spec, trim
from tests.reference.canonical import CANONICAL, call
from tests.reference.conversations import conversations_unique_calls, counters
from tests.reference.harness import case, check_all, collect


@st.composite
def limit_cases(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations_unique_calls)
    params = {"pin_system": draw(st.booleans()),
              "limit": draw(st.one_of(st.none(), st.integers(0, len(messages) * 2 + 2)))}
    return messages, case(messages, "openai_session_limit", params, draw(counters()))


def test_it_sends_what_the_agents_sdk_sends_under_a_session_limit() -> None:
    pairs = check_all(collect(limit_cases(), 300))
    assert sum(1 for r, _ in pairs if r.edited) > 20  # messages cut between their items
    assert sum(1 for r, _ in pairs if r.dropped) > 100


@st.composite
def trimmer_cases(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations_unique_calls)
    params = {
        "pin_system": draw(st.booleans()),
        "recent_turns": draw(st.integers(1, 4)),
        "max_output_chars": draw(st.one_of(st.integers(1, 80), st.integers(1, 600))),
        "preview_chars": draw(st.one_of(st.integers(0, 30), st.integers(0, 300))),
        "trimmable_tools": draw(st.one_of(st.none(), st.lists(
            st.sampled_from(["get_weather", "search", "f", "read_file", "run_python"]), max_size=3, unique=True))),
    }
    return messages, case(messages, "openai_tool_output_trimmer", params, draw(counters()))


def test_it_trims_what_the_agents_sdks_tool_output_trimmer_trims() -> None:
    pairs = check_all(collect(trimmer_cases(), 300))
    assert sum(1 for r, _ in pairs if r.edited) > 5  # the draw reaches trimming (8 of the fixed 300)


def test_it_follows_the_references_session_limit_examples() -> None:
    limit = lambda n: trim(CANONICAL, strategy_spec("openai_session_limit", {"limit": n}),  # noqa: E731
                           counter="messages")
    assert limit(2).sources == [0, 9]  # the output of c goes with its call
    assert "openai/openai-agents-python#4322" in dict((d.index, d.reason) for d in limit(2).dropped)[8]
    three = limit(3)
    assert three.sources == [0, 7, 8, 9]
    assert three.messages[1].content is None and three.messages[1].tool_calls == CANONICAL[7].tool_calls
    assert [e.index for e in three.edited] == [7] and "without its text" in three.kept_reasons[7]
    assert limit(5).sources == [0, 6, 7, 8, 9]
    assert limit(None).sources == list(range(10)) and limit(0).sources == [0]
    check_all([(CANONICAL, case(CANONICAL, "openai_session_limit", {"limit": n}, "messages")) for n in (0, 2, 3, 5)])


def test_it_drops_a_pending_call_even_without_a_limit() -> None:
    messages = [*CANONICAL[:6], *parse_messages([
        {"role": "user", "content": "and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [call("d", "get_weather", '{"city": "Rome"}')]},
    ])]
    result = trim(messages, strategy_spec("openai_session_limit", {}), counter="messages")
    assert result.sources == [0, 1, 2, 3, 4, 5, 6]
    assert "drop_orphan_function_calls" in result.dropped[0].reason
    check_all([(messages, case(messages, "openai_session_limit", {}, "messages"))])


def test_it_follows_the_references_tool_output_trimmer_example() -> None:
    output = ("Hotel Lutetia 240 EUR a night, breakfast included, quiet rooms on the courtyard; "
              "Hotel Regina 310 EUR, Tuileries view.")
    assert len(output) == 118
    messages = parse_messages([
        {"role": "user", "content": "Hotels in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call("h", "search_hotels", '{"city": "Paris"}')]},
        {"role": "tool", "tool_call_id": "h", "content": output},
        {"role": "assistant", "content": "Lutetia or Regina."},
        {"role": "user", "content": "Book Lutetia."},
        {"role": "assistant", "content": "Booked."},
    ])
    params = {"recent_turns": 1, "max_output_chars": 60, "preview_chars": 20}
    result = trim(messages, strategy_spec("openai_tool_output_trimmer", params), counter="approx")
    assert result.messages[2].content == (
        "[Trimmed: search_hotels output — 118 chars → 20 char preview]\nHotel Lutetia 240 EU...")
    assert [e.index for e in result.edited] == [2] and result.tokens_after < result.tokens_before
    # Within the recent turns nothing is trimmed; a trimmed form that is not shorter is not used.
    assert not trim(messages, strategy_spec("openai_tool_output_trimmer", {**params, "recent_turns": 2})).edited
    assert not trim(messages, strategy_spec("openai_tool_output_trimmer", {**params, "preview_chars": 100})).edited
    check_all([(messages, case(messages, "openai_tool_output_trimmer", p, "approx"))
               for p in (params, {**params, "recent_turns": 2}, {**params, "trimmable_tools": ["get_weather"]})])
