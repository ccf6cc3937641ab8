"""Stitching model calls into one chain: properties over generated agent runs, and the cases they do not reach."""
from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.llm_calls import CapturedCall, call_from_events
from agents.memory.otlp import LogRecord
from agents.memory.schema import Message
from agents.memory.stitch import MemoryChain, Stitcher, message_key, place_call, stitch

# Few distinct texts, so that genuine repeats ("Thanks!" twice) are everywhere in the generated runs.
USER_TEXTS = ["Thanks!", "ok", "What now?", "Again please"]
ASSISTANT_TEXTS = ["Done.", "You're welcome!", "ok"]


@dataclass
class Run:
    """An agent run: the full history, and per call the index in it of the call's reply and of its first new
    message (the previous reply + 1)."""

    history: list[Message]
    replies: list[int]


@st.composite
def runs(draw, max_calls: int = 12) -> Run:
    history = [Message(role="system", content="You are a travel assistant.")]
    replies: list[int] = []
    pending: list[str] = []
    n_calls = draw(st.integers(1, max_calls))
    call_counter = 0
    for _ in range(n_calls):
        if pending:
            order = draw(st.permutations(pending))
            for call_id in order:
                history.append(
                    Message(
                        role="tool",
                        tool_call_id=call_id,
                        content=draw(st.sampled_from(["18°C", "error: no such city", "ok"])),
                    )
                )
            pending = []
            if draw(st.booleans()):
                history.append(Message(role="user", content=draw(st.sampled_from(USER_TEXTS))))
        else:
            history.append(Message(role="user", content=draw(st.sampled_from(USER_TEXTS))))
        if draw(st.booleans()):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_counter += 1
                calls.append(
                    {
                        "id": f"call_{call_counter}",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": json.dumps({"city": draw(st.sampled_from(["Paris", "Rome"]))}),
                        },
                    }
                )
            history.append(Message(role="assistant", tool_calls=calls))
            pending = [c["id"] for c in calls]
        else:
            history.append(Message(role="assistant", content=draw(st.sampled_from(ASSISTANT_TEXTS))))
        replies.append(len(history) - 1)
    return Run(history, replies)


def calls_of(run: Run, keeps: list[int] | None = None) -> list[CapturedCall]:
    """The calls an agent made: each sends the history before its reply, trimmed to the system message plus the
    last ``keeps[i]`` messages when given (at least the previous reply and what came after it)."""
    calls = []
    for i, reply in enumerate(run.replies):
        inputs = run.history[:reply]
        if keeps is not None:
            inputs = inputs[:1] + inputs[1:][-keeps[i]:]
        calls.append(CapturedCall(trace_id="a" * 32, span_id=f"{i + 1:016x}", started_ns=1_000 * (i + 1),
                                  inputs=list(inputs), outputs=[run.history[reply]]))
    return calls


def keys(messages: list[Message]) -> list[str]:
    return [message_key(m) for m in messages]


def placements(stitcher: Stitcher) -> dict[str, tuple[list[int], int | None]]:
    return {c.call.span_id: (c.placement.sent, c.placement.reply) for c in stitcher.calls}


@given(runs())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_it_rebuilds_the_whole_history_once_from_untrimmed_calls(run):
    stitched = stitch(calls_of(run))
    assert keys(stitched.messages) == keys(run.history[: run.replies[-1] + 1])
    for call, reply in zip(stitched.calls, run.replies, strict=False):
        assert call.placement.sent == list(range(reply))
        assert call.placement.reply == reply


@given(runs(), st.data())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_it_rebuilds_the_untrimmed_chain_from_a_trimmed_run(run, data):
    keeps = []
    for i, reply in enumerate(run.replies):
        previous = run.replies[i - 1] if i else 0
        least = reply - previous  # the previous reply and everything after it
        keeps.append(data.draw(st.integers(min(least, reply - 1), max(reply - 1, 1))))
    stitched = stitch(calls_of(run, keeps))
    assert keys(stitched.messages) == keys(run.history[: run.replies[-1] + 1])
    for call, reply, keep in zip(stitched.calls, run.replies, keeps, strict=False):
        kept = list(range(1, reply))[-keep:]
        assert call.placement.sent == [0, *kept]
        assert call.placement.reply == reply


