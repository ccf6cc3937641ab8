"""Replay: each call of a stored run trimmed as the framework trimmed it then (agents/memory/replay.py)."""
from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.chain import find_violations
from agents.memory.replay import (
    INCREMENTAL_STRATEGIES,
    METHOD_BOUNDED,
    METHOD_CARRIED,
    METHOD_INCREMENTAL,
    METHOD_PER_CALL,
    ReplayStep,
    SliceViolations,
    Steps,
    call_positions,
    replay,
    replay_call,
    step_column,
)
from agents.memory.schema import FunctionCall, Message, ToolCall
from agents.memory.tokens import count_messages
from agents.memory.trimming import (
    MEMORY_AFTER_TURN,
    MEMORY_CARRIED,
    MEMORY_IDEMPOTENT,
    MEMORY_KINDS,
    MEMORY_VIEW,
    STRATEGIES,
    StrategyError,
    get_strategy,
    strategy_spec,
    trim,
)
from tests.strategies_messages import (
    broken_unique_id_conversations,
    conversations,
    messy_conversations,
    strategy_and_params,
)

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COUNTERS = st.sampled_from(["approx", "messages", "cl100k"])
ANY_CONVERSATION = st.one_of(conversations, broken_unique_id_conversations())


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


def errors(messages: list[Message]) -> int:
    return sum(1 for v in find_violations(messages, pending_severity="error") if v.severity == "error")


def sent_at(messages: list[Message], name: str, params: dict[str, Any], counter: str, counts: list[int],
            call: int) -> dict[str, Any]:
    """What trimming the call's input from scratch sends, in the terms of a replay step."""
    result = trim(messages[:call], strategy_spec(name, params), counter=counter, token_counts=counts[:call])
    users = [i for i in range(call) if messages[i].role == "user"]
    return {
        "call": call,
        "sent": len(result.messages),
        "tokens": result.tokens_after,
        "tokens_input": result.tokens_before,
        "errors": errors(result.messages),
        "question_kept": users[-1] in result.kept if users else None,
    }


# --- every call, as trimming each call's input would -------------------------------------------------------


@SETTINGS
@given(ANY_CONVERSATION, st.data(), COUNTERS)
def test_it_reports_at_every_call_what_trimming_that_calls_input_sends(
    messages: list[Message], data: st.DataObject, counter: str
) -> None:
    counts = count_messages(messages, counter)
    name, params = data.draw(strategy_and_params(sum(counts) + 3))
    if get_strategy(name).memory in (MEMORY_CARRIED, MEMORY_AFTER_TURN):
        return  # test_it_replays_a_framework_that_carries_... and ..._trims_when_a_turn_ends_once_per_turn
    result = replay(messages, name, params, counter=counter, token_counts=counts)

    assert [s.call for s in result.steps] == [k for k, m in enumerate(messages) if m.role == "assistant"] + [
        len(messages)
    ]
    assert [s.to_dict() for s in result.steps] == [
        sent_at(messages, name, params, counter, counts, s.call) for s in result.steps
    ]
    if name not in INCREMENTAL_STRATEGIES:
        assert result.method == METHOD_PER_CALL
    elif name in ("safe_token_budget", "head_and_tail", "token_limited"):  # per call when ids are reused
        assert result.method in (METHOD_INCREMENTAL, METHOD_BOUNDED, METHOD_PER_CALL)
    else:
        assert result.method == METHOD_INCREMENTAL


@SETTINGS
@given(ANY_CONVERSATION, st.data(), COUNTERS)
def test_its_last_step_is_the_plain_preview_of_the_whole_list(
    messages: list[Message], data: st.DataObject, counter: str
) -> None:
    counts = count_messages(messages, counter)
    name, params = data.draw(strategy_and_params(sum(counts) + 3))
    if get_strategy(name).memory in (MEMORY_CARRIED, MEMORY_AFTER_TURN):
        return  # what it holds by the end is not what trimming the whole list once keeps
    last = replay(messages, name, params, counter=counter, token_counts=counts).steps[-1]
    preview = trim(messages, strategy_spec(name, params), counter=counter, token_counts=counts)
    newest_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)

    assert last.call == len(messages)
    assert last.sent == len(preview.messages)
    assert last.tokens == preview.tokens_after
    assert last.tokens_input == preview.tokens_before
    assert last.errors == sum(1 for v in preview.violations if v.severity == "error")
    assert last.question_kept == (None if newest_user is None else newest_user in preview.kept)


