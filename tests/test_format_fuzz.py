"""Fuzzing the readers: any JSON value, any byte string, any sample with a part replaced by something else,
either reads or raises FormatError, never anything else; and whatever reads can be written in every format."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.formats import FORMATS, FormatError, dumps, read_data, read_input
from tests.paths import SAMPLES as SAMPLES_DIR

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAMPLES = [p for p in sorted(SAMPLES_DIR.glob("*/travel.json"))]

KEYS = ["role", "content", "type", "data", "messages", "tool_calls", "function", "arguments", "name", "id",
        "tool_call_id", "input", "system", "llm_context", "sessions", "format", "version", "call_id", "output",
        "thought", "source", "timestamp", "tool_use_id", "is_error", "status", "args", "text", "thinking",
        "_compressed_summary", "instructions", "summary", "usage_metadata", "invalid_tool_calls", "metadata",
        "function_call"]
WORDS = ["user", "assistant", "tool", "system", "developer", "function", "tool_use", "tool_result", "message",
         "function_call", "function_call_output", "reasoning", "AssistantMessage", "FunctionExecutionResultMessage",
         "UserMessage", "SystemMessage", "AssistantAgentState", "ai", "human", "memoryviz", "text", "thinking",
         "success", "error", "2026-11-29 12:02:11.653", "{}", "{\"a\": 1}", ""]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                    st.text(max_size=10), st.sampled_from(WORDS))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=5)), inner, max_size=5),
    ),
    max_leaves=25,
)


def reads_or_format_error(call: Any) -> list[Any]:
    try:
        conversations = call()
    except FormatError as exc:
        assert str(exc) and exc.detail
        return []
    for fmt in FORMATS:
        dumps(conversations, fmt)  # whatever was read can be written anywhere
    return conversations


@PROFILE
@given(json_values, st.sampled_from([None, *FORMATS]))
def test_it_reads_any_json_value_or_says_why_not(value: Any, fmt: str | None) -> None:
    reads_or_format_error(lambda: read_data(value, fmt))


@PROFILE
@given(st.binary(max_size=300), st.sampled_from([None, "openai", "openai_jsonl", "native"]))
def test_it_reads_any_bytes_or_says_why_not(data: bytes, fmt: str | None) -> None:
    reads_or_format_error(lambda: read_input(io.BytesIO(data), fmt))


@PROFILE
@given(json_values)
def test_it_reads_any_json_text_or_jsonl_or_says_why_not(value: Any) -> None:
    text = json.dumps(value)
    reads_or_format_error(lambda: read_input(io.BytesIO(text.encode())))
    lines = "\n".join([text, text]) if isinstance(value, dict) else text
    reads_or_format_error(lambda: read_input(io.BytesIO(lines.encode()), "openai_jsonl"))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


@st.composite
def mutated_samples(draw: st.DrawFn) -> Any:
    doc = json.loads(draw(st.sampled_from(SAMPLES)).read_text())
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        doc = _replace(doc, path, draw(json_values))
    return doc


@PROFILE
@given(mutated_samples(), st.sampled_from([None, *FORMATS]))
def test_it_reads_damaged_samples_or_names_the_place(doc: Any, fmt: str | None) -> None:
    reads_or_format_error(lambda: read_data(doc, fmt))


MEMO_KEYS = ["bare", "before", "block", "call_items", "content", "context", "data", "empty_blocks", "empty_call_id",
             "empty_calls", "empty_ids", "empty_tool_calls", "fields", "id", "instructions", "invalid_tool_calls",
             "item", "joined", "list", "metadata", "msg_name", "new_result_message", "no_content",
             "no_invalid_tool_calls", "no_is_error", "no_metadata", "no_name", "no_status", "no_summary", "no_thought",
             "no_tool_calls", "no_usage", "null_is_error", "object", "order", "output_text", "part_types",
             "reasoning_content", "reasoning_kwarg", "same_msg", "split", "string_input", "thinking", "thought",
             "timestamp", "tool_calls", "tool_use", "tools", "trailing", "type", "untyped", "wrapper",
             "compressed_summary", "string_content", "raw_input"]
odd_memos = st.dictionaries(st.sampled_from(MEMO_KEYS), json_values, max_size=4)


@PROFILE
@given(st.sampled_from(SAMPLES), st.sampled_from(sorted(FORMATS)), st.data())
def test_it_writes_whatever_a_stored_extra_says(path: Path, target: str, data: st.DataObject) -> None:
    """Extras come back from the database, possibly edited by hand: a writer may ignore an odd one, never fail."""
    [conv] = read_input(path)
    messages = []
    for m in conv.messages:
        extra = {fmt: data.draw(odd_memos) for fmt in data.draw(st.lists(st.sampled_from(sorted(FORMATS)), max_size=3))}
        messages.append(m.model_copy(update={"extra": extra}))
    metadata = {fmt: data.draw(odd_memos) for fmt in data.draw(st.lists(st.sampled_from(sorted(FORMATS)), max_size=3))}
    odd = conv.model_copy(update={"messages": messages, "metadata": metadata})
    try:
        text, _report = dumps([odd], target)
    except FormatError:
        assert target == "openai_jsonl"  # only when told to stop; the default skips
        return
    if target != "openai_jsonl":
        json.loads(text)


def test_it_writes_a_part_whose_type_is_not_a_string_in_every_format() -> None:
    """Found by the fuzzer in CI: an AgentScope block whose type is a list is kept as an opaque part, and the
    OpenAI writer asked a set whether it held that list (TypeError)."""
    doc = json.loads((SAMPLES_DIR / "agentscope" / "travel.json").read_text())
    found = []

    def damage(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") == "tool_use" and value.get("id") == "call_a2":
                value["type"] = []
                found.append(value)
            for item in value.values():
                damage(item)
        elif isinstance(value, list):
            for item in value:
                damage(item)

    damage(doc)
    assert found, "the sample still has the block the fuzzer damaged"
    conversations = read_data(doc, "agentscope")
    for fmt in FORMATS:
        assert dumps(conversations, fmt)
