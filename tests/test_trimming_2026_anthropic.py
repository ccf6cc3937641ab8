"""Anthropic's context editing, from its documentation only: the documented examples as tests, and what the
documentation leaves open marked [unverified] in the result."""
from __future__ import annotations

import pytest

from agents.memory.schema import Message, parse_messages
from agents.memory.trimming import StrategyError, strategy_spec, trim
from tests.reference.canonical import CANONICAL, call

TOOLS = ["get_weather", "search_docs", "get_weather", "read_file", "get_weather"]


def five_uses() -> list[Message]:
    """u1…u5: one tool use per assistant message, u2 a search_docs call."""
    messages = [{"role": "system", "content": "You are an assistant."}, {"role": "user", "content": "Research."}]
    for k, name in enumerate(TOOLS, start=1):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call(f"u{k}", name, f'{{"q": "step {k}"}}')]},
            {"role": "tool", "tool_call_id": f"u{k}", "content": f"result {k} " + "data " * 20},
        ]
    messages.append({"role": "assistant", "content": "Done."})
    return parse_messages(messages)


RESULT = {k: 2 * k + 1 for k in range(1, 6)}  # input index of u_k's result
CALL = {k: 2 * k for k in range(1, 6)}


def clear(params: dict, messages: list[Message] | None = None, counter: str = "approx"):
    return trim(messages or five_uses(), strategy_spec("anthropic_clear_tool_uses", params), counter=counter)


def cleared_results(result) -> list[int]:
    return [k for k in range(1, 6) if result.messages[RESULT[k]].content == "[tool result cleared]"]


def test_it_clears_the_documented_example_of_five_tool_uses() -> None:
    params = {"trigger_tool_uses": 4, "keep_tool_uses": 2}
    result = clear(params)
    assert cleared_results(result) == [1, 2, 3]
    assert result.kept == list(range(13)) and not result.dropped  # messages stay, their results change
    assert [e.index for e in result.edited] == [RESULT[1], RESULT[2], RESULT[3]]
    assert "[unverified" in result.kept_reasons[RESULT[1]]
    assert result.notes[0].startswith("applied_edits: clear_tool_uses_20250919, cleared_tool_uses=3,")
    assert any("[unverified]" in note and "[tool result cleared]" in note for note in result.notes)
    assert result.tokens_after < result.tokens_before
    # u2's tool excluded: u1 and u3.
    assert cleared_results(clear({**params, "exclude_tools": ["search_docs"]})) == [1, 3]
    # Inputs too: the cleared uses' calls carry {}.
    with_inputs = clear({**params, "clear_tool_inputs": True})
    assert [with_inputs.messages[CALL[k]].tool_calls[0].function.arguments for k in range(1, 6)] == [
        "{}", "{}", "{}", '{"q": "step 4"}', '{"q": "step 5"}']
    # Or only some tools' inputs.
    some = clear({**params, "clear_tool_inputs": ["get_weather"]})
    assert [some.messages[CALL[k]].tool_calls[0].function.arguments == "{}" for k in range(1, 6)] == [
        True, False, True, False, False]


def test_it_applies_nothing_below_the_trigger_or_when_too_little_would_be_freed() -> None:
    assert not clear({"trigger_tool_uses": 5, "keep_tool_uses": 2}).edited  # 5 uses do not exceed 5
    assert not clear({}).edited  # 100,000 input tokens by default
    assert cleared_results(clear({"trigger_input_tokens": 0, "keep_tool_uses": 3})) == [1, 2]
    result = clear({"trigger_tool_uses": 4, "keep_tool_uses": 2, "clear_at_least": 10_000})
    assert not result.edited
    assert "less than clear_at_least=10,000, so the edit is not applied" in result.explanation()[3]["reason"]


def test_it_counts_each_parallel_call_as_a_tool_use() -> None:
    result = trim(CANONICAL, strategy_spec("anthropic_clear_tool_uses", {"trigger_tool_uses": 1, "keep_tool_uses": 1}),
                  counter="messages")
    assert [e.index for e in result.edited] == [3, 4]  # a and b cleared, c kept
    assert result.messages[8].content == CANONICAL[8].content
    assert strategy_spec("anthropic_clear_tool_uses", {}).params.pin_system is False  # the system prompt is input


def test_it_takes_true_false_or_a_list_of_tools_for_clear_tool_inputs() -> None:
    assert strategy_spec("anthropic_clear_tool_uses", {"clear_tool_inputs": "get_weather,read_file"}
                          ).params.clear_tool_inputs == ["get_weather", "read_file"]
    assert strategy_spec("anthropic_clear_tool_uses", {"clear_tool_inputs": True}).params.clear_tool_inputs is True
    with pytest.raises(StrategyError, match="clear_tool_inputs"):
        strategy_spec("anthropic_clear_tool_uses", {"clear_tool_inputs": 3})


# --- clear_thinking -------------------------------------------------------------------------------------------


def thinking_turns() -> list[Message]:
    def a(text: str, reasoning: str | None) -> Message:
        return Message(role="assistant", content=text, reasoning=reasoning)

    return [
        Message(role="user", content="one"), a("1", "think 1"),
        Message(role="user", content="two"), a("2", None),  # a turn without thinking
        Message(role="user", content="three"),
        Message(role="assistant", content=None, reasoning="think 3a", tool_calls=parse_messages([
            {"role": "assistant", "tool_calls": [call("t", "f", "{}")]}])[0].tool_calls),
        Message(role="tool", tool_call_id="t", content="r"),  # a tool result does not start a turn
        a("3", "think 3b"),
        Message(role="user", content="four"), a("4", "think 4"),
    ]


def test_it_keeps_only_the_last_thinking_turn_by_default() -> None:
    result = trim(thinking_turns(), strategy_spec("anthropic_clear_thinking", {}), counter="approx")
    assert [m.reasoning for m in result.messages] == [None, None, None, None, None, None, None, None, None, "think 4"]
    assert [e.index for e in result.edited] == [1, 5, 7]
    assert result.notes[0] == "applied_edits: clear_thinking_20251015, cleared_thinking_turns=2."
    assert any("[unverified]" in note for note in result.notes)
    assert result.kept == list(range(10))


def test_it_counts_only_turns_with_thinking_and_keeps_all_when_asked() -> None:
    two = trim(thinking_turns(), strategy_spec("anthropic_clear_thinking", {"keep_thinking_turns": 2}))
    # The turn without thinking does not count: turns three and four keep theirs. [unverified]
    assert [e.index for e in two.edited] == [1]
    assert not trim(thinking_turns(), strategy_spec("anthropic_clear_thinking", {"keep_thinking_turns": "all"})).edited
    with pytest.raises(StrategyError, match="keep_thinking_turns"):
        strategy_spec("anthropic_clear_thinking", {"keep_thinking_turns": 0})


def test_it_reads_one_tool_name_as_a_list_of_one() -> None:
    assert strategy_spec("anthropic_clear_tool_uses", {"clear_tool_inputs": "read_file", "exclude_tools": "f"}
                          ).params.model_dump(include={"clear_tool_inputs", "exclude_tools"}) == {
        "clear_tool_inputs": ["read_file"], "exclude_tools": ["f"]}
    assert strategy_spec("anthropic_clear_tool_uses", {"clear_tool_inputs": "false"}).params.clear_tool_inputs is False
    trimmer = strategy_spec("openai_tool_output_trimmer", {"trimmable_tools": "search"})
    assert trimmer.params.trimmable_tools == ["search"]
    assert strategy_spec("langchain_clear_tool_uses", {"exclude_tools": "a, b"}).params.exclude_tools == ["a", "b"]
