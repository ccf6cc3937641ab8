"""Every sample in tests/samples/ is the same conversation: each reads into the same messages, and each
written back in its own format is the file it came from."""
from __future__ import annotations

import json
from typing import Any

import pytest

from agents.memory.formats import FORMATS, detect_format, dumps, read_input
from agents.memory.schema import Conversation
from tests.paths import SAMPLES as SAMPLES_DIR

SAMPLES = SAMPLES_DIR
SAMPLE_FILES = {
    "openai": SAMPLES / "openai" / "travel.json",
    "openai_jsonl": SAMPLES / "openai_jsonl" / "travel.jsonl",
    "openai_responses": SAMPLES / "openai_responses" / "travel.json",
    "anthropic": SAMPLES / "anthropic" / "travel.json",
    "autogen": SAMPLES / "autogen" / "travel.json",
    "langchain": SAMPLES / "langchain" / "travel.json",
    "agentscope": SAMPLES / "agentscope" / "travel.json",
    "openmanus": SAMPLES / "openmanus" / "travel.json",
}
THOUGHT = "Two cities: call the weather tool twice in parallel."
# Formats whose files carry is_error (AutoGen is_error, Anthropic is_error, LangChain status).
WITH_ERRORS = {"autogen", "anthropic", "langchain"}
WITH_REASONING = {"anthropic", "openai_responses"}


def shape(conv: Conversation) -> list[dict[str, Any]]:
    """What every format must agree on. Call ids differ between formats (toolu_a1 / call_a1), so results are
    matched to calls by the order the calls were made."""
    ordinal: dict[str, int] = {}
    names: dict[str, str] = {}
    out = []
    for m in conv.messages:
        for call in m.tool_calls:
            ordinal[call.id] = len(ordinal)
            names[call.id] = call.function.name
        out.append({
            "role": m.role,
            "text": m.text,
            "calls": [(c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls],
            "answers": (ordinal.get(m.tool_call_id), names.get(m.tool_call_id)) if m.role == "tool" else None,
        })
    return out


@pytest.fixture(scope="module")
def reference() -> list[dict[str, Any]]:
    [conv] = read_input(SAMPLE_FILES["openai"])
    return shape(conv)


def test_it_has_a_sample_for_every_format_but_native() -> None:
    assert set(SAMPLE_FILES) == set(FORMATS) - {"native"}
    assert all(path.is_file() for path in SAMPLE_FILES.values())


@pytest.mark.parametrize("fmt", sorted(SAMPLE_FILES))
def test_it_detects_each_sample_as_its_own_format(fmt: str) -> None:
    [conv] = read_input(SAMPLE_FILES[fmt])
    assert conv.source_format == fmt
    if fmt != "openai_jsonl":  # JSON Lines is told by its lines, not by a parsed document
        assert detect_format(json.loads(SAMPLE_FILES[fmt].read_text())) == fmt


@pytest.mark.parametrize("fmt", sorted(SAMPLE_FILES))
def test_it_reads_every_sample_into_the_same_conversation(fmt: str, reference: list[dict[str, Any]]) -> None:
    [conv] = read_input(SAMPLE_FILES[fmt])
    got = shape(conv)
    expected = reference[1:] if fmt == "openmanus" else reference  # OpenManus keeps the system prompt outside
    assert len(got) == (9 if fmt == "openmanus" else 10)
    if fmt == "autogen":
        # AutoGen's thought is the text emitted alongside the calls: it is the content of that message.
        assert got[2]["text"] == THOUGHT and conv.messages[2].extra["autogen"]["thought"] is True
        got[2]["text"] = ""
    assert got == expected


@pytest.mark.parametrize("fmt", sorted(SAMPLE_FILES))
def test_it_reads_errors_and_reasoning_where_the_format_has_them(fmt: str) -> None:
    [conv] = read_input(SAMPLE_FILES[fmt])
    results = [m for m in conv.messages if m.role == "tool"]
    if fmt in WITH_ERRORS:
        assert [bool(m.is_error) for m in results] == [False, True, False]
    else:
        assert all(m.is_error is None for m in results)
    reasoning = [m.reasoning for m in conv.messages]
    if fmt in WITH_REASONING:
        calls_at = next(i for i, m in enumerate(conv.messages) if m.tool_calls)
        assert reasoning[calls_at] == THOUGHT
        assert sum(r is not None for r in reasoning) == 1
    else:
        assert reasoning == [None] * len(reasoning)


def test_it_reads_ids_timestamps_names_and_usage_where_the_format_has_them() -> None:
    [scope] = read_input(SAMPLE_FILES["agentscope"])
    assert scope.messages[0].external_id == "XqEfzh3Pff99SHA4yyjCCo"
    assert scope.messages[0].created_at is not None and scope.messages[0].created_at.tzinfo is None
    assert scope.messages[0].created_at.isoformat() == "2026-11-29T12:02:11.652000"
    assert [m.name for m in scope.messages[2:4]] == ["Friday", "get_weather"]
    assert scope.metadata["agentscope"]["compressed_summary"] == ""
    [chain] = read_input(SAMPLE_FILES["langchain"])
    assert chain.messages[2].usage == {"input_tokens": 61, "output_tokens": 44, "total_tokens": 105}
    assert chain.messages[3].external_id == "m3" and chain.messages[3].name == "get_weather"
    [auto] = read_input(SAMPLE_FILES["autogen"])
    assert auto.messages[1].name == "user" and auto.messages[2].name == "travel_agent"
    assert auto.messages[3].name == "get_weather"
    [anth] = read_input(SAMPLE_FILES["anthropic"])
    assert anth.messages[2].extra["anthropic"]["thinking"][0]["signature"] == "sig-example"
    [resp] = read_input(SAMPLE_FILES["openai_responses"])
    assert resp.messages[5].external_id == "msg_1"
    assert resp.messages[2].extra["openai_responses"]["before"][0]["id"] == "rs_1"
    [jsonl] = read_input(SAMPLE_FILES["openai_jsonl"])
    assert jsonl.tools is not None and jsonl.tools[0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("fmt", sorted(SAMPLE_FILES))
def test_it_writes_each_sample_back_as_the_file_it_came_from(fmt: str) -> None:
    path = SAMPLE_FILES[fmt]
    conversations = read_input(path)
    text, report = dumps(conversations, fmt)
    if fmt == "openai_jsonl":
        assert [json.loads(line) for line in text.splitlines()] == [
            json.loads(line) for line in path.read_text().splitlines()]
    else:
        assert json.loads(text) == json.loads(path.read_text())
    assert report.dropped == []
    assert report.messages == len(conversations[0].messages)


@pytest.mark.parametrize("fmt", sorted(SAMPLE_FILES))
def test_it_keeps_every_sample_whole_through_native(fmt: str) -> None:
    conversations = read_input(SAMPLE_FILES[fmt])
    native, report = dumps(conversations, "native")
    assert report.dropped == []
    import io

    again = read_input(io.BytesIO(native.encode()))
    assert again == conversations
    assert dumps(again, "native")[0] == native
    assert json.loads(dumps(again, fmt)[0].splitlines()[0] if fmt == "openai_jsonl" else dumps(again, fmt)[0]) == (
        json.loads(SAMPLE_FILES[fmt].read_text().splitlines()[0]) if fmt == "openai_jsonl"
        else json.loads(SAMPLE_FILES[fmt].read_text()))
