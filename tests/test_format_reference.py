"""What memoryviz writes, read back by the real libraries: autogen-core loads its state, langchain-core rebuilds
its messages, and the OpenAI and Anthropic SDK request types validate the lists; then the messages are compared
with the conversation that was written."""
from __future__ import annotations

import asyncio
import json
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from agents.memory.formats import dumps, read_input
from agents.memory.schema import Conversation, Message
from tests.paths import SAMPLES as SAMPLES_DIR
from tests.strategies_messages import valid_conversations

SAMPLES = SAMPLES_DIR
SAMPLE_FILES = sorted(p for p in SAMPLES.glob("*/travel.json*"))
PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def samples() -> list[Conversation]:
    return [read_input(path)[0] for path in SAMPLE_FILES]


def core(conv: Conversation, developer_as: str = "developer", errors: bool = True) -> list[tuple[Any, ...]]:
    """Role, text, calls (id, name, parsed arguments), the id a result answers and whether it is an error."""
    out = []
    for m in conv.messages:
        role = developer_as if m.role == "developer" else m.role
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls]
        is_error = bool(m.is_error) if m.role == "tool" and errors else None
        out.append((role, m.text, calls, m.tool_call_id, is_error))
    return out


def call_names(conv: Conversation) -> dict[str, str]:
    return {c.id: c.function.name for m in conv.messages for c in m.tool_calls}


# --- AutoGen ----------------------------------------------------------------------------------------------------

def autogen_view(conv: Conversation) -> list[tuple[Any, ...]]:
    from autogen_core.model_context import UnboundedChatCompletionContext
    from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, SystemMessage, UserMessage

    text, report = dumps([conv], "autogen")

    async def load() -> list[Any]:
        context = UnboundedChatCompletionContext()
        await context.load_state(json.loads(text))
        return await context.get_messages()

    names = call_names(conv)
    flat: list[tuple[Any, ...]] = []
    for m in asyncio.run(load()):
        if isinstance(m, SystemMessage):
            flat.append(("system", m.content, [], None, None))
        elif isinstance(m, UserMessage):
            assert isinstance(m.content, str)
            flat.append(("user", m.content, [], None, None))
        elif isinstance(m, AssistantMessage):
            if isinstance(m.content, list):
                calls = [(c.id, c.name, json.loads(c.arguments)) for c in m.content]
                flat.append(("assistant", m.thought or "", calls, None, None))
            else:
                flat.append(("assistant", m.content, [], None, None))
        else:
            assert isinstance(m, FunctionExecutionResultMessage)
            for r in m.content:
                assert r.name == names[r.call_id]  # the result's name, joined from its call
                flat.append(("tool", r.content, [], r.call_id, bool(r.is_error)))
    return flat


@pytest.mark.parametrize("index", range(len(SAMPLE_FILES)))
def test_it_writes_autogen_state_that_autogen_loads(index: int) -> None:
    conv = samples()[index]
    expected = core(conv, "system")
    if conv.source_format != "autogen":
        # a thought-less call message: AutoGen's thought carries the reasoning other formats keep apart
        for i, m in enumerate(conv.messages):
            if m.tool_calls and not m.text and m.reasoning:
                expected[i] = ("assistant", m.reasoning, *expected[i][2:])
    assert autogen_view(conv) == expected


@PROFILE
@given(valid_conversations(pending=None))
def test_it_writes_generated_conversations_that_autogen_loads(messages: list[Message]) -> None:
    conv = Conversation(messages=messages)
    assert autogen_view(conv) == core(conv, "system")


# --- LangChain --------------------------------------------------------------------------------------------------

def langchain_view(conv: Conversation) -> list[tuple[Any, ...]]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, messages_from_dict

    text, _report = dumps([conv], "langchain")
    names = call_names(conv)
    flat: list[tuple[Any, ...]] = []
    for original, m in zip(conv.messages, messages_from_dict(json.loads(text)), strict=True):
        assert m.id == original.external_id
        if isinstance(m, SystemMessage):
            flat.append(("system", m.text, [], None, None))
        elif isinstance(m, HumanMessage):
            flat.append(("user", m.text, [], None, None))
        elif isinstance(m, AIMessage):
            calls = [(c["id"], c["name"], c["args"]) for c in m.tool_calls]
            calls += [(c["id"], c["name"], json.loads(c["args"])) for c in m.invalid_tool_calls]
            assert m.usage_metadata == original.usage
            flat.append(("assistant", m.text, calls, None, None))
        else:
            assert isinstance(m, ToolMessage)
            assert m.name == (original.name or names.get(m.tool_call_id))
            flat.append(("tool", m.text, [], m.tool_call_id, m.status == "error"))
    return flat


@pytest.mark.parametrize("index", range(len(SAMPLE_FILES)))
def test_it_writes_langchain_dicts_that_langchain_reads(index: int) -> None:
    conv = samples()[index]
    assert langchain_view(conv) == core(conv, "system")


