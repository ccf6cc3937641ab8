"""Round trips on generated conversations: writing a format and reading it back keeps every field that format
holds, writing again gives the same file, and native keeps everything, byte for byte."""
from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.formats import FORMATS, dumps, read_input
from agents.memory.schema import Conversation, Message
from tests.strategies_messages import valid_conversations

PROFILE = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
# AgentScope keeps milliseconds and no zone; everything else keeps what it gets.
timestamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))


@st.composite
def enriched(draw: st.DrawFn) -> Conversation:
    """A valid conversation whose messages also carry the fields some formats hold: names, ids, timestamps,
    reasoning, usage, marks."""
    messages: list[Message] = draw(valid_conversations(pending=None, content_parts=True))
    out = []
    for i, m in enumerate(messages):
        update: dict[str, Any] = {}
        if m.role in ("user", "assistant") and draw(st.booleans()):
            update["name"] = draw(st.sampled_from(["alice", "travel_agent", "Friday", "bob"]))
        if draw(st.booleans()):
            update["external_id"] = f"id-{i}-{draw(st.integers(0, 999))}"
        if draw(st.booleans()):
            update["created_at"] = draw(timestamps)
        if m.role == "assistant" and draw(st.booleans()):
            update["reasoning"] = draw(words)
        if m.role == "assistant" and draw(st.booleans()):
            update["usage"] = {
                "input_tokens": draw(st.integers(0, 10**6)),
                "output_tokens": draw(st.integers(0, 10**4)),
            }
        if draw(st.integers(0, 3)) == 0:
            update["marks"] = draw(
                st.lists(st.sampled_from(["hint", "important", "compressed"]), max_size=2, unique=True)
            )
        out.append(m.model_copy(update=update))
    return Conversation(messages=out)


def read_text(text: str) -> list[Conversation]:
    return read_input(io.BytesIO(text.encode()))


def joined_names(conv: Conversation) -> dict[str, str]:
    return {c.id: c.function.name for m in conv.messages for c in m.tool_calls}


def args(m: Message, parsed: bool) -> list[tuple[str, str, Any]]:
    return [(c.id, c.function.name, json.loads(c.function.arguments) if parsed else c.function.arguments)
            for c in m.tool_calls]


def role(m: Message, developer: str) -> str:
    return developer if m.role == "developer" else m.role


# What each format holds, as a projection of a conversation (developer role, defaults, joins as the format does).
def view_openai(conv: Conversation) -> list[Any]:
    return [
        (m.role, m.text, m.name if m.role != "tool" else None, args(m, False), m.tool_call_id) for m in conv.messages
    ]


def view_openmanus(conv: Conversation) -> list[Any]:
    names = joined_names(conv)
    return [(role(m, "system"), m.text, names.get(m.tool_call_id) if m.role == "tool" else m.name, args(m, False),
             m.tool_call_id) for m in conv.messages]


def view_responses(conv: Conversation) -> list[Any]:
    return [(m.role, m.text, args(m, False), m.tool_call_id) for m in conv.messages]


def view_anthropic(conv: Conversation) -> list[Any]:
    return [(role(m, "system"), m.text, args(m, True), m.tool_call_id, m.is_error) for m in conv.messages]


def view_autogen(conv: Conversation) -> list[Any]:
    names = joined_names(conv)
    out = []
    for m in conv.messages:
        if m.role == "tool":
            out.append(("tool", m.text, names.get(m.tool_call_id), m.tool_call_id, m.is_error))
        elif m.role == "assistant" and m.tool_calls:
            # one thought per call message: its text, else its reasoning
            out.append(("assistant", m.text or (m.reasoning or ""), m.name or "assistant", args(m, False)))
        elif m.role == "assistant":
            out.append(("assistant", m.text, m.name or "assistant", m.reasoning))
        else:
            out.append((role(m, "system"), m.text, m.name or "user" if m.role == "user" else None))
    return out


def view_agentscope(conv: Conversation) -> list[Any]:
    names = joined_names(conv)
    return [
        (
            role(m, "system"),
            m.text,
            names.get(m.tool_call_id) if m.role == "tool" else (m.name or role(m, "system")),
            args(m, True),
            m.tool_call_id,
            m.created_at,
            m.reasoning,
            m.marks,
        )
        for m in conv.messages
    ]


def view_langchain(conv: Conversation) -> list[Any]:
    names = joined_names(conv)
    return [(role(m, "system"), m.text, names.get(m.tool_call_id) if m.role == "tool" else m.name, args(m, True),
             m.tool_call_id, bool(m.is_error) if m.role == "tool" else None, m.external_id,
             m.usage if m.role == "assistant" else None, m.reasoning) for m in conv.messages]


VIEWS: dict[str, Callable[[Conversation], list[Any]]] = {
    "openai": view_openai,
    "openai_jsonl": view_openai,
    "openmanus": view_openmanus,
    "openai_responses": view_responses,
    "anthropic": view_anthropic,
    "autogen": view_autogen,
    "agentscope": view_agentscope,
    "langchain": view_langchain,
}


