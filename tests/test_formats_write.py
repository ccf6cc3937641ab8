"""Writing: how fields map between formats, what the report says was dropped, and the protocol check of
openai_jsonl."""
from __future__ import annotations

import io
import json
import tracemalloc
from collections.abc import Iterator, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from agents.memory.formats import FORMATS, FormatError, dumps, read_data, read_input, write_conversations
from agents.memory.schema import Conversation, FunctionCall, Message, ToolCall
from tests.paths import SAMPLES as SAMPLES_DIR

OPENAI_SAMPLE = SAMPLES_DIR / "openai/travel.json"


def travel() -> Conversation:
    return read_input(OPENAI_SAMPLE)[0]


def broken() -> Conversation:
    return Conversation(external_id="broken-1", messages=[
        Message(role="user", content="hi"),
        Message(role="tool", tool_call_id="ghost", content="orphan"),
        Message(role="assistant", content="done"),
    ])


def test_it_puts_the_system_prompt_on_top_and_groups_results_for_anthropic() -> None:
    doc = json.loads(dumps([travel()], "anthropic")[0])
    assert doc["system"] == "You are a travel assistant. Use the tools to answer."
    assert [m["role"] for m in doc["messages"]] == ["user", "assistant", "user", "assistant", "user", "assistant",
                                                    "user", "assistant"]
    results = doc["messages"][2]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in results] == [("tool_result", "call_a1"), ("tool_result", "call_a2")]
    uses = doc["messages"][1]["content"]
    assert uses[0]["input"] == {"city": "Paris"}  # arguments parsed into an object


def test_it_groups_parallel_results_into_one_autogen_message_with_names_from_the_calls() -> None:
    doc = json.loads(dumps([travel()], "autogen")[0])
    ferm = doc["messages"][3]
    assert ferm["type"] == "FunctionExecutionResultMessage"
    assert [(r["call_id"], r["name"]) for r in ferm["content"]] == [
        ("call_a1", "get_weather"),
        ("call_a2", "get_weather"),
    ]
    assert len(doc["messages"]) == 9


def test_it_never_writes_a_name_on_openai_tool_messages() -> None:
    [conv] = read_input(SAMPLES_DIR / "openmanus/travel.json")
    assert conv.messages[2].name == "get_weather"
    items = json.loads(dumps([conv], "openai")[0])
    assert all("name" not in m for m in items if m["role"] == "tool")
    # The name comes back by joining the call, so nothing is reported lost.
    assert dumps([conv], "openai")[1].dropped == []


def test_it_reports_a_result_name_that_its_call_does_not_give_back() -> None:
    conv = travel()
    conv.messages[3].name = "other_tool"
    _text, report = dumps([conv], "openai")
    assert report.dropped == ["the function name of a tool result on 1 message: openai has no place for it and the "
                              "call names another"]


def test_it_reports_what_autogen_loses_from_agentscope() -> None:
    [conv] = read_input(SAMPLES_DIR / "agentscope/travel.json")
    _text, report = dumps([conv], "autogen")
    assert sorted(report.dropped) == ["created_at on 10 messages: autogen cannot hold it",
                                      "external_id on 10 messages: autogen cannot hold it",
                                      "name on 1 message: an autogen SystemMessage has no source"]


def test_it_skips_conversations_that_break_the_protocol_in_jsonl() -> None:
    out = io.StringIO()
    report = write_conversations([travel(), broken(), travel()], "openai_jsonl", out, on_invalid="skip")
    assert report.conversations == 2
    assert len(out.getvalue().splitlines()) == 2
    [skipped] = report.skipped
    assert (skipped.index, skipped.external_id) == (1, "broken-1")
    assert skipped.reason.startswith("orphan_tool_result at messages[1]")
    assert report.to_dict()["skipped"][0]["index"] == 1


