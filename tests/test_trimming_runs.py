"""A trim that drops whole ranges for one reason holds its drops as runs (trimming/runs.py): nothing is built per
dropped message until something reads them one by one, and every answer is the same as from the per-message list."""
from __future__ import annotations

import pickle

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.schema import Message
from agents.memory.tokens import count_messages
from agents.memory.trimming import Dropped, strategy_spec, trim
from agents.memory.trimming.runs import DroppedRuns, ReasonRuns, gaps_of, spans_of
from tests.conversations import chat
from tests.strategies_messages import conversations


def long_session() -> list[Message]:
    return [Message.model_validate(m) for m in chat(500)]


def test_it_explains_a_long_trim_in_a_few_runs_without_an_object_per_dropped_message():
    messages = long_session()
    counts = count_messages(messages, "approx")
    result = trim(messages, strategy_spec("langchain_last", {"max_tokens": 300}), counter="approx",
                  token_counts=counts)

    assert isinstance(result.dropped, DroppedRuns) and result.dropped._items is None
    assert len(result.dropped) == len(messages) - len(result.kept) > 1_900
    assert len(result.dropped_runs()) <= 3 and result.dropped._items is None  # the runs answer, nothing built
    assert [d.index for d in result.dropped] == sorted(set(range(len(messages))) - set(result.kept))
    assert result.dropped == [Dropped(d.index, d.reason) for d in result.dropped]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations, st.data())
def test_it_answers_from_runs_as_from_the_per_message_list(messages: list[Message], data: st.DataObject):
    counts = count_messages(messages, "approx")
    params = {
        "max_tokens": data.draw(st.integers(0, sum(counts) + 5)),
        "include_system": data.draw(st.booleans()),
        "start_on": data.draw(st.sampled_from([None, "human", ["human", "ai"]])),
        "end_on": data.draw(st.sampled_from([None, "ai", ["human", "tool"]])),
    }
    result = trim(messages, strategy_spec("langchain_last", params), counter="approx", token_counts=counts)
    listed = list(result.dropped)
    from_list = type(result)(**{**result.__dict__, "dropped": listed})

    assert sorted(result.kept + [d.index for d in listed]) == list(range(len(messages)))
    assert result.dropped_runs() == from_list.dropped_runs()
    assert result.explanation() == from_list.explanation()
    assert result.to_dict() == from_list.to_dict()
    assert pickle.loads(pickle.dumps(result)).dropped == listed  # the trim cache keeps it


def test_a_strategy_may_change_runs_like_the_dict_they_stand_for():
    runs = ReasonRuns.over(gaps_of(spans_of([2, 3, 7]), 10), "gone")
    assert list(runs) == [0, 1, 4, 5, 6, 8, 9] and runs[5] == "gone" and 3 not in runs and len(runs) == 7
    runs[3] = "also gone"
    del runs[9]
    assert runs.runs() == [(0, 2, "gone"), (3, 4, "also gone"), (4, 7, "gone"), (8, 9, "gone")]


# ---------------------------------------------------------------------------------------------------------------
# Grouping at C speed (tool_runs), and the result's parts made when first read


def _units(roles: list[str]) -> list[list[int]]:
    """The grouping AutoGen and Strands hold, written plainly: a run of tool results is one unit."""
    units: list[list[int]] = []
    for i, role in enumerate(roles):
        if role == "tool" and units and roles[units[-1][-1]] == "tool":
            units[-1].append(i)
        else:
            units.append([i])
    return units


roles_lists = st.lists(st.sampled_from(["system", "developer", "user", "assistant", "tool", "tool", "tool"]),
                       max_size=60)