@SETTINGS
@given(ANY_CONVERSATION, st.data(), COUNTERS)
def test_it_replays_a_framework_that_carries_what_it_kept_from_what_it_kept(
    messages: list[Message], data: st.DataObject, counter: str
) -> None:
    counts = count_messages(messages, counter)
    carried = [name for name, s in STRATEGIES.items() if s.memory == MEMORY_CARRIED]
    name, params = data.draw(strategy_and_params(sum(counts) + 3, carried))
    fast = replay(messages, name, params, counter=counter, token_counts=counts)

    # By hand: what the strategy sent is what the framework holds; the next call trims that plus what came since.
    # The session's leading system messages are its system prompt, outside the framework's memory.
    lead = next((i for i, m in enumerate(messages) if m.role not in ("system", "developer")), len(messages))
    held: list[Message] = []
    held_counts: list[int] = []
    added = 0
    expected = []
    for k in call_positions(messages):
        held += messages[added:k]
        held_counts += counts[added:k]
        added = k
        result = trim(held, strategy_spec(name, params), counter=counter, token_counts=held_counts, pinned=lead)
        users = [i for i in range(k) if messages[i].role == "user"]
        expected.append({
            "call": k, "sent": len(result.messages), "tokens": result.tokens_after,
            "tokens_input": sum(counts[:k]) + (0 if counter == "messages" else 3),
            "errors": errors(result.messages),
            "question_kept": any(m is messages[users[-1]] for m in result.messages) if users else None,
        })
        held, held_counts = list(result.messages), list(result.message_tokens)
    assert fast.method == METHOD_CARRIED
    assert [s.to_dict() for s in fast.steps] == expected


@SETTINGS
@given(ANY_CONVERSATION, st.data(), COUNTERS)
def test_it_replays_idempotent_strategies_as_their_framework_deleting_would(
    messages: list[Message], data: st.DataObject, counter: str
) -> None:
    name = data.draw(st.sampled_from(["openmanus_window", "last_turns"]))
    params = {"max_messages": data.draw(st.integers(0, 6))} if name == "openmanus_window" else {
        "max_turns": data.draw(st.integers(1, 3))
    }
    params["pin_system"] = data.draw(st.booleans())
    steps = replay(messages, name, params, counter=counter).steps

    lead = next((i for i, m in enumerate(messages) if m.role not in ("system", "developer")), len(messages))
    held: list[Message] = []
    added = 0
    for step in steps:
        held += messages[added : step.call]
        added = step.call
        # The framework deletes what it trimmed from its memory; its system prompt (the leading system messages)
        # is outside it.
        held = trim(held, strategy_spec(name, params), counter=counter, pinned=lead).messages
        assert len(held) == step.sent
        assert sum(count_messages(held, counter)) + (0 if counter == "messages" else 3) == step.tokens


def test_it_replays_semantic_kernel_from_what_its_reducer_left() -> None:
    messages = [S(), U("q0"), A(None, "c0"), T("c0"), A("a0"), U("q1"), A("a1")]
    params = {"target_count": 3, "threshold_count": 1}
    result = replay(messages, "sk_truncation", params, counter="messages")

    # At call 6 the reducer cut the history to [system, a0, q1]; at call 7 it holds 4 messages, not more than
    # target + threshold, so it sends them all, a0 included. Trimming the whole list would send 3.
    assert [(s.call, s.sent) for s in result.steps] == [(2, 2), (4, 4), (6, 3), (7, 4)]
    assert len(trim(messages, strategy_spec("sk_truncation", params), counter="messages").messages) == 3
    at_7 = replay_call(messages, "sk_truncation", params, call=7, counter="messages")
    assert at_7.kept == [0, 4, 5, 6]
    assert [d.index for d in at_7.dropped] == [1, 2, 3]
    assert {d.reason for d in at_7.dropped} == {"deleted from the framework's memory at an earlier call"}
    assert [m.content for m in at_7.messages] == ["You are a travel assistant.", "a0", "q1", "a1"]