@given(runs(max_calls=8), st.data())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_it_gives_the_same_chain_whatever_the_order_and_repetition_of_arrival(run, data):
    calls = calls_of(run)
    batch = stitch(calls)
    arrivals = data.draw(st.permutations(calls + data.draw(st.lists(st.sampled_from(calls), max_size=4))))
    incremental = Stitcher()
    for call in arrivals:
        incremental.add(call)
    assert keys(incremental.messages) == keys(batch.messages)
    assert placements(incremental) == placements(batch)


@given(runs(max_calls=8))
@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
def test_it_appends_in_order_as_calls_arrive_the_same_as_all_at_once(run):
    calls = calls_of(run)
    incremental = Stitcher()
    seen = []
    for call in calls:
        incremental.add(call)
        seen.append(len(incremental.messages))
    assert keys(incremental.messages) == keys(stitch(calls).messages)
    assert seen == [reply + 1 for reply in run.replies]  # each call only appended: nothing was rolled back


def call(n: int, inputs: list[dict], output: dict | None, **fields) -> CapturedCall:
    return CapturedCall(trace_id=fields.pop("trace_id", "b" * 32), span_id=f"{n:016x}", started_ns=n * 1_000,
                        inputs=[Message.model_validate(m) for m in inputs],
                        outputs=[Message.model_validate(output)] if output else [], **fields)


SYSTEM = {"role": "system", "content": "Be brief."}


def test_it_keeps_a_message_the_user_repeated_and_drops_one_only_resent():
    u1, a1, u2, a2 = ({"role": "user", "content": "Thanks!"}, {"role": "assistant", "content": "You're welcome!"},
                      {"role": "user", "content": "Thanks!"}, {"role": "assistant", "content": "Anytime!"})
    stitched = stitch([call(1, [SYSTEM, u1], a1), call(2, [SYSTEM, u1, a1, u2], a2)])
    assert [m.content for m in stitched.messages] == ["Be brief.", "Thanks!", "You're welcome!", "Thanks!", "Anytime!"]
    assert stitched.calls[1].placement.sent == [0, 1, 2, 3]


def test_it_appends_a_summary_the_framework_inserted_where_it_was_first_sent():
    u1, a1 = {"role": "user", "content": "Plan a trip"}, {"role": "assistant", "content": "Where to?"}
    u2, a2 = {"role": "user", "content": "Rome"}, {"role": "assistant", "content": "Booked."}
    summary = {"role": "system", "content": "Summary: the user plans a trip."}
    stitched = stitch([call(1, [SYSTEM, u1], a1), call(2, [SYSTEM, summary, a1, u2], a2)])
    assert [m.content for m in stitched.messages] == [
        "Be brief.",
        "Plan a trip",
        "Where to?",
        summary["content"],
        "Rome",
        "Booked.",
    ]
    assert stitched.calls[1].placement.sent == [0, 3, 2, 4]


def test_it_keeps_a_changed_system_prompt_as_a_message_of_its_own():
    u1, a1 = {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}
    u2, a2 = {"role": "user", "content": "Time?"}, {"role": "assistant", "content": "Noon."}
    fresh = {"role": "system", "content": "Be brief. It is 12:00."}
    stitched = stitch([call(1, [SYSTEM, u1], a1), call(2, [fresh, u1, a1, u2], a2)])
    assert [m.content for m in stitched.messages] == ["Be brief.", "Hi", "Hello", fresh["content"], "Time?", "Noon."]
    assert stitched.calls[1].placement.sent == [3, 1, 2, 4]


def test_it_matches_tool_arguments_as_json_whatever_their_spacing():
    ask = {"role": "user", "content": "Weather?"}
    out = {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city": "Rome"}'}}],
    }
    resent = {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city":"Rome"}'}}],
    }
    result = {"role": "tool", "tool_call_id": "c1", "content": "24°C"}
    stitched = stitch([call(1, [ask], out), call(2, [ask, resent, result], {"role": "assistant", "content": "24°C."})])
    assert [m.role for m in stitched.messages] == ["user", "assistant", "tool", "assistant"]


