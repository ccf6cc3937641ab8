"""Microsoft Agent Framework's compaction strategies against agent-framework-core 1.23.0 itself (the reference
oracle), and the reference's worked examples."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from agents.memory.schema import Message, parse_messages
from agents.memory.trimming import StrategyError, strategy_spec, trim
from agents.memory.trimming.maf import maf_summary_prompt
from tests.reference.canonical import CANONICAL, call
from tests.reference.conversations import conversations, counters
from tests.reference.harness import case, check_all, collect
from tests.summary_stub import StubEndpoint


@st.composite
def maf_cases(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations)
    name = draw(st.sampled_from(["maf_sliding_window", "maf_truncation", "maf_selective_tool_calls",
                                 "maf_tool_result_compaction", "maf_summarization"]))
    counter = draw(counters())
    n = len(messages)
    params: dict[str, Any] = {"pin_system": draw(st.booleans())}
    if name == "maf_sliding_window":
        params |= {"keep_last_groups": draw(st.integers(1, 8)), "preserve_system": draw(st.booleans())}
    elif name == "maf_truncation":
        count_tokens = draw(st.booleans())
        top = max(2, n * 12 if count_tokens else n)
        max_n = draw(st.integers(1, top))
        params |= {"max_n": max_n, "compact_to": draw(st.integers(1, max_n)), "count_tokens": count_tokens,
                   "preserve_system": draw(st.booleans()), "preserve_first_user_group": draw(st.booleans())}
    elif name in ("maf_selective_tool_calls", "maf_tool_result_compaction"):
        params |= {"keep_last_tool_call_groups": draw(st.integers(0, 3))}
    else:
        params |= {"target_count": draw(st.integers(1, 8)), "threshold": draw(st.integers(0, 3)),
                   "max_summary_input_tokens": draw(st.one_of(st.none(), st.integers(150, 400), st.integers(1, 8000)))}
    return messages, case(messages, name, params, counter)


def test_it_compacts_what_agent_framework_compacts() -> None:
    cases = collect(maf_cases(), 500)
    pairs = check_all(cases)
    by_name: dict[str, int] = {}
    for (_, c), (result, _) in zip(cases, pairs, strict=False):
        if result.dropped:
            by_name[c["strategy"]] = by_name.get(c["strategy"], 0) + 1
    assert all(by_name.get(name, 0) > 10 for name in (
        "maf_sliding_window", "maf_truncation", "maf_selective_tool_calls", "maf_tool_result_compaction",
        "maf_summarization")), by_name


def test_it_asks_the_summarizer_with_mafs_own_request(summary_endpoint: StubEndpoint) -> None:
    cases = collect(maf_cases().filter(lambda x: x[1]["strategy"] == "maf_summarization"), 60)
    pairs = check_all(cases)
    asked = 0
    for (messages, c), (_result, answer) in zip(cases, pairs, strict=False):
        if "prompt" not in answer:
            continue
        summary_endpoint.requests.clear()
        trim(messages, strategy_spec("maf_summarization", {**c["params"], "summarize_with": "endpoint"}),
             counter=c["counter"])
        [request] = summary_endpoint.requests
        assert request["body"]["messages"] == answer["prompt"]
        asked += 1
    assert asked > 5


def test_it_follows_the_references_tool_result_example() -> None:
    result = trim(CANONICAL, strategy_spec("maf_tool_result_compaction", {}), counter="messages")
    assert result.sources == [0, 1, None, 5, 6, 7, 8, 9]
    assert result.inserted[0].message.role == "assistant"
    assert result.inserted[0].message.content == (
        "[Tool results: get_weather: Oslo: 3°C, rain; get_weather: Paris: 11°C, sun]")
    assert result.inserted[0].summarizes == (2, 3, 4)
    check_all([(CANONICAL, case(CANONICAL, "maf_tool_result_compaction", {}, "messages"))])


def test_it_caps_compacted_tool_results_at_4096_characters() -> None:
    messages = parse_messages([
        {"role": "user", "content": "read"},
        {"role": "assistant", "content": None, "tool_calls": [call("r", "read_file", "{}")]},
        {"role": "tool", "tool_call_id": "r", "content": "line\n" * 1000},
        {"role": "assistant", "content": None, "tool_calls": [call("s", "read_file", "{}")]},
        {"role": "tool", "tool_call_id": "s", "content": "ok"},
    ])
    result = trim(messages, strategy_spec("maf_tool_result_compaction", {}), counter="approx")
    text = result.inserted[0].message.content
    assert len(text) == 4096 and text.endswith("... [truncated]]")
    assert any("microsoft/agent-framework#7393" in note for note in result.notes)
    check_all([(messages, case(messages, "maf_tool_result_compaction", {}, "approx"))])


def test_it_links_a_result_to_its_earlier_call_across_other_messages() -> None:
    messages = parse_messages([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [call("x", "f", "{}")]},
        {"role": "user", "content": "hurry"},  # a user message inside the exchange
        {"role": "tool", "tool_call_id": "x", "content": "done"},
        {"role": "assistant", "content": "ok"},
        {"role": "assistant", "content": None, "tool_calls": [call("y", "g", "{}")]},
        {"role": "tool", "tool_call_id": "y", "content": "fine"},
    ])
    result = trim(messages, strategy_spec("maf_selective_tool_calls", {}), counter="messages")
    assert result.sources == [0, 2, 4, 5, 6]  # the call, its text and its later result went as one group
    assert any("non-adjacent" in note for note in result.notes)
    check_all([(messages, case(messages, "maf_selective_tool_calls", {}, "messages"))])


def test_it_refuses_compact_to_above_max_n() -> None:
    with pytest.raises(StrategyError, match="compact_to must be less than or equal to max_n"):
        strategy_spec("maf_truncation", {"max_n": 5, "compact_to": 6})


def test_it_skips_a_first_group_too_large_for_the_summarizer_budget() -> None:
    messages = parse_messages([
        {"role": "user", "content": "x" * 2000},
        {"role": "assistant", "content": "short"},
        {"role": "user", "content": "two"}, {"role": "assistant", "content": "three"},
        {"role": "user", "content": "four"}, {"role": "assistant", "content": "five"},
        {"role": "user", "content": "six"}, {"role": "assistant", "content": "seven"},
    ])
    params = {"target_count": 2, "threshold": 0, "max_summary_input_tokens": 300}
    result = trim(messages, strategy_spec("maf_summarization", params), counter="messages")
    assert result.sources == [0, None, 6, 7]
    assert result.inserted[0].summarizes == (1, 2, 3, 4, 5)
    assert any("sits among kept messages it does not cover" in note for note in result.notes)
    assert maf_summary_prompt([messages[1]])[1]["content"] == "1. [assistant] short"
    check_all([(messages, case(messages, "maf_summarization", params, "messages"))])


def test_it_names_an_empty_tool_result_as_maf_does(summary_endpoint: StubEndpoint) -> None:
    """Found in CI: MAF renders an empty result by its item's type ("text content"), not as nothing."""
    messages = parse_messages([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "f", "{}"), call("b", "g", "{}")]},
        {"role": "tool", "tool_call_id": "a", "content": ""},
        {"role": "tool", "tool_call_id": "b", "content": None},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "two"}, {"role": "assistant", "content": "three"},
        {"role": "user", "content": "four"}, {"role": "assistant", "content": "five"},
    ])
    params = {"target_count": 2, "threshold": 0}
    [(_, answer)] = check_all([(messages, case(messages, "maf_summarization", params, "messages"))])
    assert "3. [tool] function_result: text content [call_id=a]" in answer["prompt"][1]["content"]
    assert "4. [tool] function_result: text content [call_id=b]" in answer["prompt"][1]["content"]
    trim(messages, strategy_spec("maf_summarization", {**params, "summarize_with": "endpoint"}), counter="messages")
    [request] = summary_endpoint.requests
    assert request["body"]["messages"] == answer["prompt"]
