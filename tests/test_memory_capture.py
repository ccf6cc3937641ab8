"""Live memory (issue 26): memory spans posted to the real OTLP receiver become the ledger (stores, records, versions
in time order, recalls linked to the call and the message they fed, compactions), the same whatever order and
repetition the batches arrive in. The batches are those the real clients of tests/otel_clients sent (see
tests/test_memory_spans.py for what each client does); bad input is made by hand.
"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import transaction

from agents import models
from agents.ledger import storing
from agents.memory import ledger as core

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# --- the importer's code, as live capture uses it -------------------------------------------------------------------


def store_document(project, document: core.MemoryDocument, session_at=None, call_named=None) -> storing.MemoryOutcome:
    def nowhere(key, pos, place):
        return None, None

    importer = storing.MemoryImport(project=project, document=document, agent_named=lambda name: None,
                                    default_agent=None, owner="test", call_named=call_named)
    with transaction.atomic():
        importer.stage(session_at or nowhere)
        importer.finish(session_at or nowhere)
    return importer.outcome


def prefs(*records: core.RecordIn) -> core.StoreIn:
    return core.StoreIn(key="prefs", name="prefs", kind="records", source_format="otel", scope={"store_id": "prefs"},
                        records=list(records))


def versions_of(record: models.MemoryRecord) -> list[tuple[int, str, str | None, datetime | None, bool]]:
    return [(v.number, v.op, v.text, v.at, v.body_captured) for v in record.versions.order_by("number")]


def test_it_places_a_version_that_arrives_late_by_its_time(project, make_session):
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])

    def session_at(key, pos, place):
        return (session, pos) if key == "conv" else (None, None)

    def recall(external_id: str, seconds: float) -> core.RecallIn:
        return core.RecallIn(session="conv", seq=1, store="prefs", at=at(seconds), external_id=external_id,
                             items=[core.RecallItemIn(text="Alice is vegan", rank=1, ref={"id": "r"})])

    update = core.RecordIn(external_id="r", versions=[
        core.VersionIn(op="UPDATE", text="Alice is vegan", at=at(3), external_id="span-update")])
    create = core.RecordIn(external_id="r", metadata={"source": "chat"}, versions=[
        core.VersionIn(op="ADD", text="Alice is vegetarian", at=at(1), external_id="span-add")])
    later = core.MemoryDocument(format="otel", stores=[prefs(update.model_copy(
        update={"text": "Alice is vegan", "updated_at": at(3)}))], recalls=[recall("read-4", 4), recall("read-2", 2)])
    store_document(project, later, session_at)
    record = models.MemoryRecord.objects.get()
    assert versions_of(record) == [(1, "UPDATE", "Alice is vegan", at(3), True)]
    # What each recall read then: at 4 the update; at 2 nothing the store holds yet.
    assert {i.recall.external_id: i.version for i in models.RecallItem.objects.all()} == {"read-4": 1, "read-2": None}

    earlier = core.MemoryDocument(format="otel", stores=[prefs(create.model_copy(
        update={"text": "Alice is vegetarian", "updated_at": at(1)}))])
    outcome = store_document(project, earlier, session_at)
    assert outcome.versions == 1
    record.refresh_from_db()
    # Numbered by time, not arrival; the record is what its last version (by time) says.
    assert versions_of(record) == [(1, "ADD", "Alice is vegetarian", at(1), True),
                                   (2, "UPDATE", "Alice is vegan", at(3), True)]
    assert (record.text, record.state, record.version_count, record.created_at, record.updated_at,
            record.metadata) == ("Alice is vegan", "active", 2, at(1), at(3), {"source": "chat"})
    assert record.content_hash == core.content_hash("Alice is vegan")
    # The recalls read the version current at their time, numbered anew.
    assert {i.recall.external_id: i.version for i in models.RecallItem.objects.all()} == {"read-4": 2, "read-2": 1}
    assert models.MemoryStore.objects.get().version_count == 2

    # Sent again, either document adds nothing and restates nothing: the earlier one's record is not the latest.
    for document in (earlier, later):
        outcome = store_document(project, document, session_at)
        assert (outcome.versions, outcome.recalls) == (0, 0)
    record.refresh_from_db()
    assert record.text == "Alice is vegan" and versions_of(record)[1][1] == "UPDATE"
    assert models.Recall.objects.count() == 2


def test_it_renumbers_a_record_whose_versions_arrive_in_any_order(project):
    bodies = [("ADD", "one", 1), ("UPDATE", "two", 2), ("UPDATE", "three", 3), ("DELETE", None, 4),
              ("ADD", "five", 5)]
    for order in ([4, 2, 0, 3, 1], [1, 3, 0, 4, 2], [0, 1, 2, 3, 4]):
        models.MemoryStore.objects.all().delete()
        for i in order:
            op, text, seconds = bodies[i]
            version = core.VersionIn(op=op, text=text, at=at(seconds), external_id=f"span-{i}")
            store_document(project, core.MemoryDocument(format="otel", stores=[prefs(core.RecordIn(
                external_id="r", text=text or "", state="deleted" if op == "DELETE" else "active",
                versions=[version]))]))
        record = models.MemoryRecord.objects.get()
        assert [(n, op, text) for n, op, text, _, _ in versions_of(record)] == [
            (n, op, text) for n, (op, text, _) in enumerate(bodies, 1)], order
        assert (record.text, record.state, record.version_count) == ("five", "active", 5)


def test_it_keeps_a_write_seen_without_its_body_as_such(project):
    record = core.RecordIn(external_id="r", versions=[
        core.VersionIn(op="ADD", text="Alice runs", at=at(1), external_id="a"),
        core.VersionIn(op="UPDATE", at=at(2), external_id="b", captured=False)])
    store_document(project, core.MemoryDocument(format="otel", stores=[prefs(record)]))
    stored = models.MemoryRecord.objects.get()
    assert versions_of(stored) == [(1, "ADD", "Alice runs", at(1), True), (2, "UPDATE", None, at(2), False)]
    # A late write before them: the record is still what its last (uncaptured) write left: unknown.
    store_document(project, core.MemoryDocument(format="otel", stores=[prefs(core.RecordIn(
        external_id="r", text="first", versions=[core.VersionIn(op="ADD", text="first", at=at(0), external_id="z")]))]))
    stored.refresh_from_db()
    assert [v[1:] for v in versions_of(stored)] == [("ADD", "first", at(0), True), ("ADD", "Alice runs", at(1), True),
                                                    ("UPDATE", None, at(2), False)]
    assert (stored.text, stored.value) == ("", None)


def test_it_stores_compactions_once(project, make_session):
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "summary"}])
    document = core.MemoryDocument(format="otel", compactions=[
        core.CompactionIn(external_id="t:part:cmp_1", at=at(1), summary="Alice is vegan", session="conv", seq=1,
                          source="output"),
        core.CompactionIn(external_id="t:span:k4", at=at(2), session="conv", source="flag"),
        core.CompactionIn(external_id="t:span:k9", at=at(3), session="elsewhere", source="flag")])

    def session_at(key, pos, place):
        return (session, pos) if key == "conv" else (None, None)

    assert store_document(project, document, session_at).compactions == 2
    assert store_document(project, document, session_at).compactions == 0
    assert [(c.external_id, c.seq, c.summary, c.source, c.at) for c in models.Compaction.objects.all()] == [
        ("t:part:cmp_1", 1, "Alice is vegan", "output", at(1)), ("t:span:k4", None, None, "flag", at(2))]
