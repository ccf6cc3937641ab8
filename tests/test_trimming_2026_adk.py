"""Google ADK's sliding-window compaction against google-adk 2.13.0 itself (the reference oracle replays the
session invocation by invocation through ADK's own compaction), and the reference's examples."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agents.memory.schema import Message, parse_messages
from agents.memory.trimming import strategy_spec, trim
from tests.reference.canonical import CANONICAL, CANONICAL_DICTS
from tests.reference.conversations import conversations, counters
from tests.reference.harness import case, check_all, collect
from tests.summary_stub import StubEndpoint


@st.composite
def adk_cases(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any]]:
    messages = draw(conversations)
    params = {"pin_system": draw(st.booleans()), "compaction_interval": draw(st.integers(1, 4)),
              "overlap_size": draw(st.integers(0, 3))}
    return messages, case(messages, "adk_compaction", params, draw(counters()))


def test_it_compacts_what_adk_compacts() -> None:
    pairs = check_all(collect(adk_cases(), 300))
    assert sum(1 for r, _ in pairs if r.inserted) > 100
    assert sum(1 for r, _ in pairs if len(r.inserted) > 1) > 20  # several summaries kept


def test_it_follows_the_references_examples() -> None:
    compact = lambda a, b: trim(CANONICAL, strategy_spec("adk_compaction",  # noqa: E731
                                {"compaction_interval": a, "overlap_size": b}), counter="messages")
    one = compact(1, 0)
    assert one.sources == [0, None, None]
    assert [x.message.content for x in one.inserted] == ["[summary of 5 messages]", "[summary of 4 messages]"]
    assert all(x.message.role == "assistant" for x in one.inserted)
    both = compact(1, 1)
    assert both.sources == [0, None] and both.inserted[0].message.content == "[summary of 9 messages]"
    assert any("contained in a later one" in note for note in both.notes)
    assert compact(2, 0).sources == [0, None]
    assert compact(3, 1).sources == list(range(10))  # two invocations never reach 3
    check_all([(CANONICAL, case(CANONICAL, "adk_compaction", {"compaction_interval": a, "overlap_size": b},
                                "messages")) for a, b in ((1, 0), (1, 1), (2, 0), (3, 1))])


def test_it_keeps_the_docs_overlapping_summaries() -> None:
    # The docs' example, compaction_interval=3 and overlap_size=1: summaries after invocations 3, 6 and 9 covering
    # 1-3, 3-6 and 6-9, and all three stay (the overlapped invocations reach the model twice).
    turns: list[dict] = [CANONICAL_DICTS[0]]
    for k in range(1, 10):
        turns += [{"role": "user", "content": f"question {k} " + "word " * 30},
                  {"role": "assistant", "content": f"answer {k} " + "word " * 30}]
    messages = parse_messages(turns)
    result = trim(messages, strategy_spec("adk_compaction", {}), counter="approx")
    assert [x.summarizes for x in result.inserted] == [tuple(range(1, 7)), tuple(range(5, 13)), tuple(range(11, 19))]
    assert result.sources == [0, None, None, None]
    assert any("reach the model twice" in note for note in result.notes)
    check_all([(messages, case(messages, "adk_compaction", {}, "approx"))])


def test_it_asks_the_endpoint_with_adks_summarizer_prompt(summary_endpoint: StubEndpoint) -> None:
    cases = collect(adk_cases(), 40)
    pairs = check_all(cases)
    asked = 0
    for (messages, c), (_, answer) in zip(cases, pairs, strict=False):
        if not answer["prompts"]:
            continue
        summary_endpoint.requests.clear()
        trim(messages, strategy_spec("adk_compaction", {**c["params"], "summarize_with": "endpoint"}),
             counter=c["counter"])
        # A real summary has another size than the placeholder, so later windows may differ: the first matches.
        assert summary_endpoint.requests[0]["body"]["messages"] == [{"role": "user", "content": answer["prompts"][0]}]
        asked += 1
    assert asked > 5


def test_it_compacts_past_a_call_nothing_answers() -> None:
    # google/adk-python#7236: an unanswered call blocked every later compaction; ADK 2.13's second pass ignores a
    # call that nothing in the session answers once it is not in the newest invocation.
    messages = parse_messages([
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "lost", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "assistant", "content": "The search never answered; going on. " + "x" * 60},
        {"role": "user", "content": "second " + "y" * 60}, {"role": "assistant", "content": "two " + "z" * 60},
        {"role": "user", "content": "third " + "y" * 60}, {"role": "assistant", "content": "three " + "z" * 60},
    ])
    params = {"compaction_interval": 2, "overlap_size": 0}
    result = trim(messages, strategy_spec("adk_compaction", params), counter="approx")
    assert 1 in result.inserted[0].summarizes  # the dead call is summarized, not a block
    check_all([(messages, case(messages, "adk_compaction", params, "approx"))])
