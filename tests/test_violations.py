from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory.chain import KINDS, PROVIDERS, ProtocolChecker, Violation, errors_only, find_violations
from agents.memory.schema import FunctionCall, Message, ToolCall, parse_messages
from tests.paths import SAMPLES
from tests.strategies_messages import valid_conversations

PROPS = settings(max_examples=150, deadline=None)


def S(text: str = "You are helpful.", role: str = "system") -> Message:
    return Message(role=role, content=text)


def U(text: str = "hi") -> Message:
    return Message(role="user", content=text)


def A(text: str | None = "done") -> Message:
    return Message(role="assistant", content=text)


def AC(*ids: str, name: str = "get_weather", args: str = '{"city": "Paris"}', text: str | None = None) -> Message:
    return Message(
        role="assistant", content=text,
        tool_calls=[ToolCall(id=i, function=FunctionCall(name=name, arguments=args)) for i in ids],
    )


def T(call_id: str, text: str = "18C") -> Message:
    return Message(role="tool", tool_call_id=call_id, content=text)


def found(messages: list[Message], provider: str = "openai") -> list[tuple[str, int, str | None]]:
    return [(v.kind, v.index, v.tool_call_id) for v in find_violations(messages, provider)]


# ---- each kind, smallest example ---------------------------------------------------------------------------


def test_it_finds_nothing_wrong_in_the_sample_conversation() -> None:
    messages = parse_messages(json.loads((SAMPLES / "openai" / "travel.json").read_text()))
    assert find_violations(messages) == []
    assert find_violations(messages, "anthropic") == []


def test_it_reports_an_orphan_tool_result() -> None:
    violations = find_violations([U(), T("call_x")])
    assert [(v.kind, v.index, v.tool_call_id, v.severity) for v in violations] == [
        ("orphan_tool_result", 1, "call_x", "error")
    ]
    assert "call_x" in violations[0].message
    assert "preceeding message with 'tool_calls'" in violations[0].provider_error


def test_it_says_when_a_result_comes_before_its_call() -> None:
    violations = find_violations([U(), T("c1"), AC("c1", name="search"), A()])
    assert [(v.kind, v.index) for v in violations] == [("orphan_tool_result", 1), ("unanswered_tool_call", 2)]
    assert "before its call at message 2" in violations[0].message and "search" in violations[0].message


def test_it_reports_a_leading_tool_result_after_the_system_prompt() -> None:
    assert found([S(), T("call_2"), A()]) == [("leading_tool_result", 1, "call_2")]
    assert found([S(role="developer"), S(), T("call_2"), A()]) == [("leading_tool_result", 2, "call_2")]


def test_it_reports_an_unanswered_call_when_the_conversation_goes_on() -> None:
    violations = find_violations([U(), AC("c1", name="get_weather"), U("and?")])
    assert [(v.kind, v.index, v.tool_call_id) for v in violations] == [("unanswered_tool_call", 1, "c1")]
    assert "c1" in violations[0].message and "get_weather" in violations[0].message
    assert "did not have response messages: c1" in violations[0].provider_error


def test_it_reports_a_call_waiting_at_the_end_as_a_pending_warning() -> None:
    violations = find_violations([U(), AC("c1")])
    assert [(v.kind, v.index, v.tool_call_id, v.severity) for v in violations] == [
        ("pending_tool_call", 1, "c1", "warning")
    ]
    assert errors_only(violations) == []


def test_it_makes_a_pending_call_an_error_when_asked() -> None:
    (violation,) = find_violations([U(), AC("c1")], pending_severity="error")
    assert (violation.kind, violation.severity) == ("pending_tool_call", "error")


def test_it_reports_a_partial_parallel_exchange_at_the_end_as_pending() -> None:
    assert found([U(), AC("c1", "c2"), T("c2")]) == [("pending_tool_call", 1, "c1")]


