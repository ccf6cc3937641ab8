"""A strategy that says it reads no text (``reads_text=False``) decides on a stored list's outlines exactly as on
its messages, and reads no content to decide: the trimmed list's contents are read when it is read, and only
the kept messages' (stored.py)."""
from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.replay import replay, replay_call
from agents.memory.schema import Message
from agents.memory.stored import StoredMessages, TrimmedMessages, has_content, outline
from agents.memory.tokens import count_messages
from agents.memory.trimming import STRATEGIES, strategy_spec, trim
from tests.strategies_messages import conversations, strategy_and_params

TEXT_FREE = sorted(s.name for s in STRATEGIES.values() if not s.reads_text)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Loads:
    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.read: list[int] = []

    def __call__(self, indices: Sequence[int]) -> dict[int, Message]:
        self.read.extend(indices)
        return {i: self.messages[i] for i in indices}


def stored(messages: Sequence[Message], batch: int = 3) -> tuple[StoredMessages, Loads]:
    loads = Loads(messages)
    outlines = [
        outline(role=m.role, has_text=has_content(m.content), name=m.name, tool_call_id=m.tool_call_id,
                tool_calls=[c.model_dump() for c in m.tool_calls], is_error=m.is_error)
        for m in messages
    ]
    return StoredMessages(outlines, loads, batch=batch), loads


def test_it_names_the_strategies_that_decide_without_text():
    assert {"buffered", "token_limited", "langchain_last", "safe_token_budget", "unbounded"} <= set(TEXT_FREE)
    assert STRATEGIES["llamaindex_buffer"].reads_text
    assert STRATEGIES["strip_thoughts"].reads_text


@SETTINGS
@given(conversations, st.data(), st.sampled_from(["approx", "cl100k"]))
def test_it_trims_outlines_as_it_trims_the_messages(messages: list[Message], data: st.DataObject, counter: str):
    counts = count_messages(messages, counter)
    name, params = data.draw(strategy_and_params(sum(counts) + 3, TEXT_FREE))
    spec = strategy_spec(name, params)
    expected = trim(messages, spec, counter=counter, token_counts=counts)
    lazy, loads = stored(messages)

    result = trim(lazy, spec, counter=counter, token_counts=counts)

    assert isinstance(result.messages, TrimmedMessages)
    assert loads.read == []  # decided, and its violations found, without one content
    assert result.to_dict() == expected.to_dict()
    assert sorted(set(loads.read)) == sorted(loads.read) == result.kept  # then the kept ones, once each


@SETTINGS
@given(conversations, st.data())
def test_it_reads_every_message_for_a_strategy_that_reads_text(messages: list[Message], data: st.DataObject):
    counts = count_messages(messages, "approx")
    reading = sorted(s.name for s in STRATEGIES.values() if s.reads_text and s.name in {
        "llamaindex_buffer", "strip_thoughts", "langchain_clear_tool_uses", "openai_tool_output_trimmer"})
    name, params = data.draw(strategy_and_params(sum(counts) + 3, reading))
    spec = strategy_spec(name, params)
    lazy, _ = stored(messages)
    assert trim(lazy, spec, counter="approx", token_counts=counts).to_dict() == \
        trim(messages, spec, counter="approx", token_counts=counts).to_dict()


def test_it_reads_a_stored_list_in_batches_in_order():
    messages = [Message(role="user", content=f"m{i}") for i in range(10)]
    lazy, loads = stored(messages, batch=4)
    assert lazy[2].content == "m2" and loads.read == [2, 3, 4, 5]
    assert [m.content for m in lazy] == [f"m{i}" for i in range(10)]
    assert sorted(loads.read) == list(range(10))
    assert lazy[-1].content == "m9" and lazy[3:5] == messages[3:5]


def test_it_reads_a_stored_list_from_the_end_back_in_batches_too():
    messages = [Message(role="user", content=f"m{i}") for i in range(10)]
    lazy, loads = stored(messages, batch=4)
    calls = []
    lazy._load = lambda indices: (calls.append(list(indices)), loads(indices))[1]  # type: ignore[method-assign]
    assert [lazy[i].content for i in range(9, -1, -1)] == [f"m{i}" for i in range(9, -1, -1)]
    # The last message with the batch after it (none), then each batch before the one read: 4 reads, not 10.
    assert calls == [[9], [5, 6, 7, 8], [1, 2, 3, 4], [0]]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations, st.data())
def test_it_replays_outlines_as_it_replays_the_messages(messages: list[Message], data: st.DataObject):
    """The lab's replay of a stored session runs on its outlines for these strategies (lab.trimming.session_replay):
    every call of the run, and what any one call sent, come out as on the whole messages."""
    counts = count_messages(messages, "approx")
    name, params = data.draw(strategy_and_params(sum(counts) + 3, TEXT_FREE))
    spec = strategy_spec(name, params)
    lazy, loads = stored(messages)

    run = replay(lazy.outlines, spec, counter="approx", token_counts=counts)

    assert run == replay(messages, spec, counter="approx", token_counts=counts)
    call = data.draw(st.sampled_from([s.call for s in run.steps]))
    on_outlines = replay_call(lazy.outlines, spec, call=call, counter="approx", token_counts=counts).to_dict()
    on_messages = replay_call(messages, spec, call=call, counter="approx", token_counts=counts).to_dict()
    assert loads.read == []
    # The same decision; the messages sent are the outlines' (their texts are read where a page shows them).
    assert {k: v for k, v in on_outlines.items() if k != "messages"} == \
        {k: v for k, v in on_messages.items() if k != "messages"}
    assert [m["role"] for m in on_outlines["messages"]] == [m["role"] for m in on_messages["messages"]]


def test_it_reads_the_head_of_a_stored_list_through_the_same_loads():
    messages = [Message(role="user", content=f"m{i}") for i in range(10)]
    lazy, loads = stored(messages, batch=4)
    head = lazy.head(6)
    assert len(head) == 6 and head.outlines == lazy.outlines[:6] and lazy.head(10) is lazy
    assert head[4].content == "m4" and loads.read == [4, 5]  # never past its end
    assert lazy[5].content == "m5" and loads.read == [4, 5]  # what one read, the other has
