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
