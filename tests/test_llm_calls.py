"""Reading model calls out of spans and log records, one convention at a time, and where each call belongs.

The attribute shapes here are those the real packages were seen to write (tests/test_otel_clients.py drives the
packages themselves); these tests pin the edges the scripted conversation does not reach.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace

import pytest

from agents.memory.llm_calls import SpanLink, call_from_events, call_from_span, extract, merge_calls, resolve
from agents.memory.otlp import Batch, LogRecord, Span

TRACE = "ab" * 16


def span(span_id: str = "01" * 8, attributes: dict | None = None, *, parent: str | None = None,
         resource: dict | None = None, name: str = "chat gpt-4o", **fields) -> Span:
    return Span(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=1_000,
        end_ns=2_000,
        attributes=attributes or {},
        resource=resource or {"service.name": "travel-agent"},
        scope="test",
        **fields,
    )


def openai(messages) -> list[dict]:
    return [m.to_openai() for m in messages]


def test_it_reads_the_current_genai_attributes_with_system_instructions_and_parts():
    call = call_from_span(
        span(
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": 7,
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
                "gen_ai.input.messages": json.dumps(
                    [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Look"},
                                {"type": "uri", "modality": "image", "uri": "https://x/y.png"},
                            ],
                        },
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "reasoning", "content": "need the weather"},
                                {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Rome"}},
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {"type": "tool_call_response", "id": "c1", "response": {"temp": 24}},
                                {"type": "tool_call_response", "id": "c2", "response": "late"},
                            ],
                        },
                    ]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "24°C"}], "finish_reason": "stop"}]
                ),
            }
        )
    )
    assert call.convention == "genai"
    assert call.model == "gpt-4o-2024-08-06"
    assert call.usage == {"input_tokens": 50, "output_tokens": 7}
    assert openai(call.inputs) == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "uri", "modality": "image", "uri": "https://x/y.png"},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}
            ],
        },
        {"role": "tool", "content": '{"temp": 24}', "tool_call_id": "c1"},
        {"role": "tool", "content": "late", "tool_call_id": "c2"},
    ]
    assert call.inputs[2].reasoning == "need the weather"
    assert openai(call.outputs) == [{"role": "assistant", "content": "24°C"}]
    assert call.outputs[0].usage == {"input_tokens": 50, "output_tokens": 7}


def test_it_reads_openinference_flattened_messages_with_content_parts():
    call = call_from_span(span(name="ChatOpenAI", attributes={
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 10, "llm.token_count.completion": 2, "llm.token_count.total": 12,
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.type": "text",
        "llm.input_messages.0.message.contents.0.message_content.text": "What is this?",
        "llm.input_messages.0.message.contents.1.message_content.type": "image",
        "llm.input_messages.0.message.contents.1.message_content.image.image.url": "https://x/y.png",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c1",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "look",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": "{}",
        "llm.input_messages.10.message.role": "tool",
        "llm.input_messages.10.message.tool_call_id": "c1",
        "llm.input_messages.10.message.content": "a cat",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "A cat.",
    }))
    assert call.convention == "openinference"
    assert call.usage == {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
    assert openai(call.inputs) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "a cat", "tool_call_id": "c1"},
    ]
    assert openai(call.outputs) == [{"role": "assistant", "content": "A cat."}]


def test_it_reads_openllmetry_prompt_and_completion_attributes():
    call = call_from_span(
        span(
            name="openai.chat",
            attributes={
                "llm.request.type": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": json.dumps(
                    [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]
                ),
                "gen_ai.prompt.1.role": "assistant",
                "gen_ai.prompt.1.tool_calls.0.id": "c1",
                "gen_ai.prompt.1.tool_calls.0.name": "w",
                "gen_ai.prompt.1.tool_calls.0.arguments": '{"city": "Rome"}',
                "gen_ai.prompt.2.role": "tool",
                "gen_ai.prompt.2.content": "[1, 2]",
                "gen_ai.prompt.2.tool_call_id": "c1",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "Done",
                "gen_ai.completion.0.finish_reason": "stop",
                "llm.usage.total_tokens": 9,
            },
        )
    )
    assert call.convention == "openllmetry"
    assert openai(call.inputs) == [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city": "Rome"}'}}
            ],
        },
        {"role": "tool", "content": "[1, 2]", "tool_call_id": "c1"},  # a JSON list that is not content parts stays text
    ]
    assert call.usage == {"total_tokens": 9}


def test_it_reads_the_older_genai_log_events_in_the_order_they_were_emitted_and_joins_them_to_their_span():
    def record(order: int, name: str, body) -> LogRecord:
        return LogRecord(
            trace_id=TRACE,
            span_id="01" * 8,
            time_ns=100 + order,
            event_name=name,
            body=body,
            attributes={"gen_ai.system": "openai"},
            resource={"service.name": "travel-agent"},
            scope="x",
            order=order,
        )

    tool_call = {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city": "Rome"}'}}
    logs = [
        record(0, "gen_ai.system.message", {"content": "Be brief."}),
        record(1, "gen_ai.user.message", {"content": "Weather?"}),
        record(2, "gen_ai.assistant.message", {"tool_calls": [tool_call]}),
        record(3, "gen_ai.tool.message", {"content": "24°C", "id": "c1"}),
        record(5, "gen_ai.choice", {"index": 1, "finish_reason": "stop", "message": {"content": "second choice"}}),
        record(
            4,
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "24°C."}},
        ),
        record(6, "some.other.event", {"content": "ignored"}),
    ]
    chat_span = span(
        attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 30}
    )
    from_logs = extract(Batch(logs=logs)).calls
    from_span = extract(Batch(spans=[chat_span])).calls
    assert from_span[0].inputs is None  # content went to the logs
    for halves in (from_logs + from_span, from_span + from_logs):
        [call] = merge_calls(halves)
        assert call.model == "gpt-4o" and call.usage == {"input_tokens": 30}
        assert openai(call.inputs) == [
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [tool_call]},
            {"role": "tool", "content": "24°C", "tool_call_id": "c1"},
        ]
        assert openai(call.outputs) == [{"role": "assistant", "content": "24°C."}]
    assert from_logs[0].observed_ns == 100


def test_it_joins_the_parts_of_a_call_s_log_events_each_once_however_often_and_in_whatever_form_they_come():
    """An exporter cuts a call's events into batches where its timer says; a batch may come twice; a part already
    stored comes back from the store with what storing added (a stamp, a token count). Each event counts once."""
    def record(n: int, name: str, body: dict, time_ns: int | None = None) -> LogRecord:
        return LogRecord(trace_id=TRACE, span_id="01" * 8, time_ns=time_ns or 100 + n, event_name=name, body=body,
                         attributes={}, resource={"service.name": "travel-agent"}, scope="x", order=n)

    tool_call = {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city": "Rome"}'}}
    events = [
        record(0, "gen_ai.user.message", {"content": "Weather?"}),
        record(1, "gen_ai.assistant.message", {"tool_calls": [tool_call]}),
        record(2, "gen_ai.tool.message", {"content": "24°C", "id": "c1"}),
        # The user said it twice, and the clock could not tell the two apart.
        record(3, "gen_ai.user.message", {"content": "Thanks!"}, time_ns=200),
        record(4, "gen_ai.user.message", {"content": "Thanks!"}, time_ns=200),
        record(5, "gen_ai.choice", {"index": 0, "message": {"content": "Welcome!"}}),
    ]
    whole = call_from_events(TRACE, "01" * 8, events)
    first, second = call_from_events(TRACE, "01" * 8, events[:2]), call_from_events(TRACE, "01" * 8, events[2:])

    def stored(call):  # as the store gives a placed call back: stamped, counted
        return replace(call, inputs=[m.model_copy(update={"created_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
                                                          "token_count": 5}) for m in call.inputs])

    def texts(call):
        return [(m.role, m.text, m.tool_call_id) for m in call.inputs]

    assert texts(whole)[-2:] == [("user", "Thanks!", None), ("user", "Thanks!", None)]
    for joined in (
        first.merged(second), second.merged(first), first.merged(second).merged(second),
        stored(first).merged(second), stored(first.merged(second)).merged(second),
        stored(first.merged(second)).merged(first).merged(second), second.merged(stored(second)).merged(first),
        stored(second).merged(first).merged(stored(first)),
    ):
        assert texts(joined) == texts(whole) and joined.input_times == whole.input_times
    for joined in (first.merged(first), stored(first).merged(first), first.merged(stored(first))):
        assert texts(joined) == texts(first) and joined.input_times == first.input_times
    assert openai(whole.outputs) == [{"role": "assistant", "content": "Welcome!"}]
    chat = call_from_span(span(attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}))
    assert whole.merged(chat).merged(whole).merged(chat).convention == "genai+genai_events"


def test_it_does_not_take_an_agent_or_tool_span_for_a_model_call():
    agent_span = span(
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
        }
    )
    chain_span = span(attributes={"openinference.span.kind": "CHAIN", "llm.input_messages.0.message.role": "user"})
    http_span = span(name="GET /", attributes={"http.method": "GET"})
    assert [call_from_span(s) for s in (agent_span, chain_span, http_span)] == [None, None, None]


@pytest.mark.parametrize(
    "attributes, words",
    [
        ({"gen_ai.input.messages": "[{oops"}, "gen_ai.input.messages: not JSON"),
        ({"gen_ai.input.messages": '{"role": "user"}'}, "gen_ai.input.messages: expected a list of messages, got dict"),
        ({"gen_ai.input.messages": '[{"role": "robot", "parts": []}]'}, "gen_ai.input.messages[0].role"),
        (
            {"gen_ai.prompt.0.role": "tool", "gen_ai.prompt.0.content": "x"},
            "gen_ai.prompt.0: a tool message needs the tool_call_id",
        ),
    ],
)
def test_it_rejects_a_span_whose_content_it_cannot_read_and_says_where(attributes, words):
    extraction = extract(Batch(spans=[span(attributes=attributes)]))
    assert extraction.calls == []
    [rejected] = extraction.rejected
    assert words in rejected.reason and rejected.span_id == "01" * 8


def test_it_finds_the_session_on_the_span_an_ancestor_or_the_resource_else_the_trace():
    content = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[]"}
    child = call_from_span(span("03" * 8, content, parent="02" * 8))
    middle = SpanLink(TRACE, "02" * 8, "01" * 8, None, None)
    root = SpanLink(TRACE, "01" * 8, None, "trip-9", "Travel agent")
    assert resolve(child, {}) == (f"trace:{TRACE}", "travel-agent")  # the parent has not arrived yet
    assert resolve(child, {"02" * 8: middle}) == (f"trace:{TRACE}", "travel-agent")
    assert resolve(child, {"02" * 8: middle, "01" * 8: root}) == ("trip-9", "Travel agent")
    own = call_from_span(span("03" * 8, {**content, "session.id": "own", "gen_ai.agent.name": "Sub"}, parent="02" * 8))
    assert resolve(own, {"02" * 8: middle, "01" * 8: root}) == ("own", "Sub")
    on_resource = call_from_span(span("03" * 8, content, resource={"service.name": "svc", "session.id": "res"}))
    assert resolve(on_resource, {}) == ("res", "svc")
    conversation = call_from_span(span("03" * 8, {**content, "gen_ai.conversation.id": "conv-1"}))
    assert resolve(conversation, {}) == ("conv-1", "travel-agent")


def test_it_survives_a_cycle_in_the_span_links():
    child = call_from_span(
        span("03" * 8, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[]"}, parent="02" * 8)
    )
    loop = {
        "02" * 8: SpanLink(TRACE, "02" * 8, "01" * 8, None, None),
        "01" * 8: SpanLink(TRACE, "01" * 8, "02" * 8, None, None),
    }
    assert resolve(child, loop) == (f"trace:{TRACE}", "travel-agent")


def test_it_keeps_a_failed_call_with_its_error():
    call = call_from_span(span(attributes={"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[]"},
                               status_error=True, status_message="429 Too Many Requests"))
    assert call.error == "429 Too Many Requests" and call.outputs == []