@settings(max_examples=300, deadline=None)
@given(roles_lists, st.integers(0, 70))
def test_tool_runs_find_what_the_plain_grouping_finds(roles: list[str], count: int):
    from types import SimpleNamespace

    from agents.memory.trimming import tool_runs

    messages = [SimpleNamespace(role=r) for r in roles]
    units = _units(roles)
    c = tool_runs.codes(messages)

    assert tool_runs.unit_count(c) == len(units)
    assert tool_runs.unit_starts(c) == [u[0] for u in units]
    assert tool_runs.codes(messages, 2, 9, backwards=True) == c[2:9][::-1]
    assert tool_runs.units_end(c, count) == (units[count - 1][-1] + 1 if 0 < count <= len(units) else
                                             0 if count == 0 else None)
    assert tool_runs.last_units_start(messages, count) == (
        len(roles) if count == 0 else units[-count][0] if count <= len(units) else 0)
    assert [tool_runs.run_end(c, u[0]) for u in units] == [u[-1] + 1 for u in units]

    # A Grouped list holds the same grouping, found once; the codes of a part are sliced from it.
    grouped = tool_runs.Grouped(messages)
    assert grouped.codes == c and list(grouped.starts) == [u[0] for u in units]
    assert tool_runs.codes(grouped, 2, 9, backwards=True) == c[2:9][::-1]
    assert tool_runs.codes(grouped, 3) == c[3:] and tuple(grouped) == tuple(messages)
    assert tool_runs.last_units_start(c, count) == tool_runs.last_units_start(messages, count)
    copy = pickle.loads(pickle.dumps(tool_runs.Grouped(Message(role=r, content="x") if r != "tool" else
                                                       Message(role="tool", tool_call_id="c", content="x")
                                                       for r in roles)))
    assert copy.codes == c and list(copy.starts) == [u[0] for u in units]


