"""A file's memory layers into rows (agents/ledger/storing.py): stores joined or created hidden then made ready,
records with every version in order, recalls matched to records (and again once their store's records come),
snapshots linked to their parent, and a second import of the same file adding nothing."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from agents import models
from agents.ledger.storing import MemoryImport
from agents.ledger.upkeep import store_remove
from agents.memory import ledger as core
from agents.memory.formats import FormatError

T0 = datetime(2026, 12, 6, 0, 48, 20, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def session(make_session) -> models.Session:
    return make_session([
        {"role": "user", "content": "What do I eat?"},
        {"role": "user", "content": "<long_term_memory>I am vegan and allergic to peanuts</long_term_memory>"},
        {"role": "assistant", "content": "Vegan food, no peanuts."},
    ], external_id="s1")


def run(project: models.Project, agent: models.Agent, document: core.MemoryDocument,
        sessions: dict[str, models.Session]) -> MemoryImport:
    def session_at(key, pos, place):
        if key is None:
            return None, None
        return sessions[key], pos

    importer = MemoryImport(project=project, document=document, default_agent=agent, owner="test:1",
                            agent_named=lambda name: agent if name == agent.name else None)
    importer.stage(session_at)
    with transaction.atomic():
        importer.finish(session_at)
    return importer


def mem0_store(records: list[core.RecordIn], key: str = "mem0") -> core.StoreIn:
    return core.StoreIn(key=key, name="mem0 user alice", kind="records", source_format="mem0",
                        scope={"user_id": "alice"}, records=records)


def vegan_record() -> core.RecordIn:
    return core.RecordIn(external_id="m1", text="I am vegan and allergic to peanuts", versions=[
        core.VersionIn(op="ADD", text="I am vegetarian and allergic to peanuts", at=at(0), external_id="h1"),
        core.VersionIn(op="UPDATE", text="I am vegan and allergic to peanuts", at=at(5), external_id="h2"),
    ])


def test_it_stores_a_store_with_its_records_and_every_version_in_order(project, agent, session) -> None:
    deleted = core.RecordIn(external_id="m2", text="Noted.", state="deleted", versions=[
        core.VersionIn(op="ADD", text="Noted.", at=at(1)), core.VersionIn(op="DELETE", text=None, order=9),
    ])
    document = core.MemoryDocument(format="mem0", stores=[mem0_store([vegan_record(), deleted])])
    outcome = run(project, agent, document, {"s1": session}).outcome
    store = models.MemoryStore.objects.get()
    assert (store.state, store.kind, store.scope, store.record_count, store.version_count) == (
        "ready", "records", {"user_id": "alice"}, 2, 4)
    m1 = models.MemoryRecord.objects.get(external_id="m1")
    assert m1.content_hash == core.content_hash("I am vegan and allergic to peanuts")
    assert list(m1.versions.values_list("number", "op", "text")) == [
        (1, "ADD", "I am vegetarian and allergic to peanuts"), (2, "UPDATE", "I am vegan and allergic to peanuts")]
    m2 = models.MemoryRecord.objects.get(external_id="m2")
    assert m2.state == "deleted" and list(m2.versions.values_list("op", flat=True)) == ["ADD", "DELETE"]
    assert (outcome.records, outcome.versions) == (2, 4)


def test_it_matches_a_recall_to_the_record_and_the_version_current_then(project, agent, session) -> None:
    recall = core.RecallIn(session="s1", seq=1, store="mem0", query="What do I eat?", persisted=True, at=at(3),
                           items=[core.RecallItemIn(text="I am vegetarian and allergic to peanuts", rank=1),
                                  core.RecallItemIn(text="Nobody wrote this", rank=2, score=0.1)])
    document = core.MemoryDocument(format="mem0", stores=[mem0_store([vegan_record()])], recalls=[recall])
    outcome = run(project, agent, document, {"s1": session}).outcome
    row = models.Recall.objects.get()
    assert (row.session, row.seq, row.query, row.persisted, row.item_count) == (session, 1, "What do I eat?", True, 2)
    items = list(row.items.order_by("rank").values_list("record__external_id", "version", "text"))
    # The first item is what the record said before its update: version 1, a stale recall by then.
    assert items == [("m1", 1, "I am vegetarian and allergic to peanuts"), (None, None, "Nobody wrote this")]
    assert (outcome.recalls, outcome.recall_items, outcome.unmatched_items) == (1, 2, 1)
    store = models.MemoryStore.objects.get()
    assert store.read_count == 1
    assert models.MemoryRecord.objects.get(external_id="m1").read_count == 1


def test_a_second_import_of_the_same_layers_adds_nothing(project, agent, session) -> None:
    recall = core.RecallIn(session="s1", seq=1, store="mem0", items=[
        core.RecallItemIn(text="I am vegan and allergic to peanuts", rank=1)])
    snapshot = core.SnapshotIn(external_id="snap", value={"a": 1}, source_format="mem0", session="s1", seq=2)

    def document() -> core.MemoryDocument:
        return core.MemoryDocument(format="mem0", stores=[mem0_store([vegan_record()])], recalls=[recall],
                                   snapshots=[snapshot])

    run(project, agent, document(), {"s1": session})
    again = run(project, agent, document(), {"s1": session}).outcome
    counts = [m.objects.count() for m in (models.MemoryStore, models.MemoryRecord, models.RecordVersion,
                                         models.Recall, models.RecallItem, models.Snapshot)]
    assert counts == [1, 1, 2, 1, 1, 1]
    assert (again.records, again.versions, again.recalls, again.snapshots) == (0, 0, 0, 0)
    assert again.stores == [{"name": "mem0 user alice", "kind": "records", "status": "joined",
                             "id": models.MemoryStore.objects.get().pk}]


def test_a_later_export_of_the_store_joins_it_and_appends_new_versions(project, agent, session) -> None:
    run(project, agent, core.MemoryDocument(format="mem0", stores=[mem0_store([core.RecordIn(
        external_id="m1", text="I am vegetarian and allergic to peanuts", versions=[
            core.VersionIn(op="ADD", text="I am vegetarian and allergic to peanuts", at=at(0), external_id="h1")])])]),
        {"s1": session})
    run(project, agent, core.MemoryDocument(format="mem0", stores=[mem0_store([vegan_record()])]), {"s1": session})
    record = models.MemoryRecord.objects.get()
    assert record.text == "I am vegan and allergic to peanuts" and record.version_count == 2
    assert list(record.versions.values_list("number", "op")) == [(1, "ADD"), (2, "UPDATE")]


def test_items_recalled_before_their_store_held_records_find_them_when_the_records_come(
        project, agent, session) -> None:
    # An AgentScope session names its mem0 store but holds none of its records.
    recall = core.RecallIn(session="s1", seq=1, store="ltm", items=[
        core.RecallItemIn(text="I am vegan and allergic to peanuts", rank=1)])
    run(project, agent, core.MemoryDocument(format="agentscope_session", stores=[mem0_store([], key="ltm")],
                                            recalls=[recall]), {"s1": session})
    assert models.RecallItem.objects.get().record is None
    run(project, agent, core.MemoryDocument(format="mem0", stores=[mem0_store([vegan_record()])]), {"s1": session})
    item = models.RecallItem.objects.get()
    assert (item.record.external_id, item.version) == ("m1", 2)
    assert models.MemoryStore.objects.count() == 1


def test_two_saves_of_one_session_become_parent_and_child(project, agent, session) -> None:
    first = core.SnapshotIn(external_id="s1@2", value={"n": 2}, source_format="agentscope_session",
                            session="s1", seq=1)
    second = core.SnapshotIn(external_id="s1@3", value={"n": 3}, source_format="agentscope_session",
                             session="s1", seq=2)
    run(project, agent, core.MemoryDocument(format="agentscope_session", snapshots=[first]), {"s1": session})
    run(project, agent, core.MemoryDocument(format="agentscope_session", snapshots=[second]), {"s1": session})
    child = models.Snapshot.objects.get(external_id="s1@3")
    assert child.parent.external_id == "s1@2" and (child.session, child.seq) == (session, 2)


def test_a_recall_of_a_store_the_file_does_not_hold_is_refused_by_its_place(project, agent, session) -> None:
    document = core.MemoryDocument(format="x", recalls=[core.RecallIn(session="s1", seq=1, store="nowhere")])
    with pytest.raises(FormatError, match=r"memory\.recalls\[0\]\.store: no store keyed 'nowhere'"):
        run(project, agent, document, {"s1": session})


def test_a_hidden_store_is_seen_by_no_one_until_finished_and_removed_with_its_rows(project, agent, session) -> None:
    importer = MemoryImport(project=project, document=core.MemoryDocument(
        format="mem0", stores=[mem0_store([vegan_record()])]), default_agent=agent, owner="test:1",
        agent_named=lambda name: None)
    importer.stage(lambda key, pos, place: (None, None))
    store = models.MemoryStore.objects.get()
    assert store.state == "importing" and models.RecordVersion.objects.count() == 2
    store_remove(store.pk)
    assert [m.objects.count() for m in (models.MemoryStore, models.MemoryRecord, models.RecordVersion)] == [0, 0, 0]
