"""Memory findings (agents/memory/findings.py) on files the libraries wrote, and each rule on hand-made cases."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents.memory import formats
from agents.memory.findings import ADVICE, KINDS, document_findings
from agents.memory.ledger import (
    MemoryDocument,
    RecallIn,
    RecallItemIn,
    RecordIn,
    StoreIn,
    VersionIn,
)
from tests.paths import MEMORY_SAMPLES

T0 = datetime(2026, 12, 6, tzinfo=UTC)


def findings_of(path, name=None) -> list[tuple[str, int | None, str | None]]:
    with formats.open_layers(MEMORY_SAMPLES / path, name=name) as layers:
        conversations = [s.conversation.model_copy(update={"messages": list(s.messages)}) for s in layers.streams]
        document = layers.memory().materialized()
    document.conversations = document.conversations or conversations
    return [(f.kind, f.index, f.record) for f in document_findings(document)]


def test_each_kind_says_what_to_do() -> None:
    assert set(ADVICE) == set(KINDS)
    assert all(text.endswith(".") and len(text) < 160 for text in ADVICE.values())


@pytest.mark.parametrize("path, name, expected", [
    # AutoGen's ListMemory message is saved in llm_context and added again on the next run: the third call carries
    # it twice (tests/samples/memory/autogen/llm_calls.json, call 3).
    ("autogen/assistant_state_after_run1.json", None, []),
    ("autogen/assistant_state_after_run2.json", None, [("repeated_injection", 6, None)]),
    # AgentScope keeps turn 1's <retrieved_knowledge> and adds the same chunks again in turn 2.
    ("agentscope/session_user_1_turn1.json", "user_1_trip.json", []),
    ("agentscope/session_user_1_turn2.json", "user_1_trip.json", [("repeated_injection", 8, None)]),
    ("mem0/history.db", None, []),
    ("letta/memgpt_agent_with_convo.af", None, []),
    ("langgraph/store_items.json", None, []),
])
def test_it_finds_what_the_libraries_files_hold_and_nothing_else(path, name, expected) -> None:
    assert findings_of(path, name) == expected


def store(records: list[RecordIn], kind: str = "records") -> StoreIn:
    return StoreIn(key="s", name="s", kind=kind, source_format="mem0", records=records)


def kinds(document: MemoryDocument) -> list[tuple[str, str | None]]:
    return [(f.kind, f.record) for f in document_findings(document)]


def test_it_flags_a_duplicate_and_an_update_that_changed_nothing() -> None:
    document = MemoryDocument(format="x", stores=[store([
        RecordIn(external_id="a", text="Likes tea"),
        RecordIn(external_id="b", text=" Likes   tea ", versions=[
            VersionIn(op="ADD", text=" Likes   tea ", at=T0), VersionIn(op="UPDATE", text=" Likes   tea ", at=T0)]),
        RecordIn(external_id="c", text="Likes tea", state="deleted"),
    ])])
    assert kinds(document) == [("duplicate_record", "b"), ("noop_write", "b")]


def test_it_measures_blocks_against_their_limit() -> None:
    document = MemoryDocument(format="x", stores=[store([
        RecordIn(external_id="human", text="x" * 90, char_limit=100),
        RecordIn(external_id="persona", text="x" * 101, char_limit=100),
        RecordIn(external_id="notes", text="x" * 89, char_limit=100),
    ], kind="blocks")])
    assert kinds(document) == [("block_near_limit", "human"), ("block_over_limit", "persona")]


def test_it_flags_stale_deleted_unmatched_and_empty_recalls() -> None:
    records = [
        RecordIn(external_id="m1", text="vegan", versions=[
            VersionIn(op="ADD", text="vegetarian", at=T0), VersionIn(op="UPDATE", text="vegan", at=T0 + timedelta(1))]),
        RecordIn(external_id="m2", text="", state="deleted", versions=[
            VersionIn(op="ADD", text="runs", at=T0), VersionIn(op="DELETE", at=T0 + timedelta(1))]),
    ]
    later = T0 + timedelta(2)
    recalls = [
        RecallIn(session="s1", seq=1, store="s", at=later, items=[
            RecallItemIn(text="vegetarian", rank=1, record="m1", version=1),
            RecallItemIn(text="runs", rank=2, record="m2", version=1),
            RecallItemIn(text="nobody wrote this", rank=3)]),
        RecallIn(session="s1", seq=3, store="s", at=later, query="shoes?"),
        # Sent before the update: current then.
        RecallIn(session="s1", seq=5, store="s", at=T0 + timedelta(hours=1), items=[
            RecallItemIn(text="vegetarian", rank=1, record="m1", version=1)]),
    ]
    document = MemoryDocument(format="x", stores=[store(records)], recalls=recalls)
    found = [(f.kind, f.index, f.record, f.version) for f in document_findings(document)]
    assert found == [("stale_recall", 1, "m1", 1), ("recall_of_deleted", 1, "m2", 2),
                     ("unmatched_recall", 1, None, None), ("zero_hit_recall", 3, None, None)]


def test_it_does_not_call_a_recall_unmatched_when_the_store_s_records_are_unknown() -> None:
    # An AgentScope session names its mem0 store but holds none of its records.
    document = MemoryDocument(format="x", stores=[store([])], recalls=[
        RecallIn(session="s1", seq=1, store="s", items=[RecallItemIn(text="anything", rank=1)])])
    assert kinds(document) == []