@PROFILE
@given(valid_conversations(pending=None, content_parts=True))
def test_it_writes_generated_conversations_that_langchain_reads(messages: list[Message]) -> None:
    conv = Conversation(messages=messages)
    assert langchain_view(conv) == core(conv, "system")


# --- OpenAI Chat Completions, Anthropic, Responses: the SDKs' request types -------------------------------------

def sdk_validate(kind: Any, value: Any) -> Any:
    """``value`` validated by the SDK type ``kind``, the ``Iterable`` fields included: pydantic validates those only
    as they are consumed (a system message's content is ``Iterable[ChatCompletionContentPartTextParam]``), so every
    one is read here."""
    def consume(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: consume(v) for k, v in item.items()}
        if isinstance(item, (str, bytes, int, float, bool)) or item is None:
            return item
        return [consume(v) for v in item]

    adapter = TypeAdapter(kind)  # kept alive while the iterators are read: they use its definitions
    return consume(adapter.validate_python(value))


def _keys(typed_dict: Any) -> set[str]:
    return set(typing.get_type_hints(typed_dict))


def check_openai(conv: Conversation) -> None:
    from openai.types import chat

    text, _report = dumps([conv], "openai")
    doc = json.loads(text)
    items = doc["messages"] if isinstance(doc, dict) else doc
    sdk_validate(list[chat.ChatCompletionMessageParam], items)
    allowed = {
        "system": _keys(chat.ChatCompletionSystemMessageParam),
        "developer": _keys(chat.ChatCompletionDeveloperMessageParam),
        "user": _keys(chat.ChatCompletionUserMessageParam),
        "assistant": _keys(chat.ChatCompletionAssistantMessageParam),
        "tool": _keys(chat.ChatCompletionToolMessageParam),
    }
    for item in items:
        assert set(item) <= allowed[item["role"]], item  # no name on tool messages: the type has none
    [again] = read_input_text(text)
    assert core(again, errors=False) == core(conv, errors=False)  # neither format holds is_error


def check_anthropic(conv: Conversation) -> None:
    from anthropic.types import MessageParam, TextBlockParam

    text, _report = dumps([conv], "anthropic")
    doc = json.loads(text)
    sdk_validate(list[MessageParam], doc["messages"])
    if "system" in doc:
        sdk_validate(str | list[TextBlockParam], doc["system"])
    calls = {c.id: json.loads(c.function.arguments) for m in conv.messages for c in m.tool_calls}
    for message in doc["messages"]:
        blocks = message["content"] if isinstance(message["content"], list) else []
        kinds = [b["type"] for b in blocks]
        if message["role"] == "user" and "tool_result" in kinds:
            # results come first in their user message
            assert kinds == sorted(kinds, key=lambda k: k != "tool_result")
        for block in blocks:
            if block["type"] == "tool_use":
                assert block["input"] == calls[block["id"]]
    [again] = read_input_text(text)
    assert core(again, "system") == core(conv, "system")


def check_responses(conv: Conversation) -> None:
    from openai.types.responses import ResponseInputItemParam

    text, _report = dumps([conv], "openai_responses")
    doc = json.loads(text)
    sdk_validate(list[ResponseInputItemParam], doc["input"])
    [again] = read_input_text(text)
    assert core(again, errors=False) == core(conv, errors=False)  # neither format holds is_error


def read_input_text(text: str) -> list[Conversation]:
    import io

    return read_input(io.BytesIO(text.encode()))


@pytest.mark.parametrize("index", range(len(SAMPLE_FILES)))
@pytest.mark.parametrize(
    "check", [check_openai, check_anthropic, check_responses], ids=["openai", "anthropic", "responses"]
)
def test_it_writes_requests_the_sdk_types_accept(index: int, check: Any) -> None:
    check(samples()[index])


@PROFILE
@given(valid_conversations(pending=None, content_parts=True))
def test_it_writes_generated_conversations_the_sdk_types_accept(messages: list[Message]) -> None:
    conv = Conversation(messages=messages)
    check_openai(conv)
    check_anthropic(conv)
    check_responses(conv)


def test_it_converts_images_to_each_sdks_own_part() -> None:
    from anthropic.types import MessageParam
    from openai.types import chat
    from openai.types.responses import ResponseInputItemParam

    pixel = "iVBORw0KGgoAAAANSUhEUg=="
    chat_doc = [
        {"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{pixel}"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg", "detail": "high"}},
        ]},
        {"role": "assistant", "content": "A pixel and a cat."},
    ]
    [conv] = read_input_text(json.dumps(chat_doc))
    anthropic_doc = json.loads(dumps([conv], "anthropic")[0])
    TypeAdapter(list[MessageParam]).validate_python(anthropic_doc["messages"])
    images = anthropic_doc["messages"][0]["content"][1:]
    assert images == [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": pixel}},
                      {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}]
    responses_doc = json.loads(dumps([conv], "openai_responses")[0])
    TypeAdapter(list[ResponseInputItemParam]).validate_python(responses_doc["input"])
    assert responses_doc["input"][0]["content"][2] == {"type": "input_image", "image_url": "https://example.com/cat.jpg",
                                                       "detail": "high"}
    # and back: Anthropic and Responses images become image_url parts the Chat Completions type accepts
    for doc in (anthropic_doc, responses_doc):
        [again] = read_input_text(json.dumps(doc))
        items = json.loads(dumps([again], "openai")[0])
        items = items["messages"] if isinstance(items, dict) else items
        TypeAdapter(list[chat.ChatCompletionMessageParam]).validate_python(items)
        assert items[0]["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{pixel}"}} \
            or items[0]["content"][1]["image_url"]["url"].endswith(pixel)
        assert items[0]["content"][2]["image_url"]["url"] == "https://example.com/cat.jpg"