# --- what a replay reports -------------------------------------------------------------------------------------


def conversation_with_two_turns() -> list[Message]:
    return [
        S(), U("Weather in Paris?"), A(None, "c1"), T("c1"), A("18°C."),
        U("And Tokyo and Oslo?"), A(None, "c2", "c3"), T("c2", "24°C"), T("c3", "3°C"), A("24°C and 3°C."),
    ]


def test_it_names_the_first_call_that_breaks_the_protocol_and_the_first_that_loses_the_question() -> None:
    messages = conversation_with_two_turns()
    result = replay(messages, "openmanus_window", {"max_messages": 2}, counter="messages")

    assert [s.call for s in result.steps] == [2, 4, 6, 9, 10]
    # Call 4 sends [call c1, its result]: the question is gone. Call 9 sends the two results without their call.
    assert [(s.sent, s.errors, s.question_kept) for s in result.steps] == [
        (2, 0, True), (3, 0, False), (3, 0, True), (3, 2, False), (3, 1, False),
    ]
    assert result.steps[result.first_question_lost].call == 4
    assert result.steps[result.first_violation].call == 9
    assert result.breaks_at_some_call and result.breaks_at_the_end
    out = result.to_dict()
    assert out["first_violation"] == 9 and out["first_question_lost"] == 4
    assert out["memory"] == MEMORY_IDEMPOTENT and out["memory_text"] == MEMORY_KINDS[MEMORY_IDEMPOTENT]


def test_it_finds_a_strategy_that_breaks_at_some_call_though_not_at_the_end() -> None:
    messages = [S(), U("q1"), A(None, "c1", "c2"), T("c1"), T("c2"), A("a1"), U("q2"), A("a2")]
    result = replay(messages, "openmanus_window", {"max_messages": 2}, counter="messages")

    # Call 5 sends the two results without their call; by the end the window holds [q2, a2] again.
    assert [(s.call, s.errors) for s in result.steps] == [(2, 0), (5, 2), (7, 0), (8, 0)]
    assert result.breaks_at_some_call and not result.breaks_at_the_end
    assert not trim(messages, strategy_spec("openmanus_window", {"max_messages": 2}), counter="messages").violations


def test_it_tells_how_each_strategy_keeps_what_it_trimmed() -> None:
    assert {s.memory for s in STRATEGIES.values()} <= set(MEMORY_KINDS)
    assert get_strategy("sk_truncation").memory == MEMORY_CARRIED
    assert get_strategy("openmanus_window").memory == MEMORY_IDEMPOTENT
    assert get_strategy("last_turns").memory == MEMORY_IDEMPOTENT
    assert get_strategy("buffered").memory == MEMORY_VIEW


def test_it_samples_the_calls_of_a_long_run_trimmed_per_call_and_says_so() -> None:
    messages = [S()] + [m for _ in range(30) for m in (U("q"), A("a"))]
    result = replay(messages, "buffered", {"buffer_size": 4}, counter="messages", incremental=False, work_limit=300)

    assert result.method == METHOD_PER_CALL
    assert result.stride > 1 and result.total_calls == 31
    assert result.steps[-1].call == len(messages) and len(result.steps) < 31
    calls = call_positions(messages)
    assert [s.call for s in result.steps] == sorted(set(calls[:: result.stride]) | {calls[-1]})
    assert "every" in result.notes[0]


def test_replay_call_is_what_the_framework_sent_at_that_call() -> None:
    messages = conversation_with_two_turns()
    at_9 = replay_call(messages, "openmanus_window", {"max_messages": 2}, call=9, counter="messages")

    assert at_9.kept == [0, 7, 8]
    assert at_9.to_dict() == trim(messages[:9], strategy_spec("openmanus_window", {"max_messages": 2}),
                                  counter="messages").to_dict()
    with pytest.raises(ValueError, match="outside the session"):
        replay_call(messages, "unbounded", call=11)


