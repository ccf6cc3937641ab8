"""memoryviz's emulations against the real libraries: autogen-core 0.7.5 and langchain-core 1.8.3.

Each random conversation is converted to the library's own messages, trimmed by the library, mapped back to our
input indices, and compared with what ``trim`` keeps. Both sides use the same token counts: the library's counter
is given our counter's per-message counts.

How ``per_list`` (the counter's 3 tokens of reply priming) enters: both libraries count a *list* of messages,
so their counter returns ``sum(per-message counts) + per_list`` for any list it is given, exactly like
``tokens.total_tokens``. AutoGen calls it on the whole window; LangChain on prefixes and, with include_system, on
``[system]`` alone (so the priming is counted twice there, as it would be with any list counter).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from autogen_core import FunctionCall as AGFunctionCall
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, trim_messages
from langchain_core.messages import SystemMessage as LCSystemMessage

from agents.memory.schema import SYSTEM_ROLES, FunctionCall, Message, ToolCall
from agents.memory.tokens import count_messages, get_counter
from agents.memory.trimming import strategy_spec, trim
from agents.memory.trimming.tool_runs import Grouped
from tests.strategies_messages import conversations

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COUNTERS = st.sampled_from(["approx", "messages", "cl100k"])



def _pinned(messages: Sequence[Message], pin: bool) -> int:
    n = 0
    while pin and n < len(messages) and messages[n].role in SYSTEM_ROLES:
        n += 1
    return n


# --- AutoGen ------------------------------------------------------------------------------------------------


def to_autogen(messages: Sequence[Message], offset: int) -> tuple[list[LLMMessage], dict[int, list[int]]]:
    """Our messages as AutoGen stores them; and, per LLMMessage object id, the input indices it stands for."""
    out: list[LLMMessage] = []
    where: dict[int, list[int]] = {}
    for k, m in enumerate(messages):
        i = offset + k
        if m.role == "tool" and out and isinstance(out[-1], FunctionExecutionResultMessage):
            out[-1].content.append(FunctionExecutionResult(
                content=m.text, call_id=m.tool_call_id or "", name="f", is_error=bool(m.is_error)))
            where[id(out[-1])].append(i)
            continue
        if m.role in SYSTEM_ROLES:
            msg: LLMMessage = SystemMessage(content=m.text)
        elif m.role == "user":
            msg = UserMessage(content=m.text, source="user")
        elif m.role == "tool":
            msg = FunctionExecutionResultMessage(content=[FunctionExecutionResult(
                content=m.text, call_id=m.tool_call_id or "", name="f", is_error=bool(m.is_error))])
        elif m.tool_calls:
            msg = AssistantMessage(
                content=[AGFunctionCall(id=tc.id, arguments=tc.function.arguments, name=tc.function.name)
                         for tc in m.tool_calls],
                thought=m.text or None, source="assistant",
            )
        else:
            msg = AssistantMessage(content=m.text, source="assistant")
        out.append(msg)
        where[id(msg)] = [i]
    return out, where


class CountingClient(ChatCompletionClient):
    """A model client whose only job is ``count_tokens``: our counter's total for the messages it is given."""

    def __init__(self, tokens: dict[int, int], per_list: int) -> None:
        self._tokens = tokens  # LLMMessage object id -> tokens of the messages it stands for
        self._per_list = per_list

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = []) -> int:
        return sum(self._tokens[id(m)] for m in messages) + self._per_list

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = []) -> int:
        raise AssertionError("the test always passes token_limit")

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        raise AssertionError("not called")

    def create_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    def total_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    @property
    def capabilities(self) -> Any:
        return self.model_info

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown",
                         structured_output=False)


def run_autogen(messages: Sequence[Message], pin: bool, make_context: Any) -> tuple[list[int], list[str]]:
    """The input indices AutoGen returns (pinned system first, as AgentChat sends it) and placeholder texts."""
    n = _pinned(messages, pin)
    stored, where = to_autogen(messages[n:], n)
    context = make_context(stored, where)
    view = asyncio.run(context.get_messages())
    kept = list(range(n))
    placeholders = []
    for msg in view:
        if id(msg) in where:
            kept.extend(where[id(msg)])
        else:
            assert isinstance(msg, UserMessage) and msg.source == "System"
            placeholders.append(msg.content)
    return kept, placeholders


def ours(messages: Sequence[Message], strategy: str, params: dict[str, Any], counter: str = "messages",
         *, grouped: bool = False) -> Any:
    """Our trim of a plain list, or, ``grouped``, of the messages held as a Grouped history (its units found once,
    as AutoGen holds its list grouped): the AutoGen windows find their ends in its unit starts."""
    return trim(Grouped(messages) if grouped else messages, strategy_spec(strategy, params), counter=counter)