def test_it_reports_partial_parallel_results() -> None:
    violations = find_violations([U(), AC("c1", "c2", "c3"), T("c1"), T("c3"), A()])
    assert [(v.kind, v.index, v.tool_call_id) for v in violations] == [("partial_parallel_results", 1, "c2")]
    assert "2 of 3 answered" in violations[0].message


def test_it_reports_each_call_unanswered_when_no_parallel_call_is_answered() -> None:
    assert found([U(), AC("c1", "c2"), A()]) == [("unanswered_tool_call", 1, "c1"), ("unanswered_tool_call", 1, "c2")]


def test_it_reports_an_interrupted_exchange_at_the_interrupting_message() -> None:
    violations = find_violations([U(), AC("c1", "c2", name="search"), T("c1"), U("wait"), T("c2"), A()])
    assert [(v.kind, v.index, v.tool_call_id) for v in violations] == [("interrupted_exchange", 3, "c2")]
    assert "search" in violations[0].message and "message 4" in violations[0].message


def test_it_does_not_call_a_late_result_an_orphan_nor_its_call_unanswered() -> None:
    kinds = {kind for kind, _, _ in found([U(), AC("c1"), U("hurry"), AC("c2"), T("c2"), T("c1"), A()])}
    assert kinds == {"interrupted_exchange"}


def test_it_reports_a_duplicate_call_id_across_messages() -> None:
    violations = find_violations([U(), AC("c1"), T("c1"), AC("c1", name="search"), T("c1"), A()])
    assert [(v.kind, v.index, v.tool_call_id) for v in violations] == [("duplicate_tool_call_id", 3, "c1")]
    assert "message 1" in violations[0].message


def test_it_reports_a_duplicate_call_id_inside_one_message_once() -> None:
    assert found([U(), AC("c1", "c1"), T("c1"), A()]) == [("duplicate_tool_call_id", 1, "c1")]


def test_it_reports_a_result_given_twice() -> None:
    violations = find_violations([U(), AC("c1"), T("c1"), T("c1"), A()])
    assert [(v.kind, v.index, v.tool_call_id) for v in violations] == [("duplicate_tool_call_id", 3, "c1")]
    assert "first result is message 2" in violations[0].message


@pytest.mark.parametrize("arguments", ["{oops", "[1, 2]", "3", "null", '"text"', "{'city': 'Paris'}"])
def test_it_reports_arguments_that_are_not_a_json_object(arguments: str) -> None:
    violations = find_violations([U(), AC("c1", name="get_weather", args=arguments), T("c1"), A()])
    assert [(v.kind, v.index, v.tool_call_id) for v in violations] == [("invalid_tool_arguments", 1, "c1")]
    assert "get_weather" in violations[0].message


@pytest.mark.parametrize("arguments", ["", "  ", "{}", '{"a": [1, {"b": null}]}'])
def test_it_accepts_empty_arguments_as_no_arguments(arguments: str) -> None:
    assert find_violations([U(), AC("c1", args=arguments), T("c1"), A()]) == []


@pytest.mark.parametrize("content", [None, "", "  \n", [], [{"type": "text", "text": ""}]])
def test_it_reports_an_empty_assistant(content: Any) -> None:
    assert found([U(), Message(role="assistant", content=content)]) == [("empty_assistant", 1, None)]


def test_it_counts_an_image_part_as_assistant_content() -> None:
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]
    assert find_violations([U(), Message(role="assistant", content=image)]) == []


# ---- anthropic profile ---------------------------------------------------------------------------------------


def test_it_reports_a_system_message_after_the_start_for_anthropic_only() -> None:
    messages = [S(), U(), A(), S("new rules"), U(), A()]
    violations = find_violations(messages, "anthropic")
    assert [(v.kind, v.index, v.severity) for v in violations] == [("system_not_first", 3, "error")]
    assert find_violations(messages, "openai") == []