def test_it_refuses_an_unknown_strategy_or_invalid_parameters_as_trim_does() -> None:
    with pytest.raises(StrategyError, match="unknown strategy"):
        replay(conversation_with_two_turns(), "newest_five")
    with pytest.raises(StrategyError, match="buffer_size"):
        replay(conversation_with_two_turns(), "buffered", {"buffer_size": 0})


def test_it_replays_an_empty_session_as_one_call_that_sends_nothing() -> None:
    result = replay([], "buffered", counter="cl100k")
    assert [s.to_dict() for s in result.steps] == [
        {"call": 0, "sent": 0, "tokens": 3, "tokens_input": 3, "errors": 0, "question_kept": None}
    ]


# --- errors of slices ------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(messy_conversations(), broken_unique_id_conversations(), conversations))
def test_it_counts_the_errors_of_every_slice_as_the_checker_does(messages: list[Message]) -> None:
    n = len(messages)
    slices = [(s, e) for s in range(n + 1) for e in range(s, n + 1)]
    expected = [errors(messages[s:e]) for s, e in slices]
    assert SliceViolations(messages).counts(slices) == expected
    # Where many points cross one start (long waits for results, reused ids), the Fenwick tree's sweep answers.
    by_tree = SliceViolations(messages)
    by_tree.CROSSING_LIMIT = 0
    assert by_tree.counts(slices) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broken_unique_id_conversations(max_size=9), st.booleans())
def test_it_counts_two_parts_sent_together_as_the_checker_does(messages: list[Message], separated: bool) -> None:
    n = len(messages)
    placeholder = [Message(role="user", name="System", content="Skipped 3 messages.")] if separated else []
    parts = [
        (a0, a1, b0, b1)
        for a0 in range(n + 1) for a1 in range(a0, n + 1) for b0 in range(a1, n + 1) for b1 in range(b0, n + 1)
    ]
    counted = SliceViolations(messages).joined_counts(parts, separated=separated)
    assert counted == [errors(messages[a0:a1] + placeholder + messages[b0:b1]) for a0, a1, b0, b1 in parts]


def test_it_refuses_to_join_two_parts_of_a_session_that_reuses_call_ids() -> None:
    messages = [U(), A(None, "c1"), T("c1"), A(None, "c1"), T("c1"), A()]
    slices = SliceViolations(messages)
    assert not slices.unique_ids
    with pytest.raises(ValueError, match="unique"):
        slices.joined_counts([(0, 2, 3, 5)], separated=False)


def test_it_never_pins_a_system_message_from_inside_the_frameworks_memory() -> None:
    # The system prompt (the session's leading system messages) stays outside memory; a later system message is
    # an ordinary message of memory, even once trimming leaves it at the front.
    messages = [S(), U("q0"), A("a0"), S("Note: be brief."), U("q1"), A("a1"), U("q2"), A("a2")]
    params = {"target_count": 3, "pin_system": True}
    at_end = replay_call(messages, "sk_truncation", params, call=8, counter="messages")
    assert at_end.kept[0] == 0 and 3 in at_end.kept  # the note is in the history, kept as its first system message
    held = [messages[i] for i in at_end.kept]
    assert trim(held, strategy_spec("sk_truncation", params), counter="messages", pinned=1).kept_reasons[1] != (
        "pinned system message: set aside before trimming and put back in front"
    )
    with pytest.raises(ValueError, match="system or developer"):
        trim(messages, strategy_spec("sk_truncation", params), pinned=2)