def test_it_stops_at_the_first_conversation_that_breaks_the_protocol_when_asked() -> None:
    with pytest.raises(FormatError) as err:
        dumps([travel(), broken()], "openai_jsonl", on_invalid="stop")
    assert err.value.place == "conversations[1]"
    assert "orphan_tool_result at messages[1]" in err.value.detail
    with pytest.raises(FormatError):
        dumps([travel()], "openai_jsonl", on_invalid="maybe")


def test_it_writes_tools_with_each_format_that_holds_them() -> None:
    [conv] = read_input(SAMPLES_DIR / "openai_jsonl/travel.jsonl")
    anthropic = json.loads(dumps([conv], "anthropic")[0])
    assert anthropic["tools"] == [{"name": "get_weather", "description": "Current weather for a city",
                                   "input_schema": conv.tools[0]["function"]["parameters"]}]
    responses = json.loads(dumps([conv], "openai_responses")[0])
    assert responses["tools"][0]["type"] == "function" and responses["tools"][0]["parameters"]["required"] == ["city"]
    assert read_data(anthropic)[0].tools == conv.tools
    assert read_data(responses)[0].tools == conv.tools
    assert dumps([conv], "autogen")[1].dropped == ["tools on 1 conversation: autogen cannot hold it"]


def test_it_writes_invalid_arguments_as_langchain_invalid_tool_calls() -> None:
    conv = Conversation(messages=[
        Message(role="user", content="x"),
        Message(role="assistant", tool_calls=[ToolCall(id="c1", function=FunctionCall(name="f", arguments="{oops"))]),
        Message(role="tool", tool_call_id="c1", content="bad arguments", is_error=True),
    ])
    doc = json.loads(dumps([conv], "langchain")[0])
    assert doc[1]["data"]["tool_calls"] == []
    assert doc[1]["data"]["invalid_tool_calls"][0]["args"] == "{oops"
    assert doc[2]["data"]["status"] == "error"
    [again] = read_data(doc)
    assert again.messages[1].tool_calls[0].function.arguments == "{oops"
    _text, report = dumps([conv], "anthropic")
    assert report.dropped == ["tool call arguments that are not a JSON object on 1 message: anthropic needs an "
                              "object; written as {}"]


def test_it_writes_an_empty_list_of_conversations_in_every_format() -> None:
    for fmt in FORMATS:
        text, report = dumps([], fmt)
        assert report.conversations == 0
        if fmt != "openai_jsonl":
            json.loads(text)


def test_it_writes_conversations_as_they_come(tmp_path: Path) -> None:
    """The writers take any iterable, so an export can hand them sessions one by one."""
    made = []

    def sessions():
        for i in range(3):
            made.append(i)
            yield travel().model_copy(update={"external_id": f"s{i}"})

    with open(tmp_path / "out.json", "w") as out:
        report = write_conversations(sessions(), "native", out)
    assert made == [0, 1, 2] and report.conversations == 3 and report.messages == 30
    assert [c.external_id for c in read_input(tmp_path / "out.json")] == ["s0", "s1", "s2"]


class OnePass(Sequence[Message]):
    """Messages made as they are read, like a database export's: writers must read them once, in order."""

    def __init__(self, exchanges: int) -> None:
        self.exchanges = exchanges
        self.passes = 0

    def __len__(self) -> int:
        return self.exchanges * 5

    def __getitem__(self, index: Any) -> Any:
        raise AssertionError("writers read the messages in order, never by index")

    def __iter__(self) -> Iterator[Message]:
        self.passes += 1
        for i in range(self.exchanges):
            calls = [
                ToolCall(id=f"c{i}-{k}", function=FunctionCall(name="f", arguments=f'{{"k": {k}}}')) for k in range(2)
            ]
            yield Message(role="user", content=f"question {i}")
            yield Message(role="assistant", content=None, tool_calls=calls)
            yield Message(role="tool", tool_call_id=calls[0].id, content="one")
            yield Message(role="tool", tool_call_id=calls[1].id, content="two", is_error=True)
            yield Message(role="assistant", content=f"answer {i}")