@settings(max_examples=300, deadline=None)
@given(roles_lists, st.integers(0, 8), st.integers(0, 70))
def test_a_view_finds_its_units_in_a_grouped_list_past_the_pinned_messages(roles: list[str], lead: int, count: int):
    """The view of a Grouped input (after ``lead`` pinned system messages) finds the same units in the list's
    starts as in the roles of its own messages."""
    from types import SimpleNamespace

    from agents.memory.tokens import get_counter
    from agents.memory.trimming import tool_runs
    from agents.memory.trimming.registry import View

    everything = tool_runs.Grouped(SimpleNamespace(role=r) for r in ["system"] * lead + roles)
    body = list(everything[lead:])

    def view(**known: object) -> View:
        return View(messages=body, counts=[0] * len(body), per_list=0, pinned_tokens=0,
                    counter=get_counter("messages"), offset=lead, **known)  # type: ignore[arg-type]

    grouped, plain = view(known_codes=everything.codes[lead:], known_starts=everything.starts), view()
    units = _units(roles)
    assert grouped.unit_count() == plain.unit_count() == len(units)
    assert grouped.units_end(count) == plain.units_end(count)
    assert grouped.last_units_start(count) == plain.last_units_start(count) == (
        len(roles) if count == 0 else units[-count][0] if count <= len(units) else 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_grouped_history_trims_as_the_same_list(data: st.DataObject):
    """Every strategy keeps, drops, inserts and explains the same for a Grouped history (a tuple, its units found
    once) with a tuple of counts, which trim shares, as for the same messages in a list, which it copies."""
    from agents.memory.trimming.tool_runs import Grouped
    from tests.strategies_messages import strategy_and_params

    messages = data.draw(conversations)
    counts = count_messages(messages, "approx")
    name, params = data.draw(strategy_and_params(sum(counts)))
    spec = strategy_spec(name, params)
    plain = trim(list(messages), spec, counter="approx", token_counts=list(counts))
    grouped = trim(Grouped(messages), spec, counter="approx", token_counts=tuple(counts))
    assert (grouped.kept, list(grouped.dropped), grouped.inserted, grouped.notes, grouped.kept_reasons) == (
        plain.kept, list(plain.dropped), plain.inserted, plain.notes, plain.kept_reasons)
    assert list(grouped.messages) == list(plain.messages)
    assert (grouped.tokens_before, grouped.tokens_after, grouped.message_tokens, grouped.sources) == (
        plain.tokens_before, plain.tokens_after, plain.message_tokens, plain.sources)
    assert grouped.violations == plain.violations


def test_the_last_units_are_found_past_long_runs_of_tool_results():
    from types import SimpleNamespace

    from agents.memory.trimming import tool_runs

    roles = (["user", "assistant"] + ["tool"] * 50) * 20 + ["assistant"]
    messages = [SimpleNamespace(role=r) for r in roles]
    units = _units(roles)
    for count in (1, 2, 3, 10, 59, 60, 61):
        assert tool_runs.last_units_start(messages, count) == (units[-count][0] if count <= len(units) else 0)


def test_a_result_makes_its_explanations_when_first_read_and_pickles_them_made():
    from agents.memory.trimming.runs import Later

    messages = [Message(role="system", content="Use the tools.")]
    for k in range(200):  # each exchange answered by two tool results: AutoGen holds them as one message
        messages += [
            Message(role="user", content=f"Question {k}"),
            Message.model_validate({"role": "assistant", "tool_calls": [
                {"id": f"c{k}_{j}", "function": {"name": "f", "arguments": "{}"}} for j in range(2)]}),
            *(Message(role="tool", tool_call_id=f"c{k}_{j}", content="ok") for j in range(2)),
            Message(role="assistant", content=f"Answer {k}"),
        ]
    counts = count_messages(messages, "approx")
    result = trim(messages, strategy_spec("buffered", {"buffer_size": 40}), counter="approx", token_counts=counts)
    waiting = [name for name, value in result.__dict__.items() if isinstance(value, Later)]
    assert {"kept", "kept_reasons", "sources", "tokens_before", "tokens_after", "notes"} <= set(waiting)
    assert isinstance(result.messages, list)  # the trimmed list itself is made by trim

    copy = pickle.loads(pickle.dumps(result))
    assert not any(isinstance(value, Later) for value in copy.__dict__.values())
    assert copy == result
    assert result.kept == [0, *range(result.kept[1], len(messages))]  # the system prompt pinned, then the window
    assert result.sources == result.kept and result.tokens_before == sum(counts) + 3
    assert result.tokens_after == sum(counts[i] for i in result.kept) + 3
    assert result.notes == ["AutoGen stores the results of one call message as one message: 1,000 messages here are "
                            "800 AutoGen messages."]
    assert not any(isinstance(value, Later) for value in result.__dict__.values())


@settings(max_examples=200, deadline=None)
@given(roles_lists.filter(bool), st.data())
def test_strands_finds_each_of_its_messages_in_any_order_of_asking(roles: list[str], data: st.DataObject):
    from types import SimpleNamespace

    from agents.memory.tokens import get_counter
    from agents.memory.trimming.registry import View
    from agents.memory.trimming.strands import Units

    view = View(messages=[SimpleNamespace(role=r) for r in roles], counts=[0] * len(roles),  # type: ignore[misc]
                per_list=0, pinned_tokens=0, counter=get_counter("messages"))  # only the roles are read
    units = _units(roles)
    found = Units(view)
    asked = data.draw(st.lists(st.integers(0, len(units) - 1), max_size=80))
    assert [found.start(u) for u in asked] == [units[u][0] for u in asked]
    assert [found.stop(u) for u in asked] == [units[u][-1] + 1 for u in asked]
    assert len(found) == len(units) and found.starts == [u[0] for u in units]


@given(st.lists(st.sampled_from(["system", "developer", "user", "assistant", "tool"]), max_size=40),
       st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
def test_the_last_message_of_a_role_is_found_in_a_grouped_list_as_in_the_list(roles, role):
    from agents.memory.stored import outline
    from agents.memory.trimming.tool_runs import Grouped, last_of_role

    messages = [outline(role=r, has_text=True, tool_call_id="c" if r == "tool" else None) for r in roles]
    expected = max((i for i, r in enumerate(roles) if r == role), default=None)
    assert last_of_role(messages, role) == last_of_role(Grouped(messages), role) == expected