@SETTINGS
@given(ANY_CONVERSATION, st.data(), COUNTERS)
def test_it_replays_a_framework_that_trims_when_a_turn_ends_once_per_turn(
    messages: list[Message], data: st.DataObject, counter: str
) -> None:
    counts = count_messages(messages, counter)
    after_turn = [name for name, s in STRATEGIES.items() if s.memory == MEMORY_AFTER_TURN]
    name, params = data.draw(strategy_and_params(sum(counts) + 3, after_turn))
    result = replay(messages, name, params, counter=counter, token_counts=counts)

    # By hand: a turn ends where the next user message starts (and at the end); the framework trims what it
    # holds plus the turn's messages there. A call inside a turn sends what it holds plus the turn so far.
    lead = next((i for i, m in enumerate(messages) if m.role not in ("system", "developer")), len(messages))
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    ends = users[1:] + ([len(messages)] if users else [])
    held: list[Message] = []
    held_counts: list[int] = []
    added = 0
    for step in result.steps:
        for end in [e for e in ends if added < e <= step.call]:
            held += messages[added:end]
            held_counts += counts[added:end]
            added = end
            trimmed = trim(held, strategy_spec(name, params), counter=counter, token_counts=held_counts, pinned=lead)
            held, held_counts = list(trimmed.messages), list(trimmed.message_tokens)
        sent = held + messages[added : step.call]
        assert step.sent == len(sent)
        assert step.tokens == sum(held_counts) + sum(counts[added : step.call]) + (0 if counter == "messages" else 3)
        assert step.errors == errors(sent)
        at_call = replay_call(messages, name, params, call=step.call, counter=counter, token_counts=counts)
        assert at_call.messages == sent and at_call.tokens_after == step.tokens


def test_strands_window_lets_a_turn_grow_past_it_until_the_turn_ends() -> None:
    messages = [S(), U("q0"), A("a0"), U("q1"), A(None, "c1"), T("c1"), A(None, "c2"), T("c2"), A("a1"), U("q2"),
                A("a2")]
    result = replay(messages, "strands_sliding_window", {"window_size": 2}, counter="messages")

    # Inside the second turn nothing is trimmed: calls 4, 6 and 8 send the system prompt, what the first turn left
    # ([q0, a0], within the window) and the turn so far. When that turn ends, the last 2 Strands messages (the
    # result of c2, a1) hold no plain user message and no complete pair: Strands trims nothing, and call 10 sends
    # all 10 messages. When the last turn ends, it cuts before q2.
    assert result.method == "after each turn"
    assert [(s.call, s.sent) for s in result.steps] == [(2, 2), (4, 4), (6, 6), (8, 8), (10, 10), (11, 3)]
    assert [m.content for m in replay_call(messages, "strands_sliding_window", {"window_size": 2}, call=11,
                                           counter="messages").messages] == ["You are a travel assistant.", "q2", "a2"]


# --- steps held as columns -------------------------------------------------------------------------------------


def test_a_long_runs_steps_are_columns_that_read_as_the_steps() -> None:
    listed = [ReplayStep(1, 2, 30, 40, 0, None), ReplayStep(3, 4, 50, 60, 2, True), ReplayStep(5, 3, 20, 80, 0, False),
              ReplayStep(7, 5, 90, 100, 1, False)]
    steps = Steps.of(listed)
    assert len(steps) == 4 and list(steps) == listed and steps[1] == listed[1] and steps[-1] == listed[-1]
    assert steps[1:3] == listed[1:3] and steps == listed and steps != listed[:3]
    assert pickle.loads(pickle.dumps(steps)) == listed
    assert (steps.first("errors"), steps.first("question", 0)) == (1, 2)
    assert Steps.of(listed[:1]).first("errors") is None and Steps().first("question", 0) is None
    for name in ("tokens", "tokens_input", "errors", "call", "sent", "question_lost"):
        assert list(step_column(steps, name)) == list(step_column(listed, name))
    assert list(step_column(steps, "question_lost")) == [0, 0, 1, 1]


def test_an_incremental_replay_holds_its_steps_as_columns_with_the_same_answers() -> None:
    messages = [S(), U("q0"), A(None, "c1"), T("c1"), A("a0"), U("q1"), A(None, "c2"), U("q2"), T("c2"), A("a2"),
                U("q3"), A("a3")]
    run = replay(messages, "buffered", {"buffer_size": 3}, counter="messages")
    assert run.method == METHOD_INCREMENTAL and isinstance(run.steps, Steps)
    listed = list(run.steps)
    assert run.first_violation == next((k for k, s in enumerate(listed) if s.errors), None) is not None
    assert run.first_question_lost == next((k for k, s in enumerate(listed) if s.question_kept is False), None)
    assert [s.call for s in listed] == call_positions(messages)  # every call, the next one last