def test_it_lets_a_system_message_leave_an_exchange_alone_for_anthropic() -> None:
    messages = [U(), AC("c1"), S("note"), T("c1"), A()]
    assert found(messages, "anthropic") == [("system_not_first", 2, None)]
    assert found(messages, "openai") == [("interrupted_exchange", 2, "c1")]


def test_it_warns_about_consecutive_user_turns_for_anthropic() -> None:
    violations = find_violations([U(), U("again"), A()], "anthropic")
    assert [(v.kind, v.index, v.severity) for v in violations] == [("consecutive_same_role", 1, "warning")]
    assert find_violations([U(), U("again"), A()]) == []


def test_it_warns_about_a_user_message_right_after_tool_results_for_anthropic() -> None:
    assert found([U(), AC("c1", "c2"), T("c1"), T("c2"), U("thanks")], "anthropic") == [
        ("consecutive_same_role", 4, None)
    ]


def test_it_merges_consecutive_tool_results_into_one_anthropic_turn() -> None:
    assert find_violations([U(), AC("c1", "c2", "c3"), T("c1"), T("c2"), T("c3"), A()], "anthropic") == []


def test_it_warns_about_consecutive_assistant_turns_for_anthropic() -> None:
    assert found([U(), A("one"), A("two")], "anthropic") == [("consecutive_same_role", 2, None)]


def test_it_does_not_add_a_role_warning_to_an_unanswered_call() -> None:
    assert found([U(), AC("c1", "c2"), T("c1"), U("and?"), A()], "anthropic") == [("partial_parallel_results", 1, "c2")]


def test_it_lets_an_assistant_message_join_the_tool_use_turn_for_anthropic() -> None:
    # Anthropic combines consecutive assistant turns, so the results still come in the very next turn.
    messages = [U(), AC("c1"), A("let me check"), T("c1"), A()]
    assert found(messages, "anthropic") == [("consecutive_same_role", 2, None)]
    assert found(messages, "openai") == [("interrupted_exchange", 2, "c1")]
    two_calls = [U(), AC("c1"), AC("c2", name="search"), T("c2"), T("c1"), A()]
    assert found(two_calls, "anthropic") == [("consecutive_same_role", 2, None)]
    assert found([U(), AC("c1"), A("checking"), U("well?")], "anthropic") == [
        ("unanswered_tool_call", 1, "c1"), ("consecutive_same_role", 2, None)
    ]


def test_it_quotes_anthropic_errors_with_the_turn_number() -> None:
    (violation,) = find_violations([S(), U(), AC("toolu_1"), U("and?")], "anthropic")
    assert violation.kind == "unanswered_tool_call"
    # The system prompt leaves the list, so the tool_use is Anthropic's messages.1.
    assert violation.provider_error.startswith("messages.1: `tool_use` ids were found without `tool_result`")
    assert "toolu_1" in violation.provider_error
    (orphan,) = find_violations([U(), T("toolu_9")], "anthropic")
    assert "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9" in orphan.provider_error


def test_it_rejects_an_unknown_provider() -> None:
    with pytest.raises(ValueError, match="valid: openai, anthropic"):
        ProtocolChecker("gemini")


def test_it_gives_every_violation_a_complete_dict() -> None:
    violation = find_violations([U(), T("x")])[0]
    assert violation.to_dict() == {
        "kind": "orphan_tool_result", "index": 1, "tool_call_id": "x", "message": violation.message,
        "severity": "error", "provider_error": violation.provider_error,
    }


def test_it_checks_incrementally_like_the_whole_list() -> None:
    messages = [U(), AC("c1", "c2"), T("c1"), U(), T("c2"), T("zz"), AC("c3")]
    checker = ProtocolChecker()
    for m in messages[:4]:
        checker.feed(m)
    early = checker.finish()
    for m in messages[4:]:
        checker.feed(m)
    assert checker.finish() == find_violations(messages)
    assert [v.kind for v in early] == ["partial_parallel_results"]  # finish() changes nothing: c2 may still come


