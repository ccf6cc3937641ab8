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

def _keys(typed_dict: Any) -> set[str]:
    return set(typing.get_type_hints(typed_dict))


def check_openai(conv: Conversation) -> None:
    from openai.types import chat

    text, _report = dumps([conv], "openai")
    doc = json.loads(text)
    items = doc["messages"] if isinstance(doc, dict) else doc
    TypeAdapter(list[chat.ChatCompletionMessageParam]).validate_python(items)
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
    TypeAdapter(list[MessageParam]).validate_python(doc["messages"])
    if "system" in doc:
        TypeAdapter(str | list[TextBlockParam]).validate_python(doc["system"])
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
    TypeAdapter(list[ResponseInputItemParam]).validate_python(doc["input"])
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
