"""LangChain v1 middleware against langchain 1.5.0 itself (the reference oracle), the reference's worked examples
and LangChain's known bugs."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agents.memory.schema import Message, parse_messages
from agents.memory.tokens import count_messages, get_counter
from agents.memory.trimming import strategy_spec, trim
from tests.reference.canonical import CANONICAL, call
from tests.reference.conversations import conversations, counters
from tests.reference.harness import case, check_all, collect, oracle
from tests.summary_stub import StubEndpoint


def total(messages: list[Message], counter: str) -> int:
    return sum(count_messages(messages, counter)) + get_counter(counter).per_list


@st.composite
def summarization_cases(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations)
    counter = draw(counters())
    size = total(messages, counter)
    maybe = lambda s: st.one_of(st.none(), s)  # noqa: E731
    params: dict[str, Any] = {
        "pin_system": draw(st.booleans()),
        "trigger_tokens": draw(maybe(st.integers(1, max(1, int(size * 1.2))))),
        "trigger_messages": draw(maybe(st.integers(1, len(messages) + 2))),
        "trigger_all": draw(st.booleans()),
        "keep_messages": draw(st.integers(1, 12)),
        "keep_tokens": draw(maybe(st.integers(1, max(1, size)))),
        "trim_tokens_to_summarize": draw(maybe(st.integers(0, max(1, size)))),
    }
    if params["trigger_tokens"] is None and params["trigger_messages"] is None and draw(st.integers(0, 4)):
        params["trigger_messages"] = 1
    return messages, case(messages, "langchain_summarization", params, counter)


def test_it_summarizes_what_langchain_summarization_middleware_summarizes(summary_endpoint: StubEndpoint) -> None:
    cases = collect(summarization_cases(), 250)
    pairs = check_all(cases)
    summarized = [r for r, _ in pairs if r.inserted]
    assert len(summarized) > 50  # the draw reaches the summarizing path often
    # What the summarizer reads, and the prompt LangChain fills with it: the endpoint is asked exactly that.
    prompted = 0
    for (messages, c), (result, answer) in zip(cases, pairs, strict=False):
        if "prompt" not in answer:
            continue
        summary_endpoint.requests.clear()
        again = trim(messages, strategy_spec("langchain_summarization", {**c["params"], "summarize_with": "endpoint"}),
                     counter=c["counter"])
        assert [x.summarizes for x in again.inserted] == [x.summarizes for x in result.inserted]
        [request] = summary_endpoint.requests
        assert request["body"]["messages"] == [{"role": "user", "content": answer["prompt"]}], c
        prompted += 1
    assert prompted > 40


@st.composite
def clearing_cases(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations)
    counter = draw(counters())
    size = total(messages, counter)
    params: dict[str, Any] = {
        "pin_system": draw(st.booleans()),
        "trigger": draw(st.integers(0, max(1, int(size * 1.1)))),
        "clear_at_least": draw(st.one_of(st.just(0), st.integers(1, max(1, size // 2)))),
        "keep": draw(st.integers(0, 4)),
        "clear_tool_inputs": draw(st.booleans()),
        "exclude_tools": draw(st.lists(st.sampled_from(["get_weather", "search", "f", "read_file"]), max_size=2,
                                       unique=True)),
        "placeholder": draw(st.sampled_from(["[cleared]", "", "(result removed)"])),
    }
    return messages, case(messages, "langchain_clear_tool_uses", params, counter)


def test_it_clears_what_langchain_clear_tool_uses_edit_clears() -> None:
    pairs = check_all(collect(clearing_cases(), 300))
    assert sum(1 for r, _ in pairs if r.edited) > 60


# --- worked examples (reference/trimming-2026.md §1) ----------------------------------------------------------


def summarize(params: dict[str, Any], messages: list[Message] = CANONICAL, counter: str = "messages") -> Any:
    return trim(messages, strategy_spec("langchain_summarization", params), counter=counter)


def test_it_follows_the_references_summarization_examples() -> None:
    expect = {
        (8, 3, True): [0, None, 7, 8, 9],
        (8, 5, True): [0, None, 5, 6, 7, 8, 9],
        (8, 6, True): [0, None, 2, 3, 4, 5, 6, 7, 8, 9],  # the cut lands on 4 and moves back to 2
        (10, 3, True): list(range(10)),
        (5, 7, False): [None, 2, 3, 4, 5, 6, 7, 8, 9],  # the system message is summarized like any message
    }
    for (trigger, keep, pin), sources in expect.items():
        result = summarize({"trigger_messages": trigger, "keep_messages": keep, "pin_system": pin})
        assert result.sources == sources, (trigger, keep, pin)
    result = summarize({"trigger_messages": 8, "keep_messages": 3})
    summary = result.inserted[0]
    assert summary.message.role == "user"
    assert summary.message.content == "Here is a summary of the conversation to date:\n\n[summary of 6 messages]"
    assert summary.summarizes == (1, 2, 3, 4, 5, 6) and result.inserted[0].position == 1
    assert [d.index for d in result.dropped] == [1, 2, 3, 4, 5, 6]
    assert all(d.reason.startswith("summarized: ") for d in result.dropped)
    # Under a token counter the placeholder counts summary_tokens.
    tokens = summarize({"trigger_messages": 8, "keep_messages": 3, "summary_tokens": 321}, counter="approx")
    counts = count_messages(CANONICAL, "approx")
    assert tokens.tokens_after == counts[0] + 321 + sum(counts[7:]) + 3
    assert summarize({"trigger_messages": 8, "keep_messages": 3}).tokens_after == 5  # 1 per message under messages


def test_it_never_summarizes_with_langchains_default_trigger() -> None:
    result = summarize({})
    assert result.kept == list(range(10)) and not result.inserted
    assert any("default trigger is None" in note for note in result.notes)
    [answer] = oracle([case(CANONICAL, "langchain_summarization", {}, "messages")])
    assert [m["source"] for m in answer["messages"]] == list(range(9))


def test_it_reproduces_langchains_orphan_after_the_safe_cutoff() -> None:
    # langchain-ai/langchain#38352: [AI(c1), AI(c2), T(c1), T(c2)] with the cut on T(c1) moves it to AI(c2), so
    # T(c1) is kept without its call.
    messages = parse_messages([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "f", "{}")]},
        {"role": "assistant", "content": None, "tool_calls": [call("c2", "g", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "assistant", "content": "done"},
    ])
    params = {"trigger_messages": 2, "keep_messages": 3}
    result = summarize(params, messages)
    assert result.sources == [None, 2, 3, 4, 5]
    assert any("langchain-ai/langchain#38352" in note for note in result.notes)
    assert "orphan_tool_result" in {v.kind for v in result.violations}
    check_all([(messages, case(messages, "langchain_summarization", params, "messages"))])


def test_it_says_when_the_kept_part_starts_with_a_user_message_and_keep_tokens_is_exceeded() -> None:
    result = summarize({"trigger_messages": 8, "keep_messages": 4})
    assert result.sources == [0, None, 6, 7, 8, 9]
    assert any("two user messages follow each other" in note for note in result.notes)
    result = summarize({"trigger_messages": 8, "keep_tokens": 2})  # the cut on 8 moves back to 7's exchange
    assert result.sources == [0, None, 7, 8, 9]
    assert any("more than keep_tokens=2" in note for note in result.notes)
    check_all([(CANONICAL, case(CANONICAL, "langchain_summarization", {"trigger_messages": 8, "keep_tokens": 2},
                                "messages"))])


def test_it_shows_what_the_summarizer_reads_of_the_summarized_messages() -> None:
    messages = parse_messages([
        {"role": "user", "content": "first question\nwith a second line\nand a third"},
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "another answer"},
        {"role": "user", "content": "newest"},
    ])
    params = {"trigger_messages": 2, "keep_messages": 1, "trim_tokens_to_summarize": 20, "pin_system": False}
    result = summarize(params, messages, counter="approx")
    reasons = {d.index: d.reason for d in result.dropped}
    assert reasons[3].endswith("the summarizer reads it whole")
    assert "the summarizer reads only its last" in reasons[0] or "does not read it" in reasons[0]
    check_all([(messages, case(messages, "langchain_summarization", params, "approx"))])


def test_it_writes_langchains_fixed_text_when_nothing_fits_the_summarizer() -> None:
    result = summarize({"trigger_messages": 8, "keep_messages": 3, "trim_tokens_to_summarize": 0})
    assert result.inserted[0].message.content == (
        "Here is a summary of the conversation to date:\n\nPrevious conversation was too long to summarize.")
    assert any("without asking a model" in note for note in result.notes)


def test_it_asks_the_endpoint_with_langchains_prompt(summary_endpoint: StubEndpoint) -> None:
    params = {"trigger_messages": 8, "keep_messages": 3}
    result = summarize({**params, "summarize_with": "endpoint", "summary_tokens": 200})
    assert result.inserted[0].message.content == (
        "Here is a summary of the conversation to date:\n\n" + summary_endpoint.text)
    [answer] = oracle([case(CANONICAL, "langchain_summarization", params, "messages")])
    [request] = summary_endpoint.requests
    assert request["body"]["messages"] == [{"role": "user", "content": answer["prompt"]}]
    assert request["body"]["max_tokens"] == 200
    assert any("stub-model" in note for note in result.notes)


# --- clearing -------------------------------------------------------------------------------------------------


def clear(params: dict[str, Any], messages: list[Message] = CANONICAL, counter: str = "messages") -> Any:
    return trim(messages, strategy_spec("langchain_clear_tool_uses", params), counter=counter)


def test_it_follows_the_references_clearing_examples() -> None:
    result = clear({"trigger": 5, "keep": 1})
    assert result.kept == list(range(10)) and not result.dropped
    assert any("langchain-ai/langchain#37815" in note for note in result.notes)  # cleared again every call
    assert [e.index for e in result.edited] == [3, 4]
    assert [result.messages[i].content for i in (3, 4, 8)] == ["[cleared]", "[cleared]", CANONICAL[8].content]
    result = clear({"trigger": 5, "keep": 1, "clear_tool_inputs": True})
    assert [e.index for e in result.edited] == [2, 3, 4]
    assert [tc.function.arguments for tc in result.messages[2].tool_calls] == ["{}", "{}"]
    assert "arguments cleared" in result.kept_reasons[2]
    assert not clear({"trigger": 9}).edited  # 9 messages in the view, and 9 is not more than 9
    assert [e.index for e in clear({"trigger": 9, "pin_system": False, "keep": 1}).edited] == [3, 4]  # 10 > 9


def test_it_leaves_a_result_whose_call_is_in_an_earlier_assistant_message() -> None:
    messages = parse_messages([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "f", "{}")]},
        {"role": "assistant", "content": None, "tool_calls": [call("c2", "g", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "assistant", "content": "done"},
    ])
    params = {"trigger": 0, "keep": 0}
    result = clear(params, messages)
    assert [e.index for e in result.edited] == [4]  # c1's result is never cleared
    assert any("sit in an earlier one" in note for note in result.notes)
    check_all([(messages, case(messages, "langchain_clear_tool_uses", params, "messages"))])


def test_it_stops_clearing_once_clear_at_least_is_reclaimed() -> None:
    params = {"trigger": 0, "keep": 0, "clear_at_least": 1}
    result = clear(params, counter="approx")
    assert [e.index for e in result.edited] == [3]
    assert "clear_at_least=1" in result.kept_reasons[4]
    check_all([(CANONICAL, case(CANONICAL, "langchain_clear_tool_uses", params, "approx"))])