def test_it_has_a_round_trip_view_for_every_format_but_native() -> None:
    assert set(VIEWS) == set(FORMATS) - {"native"}


@pytest.mark.parametrize("fmt", sorted(VIEWS))
def test_it_keeps_every_field_the_format_holds(fmt: str) -> None:
    @PROFILE
    @given(enriched())
    def check(conv: Conversation) -> None:
        text, report = dumps([conv], fmt)
        [again] = read_text(text) if fmt != "openai_jsonl" else read_input(io.BytesIO(text.encode()), fmt)
        assert VIEWS[fmt](again) == VIEWS[fmt](conv)
        if fmt == "agentscope":  # every Msg has an id: kept where there was one, made up where there was none
            assert all(a.external_id == (b.external_id or a.external_id) and a.external_id
                       for a, b in zip(again.messages, conv.messages, strict=False))
        # Read back and written again, the file is the same: reading kept everything the writer put there.
        assert dumps([again], fmt)[0] == text
        assert report.messages == len(conv.messages)

    check()


@PROFILE
@given(st.lists(enriched(), min_size=1, max_size=3))
def test_it_keeps_everything_in_native_byte_for_byte(conversations: list[Conversation]) -> None:
    conversations = [c.model_copy(update={"title": f"session {i}", "external_id": f"s{i}", "agent": "bot",
                                          "project": "alpha", "metadata": {"k": [i, {"x": None}]}})
                     for i, c in enumerate(conversations)]
    text, report = dumps(conversations, "native")
    assert report.dropped == []
    again = read_text(text)
    assert again == [c.model_copy(update={"messages": c.messages}) for c in conversations]
    assert dumps(again, "native")[0] == text


@PROFILE
@given(enriched(), st.sampled_from(sorted(VIEWS)), st.sampled_from(sorted(VIEWS)))
def test_it_keeps_the_chain_through_any_two_formats(conv: Conversation, first: str, second: str) -> None:
    """Whatever the route, roles, texts, calls and pairing survive (the chain a person reads)."""
    text, _ = dumps([conv], first)
    [mid] = read_input(io.BytesIO(text.encode()), first)
    text2, _ = dumps([mid], second)
    [end] = read_input(io.BytesIO(text2.encode()), second)

    def chain(c: Conversation) -> list[Any]:
        out = []
        for m in c.messages:
            text_ = m.text
            if m.tool_calls and "autogen" in (first, second) and not text_:
                text_ = None  # AutoGen's single thought may carry reasoning in place of text
            out.append((role(m, "system"), None if m.tool_calls else text_, args(m, True), m.tool_call_id))
        return out

    assert chain(end) == chain(conv)


def test_it_reports_what_each_format_drops() -> None:
    conv = Conversation(title="t", messages=[
        Message(role="user", content="hi", name="alice", created_at=datetime(2026, 1, 1), marks=["x"]),
        Message(role="assistant", content="yo", reasoning="think", usage={"input_tokens": 1}),
    ])
    _text, report = dumps([conv], "openai")
    assert sorted(report.dropped) == sorted([
        "title on 1 conversation: openai cannot hold it",
        "created_at on 1 message: openai cannot hold it",
        "marks on 1 message: openai cannot hold it",
        "reasoning on 1 message: openai cannot hold it",
        "usage on 1 message: openai cannot hold it",
    ])
    _text, report = dumps([conv], "agentscope")
    assert sorted(report.dropped) == ["title on 1 conversation: agentscope cannot hold it",
                                      "usage on 1 message: agentscope cannot hold it"]
    _text, report = dumps([conv], "native")
    assert report.dropped == []


LOSSY_FIELDS = ("name", "external_id", "created_at", "is_error", "reasoning", "usage", "marks")


@pytest.mark.parametrize("fmt", sorted(VIEWS))
def test_it_reports_every_field_it_does_not_keep(fmt: str) -> None:
    """Whatever a write loses (a field that does not come back when the file is read) is in the report."""

    @PROFILE
    @given(enriched())
    def check(conv: Conversation) -> None:
        reports_what_it_loses(conv, fmt)

    check()


def reports_what_it_loses(conv: Conversation, fmt: str) -> None:
    text, report = dumps([conv], fmt)
    [again] = read_input(io.BytesIO(text.encode()), fmt)
    assert len(again.messages) == len(conv.messages)
    lost = set()
    for before, after in zip(conv.messages, again.messages, strict=True):
        if before.role != after.role:
            assert before.role == "developer" and after.role == "system"
            lost.add("the developer role")
        for field in LOSSY_FIELDS:
            value = getattr(before, field)
            if value in (None, [], {}) or (field == "name" and before.role == "tool"):
                continue
            if getattr(after, field) != value:
                lost.add(field)
    for field in lost:
        assert any(line.startswith(f"{field} on ") for line in report.dropped), (field, report.dropped)