@SETTINGS
@given(conversations, st.integers(1, 12), st.booleans(), st.booleans())
def test_it_keeps_what_autogen_buffered_context_keeps(
    messages: list[Message], size: int, pin: bool, grouped: bool
) -> None:
    expected, _ = run_autogen(messages, pin, lambda stored, _w: BufferedChatCompletionContext(size, stored))
    result = ours(messages, "buffered", {"buffer_size": size, "pin_system": pin}, grouped=grouped)
    assert result.kept == expected
    assert not result.inserted


@SETTINGS
@given(conversations, st.integers(1, 5), st.integers(1, 8), st.booleans(), st.booleans())
def test_it_keeps_what_autogen_head_and_tail_context_keeps(
    messages: list[Message], head: int, tail: int, pin: bool, grouped: bool
) -> None:
    expected, placeholders = run_autogen(
        messages, pin, lambda stored, _w: HeadAndTailChatCompletionContext(head, tail, stored)
    )
    result = ours(messages, "head_and_tail", {"head_size": head, "tail_size": tail, "pin_system": pin},
                  grouped=grouped)
    assert result.kept == expected
    assert [x.message.content for x in result.inserted] == placeholders
    if result.inserted:
        # The placeholder sits where AutoGen puts it: right after the head.
        position = result.inserted[0].position
        assert result.messages[position].name == "System"
        assert list(result.messages[:position]) == [messages[i] for i in result.kept[:position]]


@SETTINGS
@given(conversations, st.floats(0.0, 1.3), st.booleans(), COUNTERS)
def test_it_keeps_what_autogen_token_limited_context_keeps(
    messages: list[Message], fraction: float, pin: bool, counter: str
) -> None:
    counts = count_messages(messages, counter)
    per_list = get_counter(counter).per_list
    limit = max(1, int((sum(counts) + per_list) * fraction))

    def make(stored: list[LLMMessage], where: dict[int, list[int]]) -> TokenLimitedChatCompletionContext:
        tokens = {key: sum(counts[i] for i in idx) for key, idx in where.items()}
        return TokenLimitedChatCompletionContext(CountingClient(tokens, per_list), token_limit=limit,
                                                 initial_messages=stored)

    expected, _ = run_autogen(messages, pin, make)
    result = trim(messages, strategy_spec("token_limited", {"token_limit": limit, "pin_system": pin}), counter=counter,
                  token_counts=counts)
    assert result.kept == expected


@SETTINGS
@given(conversations)
def test_it_keeps_what_autogen_unbounded_context_keeps(messages: list[Message]) -> None:
    expected, _ = run_autogen(messages, False, lambda stored, _w: UnboundedChatCompletionContext(stored))
    assert ours(messages, "unbounded", {}).kept == expected
    held = Grouped(messages)
    # A tuple is shared, as AutoGen returns the list it holds.
    assert ours(held, "unbounded", {"pin_system": False}).messages is held


