"""Strands' conversation managers against strands-agents 1.62.0 itself (the reference oracle), the reference's
worked examples and Strands' known bugs."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agents.memory.schema import Message, parse_messages
from agents.memory.trimming import strategy_spec, trim
from tests.reference.canonical import CANONICAL, call
from tests.reference.conversations import conversations, counters, long_texts
from tests.reference.harness import case, check_all, collect, oracle


@st.composite
def window_cases(draw: st.DrawFn, *, overflow: bool | None = None) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations)
    if overflow:  # long results, mostly: the truncation path
        messages = [m.model_copy(update={"content": draw(long_texts()) + "y" * draw(st.integers(0, 500))})
                    if m.role == "tool" and draw(st.integers(0, 3)) else m for m in messages]
    params = {
        "pin_system": draw(st.booleans()),
        "window_size": draw(st.integers(0, max(1, len(messages)))),
        "pin_first": draw(st.one_of(st.none(), st.integers(0, 4))),
        "should_truncate_results": draw(st.booleans()),
        "context_overflow": overflow if overflow is not None else draw(st.booleans()),
    }
    return messages, case(messages, "strands_sliding_window", params, draw(counters()))


def test_it_keeps_what_strands_sliding_window_keeps() -> None:
    pairs = check_all(collect(window_cases(), 250) + collect(window_cases(overflow=True), 150))
    assert sum(1 for r, _ in pairs if r.dropped) > 80
    assert sum(1 for r, _ in pairs if r.edited) > 5  # truncated results (21 of the fixed 400)
    assert sum(1 for _, a in pairs if a["error"]) > 5


@st.composite
def summarizing_cases(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations)
    params = {
        "pin_system": draw(st.booleans()),
        "summary_ratio": draw(st.floats(0.0, 1.0)),
        "preserve_recent_messages": draw(st.integers(0, 8)),
        "pin_first": draw(st.one_of(st.none(), st.integers(0, 4))),
    }
    return messages, case(messages, "strands_summarizing", params, draw(counters()))


def test_it_summarizes_what_strands_summarizing_manager_summarizes() -> None:
    cases = collect(summarizing_cases(), 300)
    pairs = check_all(cases)
    assert sum(1 for r, _ in pairs if r.inserted) > 80
    for (messages, c), (result, answer) in zip(cases, pairs, strict=False):
        if result.inserted:  # the summarizer is sent exactly the messages the summary stands for
            offset = len(messages) - len(c["messages"])
            assert [i - offset for i in result.inserted[0].summarizes] == answer["summarized"]


def test_it_follows_the_references_sliding_window_examples() -> None:
    window = lambda **p: trim(CANONICAL, strategy_spec("strands_sliding_window", p),  # noqa: E731
                              counter="messages").sources
    assert window(window_size=3) == [0, 7, 8, 9]  # no user message in the last 3: the pair at 7
    fallback = trim(CANONICAL, strategy_spec("strands_sliding_window", {"window_size": 3}), counter="messages")
    assert any("strands-agents/harness-sdk#1749" in note for note in fallback.notes)  # starts on a tool call
    assert window(window_size=4) == window(window_size=5) == window(window_size=6) == [0, 6, 7, 8, 9]
    assert window(window_size=3, pin_first=1) == [0, 1, 7, 8, 9]
    stays = trim(CANONICAL, strategy_spec("strands_sliding_window", {"window_size": 2}), counter="messages")
    assert stays.sources == list(range(10))
    assert any("unable to trim conversation context" in note for note in stays.notes)
    check_all([(CANONICAL, case(CANONICAL, "strands_sliding_window", {"window_size": w, "pin_first": pf}, "messages"))
               for w, pf in ((2, None), (3, None), (4, None), (6, None), (3, 1))])


def results_conversation(*texts: str) -> list[Message]:
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for k, text in enumerate(texts):
        messages += [{"role": "assistant", "content": None, "tool_calls": [call(f"c{k}", "read_file", "{}")]},
                     {"role": "tool", "tool_call_id": f"c{k}", "content": text}]
    messages.append({"role": "assistant", "content": "done"})
    return parse_messages(messages)


def test_it_truncates_the_oldest_results_on_a_context_overflow() -> None:
    messages = results_conversation("a" * 1000, "b" * 1000)
    params = {"window_size": 40, "context_overflow": True}
    result = trim(messages, strategy_spec("strands_sliding_window", params), counter="approx")
    assert [e.index for e in result.edited] == [2]  # only the oldest message with results
    text = result.messages[2].content
    assert text == "a" * 200 + "...\n\n... [truncated: 600 chars removed] ...\n\n..." + "a" * 200
    check_all([(messages, case(messages, "strands_sliding_window", params, "approx"))])


def test_it_reproduces_strands_trying_only_the_oldest_result() -> None:
    # strands-agents/harness-sdk#4341: a small oldest result sends the reduction straight to removing messages.
    messages = results_conversation("small", "b" * 1000)
    params = {"window_size": 40, "context_overflow": True}
    result = trim(messages, strategy_spec("strands_sliding_window", params), counter="messages")
    assert not result.edited and result.dropped
    assert any("strands-agents/harness-sdk#4341" in note for note in result.notes)
    check_all([(messages, case(messages, "strands_sliding_window", params, "messages"))])


def test_it_makes_a_result_of_401_to_446_characters_longer() -> None:
    messages = results_conversation("x" * 420)
    result = trim(messages, strategy_spec("strands_sliding_window", {"context_overflow": True}), counter="approx")
    assert len(result.messages[2].content) > 420
    assert any("longer" in note for note in result.notes)


def test_it_quotes_strands_error_when_nothing_can_be_removed() -> None:
    messages = parse_messages([{"role": "assistant", "content": "hello"}, {"role": "assistant", "content": "again"}])
    params = {"window_size": 1, "context_overflow": True}
    result = trim(messages, strategy_spec("strands_sliding_window", params), counter="messages")
    assert result.kept == [0, 1] and any("Unable to trim conversation context!" in n for n in result.notes)
    [answer] = oracle([case(messages, "strands_sliding_window", params, "messages")])
    assert answer["error"] == "Unable to trim conversation context!"


def test_it_follows_the_references_summarizing_examples() -> None:
    summarize = lambda **p: trim(CANONICAL, strategy_spec("strands_summarizing", p), counter="messages")  # noqa: E731
    result = summarize(summary_ratio=0.3, preserve_recent_messages=2)
    assert result.sources == [0, None, 5, 6, 7, 8, 9]
    assert result.inserted[0].message.role == "user"
    assert result.inserted[0].message.content == "[summary of 4 messages]"
    assert any("The split moved from 2 to 3" in note for note in result.notes)  # past the tool pair
    half = summarize(summary_ratio=0.5, preserve_recent_messages=2)
    assert half.sources == [0, None, 6, 7, 8, 9]
    assert any("two user messages in a row" in note for note in half.notes)
    refused = summarize()
    assert refused.kept == list(range(10)) and not refused.inserted
    assert any("Cannot summarize: insufficient messages for summarization" in n for n in refused.notes)
    check_all([(CANONICAL, case(CANONICAL, "strands_summarizing", p, "messages")) for p in (
        {"summary_ratio": 0.3, "preserve_recent_messages": 2}, {"summary_ratio": 0.5, "preserve_recent_messages": 2},
        {})])
