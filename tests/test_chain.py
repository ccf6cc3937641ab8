from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory.chain import ResultPlace, find_violations, group_blocks, group_turns, place_results
from agents.memory.schema import FunctionCall, Message, ToolCall, parse_messages
from tests.paths import SAMPLES
from tests.strategies_messages import valid_conversations

PROPS = settings(max_examples=150, deadline=None)


def U(text: str = "hi") -> Message:
    return Message(role="user", content=text)


def A(text: str = "done") -> Message:
    return Message(role="assistant", content=text)


def AC(*ids: str, name: str = "get_weather") -> Message:
    return Message(
        role="assistant",
        tool_calls=[ToolCall(id=i, function=FunctionCall(name=name, arguments="{}")) for i in ids],
    )


def T(call_id: str) -> Message:
    return Message(role="tool", tool_call_id=call_id, content="ok")


def shape(messages: list[Message]) -> list[tuple[str, list[int]]]:
    return [(b.kind, b.indices) for b in group_blocks(messages)]


def test_it_groups_the_sample_into_the_blocks_a_person_reads() -> None:
    messages = parse_messages(json.loads((SAMPLES / "openai" / "travel.json").read_text()))
    blocks = group_blocks(messages)
    assert [(b.kind, b.indices) for b in blocks] == [
        ("system", [0]), ("user", [1]), ("tool_exchange", [2, 3, 4]), ("assistant", [5]),
        ("user", [6]), ("tool_exchange", [7, 8]), ("assistant", [9]),
    ]
    parallel = blocks[2]
    assert [(c.call_index, c.tool_call.id, c.result_indices, c.late) for c in parallel.calls] == [
        (0, "call_a1", [3], False), (1, "call_a2", [4], False),
    ]


def test_it_pairs_results_with_calls_by_id_in_call_order() -> None:
    (block,) = group_blocks([AC("c1", "c2", "c3"), T("c3"), T("c1"), T("c2")])[:1]
    assert [(c.tool_call.id, c.result_index) for c in block.calls] == [("c1", 2), ("c2", 3), ("c3", 1)]
    assert block.indices == [0, 1, 2, 3]


def test_it_shows_a_missing_result_as_an_empty_slot() -> None:
    blocks = group_blocks([U(), AC("c1", "c2"), T("c2"), A()])
    assert [(c.tool_call.id, c.result_indices) for c in blocks[1].calls] == [("c1", []), ("c2", [2])]
    assert blocks[1].calls[0].result_index is None


def test_it_keeps_a_late_result_with_its_call_and_marks_it_late() -> None:
    messages = [U(), AC("c1", "c2"), T("c1"), U("wait"), T("c2"), A()]
    assert shape(messages) == [("user", [0]), ("tool_exchange", [1, 2, 4]), ("user", [3]), ("assistant", [5])]
    calls = group_blocks(messages)[1].calls
    assert [(c.result_indices, c.late) for c in calls] == [([2], False), ([4], True)]


def test_it_collects_a_repeated_result_under_its_call() -> None:
    calls = group_blocks([AC("c1"), T("c1"), T("c1")])[0].calls
    assert calls[0].result_indices == [1, 2]


def test_it_gives_a_result_without_a_call_its_own_block() -> None:
    assert shape([T("x"), U(), T("y"), A()]) == [
        ("tool_result", [0]),
        ("user", [1]),
        ("tool_result", [2]),
        ("assistant", [3]),
    ]


def test_it_puts_a_result_that_precedes_its_call_on_its_own() -> None:
    assert shape([U(), T("c1"), AC("c1")]) == [("user", [0]), ("tool_result", [1]), ("tool_exchange", [2])]


def test_it_pairs_a_reused_call_id_with_the_latest_call() -> None:
    blocks = group_blocks([AC("c1"), T("c1"), AC("c1"), T("c1")])
    assert [(b.indices, b.calls[0].result_indices) for b in blocks] == [([0, 1], [1]), ([2, 3], [3])]


def test_it_shows_system_and_developer_messages_as_system_blocks() -> None:
    messages = [Message(role="developer", content="d"), Message(role="system", content="s"), U()]
    assert [b.kind for b in group_blocks(messages)] == ["system", "system", "user"]


def test_it_turns_blocks_into_plain_dicts() -> None:
    block = group_blocks([AC("c1", name="search"), T("c1")])[0]
    assert block.to_dict() == {
        "kind": "tool_exchange", "start": 0, "indices": [0, 1],
        "calls": [{"call_index": 0, "tool_call_id": "c1", "name": "search", "result_indices": [1], "late": False}],
    }


def test_it_groups_turns_from_each_user_message() -> None:
    messages = parse_messages(json.loads((SAMPLES / "openai" / "travel.json").read_text()))
    turns = group_turns(messages)
    assert [(t.index, t.user_index, t.indices) for t in turns] == [
        (0, None, [0]), (1, 1, [1, 2, 3, 4, 5]), (2, 6, [6, 7, 8, 9]),
    ]


def test_it_has_no_turns_for_an_empty_list() -> None:
    assert group_turns([]) == [] and group_blocks([]) == []


# ---- properties --------------------------------------------------------------------------------------------------

_ids = st.sampled_from(["c1", "c2", "c3", "c4"])


@st.composite
def any_message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "assistant", "tool", "tool"]))
    if role == "tool":
        return T(draw(_ids))
    if role == "assistant" and draw(st.booleans()):
        return AC(*draw(st.lists(_ids, min_size=1, max_size=3)))
    return Message(role=role, content=draw(st.text(max_size=5)))