# ---- the framework failures of reference/trimming.md ---------------------------------------------------------


def test_it_catches_the_autogen_middle_pop_orphan() -> None:
    # TokenLimitedChatCompletionContext with budget 120 keeps [S, U, FERM, A]: the FERM's two results lose their call.
    trimmed = [S(), U("Weather in Paris and Tokyo?"), T("call_1"), T("call_2"), A("Paris 18C, Tokyo 24C")]
    assert found(trimmed) == [("orphan_tool_result", 2, "call_1"), ("orphan_tool_result", 3, "call_2")]


def test_it_catches_the_langchain_leading_tool_message() -> None:
    # trim_messages(strategy="last", token_counter=len) with max_tokens 2 and 3 (langchain-ai/langchain#33245).
    assert found([T("call_2"), A()]) == [("leading_tool_result", 0, "call_2")]
    assert found([T("call_1"), T("call_2"), A()]) == [
        ("leading_tool_result", 0, "call_1"), ("leading_tool_result", 1, "call_2")
    ]


def test_it_catches_the_openmanus_slice() -> None:
    history = [U(), AC("call_1", "call_2"), T("call_1"), T("call_2"), A()]
    assert find_violations(history) == []
    for max_messages in (2, 3):
        kept = history[-max_messages:]
        kinds = found(kept)
        assert kinds and all(kind == "leading_tool_result" for kind, _, _ in kinds)
        assert [index for _, index, _ in kinds] == list(range(max_messages - 1))


def test_it_catches_an_orphan_behind_a_system_prompt() -> None:
    # agno-agi/agno#9372: the "strip leading tool messages" fix missed it because the system message is at index 0.
    assert found([S(), T("call_1"), U(), A()]) == [("leading_tool_result", 1, "call_1")]


def test_it_catches_a_langchain_first_trim_that_cuts_parallel_results() -> None:
    trimmed = [S(), U(), AC("call_1", "call_2"), T("call_1")]
    assert found(trimmed) == [("pending_tool_call", 2, "call_2")]
    assert [v.severity for v in find_violations(trimmed, pending_severity="error")] == ["error"]


# ---- properties ------------------------------------------------------------------------------------------------


@PROPS
@given(valid_conversations(pending=False), st.sampled_from(PROVIDERS))
def test_it_finds_no_violation_in_a_valid_list(messages: list[Message], provider: str) -> None:
    assert find_violations(messages, provider) == []


@PROPS
@given(valid_conversations(pending=True, min_turns=0), st.sampled_from(PROVIDERS))
def test_it_only_warns_about_the_calls_still_pending_at_the_end(messages: list[Message], provider: str) -> None:
    last_calls = next(m for m in reversed(messages) if m.tool_calls)
    last_index = max(i for i, m in enumerate(messages) if m.tool_calls)
    answered = {m.tool_call_id for m in messages[last_index + 1:]}
    expected = [("pending_tool_call", last_index, tc.id) for tc in last_calls.tool_calls if tc.id not in answered]
    violations = find_violations(messages, provider)
    assert [(v.kind, v.index, v.tool_call_id) for v in violations] == expected
    assert errors_only(violations) == []


def _exchanges(messages: list[Message]) -> list[tuple[int, list[int]]]:
    """(assistant index, result indices) of each exchange of a valid list, found by a plain scan."""
    out: list[tuple[int, list[int]]] = []
    for i, m in enumerate(messages):
        if m.tool_calls:
            out.append((i, []))
        elif m.role == "tool":
            out[-1][1].append(i)
    return out


def _with_call(message: Message, position: int, **changes: str) -> Message:
    calls = list(message.tool_calls)
    tc = calls[position]
    calls[position] = ToolCall(
        id=changes.get("id", tc.id),
        function=FunctionCall(name=tc.function.name, arguments=changes.get("arguments", tc.function.arguments)),
    )
    return message.model_copy(update={"tool_calls": calls})


