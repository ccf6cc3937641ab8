from __future__ import annotations

import io
import json

import pytest

from agents.memory.formats import FormatError, detect_format, dumps, read_data, read_input
from tests.paths import SAMPLES as SAMPLES_DIR

SAMPLES = SAMPLES_DIR


def test_it_reads_the_openai_sample_and_writes_it_back_unchanged() -> None:
    [conv] = read_input(SAMPLES / "openai" / "travel.json")
    assert conv.source_format == "openai"
    assert [m.role for m in conv.messages] == [
        "system", "user", "assistant", "tool", "tool", "assistant", "user", "assistant", "tool", "assistant"]
    assert [c.id for c in conv.messages[2].tool_calls] == ["call_a1", "call_a2"]
    text, report = dumps([conv], "openai")
    assert json.loads(text) == json.loads((SAMPLES / "openai" / "travel.json").read_text())
    assert report.messages == 10 and report.dropped == []


def test_it_detects_a_plain_message_list_as_openai() -> None:
    assert detect_format([{"role": "user", "content": "hi"}]) == "openai"
    assert detect_format({"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}) == "openai"


def test_it_keeps_the_request_keys_of_an_object_document() -> None:
    doc = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi", "weight": 0}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}
    [conv] = read_data(doc)
    assert conv.tools == doc["tools"]
    assert json.loads(dumps([conv], "openai")[0]) == doc


def test_it_names_the_place_of_arguments_that_are_not_a_string() -> None:
    data = [{"role": "user", "content": "x"}] * 3 + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}]
    with pytest.raises(FormatError) as err:
        read_data(data, "openai")
    assert str(err.value) == (
        "messages[3].tool_calls[0].function.arguments: expected a string (the arguments as JSON text), got an object")
    assert err.value.place == "messages[3].tool_calls[0].function.arguments"


def test_it_reports_what_openai_cannot_hold() -> None:
    [conv] = read_data([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    conv.messages[0].is_error = True
    conv.messages[1].reasoning = "thinking"
    _text, report = dumps([conv], "openai")
    assert "is_error on 1 message: openai cannot hold it" in report.dropped
    assert "reasoning on 1 message: openai cannot hold it" in report.dropped


def test_it_names_line_and_column_of_a_json_syntax_error() -> None:
    with pytest.raises(FormatError) as err:
        read_input(io.BytesIO(b'[\n  {"role": "user", "content": "hi"},\n  {"role": \n]'))
    assert err.value.place == "line 4 column 1"
    assert "invalid JSON" in err.value.detail


def test_it_reads_the_legacy_function_calling_messages() -> None:
    doc = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None,
         "function_call": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"role": "function", "name": "get_weather", "content": "18C"},
        {"role": "assistant", "content": "18C in Paris"},
    ]
    assert detect_format(doc) == "openai"
    [conv] = read_data(doc)
    call = conv.messages[1].tool_calls[0]
    assert (call.id, call.function.name) == ("legacy-messages_1", "get_weather")
    assert (conv.messages[2].role, conv.messages[2].tool_call_id, conv.messages[2].name) == (
        "tool", "legacy-messages_1", "get_weather")
    assert json.loads(dumps([conv], "openai")[0]) == doc
    anthropic = json.loads(dumps([conv], "anthropic")[0])
    assert anthropic["messages"][2]["content"][0]["tool_use_id"] == "legacy-messages_1"
