"""Trimming strategies on the worked examples of reference/trimming.md, and the registry's contract.

The frameworks too heavy to install (Semantic Kernel, LlamaIndex, OpenManus, the Agents cookbook) are checked
against the results the reference records from running them; AutoGen and LangChain also have
test_trimming_reference.py, which runs the real libraries.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory.schema import FunctionCall, Message, ToolCall
from agents.memory.tokens import COUNTERS, cl100k_encoding, count_messages, get_counter, register_counter
from agents.memory.trimming import (
    STRATEGIES,
    LlamaIndexContentCount,
    StrategyError,
    get_strategy,
    strategy_spec,
    trim,
)

DESIGN_TABLE = {  # name: (pin_system default, parameters besides pin_system)
    "unbounded": (False, set()),
    "openmanus_window": (True, {"max_messages"}),
    "buffered": (True, {"buffer_size"}),
    "head_and_tail": (True, {"head_size", "tail_size"}),
    "token_limited": (True, {"token_limit"}),
    "langchain_last": (False, {"max_tokens", "include_system", "start_on", "end_on"}),
    "langchain_first": (False, {"max_tokens", "end_on"}),
    "safe_window": (False, {"max_messages"}),
    "last_turns": (True, {"max_turns"}),
    "sk_truncation": (False, {"target_count", "threshold_count"}),
    "llamaindex_buffer": (True, {"token_limit"}),
    "safe_token_budget": (True, {"max_tokens"}),
    "clear_non_system": (False, set()),
    "strip_thoughts": (False, set()),
}
SUMMARY_PARAMS = {"summarize_with", "summary_tokens"}
TABLE_2026 = {  # reference/trimming-2026.md, issue 14
    "langchain_summarization": (True, {"trigger_tokens", "trigger_messages", "trigger_all", "keep_messages",
                                       "keep_tokens", "trim_tokens_to_summarize"} | SUMMARY_PARAMS),
    "langchain_clear_tool_uses": (True, {"trigger", "clear_at_least", "keep", "clear_tool_inputs", "exclude_tools",
                                         "placeholder"}),
    "openai_session_limit": (True, {"limit"}),
    "openai_tool_output_trimmer": (True, {"recent_turns", "max_output_chars", "preview_chars", "trimmable_tools"}),
    "anthropic_clear_tool_uses": (False, {"trigger_input_tokens", "trigger_tool_uses", "keep_tool_uses",
                                          "clear_at_least", "exclude_tools", "clear_tool_inputs"}),
    "anthropic_clear_thinking": (False, {"keep_thinking_turns"}),
    "strands_sliding_window": (True, {"window_size", "pin_first", "should_truncate_results", "context_overflow"}),
    "strands_summarizing": (True, {"summary_ratio", "preserve_recent_messages", "pin_first"} | SUMMARY_PARAMS),
    "maf_sliding_window": (False, {"keep_last_groups", "preserve_system"}),
    "maf_truncation": (False, {"max_n", "compact_to", "count_tokens", "preserve_system", "preserve_first_user_group"}),
    "maf_selective_tool_calls": (False, {"keep_last_tool_call_groups"}),
    "maf_tool_result_compaction": (False, {"keep_last_tool_call_groups"}),
    "maf_summarization": (False, {"target_count", "threshold", "max_summary_input_tokens"} | SUMMARY_PARAMS),
    "adk_compaction": (True, {"compaction_interval", "overlap_size"} | SUMMARY_PARAMS),
}


def S(text: str = "You are a travel assistant.") -> Message:
    return Message(role="system", content=text)


def U(text: str = "question") -> Message:
    return Message(role="user", content=text)


def A(text: str | None = "answer", *calls: str) -> Message:
    return Message(role="assistant", content=text, tool_calls=[
        ToolCall(id=c, function=FunctionCall(name="get_weather", arguments='{"city": "Paris"}')) for c in calls
    ])


def T(call_id: str, text: str = "18°C") -> Message:
    return Message(role="tool", tool_call_id=call_id, content=text)


# The canonical conversation of reference/trimming.md: system, user, two parallel calls, their results, answer.
CANONICAL = [S(), U(), A(None, "call_1", "call_2"), T("call_1"), T("call_2"), A("Paris 18°C, Tokyo 24°C.")]


def roles(result: Any) -> list[str]:
    return [m.role for m in result.messages]


# --- registry -----------------------------------------------------------------------------------------------


def test_it_registers_every_strategy_of_the_design_table_with_its_pin_default() -> None:
    assert list(STRATEGIES) == [*DESIGN_TABLE, *TABLE_2026]  # the design table's order, then 2026's
    for name, (pin, params) in {**DESIGN_TABLE, **TABLE_2026}.items():
        strategy = get_strategy(name)
        assert strategy.pin_system is pin, name
        assert set(strategy.params_model.model_fields) == params | {"pin_system"}, name
        assert strategy.description and "\n" not in strategy.description
        assert strategy.emulates
        for row in strategy.parameters():
            assert row["help"], (name, row["name"])


def test_it_rejects_an_unknown_strategy_listing_the_valid_ones() -> None:
    with pytest.raises(StrategyError) as err:
        trim(CANONICAL, strategy_spec("newest_five"))
    assert "unknown strategy 'newest_five'" in str(err.value)
    assert "safe_token_budget" in str(err.value) and "buffered" in str(err.value)


@pytest.mark.parametrize(
    ("strategy", "params", "says"),
    [
        ("buffered", {"buffer_size": 0}, "buffer_size=0: buffer_size must be greater than 0"),
        ("buffered", {"buffer": 3}, "unknown parameter 'buffer'"),
        ("head_and_tail", {"head_size": -1}, "head_size=-1"),
        ("langchain_first", {"start_on": "human"}, "unknown parameter 'start_on'"),
        ("langchain_last", {"start_on": "user"}, "start_on"),
        ("sk_truncation", {"threshold_count": -1}, "threshold_count=-1"),
        ("token_limited", {"token_limit": "lots"}, "token_limit=\"lots\""),
    ],
)
def test_it_rejects_invalid_parameters_listing_the_valid_ones(strategy: str, params: dict, says: str) -> None:
    with pytest.raises(StrategyError) as err:
        trim(CANONICAL, strategy_spec(strategy, params))
    text = str(err.value)
    assert says in text
    assert "Valid parameters:" in text and "pin_system (boolean" in text


@pytest.mark.parametrize(
    "written",
    ["human,ai", " human , ai ", ["human", "ai"], ["human,ai"], ["human", "ai,"], ("human", "ai")],
)
def test_it_reads_a_list_parameter_however_it_is_written(written: Any) -> None:
    resolved = strategy_spec("langchain_last", {"start_on": written, "end_on": written}).params
    assert resolved.start_on == ["human", "ai"] and resolved.end_on == ["human", "ai"]


def test_it_keeps_one_choice_of_a_list_parameter_as_one_choice() -> None:
    assert strategy_spec("langchain_first", {"end_on": "ai"}).params.end_on == "ai"


def test_it_names_a_bad_item_of_a_comma_separated_list() -> None:
    with pytest.raises(StrategyError, match=r'end_on="human,bob": end_on must be one of'):
        strategy_spec("langchain_last", {"end_on": "human,bob"})


def test_it_tells_how_to_write_a_list_in_the_parameter_help() -> None:
    for name in ("langchain_last", "langchain_first"):
        rows = {r["name"]: r["help"] for r in get_strategy(name).parameters()}
        assert "human,ai" in rows["end_on"] and '["human", "ai"]' in rows["end_on"]


def test_it_resolves_parameters_with_their_defaults() -> None:
    result = trim(CANONICAL, strategy_spec("safe_window", {"max_messages": 3}))
    assert result.params == {"pin_system": False, "max_messages": 3}
    assert trim(CANONICAL, strategy_spec("langchain_last")).params["include_system"] is False


def test_it_never_recounts_text_when_stored_counts_are_given() -> None:
    # Made-up counts that no counter would produce: the result must follow them.
    counts = [1, 1, 1, 1, 1, 100]
    result = trim(CANONICAL, strategy_spec("langchain_last", {"max_tokens": 10}), counter="cl100k", token_counts=counts)
    assert result.tokens_before == sum(counts) + 3
    assert result.kept == []
    assert trim(CANONICAL, strategy_spec("langchain_first", {"max_tokens": 10}),
                token_counts=counts).kept == [0, 1, 2, 3, 4]


# --- AutoGen (the reference's verified cases) ---------------------------------------------------------------


def test_it_keeps_autogen_buffered_windows_as_the_reference_shows() -> None:
    result = trim(CANONICAL, strategy_spec("buffered", {"buffer_size": 3, "pin_system": False}))
    # [AssistantMessage(tool_calls), FERM, AssistantMessage]: no user message left.
    assert result.kept == [2, 3, 4, 5]
    assert result.dropped[0].reason == "outside the last 3 messages of AutoGen's buffer"
    assert any("9 AutoGen" not in n and "5 AutoGen messages" in n for n in result.notes)


def test_it_removes_one_leading_tool_result_and_says_why() -> None:
    result = trim(CANONICAL, strategy_spec("buffered", {"buffer_size": 2, "pin_system": False}))
    assert result.kept == [5]
    assert {d.index: d.reason for d in result.dropped}[3].startswith(
        "leading tool result removed, as AutoGen removes one"
    )


def test_it_returns_autogens_empty_context_when_the_buffer_holds_only_a_tool_result() -> None:
    result = trim(CANONICAL[:5], strategy_spec("buffered", {"buffer_size": 1}))
    assert result.kept == [0]  # only the pinned system prompt: AutoGen's view is []
    assert any("empty context" in n for n in result.notes)


@pytest.mark.parametrize(
    ("head", "tail", "kept", "placeholder", "omitted"),
    [(1, 2, [0, 5], "Skipped 2 messages.", 3), (2, 2, [0, 1, 5], "Skipped 1 messages.", 2),
     (3, 1, [0, 1, 5], "Skipped 1 messages.", 2)],  # (3, 1): the head's trailing call goes too
)
def test_it_reproduces_autogens_head_and_tail_placeholder_undercount(
    head: int, tail: int, kept: list[int], placeholder: str, omitted: int
) -> None:
    params = {"head_size": head, "tail_size": tail, "pin_system": False}
    result = trim(CANONICAL, strategy_spec("head_and_tail", params))
    assert result.kept == kept
    [inserted] = result.inserted
    assert inserted.message.content == placeholder and inserted.message.name == "System"
    assert result.messages[inserted.position] == inserted.message
    assert inserted.position == len(kept) - 1  # after the head, before the one message of the tail
    assert any(f"{omitted} AutoGen messages were left out" in n and "#8070" in n for n in result.notes)


def test_it_returns_the_whole_history_when_head_and_tail_overlap() -> None:
    result = trim(CANONICAL, strategy_spec("head_and_tail", {"head_size": 3, "tail_size": 3, "pin_system": False}))
    assert result.kept == list(range(6)) and not result.inserted


# AutoGen's counts for the canonical history: 145 in all, the tool-call message alone 82 (reference §2.1).
AUTOGEN_COUNTS = [10, 10, 82, 10, 10, 20]


@pytest.mark.parametrize(
    ("limit", "kept"),
    [(200, [0, 1, 2, 3, 4, 5]), (120, [0, 1, 3, 4, 5]), (60, [0, 1, 5]), (40, [0, 5]), (20, [0]), (1, [])],
)
def test_it_pops_the_middle_like_autogens_token_limited_context(limit: int, kept: list[int]) -> None:
    result = trim(CANONICAL, strategy_spec("token_limited", {"token_limit": limit, "pin_system": False}),
                  counter="approx",
                  token_counts=AUTOGEN_COUNTS)
    assert result.tokens_before == 145
    assert result.kept == kept
    if limit == 120:
        # The call was popped, its results stay in the middle: AutoGen's orphan (microsoft/autogen#7955).
        assert any("#7955" in n for n in result.notes)
        assert {v.kind for v in result.violations} == {"orphan_tool_result"}
        assert all("removed from the middle to fit 120 tokens" in d.reason for d in result.dropped)
    if limit == 1:
        assert any("empty context" in n for n in result.notes)


def test_it_says_when_autogen_keeps_a_call_whose_results_it_popped() -> None:
    # With the system prompt pinned, AutoGen holds [U, A(call), FERM, A] and pops index 2: the results.
    result = trim(CANONICAL, strategy_spec("token_limited", {"token_limit": 50}), counter="approx",
                  token_counts=[10, 10, 10, 30, 30, 10])
    assert result.kept == [0, 1, 2, 5]
    assert any("kept the tool call (message 2)" in n for n in result.notes)
    assert {v.kind for v in result.violations} == {"unanswered_tool_call"}


def test_it_does_not_count_the_pinned_system_prompt_against_autogens_budget() -> None:
    counts = [1000, 10, 82, 10, 10, 20]
    result = trim(CANONICAL, strategy_spec("token_limited", {"token_limit": 140}),
                  counter="approx", token_counts=counts)
    assert result.kept == [0, 1, 2, 3, 4, 5]
    assert result.explanation()[0]["reason"].startswith("pinned system message")


# --- LangChain ----------------------------------------------------------------------------------------------


def test_it_always_keeps_the_system_message_with_include_system() -> None:
    result = trim(CANONICAL, strategy_spec("langchain_last", {"max_tokens": 5, "include_system": True}),
                  counter="cl100k")
    assert result.kept == [0]
    assert any("include_system keeps the system message" in n for n in result.notes)


def test_it_ends_langchain_first_on_a_call_whose_results_were_cut() -> None:
    result = trim(CANONICAL, strategy_spec("langchain_first", {"max_tokens": 3}), counter="messages")
    assert result.kept == [0, 1, 2]
    assert any("tool call at the end" in n for n in result.notes)
    assert {v.kind for v in result.violations} == {"pending_tool_call"}
    assert all(v.severity == "error" for v in result.violations)  # sent as is, it fails
    partial = trim(CANONICAL, strategy_spec("langchain_first", {"max_tokens": 4, "end_on": ["human", "tool"]}),
                   counter="messages")
    assert partial.kept == [0, 1, 2, 3]  # ends on a tool message, but call_2 has no result
    assert {v.kind for v in partial.violations} == {"pending_tool_call"}


# --- OpenManus ----------------------------------------------------------------------------------------------

OPENMANUS = [U(), A(None, "c1", "c2"), T("c1"), T("c2"), A()]


@pytest.mark.parametrize(("size", "kept"), [(2, [3, 4]), (3, [2, 3, 4]), (0, [0, 1, 2, 3, 4]), (100, [0, 1, 2, 3, 4])])
def test_it_slices_like_openmanus_memory(size: int, kept: list[int]) -> None:
    result = trim(OPENMANUS, strategy_spec("openmanus_window", {"max_messages": size}))
    assert result.kept == kept
    if size in (2, 3):
        assert any("OpenManus#23" in n for n in result.notes)
        assert result.violations[0].kind == "leading_tool_result"
        assert result.dropped[0].reason == f"outside the last {size} messages (OpenManus keeps messages[-{size}:])"


# --- Semantic Kernel: the reference's 11-message table ------------------------------------------------------

SK_HISTORY = [S(), U("Q0"), A(None, "a1", "a2"), T("a1"), T("a2"), A("A0"), U("Q1"), A(None, "b1", "b2"),
              T("b1"), T("b2"), A("A1")]


@pytest.mark.parametrize(
    ("target", "threshold", "kept"),
    [
        (1, 0, [0]),
        (2, 0, [0, 10]),
        (3, 0, [0, 7, 8, 9, 10]),
        (4, 0, [0, 7, 8, 9, 10]),
        (5, 0, [0, 7, 8, 9, 10]),
        (6, 0, [0, 6, 7, 8, 9, 10]),
        (7, 0, [0, 5, 6, 7, 8, 9, 10]),
        (2, 3, [0, 10]),
        (11, 0, list(range(11))),
        (6, 5, list(range(11))),
    ],
)
def test_it_truncates_like_semantic_kernel(target: int, threshold: int, kept: list[int]) -> None:
    result = trim(SK_HISTORY, strategy_spec("sk_truncation", {"target_count": target, "threshold_count": threshold}))
    assert result.kept == kept
    if target == 1:
        assert any("keeps only the system message" in n for n in result.notes)
    if target in (3, 4):
        assert any("walks back so that tool calls stay with their results" in n for n in result.notes)
    if target == 7:
        assert any("starts with an assistant message" in n for n in result.notes)
    if len(kept) < 11:
        assert result.explanation()[0]["reason"] == "the first system message, which Semantic Kernel always keeps"


# --- LlamaIndex ---------------------------------------------------------------------------------------------


def llama_tokens(messages: list[Message]) -> int:
    texts = ["None" if m.content is None else m.text for m in messages]
    return len(cl100k_encoding().encode(" ".join(texts), allowed_special="all"))


def test_it_counts_content_only_as_llamaindex_does() -> None:
    count = LlamaIndexContentCount(["None" if m.content is None else m.text for m in CANONICAL])
    for start in range(len(CANONICAL)):
        assert count.window(start) == llama_tokens(CANONICAL[start:])


AWKWARD = ["", " ", "  ", "\n", "a\n", "  x  ", "x ", " x", "123", "'s", "<|endoftext|>", "<|endoftext|> x", "\n\n",
           "end.\n\n", "\t", "\u3000", "\x1c", "é", "🙂 "]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), st.sampled_from(AWKWARD)), min_size=1, max_size=8))
def test_it_counts_llamaindex_joined_contents_exactly_from_pieces(texts: list[str]) -> None:
    messages = [U(t) for t in texts]
    count = LlamaIndexContentCount(texts)
    for start in range(len(texts)):
        assert count.window(start) == llama_tokens(messages[start:])


def test_it_keeps_llamaindex_windows_that_never_start_on_an_assistant_or_tool_message() -> None:
    history = CANONICAL
    whole = llama_tokens(history)
    result = trim(history, strategy_spec("llamaindex_buffer", {"token_limit": whole, "pin_system": False}))
    assert result.kept == list(range(6))
    # Just below the whole: the system goes, then the window skips the assistant and tools down to the answer.
    result = trim(history, strategy_spec("llamaindex_buffer", {"token_limit": whole - 1, "pin_system": False}))
    window = llama_tokens(history[1:])
    assert result.kept == ([1, 2, 3, 4, 5] if window <= whole - 1 else [5])
    params = {"token_limit": llama_tokens(history[1:]) - 1, "pin_system": False}
    result = trim(history, strategy_spec("llamaindex_buffer", params))
    assert result.kept == [5]
    assert "LlamaIndex skips those" in {d.index: d.reason for d in result.dropped}[2]


def test_it_returns_the_last_message_alone_when_nothing_fits_llamaindex() -> None:
    result = trim(CANONICAL, strategy_spec("llamaindex_buffer", {"token_limit": 1}))
    assert result.kept == [0, 5]
    assert any("returns the last message alone" in n for n in result.notes)
    lone_tool = trim(CANONICAL[:5], strategy_spec("llamaindex_buffer", {"token_limit": 1}))
    assert lone_tool.kept == [0, 4]
    assert lone_tool.violations[0].kind == "leading_tool_result"


# --- the seed article, the cookbook, strip_thoughts -----------------------------------------------------------


def test_it_drops_the_oldest_non_system_message_with_the_tool_messages_after_it() -> None:
    result = trim(SK_HISTORY, strategy_spec("safe_window", {"max_messages": 6}))
    # Q0 goes (10 left), then the call with its two results (7 left), then A0 (6).
    assert result.kept == [0, 6, 7, 8, 9, 10]
    reasons = {d.index: d.reason for d in result.dropped}
    assert reasons[1] == reasons[2] == reasons[3] == (
        "oldest non-system messages dropped to keep at most 6 messages "
        "(the tool messages right after a dropped message go with it)"
    )
    assert not result.violations
    assert trim(SK_HISTORY, strategy_spec("safe_window", {"max_messages": 5})).kept == [0, 7, 8, 9, 10]
    assert trim(SK_HISTORY, strategy_spec("safe_window", {"max_messages": 4})).kept == [0, 10]


def test_it_keeps_the_last_user_turns_whole() -> None:
    assert trim(SK_HISTORY, strategy_spec("last_turns", {"max_turns": 1})).kept == [0, 6, 7, 8, 9, 10]
    assert trim(SK_HISTORY, strategy_spec("last_turns", {"max_turns": 2})).kept == list(range(11))
    unpinned = trim(SK_HISTORY, strategy_spec("last_turns", {"max_turns": 1, "pin_system": False}))
    assert unpinned.kept == [6, 7, 8, 9, 10]
    assert {d.index: d.reason for d in unpinned.dropped}[0] == "before the last 1 user turn"


def test_it_clears_everything_but_system_messages() -> None:
    result = trim([*SK_HISTORY, Message(role="developer", content="be brief")], strategy_spec("clear_non_system"))
    assert result.kept == [0, 11]
    assert result.dropped[0].reason == "/clear keeps only system messages"


def test_it_strips_thoughts_as_autogens_reasoning_example_does() -> None:
    history = [U(), A("checking", "c1").model_copy(update={"reasoning": "think"}), T("c1"),
               A("done").model_copy(update={"reasoning": "more thinking"})]
    result = trim(history, strategy_spec("strip_thoughts"))
    assert result.kept == [0, 1, 2, 3]
    assert [m.reasoning for m in result.messages] == [None] * 4
    assert result.messages[1].content is None  # AutoGen keeps the text sent with calls as the thought
    assert result.messages[3].content == "done"
    assert history[1].reasoning == "think"  # a view: the input is untouched
    assert "removed reasoning" in result.explanation()[3]["reason"]
    assert result.tokens_after < result.tokens_before


def test_it_marks_messages_sent_changed_as_edited() -> None:
    history = [U(), A("checking", "c1").model_copy(update={"reasoning": "think"}), T("c1"), A("done")]
    result = trim(history, strategy_spec("strip_thoughts"), counter="approx")
    assert [e.index for e in result.edited] == [1]
    assert result.edited[0].reason == result.kept_reasons[1]
    assert [row["status"] for row in result.explanation()] == ["kept", "edited", "kept", "kept"]
    data = result.to_dict()
    assert data["edited"] == [{"index": 1, "reason": result.kept_reasons[1]}]
    assert data["kept"] == [0, 1, 2, 3]  # an edited message is still sent: DESIGN.md's kept keeps it
    assert result.to_compact_dict()["edited"] == data["edited"]
    # The edited message is recounted: what is sent costs less than what is stored.
    assert result.tokens_after < result.tokens_before


# --- safe_token_budget --------------------------------------------------------------------------------------


def test_it_drops_whole_tool_exchanges_oldest_first() -> None:
    counts = count_messages(SK_HISTORY, "cl100k")
    need = counts[0] + sum(counts[6:]) + 3
    result = trim(SK_HISTORY, strategy_spec("safe_token_budget", {"max_tokens": need}), token_counts=counts)
    assert result.kept == [0, 6, 7, 8, 9, 10]
    assert result.tokens_after == need and not result.budget_exceeded
    reasons = {d.index: d.reason for d in result.dropped}
    assert reasons[2] == reasons[3] == (
        f"oldest whole units dropped to fit {need:,} tokens (a tool exchange goes with its results)"
    )
    assert not result.violations


def test_it_keeps_the_newest_user_message_and_newest_unit_and_says_the_budget_is_exceeded() -> None:
    result = trim(SK_HISTORY, strategy_spec("safe_token_budget", {"max_tokens": 5}))
    # The pinned system message, the newest user message (6) and the newest unit after it (10, the answer):
    # the tool exchange between them is dropped like any older unit.
    assert result.kept == [0, 6, 10]
    assert result.budget_exceeded
    (note,) = [n for n in result.notes if "Budget exceeded" in n]
    assert "the newest user message (message 6) and the newest assistant message after it (message 10)" in note
    reasons = {d.index: d.reason for d in result.dropped}
    assert reasons[7] == (
        "oldest steps of the newest turn dropped to fit 5 tokens (a tool exchange goes with its results)"
    )
    assert result.to_dict()["budget_exceeded"] is True
    assert not result.violations


def _agent_loop(steps: int, result_text: str = "r" * 400) -> list[Message]:
    """One user message, then an agent working alone: call, result, call, result, ..., a final answer."""
    out = [S(), U("Plan my trip")]
    for k in range(steps):
        out += [A(None, f"c{k}"), T(f"c{k}", result_text)]
    return out + [A("Here is your plan.")]


def test_it_drops_the_oldest_steps_of_a_single_turn_agent_loop_to_fit() -> None:
    history = _agent_loop(50)  # 0 system, 1 user, 2..101 call/result pairs, 102 answer
    counts = count_messages(history, "approx")
    # Budget for: system, user, the last 3 exchanges and the answer, plus reply priming.
    need = counts[0] + counts[1] + sum(counts[96:]) + 3
    result = trim(history, strategy_spec("safe_token_budget", {"max_tokens": need}),
                  counter="approx", token_counts=counts)
    assert result.kept == [0, 1, 96, 97, 98, 99, 100, 101, 102]
    assert result.tokens_after == need and not result.budget_exceeded
    assert not result.violations and result.notes == []
    reasons = {d.index: d.reason for d in result.dropped}
    assert reasons[2] == reasons[3] == (
        f"oldest steps of the newest turn dropped to fit {need:,} tokens (a tool exchange goes with its results)"
    )
    # However long the loop, its dropped messages make one run.
    assert result.dropped_runs() == [{"from": 2, "to": 95, "reason": reasons[2]}]
    assert result.explanation()[1]["reason"] == "the newest user message: always kept"
    # One token less and the oldest kept exchange goes too, never half of it.
    tighter = trim(history, strategy_spec("safe_token_budget", {"max_tokens": need - 1}),
                   counter="approx", token_counts=counts)
    assert tighter.kept == [0, 1, 98, 99, 100, 101, 102]


def test_it_goes_over_budget_only_for_the_newest_user_message_and_newest_unit() -> None:
    history = _agent_loop(5)[:-1]  # ends on a tool result: the newest unit is the last exchange
    result = trim(history, strategy_spec("safe_token_budget", {"max_tokens": 10}), counter="approx")
    assert result.kept == [0, 1, 10, 11]
    assert result.budget_exceeded
    assert any("the newest tool exchange after it (messages 10-11)" in n for n in result.notes)
    assert not result.violations


def test_it_drops_what_would_break_the_protocol() -> None:
    history = [S(), T("ghost"), U(), A(None, "c1", "c2"), T("c1"), U("again"), A(None, "c3"), T("c3"),
               T("c3"), A(None), U("last"), A(None, "c4")]
    result = trim(history, strategy_spec("safe_token_budget", {"max_tokens": 100_000}))
    assert result.kept == [0, 2, 5, 6, 7, 10]
    assert not result.violations
    reasons = {d.index: d.reason for d in result.dropped}
    assert "without its call" in reasons[1]
    assert "call c2 has no result" in reasons[3] and "call c2 has no result" in reasons[4]
    assert "answers no call" in reasons[8]
    assert "neither content nor tool calls" in reasons[9]
    assert "pending" in reasons[11]


# --- the result explains itself -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DESIGN_TABLE))
def test_it_explains_every_input_message(name: str) -> None:
    defaults = {"openmanus_window": {"max_messages": 3}, "buffered": {"buffer_size": 2},
                "token_limited": {"token_limit": 50}, "langchain_last": {"max_tokens": 50},
                "langchain_first": {"max_tokens": 50}, "safe_window": {"max_messages": 3},
                "last_turns": {"max_turns": 1}, "sk_truncation": {"target_count": 3},
                "llamaindex_buffer": {"token_limit": 10}, "safe_token_budget": {"max_tokens": 60},
                "head_and_tail": {"head_size": 1, "tail_size": 2}}
    result = trim(SK_HISTORY, strategy_spec(name, defaults.get(name, {})))
    rows = result.explanation()
    assert [r["index"] for r in rows] == list(range(len(SK_HISTORY)))
    assert all(r["reason"] for r in rows)
    assert sorted(result.kept + [d.index for d in result.dropped]) == list(range(len(SK_HISTORY)))
    data = result.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(data) >= {"strategy", "params", "counter", "kept", "dropped", "inserted", "messages",
                         "tokens_before", "tokens_after", "violations", "notes", "budget_exceeded"}
    assert len(data["messages"]) == len(result.kept) + len(result.inserted)


def test_it_names_a_violation_by_its_trimmed_position_and_the_input_message_it_came_from() -> None:
    history = [S(), U(), A(None, "call_1"), T("call_1"), U("again"), A(None, "call_2"), T("call_2"), A("done")]
    result = trim(history, strategy_spec("openmanus_window", {"max_messages": 2}))
    assert result.kept == [0, 6, 7]
    (violation,) = result.to_dict()["violations"]
    assert violation["kind"] == "leading_tool_result"
    assert (violation["index"], violation["input_index"]) == (1, 6)  # messages[1] as the provider sees it
    assert violation["message"].startswith("Message 1 of the trimmed list (input message 6) is a tool result")
    # The result's own Violation objects (which the lab shows) read the same.
    assert result.violations[0].message == violation["message"]


def test_it_gives_no_input_index_for_a_violation_at_an_inserted_placeholder() -> None:
    history = [S(), U(), A(None, "call_1"), T("call_1"), U("again"), A(None, "call_2"), T("call_2"), A("done")]
    result = trim(history, strategy_spec("head_and_tail", {"head_size": 2, "tail_size": 2}))
    data = result.to_dict()
    positions = [x["position"] for x in data["inserted"]]
    assert positions
    sources = [result.input_index(p) for p in range(len(result.messages))]
    assert [sources[p] for p in positions] == [None] * len(positions)
    assert [s for s in sources if s is not None] == result.kept
    for v in data["violations"]:
        assert v["input_index"] == sources[v["index"]]


# --- cost: stored counts are used, text is never recounted (speed itself is measured in bench/) ---------------


def _history(turns: int) -> list[Message]:
    out = [S()]
    for k in range(turns):
        out += [U(f"question {k}"), A(None, f"c{k}a", f"c{k}b"), T(f"c{k}a", "r" * (k % 40)), T(f"c{k}b"),
                A(f"answer {k}")]
    return out


class _CountingCounter:
    """The approx counter, counting how often it is asked."""

    name = "approx-counting-test"
    description = "approx, counting its calls"
    per_list = 3

    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[int] = []

    def count(self, message: Message) -> int:
        self.calls += 1
        self.seen.append(id(message))
        return get_counter("approx").count(message)


@pytest.fixture
def counting_counter():
    counter = register_counter(_CountingCounter())
    yield counter
    COUNTERS.pop(counter.name)


def test_it_never_recounts_stored_messages(counting_counter) -> None:
    history = _history(300)
    counts = count_messages(history, "approx")
    total = sum(counts) + 3
    n = len(history)
    params = {"openmanus_window": {"max_messages": n // 10}, "buffered": {"buffer_size": n // 10},
              "head_and_tail": {"head_size": n // 20, "tail_size": n // 20},
              "token_limited": {"token_limit": total // 10}, "langchain_last": {"max_tokens": total // 10},
              "langchain_first": {"max_tokens": total // 10}, "safe_window": {"max_messages": n // 10},
              "last_turns": {"max_turns": n // 50}, "sk_truncation": {"target_count": n // 10},
              "llamaindex_buffer": {"token_limit": total // 20},
              "safe_token_budget": {"max_tokens": total // 10},
              # 2026's: parameters that make them insert or edit.
              "langchain_summarization": {"trigger_messages": 1, "keep_messages": n // 10},
              "langchain_clear_tool_uses": {"trigger": 0, "clear_tool_inputs": True},
              "openai_tool_output_trimmer": {"max_output_chars": 5, "preview_chars": 1},
              "anthropic_clear_tool_uses": {"trigger_input_tokens": 0, "clear_tool_inputs": True},
              "strands_sliding_window": {"window_size": 10, "context_overflow": True}}
    stored = {id(m) for m in history}
    for name in STRATEGIES:
        counting_counter.calls, counting_counter.seen = 0, []
        result = trim(history, strategy_spec(name, params.get(name, {})),
                      counter=counting_counter.name, token_counts=counts)
        # Only what the strategy inserts or changes is new text to count (a placeholder summary not even that:
        # it counts summary_tokens); a stored message never is.
        assert not stored & set(counting_counter.seen), name
        if not result.edited:
            assert counting_counter.calls <= len(result.inserted), name


@pytest.mark.parametrize("shape", ["agent_loop", "chat"])
@pytest.mark.parametrize("name", sorted(set(DESIGN_TABLE) - {"unbounded", "strip_thoughts"}))
def test_it_sums_up_a_long_sessions_dropped_messages_in_a_few_runs(name: str, shape: str) -> None:
    history = _agent_loop(2000, "r" * 40) if shape == "agent_loop" else _history(800)
    counts = count_messages(history, "approx")
    params = {"openmanus_window": {"max_messages": 20}, "buffered": {"buffer_size": 20},
              "head_and_tail": {"head_size": 5, "tail_size": 5}, "token_limited": {"token_limit": 3000},
              "langchain_last": {"max_tokens": 3000}, "langchain_first": {"max_tokens": 3000},
              "safe_window": {"max_messages": 20}, "last_turns": {"max_turns": 2},
              "sk_truncation": {"target_count": 20}, "llamaindex_buffer": {"token_limit": 3000},
              "safe_token_budget": {"max_tokens": 3000}}
    result = trim(history, strategy_spec(name, params.get(name, {})), counter="approx", token_counts=counts)
    runs = result.dropped_runs()
    expanded = [(i, r["reason"]) for r in runs for i in range(r["from"], r["to"] + 1)]
    assert expanded == [(d.index, d.reason) for d in result.dropped]
    assert len(runs) <= 4, [(r["from"], r["to"], r["reason"][:60]) for r in runs[:6]]
