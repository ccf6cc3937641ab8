"""Every layer of a file through the one entry point (formats.open_layers): memory formats by their shape or tables,
SQLite files from a path or a stream, native's memory section written and read back identical, and the recalls a
message format carries in its messages."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agents.memory import formats
from agents.memory.formats import FormatError, open_layers
from agents.memory.ledger import MemoryDocument, RecallIn, RecallItemIn, SnapshotIn
from agents.memory.schema import Conversation, Message
from tests.paths import MEMORY_SAMPLES, SAMPLES


def layers_of(source, format=None, name=None) -> tuple[str | None, list[Conversation], MemoryDocument]:
    with open_layers(source, format, name=name) as layers:
        conversations = [s.conversation.model_copy(update={"messages": list(s.messages)}) for s in layers.streams]
        return layers.format, conversations, layers.memory().materialized()


@pytest.mark.parametrize(
    "path, format",
    [
        ("mem0/history.db", "mem0"),
        ("mem0/mem0_outputs.json", None),  # a compilation of every return value: no one format
        ("openai_agents/conversations.db", "openai_agents_session"),
        ("letta/memgpt_agent_with_convo.af", "letta_af"),
        ("letta/memgpt_agent_with_convo.v1.trimmed.af", "letta_af"),
        ("autogen/list_memory_component.json", "autogen_memory"),
        ("autogen/task_result_run1.json", "autogen_memory"),
        ("agentscope/session_user_1_turn1.json", "agentscope_session"),
        ("langgraph/state_history.json", "langgraph_checkpoints"),
        ("langgraph/store_items.json", "langgraph_store"),
    ],
)
def test_it_tells_each_memory_file_by_its_shape_or_tables(path: str, format: str | None) -> None:
    source = MEMORY_SAMPLES / path
    if format is None:
        with pytest.raises(FormatError):
            layers_of(source)
        return
    found, _conversations, document = layers_of(source)
    assert found == format
    assert document.format == format


def test_it_reads_a_database_given_as_a_stream_as_from_its_path() -> None:
    path = MEMORY_SAMPLES / "mem0" / "history.db"
    _, _, from_path = layers_of(path)
    _, _, from_stream = layers_of(io.BytesIO(path.read_bytes()))
    records = lambda doc: [(key, r.model_dump()) for key, r in doc.all_records()]  # noqa: E731
    assert records(from_stream) == records(from_path) and records(from_path)


def test_it_refuses_a_database_named_as_a_message_format() -> None:
    with pytest.raises(FormatError, match="a SQLite database, not a openai file"):
        layers_of(MEMORY_SAMPLES / "mem0" / "history.db", "openai")


def test_it_lists_every_format_for_an_unknown_name() -> None:
    with pytest.raises(FormatError) as caught:
        layers_of(SAMPLES / "openai" / "travel.json", "nonsense")
    assert "mem0" in str(caught.value) and "openai_jsonl" in str(caught.value)


def test_it_reads_message_files_as_before_with_no_memory() -> None:
    found, conversations, document = layers_of(SAMPLES / "openai" / "travel.json")
    assert found == "openai" and len(conversations[0].messages) == 10
    assert document.is_empty()


def test_it_finds_listmemory_recalls_in_an_autogen_state_and_names_their_conversation() -> None:
    found, conversations, document = layers_of(MEMORY_SAMPLES / "autogen" / "assistant_state_after_run2.json")
    assert found == "autogen"
    [conversation] = conversations
    # Two runs: ListMemory's message was appended (and kept) once per run, both sent again on the third call.
    assert [r.seq for r in document.recalls] == [
        i for i, m in enumerate(conversation.messages)
        if m.role == "system" and "Relevant memory content" in m.text
    ]
    assert len(document.recalls) == 2
    assert all(r.persisted and r.session == "#0" for r in document.recalls)
    assert [item.text for item in document.recalls[0].items] == [
        "The user prefers metric units", "{'home_city': 'Paris'}",
    ]


def test_it_writes_native_memory_and_reads_it_back_identical() -> None:
    _, conversations, document = layers_of(MEMORY_SAMPLES / "mem0" / "history.db")
    conversation = Conversation(external_id="s1", messages=[
        Message(role="user", content="What do I eat?"),
        Message(role="user", content="I am vegan and allergic to peanuts", name="memory"),
        Message(role="assistant", content="Vegan food."),
    ])
    [store] = document.stores
    records = [record for _key, record in document.all_records()]
    store = store.model_copy(update={"records": records})
    recall = RecallIn(session="s1", seq=1, store=store.key, query="What do I eat?", params={"limit": 3},
                      persisted=True, items=[RecallItemIn(text="I am vegan and allergic to peanuts", rank=1,
                                                          score=0.82, record=records[0].external_id, version=2)])
    snapshot = SnapshotIn(external_id="snap-1", value={"memory": {"content": [1, [2, {"a": None}]]}},
                          source_format="agentscope_session", session="s1", seq=2, step=3)
    memory = MemoryDocument(format="mem0", stores=[store], recalls=[recall], snapshots=[snapshot])
    text, report = formats.dumps([*conversations, conversation], "native", memory=memory)
    assert json.loads(text)["version"] == 3
    _, back_conversations, back = layers_of(io.BytesIO(text.encode()))
    assert back.stores[0].model_dump(exclude={"records"}) == store.model_dump(exclude={"records"})
    assert [r.model_dump() for _k, r in back.all_records()] == [r.model_dump() for r in records]
    assert back.recalls == [recall] and back.snapshots == [snapshot]
    assert back_conversations[-1] == conversation.model_copy(update={"source_format": None})
    # Written again, the same bytes.
    again, _ = formats.dumps(back_conversations, "native", memory=back)
    assert again == text


def test_a_native_file_without_memory_has_no_memory_section(tmp_path: Path) -> None:
    text, _ = formats.dumps([Conversation(messages=[Message(role="user", content="hi")])], "native")
    assert "memory" not in json.loads(text)


def test_it_names_the_place_of_a_bad_native_memory_section() -> None:
    doc = {"format": "memoryviz", "version": 3, "sessions": [],
           "memory": {"stores": [{"key": "s", "name": "n", "kind": "records", "source_format": "mem0"}],
                      "records": [{"store": "s", "external_id": "r", "versions": [{"op": "ADD", "at": "never"}]}]}}
    with pytest.raises(FormatError) as caught:
        layers_of(io.BytesIO(json.dumps(doc).encode()))
    assert str(caught.value).startswith("memory.records[0].versions[0].at:")
    doc["memory"]["records"][0] = {"store": "elsewhere", "external_id": "r"}
    with pytest.raises(FormatError, match=r"memory\.records\[0\]\.store: no store keyed \"elsewhere\""):
        layers_of(io.BytesIO(json.dumps(doc).encode()))


def test_it_tells_a_memory_file_bigger_than_the_small_size_by_its_first_megabyte() -> None:
    # A mem0 history list of 40,000 rows (13 MB): its rows carry "role", which alone would read as an openai list.
    rows = [{"id": f"h{i}", "memory_id": f"m{i % 1000}", "old_memory": None, "new_memory": "x" * 100 + str(i),
             "event": "ADD" if i < 1000 else "UPDATE", "created_at": "2026-12-06T00:48:20+00:00",
             "updated_at": f"2026-12-06T00:{i // 1000:02d}:{i % 60:02d}+00:00", "is_deleted": False,
             "actor_id": None, "role": "user"} for i in range(40_000)]
    data = json.dumps(rows).encode()
    assert len(data) > formats.SMALL_INPUT
    found, conversations, document = layers_of(io.BytesIO(data))
    assert found == "mem0" and not conversations
    records = [record for _key, record in document.all_records()]
    assert len(records) == 1000 and sum(len(r.versions) for r in records) == 40_000