@st.composite
def injected_defects(draw: st.DrawFn) -> tuple[str, list[Message], list[tuple[str, int, str | None]]]:
    """A valid list with one defect, and the violations that defect must give (openai profile)."""
    kind = draw(st.sampled_from([k for k in KINDS if k not in {"pending_tool_call", "system_not_first",
                                                                "consecutive_same_role"}]))
    needs_exchange = kind in {"unanswered_tool_call", "interrupted_exchange", "duplicate_tool_call_id",
                              "invalid_tool_arguments", "partial_parallel_results"}
    messages = list(draw(valid_conversations(pending=False, min_turns=1 if needs_exchange or kind in {
        "orphan_tool_result", "empty_assistant"} else 0)))
    exchanges = _exchanges(messages)
    fresh = "call_injected"
    if kind == "orphan_tool_result":
        first = next(i for i, m in enumerate(messages) if m.role not in ("system", "developer"))
        pos = draw(st.integers(first + 1, len(messages)))
        messages.insert(pos, T(fresh))
        return kind, messages, [(kind, pos, fresh)]
    if kind == "leading_tool_result":
        pos = sum(1 for m in messages[:1] if m.role in ("system", "developer"))
        messages.insert(pos, T(fresh))
        return kind, messages, [(kind, pos, fresh)]
    if kind == "empty_assistant":
        answers = [i for i, m in enumerate(messages) if m.role == "assistant" and not m.tool_calls]
        i = draw(st.sampled_from(answers))
        content = draw(st.sampled_from([None, "", " \n\t", []]))
        messages[i] = messages[i].model_copy(update={"content": content})
        return kind, messages, [(kind, i, None)]
    if kind == "partial_parallel_results":
        exchanges = [e for e in exchanges if len(e[1]) >= 2]
    elif kind == "duplicate_tool_call_id" and len(exchanges) < 2:
        # A second result for an answered call: inserted right after the first.
        results = [r for _, rs in exchanges for r in rs]
        r = draw(st.sampled_from(results)) if results else None
        if r is None:
            messages = [U(), AC("c0"), T("c0"), A()]
            r = 2
        messages.insert(r + 1, messages[r])
        return kind, messages, [(kind, r + 1, messages[r].tool_call_id)]
    if not exchanges:
        messages = [U(), AC("c0", "c1"), T("c1"), T("c0"), A()]
        exchanges = _exchanges(messages)
    a, results = draw(st.sampled_from(exchanges))
    calls = messages[a].tool_calls
    if kind == "unanswered_tool_call":
        for r in reversed(results):
            del messages[r]
        return kind, messages, [(kind, a, tc.id) for tc in calls]
    if kind == "partial_parallel_results":
        drop = draw(st.lists(st.sampled_from(results), min_size=1, max_size=len(results) - 1, unique=True))
        dropped_ids = {messages[r].tool_call_id for r in drop}
        for r in sorted(drop, reverse=True):
            del messages[r]
        return kind, messages, [(kind, a, tc.id) for tc in calls if tc.id in dropped_ids]
    if kind == "interrupted_exchange":
        pos = draw(st.integers(a + 1, results[-1]))
        late = [messages[r].tool_call_id for r in results if r >= pos]
        messages.insert(pos, draw(st.sampled_from([U("wait"), A("one moment"), S("note")])))
        return kind, messages, [(kind, pos, call_id) for call_id in late]
    if kind == "invalid_tool_arguments":
        position = draw(st.integers(0, len(calls) - 1))
        bad = draw(st.sampled_from(["{oops", "[1, 2]", "3", "null", "{'a': 1}", '{"a": 1'] ))
        messages[a] = _with_call(messages[a], position, arguments=bad)
        return kind, messages, [(kind, a, calls[position].id)]
    # duplicate_tool_call_id across exchanges: a later call takes an earlier call's id, and so does its result.
    later = draw(st.sampled_from([e for e in exchanges if e[0] > exchanges[0][0]]))
    earlier = draw(st.sampled_from([e for e in exchanges if e[0] < later[0]]))
    old_id = draw(st.sampled_from([tc.id for tc in messages[earlier[0]].tool_calls]))
    position = draw(st.integers(0, len(messages[later[0]].tool_calls) - 1))
    new_id = messages[later[0]].tool_calls[position].id
    messages[later[0]] = _with_call(messages[later[0]], position, id=old_id)
    for r in later[1]:
        if messages[r].tool_call_id == new_id:
            messages[r] = messages[r].model_copy(update={"tool_call_id": old_id})
    return kind, messages, [(kind, later[0], old_id)]