# Lists of any shape, broken ones included: ids from a small pool so that calls, late, repeated and orphan
# results all happen.
any_lists = st.lists(any_message(), max_size=30)


@PROPS
@given(st.one_of(any_lists, valid_conversations(pending=None)))
def test_it_puts_every_message_in_exactly_one_block_in_order(messages: list[Message]) -> None:
    blocks = group_blocks(messages)
    indices = [i for b in blocks for i in b.indices]
    assert sorted(indices) == list(range(len(messages)))
    assert [b.start for b in blocks] == sorted(b.start for b in blocks)
    for b in blocks:
        assert b.indices == sorted(b.indices) and b.start == b.indices[0]
        first = messages[b.start]
        if b.kind == "tool_exchange":
            assert first.role == "assistant" and first.tool_calls
            assert [c.tool_call for c in b.calls] == first.tool_calls
            paired = [r for c in b.calls for r in c.result_indices]
            assert sorted(paired) == b.indices[1:]
            assert all(messages[r].tool_call_id == c.tool_call.id for c in b.calls for r in c.result_indices)
        else:
            assert len(b.indices) == 1 and not b.calls
            assert b.kind == {"developer": "system", "tool": "tool_result"}.get(first.role, first.role)


@PROPS
@given(any_lists)
def test_it_leaves_alone_exactly_the_results_the_checker_calls_orphans(messages: list[Message]) -> None:
    alone = [b.start for b in group_blocks(messages) if b.kind == "tool_result"]
    orphans = sorted(
        v.index for v in find_violations(messages) if v.kind in ("orphan_tool_result", "leading_tool_result")
    )
    assert alone == orphans


@PROPS
@given(valid_conversations(pending=False))
def test_it_pairs_every_call_of_a_valid_list_with_one_result_in_place(messages: list[Message]) -> None:
    for b in group_blocks(messages):
        assert b.kind != "tool_result"
        if b.kind == "tool_exchange":
            assert all(len(c.result_indices) == 1 and not c.late for c in b.calls)
            assert b.indices == list(range(b.start, b.start + len(b.calls) + 1))


@PROPS
@given(st.one_of(any_lists, valid_conversations(pending=None)))
def test_it_splits_the_list_into_turns_without_loss(messages: list[Message]) -> None:
    turns = group_turns(messages)
    assert [i for t in turns for i in t.indices] == list(range(len(messages)))
    assert [t.index for t in turns] == list(range(len(turns)))
    for t in turns:
        users = [i for i in t.indices if messages[i].role == "user"]
        assert users == ([t.user_index] if t.user_index is not None else [])
        assert t.user_index in (None, t.indices[0])
    assert sum(1 for t in turns if t.user_index is not None) == sum(1 for m in messages if m.role == "user")


def test_it_places_results_under_their_call_and_points_late_ones_at_it() -> None:
    messages = [U(), AC("c1", "c2", name="search"), T("c2"), T("x"), T("c1"), U("wait"), T("c1"), AC("c3"), T("c1")]
    asked: list[set[str]] = []

    def calls_outside(ids: set[str]) -> dict[str, list[tuple[int, str]]]:
        asked.append(ids)
        return {}

    placed = place_results(messages, calls_outside=calls_outside)
    assert placed == {
        2: ResultPlace("search", True, None),
        3: ResultPlace("", False, None),  # no call of that id anywhere
        4: ResultPlace("search", True, None),  # a stray result in between does not close the exchange
        6: ResultPlace("search", False, 1),  # a second result, after the exchange closed: linked to its call
        8: ResultPlace("search", False, 1),  # under another call's exchange, but answering the earlier one
    }
    assert asked == [{"x"}]


def test_it_asks_once_for_the_calls_of_results_outside_the_window_and_picks_the_latest_before() -> None:
    whole = [U(), AC("c1"), T("c1"), U(), AC("c1", name="again"), T("c1"), T("c9"), U(), AC("c9", name="later")]
    outside = {"c1": [(1, "get_weather"), (4, "again")], "c9": [(8, "later")]}
    asked: list[set[str]] = []

    def calls_outside(ids: set[str]) -> dict[str, list[tuple[int, str]]]:
        asked.append(ids)
        return {i: outside[i] for i in ids}

    placed = place_results(whole[5:7], start=5, calls_outside=calls_outside)
    assert placed == {5: ResultPlace("again", False, 4), 6: ResultPlace("later", False, 8)}  # before its call
    assert asked == [{"c1", "c9"}]
    asked.clear()
    assert place_results(whole[:3], calls_outside=calls_outside) == {2: ResultPlace("get_weather", True, None)}
    assert asked == []  # every result has its call on the page: no lookup


@PROPS
@given(valid_conversations(), st.data())
def test_it_places_each_result_of_a_window_as_the_whole_list_does(messages: list[Message], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(messages)))
    end = data.draw(st.integers(start, len(messages)))
    calls: dict[str, list[tuple[int, str]]] = {}
    for i, m in enumerate(messages):
        for tc in m.tool_calls:
            calls.setdefault(tc.id, []).append((i, tc.function.name))
    whole = place_results(messages)
    window = place_results(messages[start:end], start=start,
                           calls_outside=lambda ids: {i: calls[i] for i in ids if i in calls})
    assert sorted(window) == [i for i in range(start, end) if messages[i].role == "tool"]
    for i, place in window.items():
        assert place.call_name == whole[i].call_name
        if place.in_exchange:
            assert whole[i].in_exchange
        else:
            assert place.call_index is not None and messages[place.call_index].tool_calls