class Discard(io.TextIOBase):
    def __init__(self) -> None:
        self.size = 0

    def write(self, text: str) -> int:
        self.size += len(text)
        return len(text)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_it_writes_a_long_conversation_in_one_pass_with_bounded_memory(fmt: str) -> None:
    messages = OnePass(10_000)
    conv = Conversation.model_construct(**{**Conversation().__dict__, "messages": messages})
    out = Discard()
    tracemalloc.start()
    try:
        report = write_conversations([conv], fmt, out)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert messages.passes == 1
    assert report.messages == 50_000
    if fmt != "openai_jsonl":  # a fine-tuning line holds its whole conversation by definition
        assert peak < 1_500_000 < out.size, (peak, out.size)


def test_it_puts_text_that_follows_results_into_their_anthropic_user_message() -> None:
    data = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "r"},
        {"role": "user", "content": "and now?"},
    ]
    doc = json.loads(dumps(read_data(data), "anthropic")[0])
    assert doc["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "c", "content": "r"},
                                             {"type": "text", "text": "and now?"}]


def test_it_writes_one_text_part_as_a_string_and_keeps_several_as_parts_for_openai() -> None:
    conv = Conversation(messages=[
        Message(role="system", content=[{"type": "text", "text": "Be brief."}]),
        Message(role="user", content=[{"type": "input_text", "text": "Paris?"}, {"type": "text", "text": "Tokyo?"}]),
        Message(role="assistant", content=[{"type": "output_text", "text": "Both sunny.", "annotations": []}]),
        Message(role="user", content=[{"type": "text", "text": "And this?"},
                                      {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]),
        Message(role="user", content=[{"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}}]),
    ])
    for fmt in ("openai", "openai_jsonl"):
        text, _report = dumps([conv], fmt)
        messages = json.loads(text)["messages"] if fmt == "openai_jsonl" else json.loads(text)
        # Several parts stay parts (joined, the text the model reads would change), in Chat Completions' own type.
        assert [m["content"] for m in messages[:3]] == [
            "Be brief.", [{"type": "text", "text": "Paris?"}, {"type": "text", "text": "Tokyo?"}], "Both sunny."]
        # Parts that carry more than text stay parts.
        assert messages[3]["content"][1]["type"] == "image_url"
        assert messages[4]["content"] == [{"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}}]


SEVERAL = [{"type": "text", "text": "s"}, {"type": "text", "text": "\r\n"}, {"type": "text", "text": "t"}]


def several_parts_everywhere() -> Conversation:
    call = ToolCall(id="c1", function=FunctionCall(name="f", arguments="{}"))
    return Conversation(messages=[
        Message(role="system", content=SEVERAL),
        Message(role="user", content=SEVERAL),
        Message(role="assistant", content=SEVERAL, tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content=SEVERAL),
        Message(role="assistant", content=SEVERAL),
    ])


def _texts(content: Any) -> list[str]:
    return [p["text"] for p in content] if isinstance(content, list) else [content]


def _joins_reported(report: Any) -> int:
    return sum(n for (what, _unit, _reason), n in report.losses.items() if what == "several text parts")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_it_keeps_several_text_parts_apart_or_reports_that_it_joined_them(fmt: str) -> None:
    text, report = dumps([several_parts_everywhere()], fmt)
    [back] = read_input(io.BytesIO(text.encode()), fmt)
    assert [m.role for m in back.messages] == ["system", "user", "assistant", "tool", "assistant"]
    joined = [m for m in back.messages if _texts(m.content) != ["s", "\r\n", "t"]]
    # Where a format has one string only, the parts become memoryviz's text of them, and the report says so.
    assert all(m.content == "s\n\r\n\nt" for m in joined), [m.content for m in joined]
    assert _joins_reported(report) == len(joined), report.dropped
    expected = {"autogen": 4, "openai_responses": 2, "openmanus": 5}.get(fmt, 0)
    assert len(joined) == expected


def test_it_writes_openmanus_content_as_the_string_its_message_holds() -> None:
    # OpenManus' Message.content is Optional[str]: a list would not load back into its Memory.
    conv = several_parts_everywhere()
    conv.messages.append(Message(role="user", content=[{"type": "text", "text": "one part"}]))
    text, report = dumps([conv], "openmanus")
    contents = [m.get("content") for m in json.loads(text)]
    assert contents == ["s\n\r\n\nt"] * 5 + ["one part"]
    assert report.dropped == ["several text parts on 5 messages: an openmanus message holds one string; joined into "
                              "one with newlines"]


def test_it_keeps_a_refusals_content_null_in_openai() -> None:
    doc = [{"role": "user", "content": "How do I pick a lock?"},
           {"role": "assistant", "content": None, "refusal": "I can't help with that."}]
    [conv] = read_data(doc, "openai")
    assert json.loads(dumps([conv], "openai")[0]) == doc


def test_it_writes_an_openmanus_assistant_without_content_alike_with_or_without_tool_calls() -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="f", arguments="{}"))
    conv = Conversation(messages=[
        Message(role="user", content="go"),
        Message(role="assistant", content=None, tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content="ok"),
        Message(role="assistant", content=None),
    ])
    written = json.loads(dumps([conv], "openmanus")[0])
    # OpenManus' ToolCallAgent stores `response.content or ""` either way.
    assert written[1]["content"] == "" and written[3]["content"] == ""
    assert written[3] == {"role": "assistant", "content": ""}


def test_it_writes_agentscope_timestamps_with_their_zone() -> None:
    from datetime import datetime, timedelta, timezone

    when = datetime(2026, 11, 29, 11, 55, 17, 456000, tzinfo=UTC)
    conv = Conversation(messages=[
        Message(role="user", content="hi", created_at=when),
        Message(role="assistant", content="hello", created_at=when.astimezone(timezone(timedelta(hours=9)))),
        Message(role="user", content="naive stays naive", created_at=datetime(2026, 11, 29, 12, 0)),
    ])
    written = json.loads(dumps([conv], "agentscope")[0])
    stamps = [entry[0]["timestamp"] for entry in written["content"]]
    assert stamps == ["2026-11-29 11:55:17.456+00:00", "2026-11-29 20:55:17.456+09:00", "2026-11-29 12:00:00.000"]
    [again] = read_data(written, "agentscope")
    assert [m.created_at for m in again.messages][:2] == [when, when]


def test_it_gives_each_parallel_agentscope_tool_result_an_id_of_its_own_and_writes_them_as_one_msg() -> None:
    # AgentScope keeps the results of parallel calls as one Msg of tool_result blocks. Read, they are one tool
    # message each: after the first, without an id of their own an appending import (a later save of the same
    # session) could not match them and would lose them.
    msg = {"id": "r1", "name": "system", "role": "system", "metadata": {}, "timestamp": "2026-12-06 00:51:32.707",
           "content": [{"type": "tool_result", "id": "c1", "name": "f", "output": "one"},
                       {"type": "tool_result", "id": "c2", "name": "f", "output": "two"},
                       {"type": "tool_result", "id": "c3", "name": "f", "output": "three"}]}
    call = {"id": "a1", "name": "Friday", "role": "assistant", "metadata": {}, "timestamp": "2026-12-06 00:51:32.706",
            "content": [{"type": "tool_use", "id": f"c{i}", "name": "f", "input": {}} for i in (1, 2, 3)]}
    doc = {"_compressed_summary": "", "content": [[call, []], [msg, []]]}
    [conv] = read_data(doc, "agentscope")
    assert [m.external_id for m in conv.messages] == ["a1", "r1", "r1#1", "r1#2"]
    assert json.loads(dumps([conv], "agentscope")[0]) == doc


def test_it_leaves_out_a_stored_openmanus_extra_of_another_shape() -> None:
    # What the file held beside its messages is kept as an object; any other value (metadata edited elsewhere) is
    # not the format's and is not written.
    conv = Conversation(messages=[Message(role="user", content="hi")], metadata={"openmanus": {"fields": True}})
    assert json.loads(dumps([conv], "openmanus")[0]) == [{"role": "user", "content": "hi"}]