def test_it_keeps_what_autogen_token_limited_keeps_on_a_long_conversation() -> None:
    # 2,000 messages: the middle-out arithmetic against the library's real pop loop, at many budgets.
    messages: list[Message] = [Message(role="system", content="You are terse.")]
    for k in range(400):
        messages.append(Message(role="user", content=f"question {k} " + "word " * (k % 7)))
        messages.append(Message(role="assistant", content=None, tool_calls=[
            ToolCall(id=f"c{k}a", function=FunctionCall(name="f", arguments="{}")),
            ToolCall(id=f"c{k}b", function=FunctionCall(name="g", arguments='{"x": 1}')),
        ]))
        messages.append(Message(role="tool", tool_call_id=f"c{k}a", content="r" * (k % 11)))
        messages.append(Message(role="tool", tool_call_id=f"c{k}b", content="s"))
        messages.append(Message(role="assistant", content=f"answer {k}"))
    counts = count_messages(messages, "approx")
    total = sum(counts) + 3
    for limit in (1, 5, 17, 100, 1_000, total // 3, total // 2, total - 1, total):
        def make(
            stored: list[LLMMessage], where: dict[int, list[int]], limit: int = limit
        ) -> TokenLimitedChatCompletionContext:
            tokens = {key: sum(counts[i] for i in idx) for key, idx in where.items()}
            return TokenLimitedChatCompletionContext(CountingClient(tokens, 3), token_limit=limit,
                                                     initial_messages=stored)

        expected, _ = run_autogen(messages, False, make)
        assert trim(messages, strategy_spec("token_limited", {"token_limit": limit, "pin_system": False}),
                    counter="approx",
                    token_counts=counts).kept == expected, limit


# --- LangChain ----------------------------------------------------------------------------------------------


def to_langchain(messages: Sequence[Message], offset: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for k, m in enumerate(messages):
        mid = str(offset + k)
        if m.role in SYSTEM_ROLES:
            out.append(LCSystemMessage(content=m.text, id=mid))
        elif m.role == "user":
            out.append(HumanMessage(content=m.text, id=mid))
        elif m.role == "tool":
            out.append(ToolMessage(content=m.text, tool_call_id=m.tool_call_id or "", id=mid))
        else:
            calls = []
            for tc in m.tool_calls:
                try:
                    args = json.loads(tc.function.arguments)
                except ValueError:
                    args = {}
                calls.append({"name": tc.function.name, "args": args if isinstance(args, dict) else {}, "id": tc.id})
            out.append(AIMessage(content=m.text, tool_calls=calls, id=mid))
    return out


LC_TYPES = st.one_of(
    st.none(),
    st.sampled_from(["human", "ai", "tool", "system"]),
    st.lists(st.sampled_from(["human", "ai", "tool", "system"]), min_size=1, max_size=2, unique=True),
)


def run_langchain(messages: Sequence[Message], pin: bool, counts: list[int], per_list: int, **kwargs: Any) -> list[int]:
    n = _pinned(messages, pin)

    def token_counter(batch):  # a list counter (unannotated on purpose: LangChain then passes lists)
        return sum(counts[int(m.id)] for m in batch) + per_list

    trimmed = trim_messages(to_langchain(messages[n:], n), token_counter=token_counter, **kwargs)
    return list(range(n)) + [int(m.id) for m in trimmed]


@SETTINGS
@given(conversations, st.floats(0.0, 1.3), st.booleans(), st.booleans(), LC_TYPES, LC_TYPES, COUNTERS)
def test_it_keeps_what_langchain_trim_messages_last_keeps(
    messages: list[Message], fraction: float, pin: bool, include_system: bool, start_on: Any, end_on: Any,
    counter: str,
) -> None:
    counts = count_messages(messages, counter)
    per_list = get_counter(counter).per_list
    budget = int((sum(counts) + per_list) * fraction)
    expected = run_langchain(
        messages, pin, counts, per_list, max_tokens=budget, strategy="last", include_system=include_system,
        start_on=start_on, end_on=end_on,
    )
    params = {"max_tokens": budget, "include_system": include_system, "start_on": start_on, "end_on": end_on,
              "pin_system": pin}
    assert trim(messages, strategy_spec("langchain_last", params),
                counter=counter, token_counts=counts).kept == expected


@SETTINGS
@given(conversations, st.floats(0.0, 1.3), st.booleans(), LC_TYPES, COUNTERS)
def test_it_keeps_what_langchain_trim_messages_first_keeps(
    messages: list[Message], fraction: float, pin: bool, end_on: Any, counter: str
) -> None:
    counts = count_messages(messages, counter)
    per_list = get_counter(counter).per_list
    budget = int((sum(counts) + per_list) * fraction)
    expected = run_langchain(messages, pin, counts, per_list, max_tokens=budget, strategy="first", end_on=end_on)
    params = {"max_tokens": budget, "end_on": end_on, "pin_system": pin}
    assert trim(messages, strategy_spec("langchain_first", params),
                counter=counter, token_counts=counts).kept == expected


def test_it_matches_langchain_on_the_documented_leading_tool_message_bug() -> None:
    # reference/trimming.md: strategy="last" with token_counter=len; 2 -> [Tool(call_2), AI], 3 -> [Tool, Tool, AI].
    messages = [
        Message(role="system", content="s"),
        Message(role="user", content="q"),
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="call_1", function=FunctionCall(name="f", arguments="{}")),
                ToolCall(id="call_2", function=FunctionCall(name="f", arguments="{}")),
            ],
        ),
        Message(role="tool", tool_call_id="call_1", content="a"),
        Message(role="tool", tool_call_id="call_2", content="b"),
        Message(role="assistant", content="done"),
    ]
    for budget, kept in ((2, [4, 5]), (3, [3, 4, 5])):
        result = trim(messages, strategy_spec("langchain_last", {"max_tokens": budget}), counter="messages")
        assert result.kept == kept
        assert run_langchain(messages, False, [1] * 6, 0, max_tokens=budget, strategy="last") == kept
        assert any("langchain-ai/langchain#33245" in note for note in result.notes)
        assert result.violations[0].kind == "leading_tool_result"
    fixed = trim(messages, strategy_spec("langchain_last", {"max_tokens": 3, "start_on": ["human", "ai"]}),
                 counter="messages")
    assert fixed.kept == [5]