def test_it_places_a_call_without_a_reply_and_the_retry_that_resends_it():
    ask = {"role": "user", "content": "Weather?"}
    failed = call(1, [SYSTEM, ask], None, error="timeout")
    retried = call(2, [SYSTEM, ask], {"role": "assistant", "content": "Sunny."})
    stitched = stitch([retried, failed])
    assert [m.content for m in stitched.messages] == ["Be brief.", "Weather?", "Sunny."]
    assert stitched.calls[0].placement.reply is None
    assert stitched.calls[1].placement.sent == [0, 1]


def test_it_ignores_a_call_without_content_and_one_seen_twice():
    stitcher = Stitcher()
    assert stitcher.add(CapturedCall(trace_id="c" * 32, span_id="1" * 16, started_ns=5)) is False
    first = call(2, [SYSTEM], {"role": "assistant", "content": "Hi"})
    assert stitcher.add(first) is True
    assert stitcher.add(first) is False
    assert len(stitcher.messages) == 2


def test_it_stitches_a_session_that_spans_several_traces():
    u1, a1 = {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}
    u2, a2 = {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Bye!"}
    stitched = stitch(
        [call(2, [SYSTEM, u1, a1, u2], a2, trace_id="e" * 32), call(1, [SYSTEM, u1], a1, trace_id="d" * 32)]
    )
    assert [m.content for m in stitched.messages] == ["Be brief.", "Hi", "Hello", "Bye", "Bye!"]


def test_placing_a_call_looks_up_only_the_keys_it_carries():
    class CountingChain(MemoryChain):
        looked_up = 0

        def positions(self, keys):
            CountingChain.looked_up += len(keys)
            return super().positions(keys)

    chain = CountingChain()
    chain.append([Message(role="user", content=f"message {i}") for i in range(5_000)])
    placement = place_call(
        chain, [Message(role="user", content="message 4999")], [Message(role="assistant", content="ok")]
    )
    assert placement.sent == [4999] and placement.reply == 5000
    assert CountingChain.looked_up == 1


def test_it_places_a_call_again_when_the_rest_of_its_log_events_arrives():
    """An exporter may send one call's log events in two batches: the inputs first, the reply later."""
    def record(n: int, name: str, body: dict) -> LogRecord:
        return LogRecord(trace_id="f" * 32, span_id="2" * 16, time_ns=5_000 + n, event_name=name, body=body,
                         attributes={}, resource={}, scope="x", order=n)

    first_call = call(1, [SYSTEM, {"role": "user", "content": "Hi"}], {"role": "assistant", "content": "Hello"})
    events = [
        record(0, "gen_ai.system.message", {"content": "Be brief."}),
        record(1, "gen_ai.user.message", {"content": "Hi"}),
        record(2, "gen_ai.assistant.message", {"content": "Hello"}),
        record(3, "gen_ai.user.message", {"content": "Bye"}),
        record(4, "gen_ai.choice", {"index": 0, "message": {"content": "Bye!"}}),
    ]
    halves = [call_from_events("f" * 32, "2" * 16, events[:2]), call_from_events("f" * 32, "2" * 16, events[2:])]
    whole = call_from_events("f" * 32, "2" * 16, events)
    for order in (halves, halves[::-1]):
        stitcher = Stitcher()
        stitcher.add(first_call)
        for half in order:
            stitcher.add(half)
        assert [m.content for m in stitcher.messages] == ["Be brief.", "Hi", "Hello", "Bye", "Bye!"]
        assert keys(stitcher.messages) == keys(stitch([first_call, whole]).messages)
        assert stitcher.calls[1].placement.sent == [0, 1, 2, 3]


def test_it_waits_for_the_content_of_a_call_seen_first_without_it():
    stitcher = Stitcher()
    bare = CapturedCall(trace_id="c" * 32, span_id="3" * 16, started_ns=5, model="gpt-4o", usage={"input_tokens": 3})
    assert stitcher.add(bare) is False
    content = CapturedCall(
        trace_id="c" * 32,
        span_id="3" * 16,
        observed_ns=6,
        inputs=[Message(role="user", content="Hi")],
        outputs=[Message(role="assistant", content="Hello")],
    )
    assert stitcher.add(content) is True
    assert stitcher.calls[0].call.model == "gpt-4o" and stitcher.calls[0].call.started_ns == 5