@PROPS
@given(injected_defects())
def test_it_reports_exactly_the_injected_defect(
    case: tuple[str, list[Message], list[tuple[str, int, str | None]]],
) -> None:
    kind, messages, expected = case
    assert sorted(found(messages), key=str) == sorted(expected, key=str)


@PROPS
@given(valid_conversations(pending=False, min_turns=1), st.data())
def test_it_reports_exactly_a_system_message_moved_into_the_middle_for_anthropic(
    messages: list[Message], data: st.DataObject
) -> None:
    first = next(i for i, m in enumerate(messages) if m.role not in ("system", "developer"))
    pos = data.draw(st.integers(first + 1, len(messages)))
    messages = messages[:pos] + [S("late instructions")] + messages[pos:]
    assert found(messages, "anthropic") == [("system_not_first", pos, None)]


@PROPS
@given(valid_conversations(pending=None, max_turns=6), st.sampled_from(PROVIDERS))
def test_it_reports_the_same_violations_fed_one_by_one(messages: list[Message], provider: str) -> None:
    checker = ProtocolChecker(provider)
    for message in messages:
        checker.feed(message)
    violations: list[Violation] = checker.finish()
    assert violations == find_violations(messages, provider)
    assert [v.index for v in violations] == sorted(v.index for v in violations)


_ids = st.sampled_from(["c1", "c2", "c3"])


@st.composite
def any_message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "assistant", "tool", "tool"]))
    if role == "tool":
        return T(draw(_ids))
    if role == "assistant" and draw(st.booleans()):
        return AC(*draw(st.lists(_ids, min_size=1, max_size=3)), args=draw(st.sampled_from(["{}", "", "[", "1"])))
    return Message(role=role, content=draw(st.sampled_from(["", "x", None])))


@PROPS
@given(st.lists(any_message(), max_size=25), st.sampled_from(PROVIDERS))
def test_it_describes_every_violation_of_any_list(messages: list[Message], provider: str) -> None:
    from agents.memory.chain import KIND_HELP

    violations = find_violations(messages, provider)
    assert [v.index for v in violations] == sorted(v.index for v in violations)
    for v in violations:
        assert 0 <= v.index < len(messages) and v.kind in KIND_HELP
        assert v.severity == ("warning" if v.kind in ("pending_tool_call", "consecutive_same_role") else "error")
        assert f"{v.index}" in v.message
        if v.tool_call_id is not None:
            assert v.tool_call_id in v.message
        if provider == "openai":
            assert v.kind not in ("system_not_first", "consecutive_same_role")


@pytest.mark.parametrize(("arguments", "says"), [
    ('{"city": "Paris"} trailing', "extra data"),
    ("[" * 100_000, "nested too deeply"),
    ("true", "a boolean, not an object"),
])
def test_it_explains_why_arguments_are_invalid(arguments: str, says: str) -> None:
    (violation,) = find_violations([U(), AC("c1", args=arguments), T("c1"), A()])
    assert violation.kind == "invalid_tool_arguments" and says in violation.message