# --- several text parts: kept as parts where the SDK type takes them ------------------------------------------

SEVERAL = [{"type": "text", "text": "s"}, {"type": "text", "text": "\r\n"}, {"type": "text", "text": "t"}]


def several_parts_on_every_role() -> Conversation:
    from agents.memory.schema import FunctionCall, ToolCall

    call = ToolCall(id="c1", function=FunctionCall(name="f", arguments="{}"))
    return Conversation(messages=[
        Message(role="system", content=SEVERAL),
        Message(role="developer", content=SEVERAL),
        Message(role="user", content=SEVERAL),
        Message(role="assistant", content=SEVERAL, tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content=SEVERAL),
        Message(role="assistant", content=SEVERAL),
    ])


@pytest.mark.parametrize("fmt", ["openai", "openai_jsonl"])
def test_it_keeps_several_text_parts_as_parts_on_every_chat_completions_role(fmt: str) -> None:
    from openai.types import chat

    conv = several_parts_on_every_role()
    text, report = dumps([conv], fmt)
    doc = json.loads(text)
    items = doc["messages"] if isinstance(doc, dict) else doc
    # Chat Completions takes a list of text parts on every role (the SDK's typed params say so, role by role).
    accepted = sdk_validate(list[chat.ChatCompletionMessageParam], items)
    assert [m["content"] for m in accepted] == [SEVERAL] * 6
    assert report.dropped == []
    [again] = read_input_text(text)
    assert [m.content for m in again.messages] == [SEVERAL] * 6
    assert dumps([again], fmt)[0] == text


def test_it_keeps_responses_parts_where_the_sdk_takes_them_and_reports_the_assistants_join() -> None:
    from openai.types.responses import ResponseInputItemParam

    text, report = dumps([several_parts_on_every_role()], "openai_responses")
    items = sdk_validate(list[ResponseInputItemParam], json.loads(text)["input"])
    as_input = [{"type": "input_text", "text": p["text"]} for p in SEVERAL]
    assert [i.get("content", i.get("output")) for i in items if i["type"] != "function_call"] == [
        as_input, as_input, as_input, "s\n\r\n\nt", as_input, "s\n\r\n\nt"]
    # An assistant input message refuses input_text parts and output_text needs the server's id: one string, said.
    assert report.dropped == ["several text parts on 2 messages: an openai_responses assistant message without the "
                              "server's id holds one string; joined into one with newlines"]


def test_it_reports_the_text_parts_autogen_joins() -> None:
    from autogen_core.model_context import UnboundedChatCompletionContext

    conv = several_parts_on_every_role()
    text, report = dumps([conv], "autogen")

    async def load() -> list[Any]:
        context = UnboundedChatCompletionContext()
        await context.load_state(json.loads(text))
        return await context.get_messages()

    system, developer, user, call, results, answer = asyncio.run(load())
    # A UserMessage takes a list of strings; the others hold one string, where the parts are joined.
    assert user.content == ["s", "\r\n", "t"]
    assert [system.content, developer.content, call.thought, results.content[0].content, answer.content] == [
        "s\n\r\n\nt"] * 5
    assert sorted(report.dropped) == [
        "several text parts on 1 message: an autogen FunctionExecutionResult holds one string; joined into one with "
        "newlines",
        "several text parts on 2 messages: an autogen AssistantMessage holds one string; joined into one with newlines",
        "several text parts on 2 messages: an autogen SystemMessage holds one string; joined into one with newlines",
        "the developer role on 1 message: autogen has SystemMessage only; written as one",
    ]


@PROFILE
@given(st.sampled_from(["system", "developer", "user", "assistant", "tool"]),
       st.lists(st.text(), min_size=1, max_size=4))
def test_it_writes_text_parts_that_read_back_as_written(role: str, texts: list[str]) -> None:
    from openai.types import chat

    parts = [{"type": "text", "text": t} for t in texts]
    message = Message(role=role, content=parts, tool_call_id="c1" if role == "tool" else None)  # type: ignore[arg-type]
    text, report = dumps([Conversation(messages=[message])], "openai")
    [written] = json.loads(text)
    sdk_validate(list[chat.ChatCompletionMessageParam], [written])
    assert written["content"] == (texts[0] if len(texts) == 1 else parts)
    [again] = read_input_text(text)
    assert again.messages[0].content == written["content"]
    assert report.dropped == []
