"""Memory findings over the stored rows (agents/ledger/findings.py): the same rules as ``manage.py lint`` applies to a
file, fed from the database, stored when an import writes memory (and for every session reading a store it wrote),
computed again by a reader when the rows changed another way; bounded for a session of 50,000 recalls."""
from __future__ import annotations

import datetime as dt
import shutil
import time
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import models
from agents.ledger import findings
from agents.memory import formats
from agents.memory.findings import document_findings
from agents.memory.ledger import MemoryDocument, RecallIn, RecallItemIn, RecordIn, StoreIn, VersionIn
from agents.memory.schema import Conversation, Message
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES

AGENTSCOPE = MEMORY_SAMPLES / "agentscope"
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def agentscope_save(folder: Path, turn: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(AGENTSCOPE / f"session_user_1_turn{turn}.json", folder / "user_1_trip.json"))


def findings_of(path: str, name: str | None) -> list[tuple[str, int | None, str | None]]:
    """What ``manage.py lint`` finds in the file (its memory layers, and its conversations for the replies)."""
    with formats.open_layers(MEMORY_SAMPLES / path, name=name) as layers:
        conversations = [s.conversation.model_copy(update={"messages": list(s.messages)}) for s in layers.streams]
        document = layers.memory().materialized()
    document.conversations = document.conversations or conversations
    return [(f.kind, f.index, f.record) for f in document_findings(document)]


def stored(session: models.Session) -> list[tuple[str, int | None, str | None]]:
    rows = models.MemoryFinding.objects.filter(session=session).select_related("record").order_by("seq", "id")
    return [(f.kind, f.seq, f.record.external_id if f.record else None) for f in rows]


# --- the files the libraries wrote -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path, name", [
    ("autogen/assistant_state_after_run1.json", None),
    ("autogen/assistant_state_after_run2.json", None),
    ("agentscope/session_user_1_turn1.json", "user_1_trip.json"),
    ("agentscope/session_user_1_turn2.json", "user_1_trip.json"),
    ("agentscope/session_user_1_turn3.json", "user_1_trip.json"),
    ("letta/memgpt_agent_with_convo.af", None),
])
def test_an_import_stores_what_lint_finds_in_the_same_file(db, tmp_path, path, name) -> None:
    source = MEMORY_SAMPLES / path
    if name:
        (tmp_path / "f").mkdir()
        source = Path(shutil.copy(source, tmp_path / "f" / name))
    report = imports.import_file(source, project="mem")
    session = models.Session.objects.get(pk=report.sessions[0].session_id)
    expected = [(kind, index, record) for kind, index, record in findings_of(path, name)]
    # Stored at import, not on a read: the key says they were computed from the rows as they stand.
    assert session.memory_findings_key == findings.session_key(session)
    assert stored(session) == expected
    assert session.memory_finding_count == len(expected)


def test_the_library_files_with_findings_have_them_and_the_others_none(db, tmp_path) -> None:
    counts = {}
    for path in ("autogen/assistant_state_after_run1.json", "autogen/assistant_state_after_run2.json",
                 "mem0/history.db", "langgraph/store_items.json", "letta/memgpt_agent_with_convo.af"):
        imports.import_file(MEMORY_SAMPLES / path, project="mem")
    for turn in (1, 2):
        imports.import_file(agentscope_save(tmp_path / str(turn), turn), project="mem")
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project="mem")
    for session in models.Session.objects.all():
        counts[session.source_format + (":" + session.external_id[:8])] = session.memory_finding_count
    assert sum(counts.values()) == 2, counts  # AutoGen's second run and AgentScope's second turn: one each
    assert set(models.MemoryStore.objects.values_list("finding_count", flat=True)) == {0}


def test_a_later_write_to_a_store_makes_an_earlier_recall_stale_at_once(db, tmp_path) -> None:
    # Turn 3 sends 'User prefers trains over flights' from a cache of turn 2; mem0 had updated the record the day
    # before. Imported before mem0's records, its store's records are unknown: nothing to say. Importing the records
    # finds the stale recall in the session, which that import did not touch.
    imports.import_file(agentscope_save(tmp_path / "3", 3), project="mem")
    session = models.Session.objects.get(external_id="user_1_trip")
    assert [k for k, *_ in stored(session)] == ["repeated_injection"] * 3
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project="mem")
    session.refresh_from_db()
    found = stored(session)
    assert ("stale_recall", 13, "97471722-3994-4a2e-ae92-ad22be78fc72") in found
    assert session.memory_finding_count == len(found) == 4
    stale = models.MemoryFinding.objects.get(session=session, kind="stale_recall")
    assert (stale.version, stale.recall.seq, stale.at) == (1, 13, stale.recall.at)


def test_a_reader_computes_them_again_when_the_rows_changed_another_way(db, tmp_path) -> None:
    imports.import_file(agentscope_save(tmp_path / "3", 3), project="mem")
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project="mem")
    session = models.Session.objects.get(external_id="user_1_trip")
    record = models.MemoryRecord.objects.get(external_id="97471722-3994-4a2e-ae92-ad22be78fc72")
    # A DELETE before the recall, written straight into the rows (no findings_refresh): the store's summaries
    # change, so the session's key no longer holds.
    recall = models.MemoryFinding.objects.get(session=session, kind="stale_recall").recall
    models.RecordVersion.objects.create(record=record, number=record.version_count + 1, op="DELETE",
                                        at=recall.at - dt.timedelta(seconds=1))
    models.MemoryStore.objects.filter(pk=record.store_id).update(version_count=F("version_count") + 1)
    session.refresh_from_db()
    assert session.memory_findings_key != findings.session_key(session)
    kinds = [f.kind for f in findings.session_findings(session)]
    assert "recall_of_deleted" in kinds and "stale_recall" not in kinds
    session.refresh_from_db()
    assert session.memory_findings_key == findings.session_key(session)
    assert session.memory_finding_count == len(kinds)


def test_the_session_page_gets_them_by_message(db, tmp_path) -> None:
    imports.import_file(agentscope_save(tmp_path / "3", 3), project="mem")
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project="mem")
    session = models.Session.objects.get(external_id="user_1_trip")
    by_seq = findings.session_findings_by_seq(session, 0, 13)
    assert {seq: [f.kind for f in rows] for seq, rows in by_seq.items()} == {
        8: ["repeated_injection"], 13: ["stale_recall", "repeated_injection"]}
    assert findings.session_findings_counted(session) == {"repeated_injection": 3, "stale_recall": 1}
    with CaptureQueriesContext(connection) as queries:
        findings.session_findings_by_seq(session, 12, 14)
    assert len(queries) == 3  # the key (two aggregates), then one range of the findings


# --- the same rules as on a file ------------------------------------------------------------------------------------

texts = st.sampled_from(["likes tea", "Likes  tea", "likes tea ", "runs daily", "x" * 18, "x" * 21])


@st.composite
def ledgers(draw):
    records = []
    for i in range(draw(st.integers(0, 5))):
        ops = draw(st.lists(st.sampled_from(["ADD", "UPDATE", "UPDATE", "DELETE"]), min_size=1, max_size=4))
        versions = [VersionIn(op=op, text=None if op == "DELETE" else draw(texts),
                              at=T0 + dt.timedelta(hours=i * 5 + n)) for n, op in enumerate(ops)]
        body = next((v.text for v in reversed(versions) if v.op != "DELETE"), "") or ""
        records.append(RecordIn(external_id=f"r{i}", text=body, state="deleted" if ops[-1] == "DELETE" else "active",
                                char_limit=draw(st.sampled_from([None, 20])), versions=versions))
    recalls = []
    for n in range(draw(st.integers(0, 5))):
        items = []
        for rank in range(1, draw(st.integers(0, 3)) + 1):
            if records and draw(st.booleans()):
                record = draw(st.sampled_from(records))
                items.append(RecallItemIn(text=record.text or "gone", rank=rank, record=record.external_id,
                                          version=draw(st.integers(1, len(record.versions)))))
            else:
                items.append(RecallItemIn(text=draw(texts), rank=rank))
        recalls.append(RecallIn(session="c", seq=draw(st.integers(0, 7)), store="s", items=items,
                                persisted=draw(st.booleans()), at=T0 + dt.timedelta(hours=draw(st.integers(0, 30))),
                                query=f"q{n}"))
    roles = [draw(st.sampled_from(["user", "assistant"])) for _ in range(8)]
    kind = draw(st.sampled_from(["records", "blocks"]))
    return kind, records, recalls, roles


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ledger=ledgers())
def test_the_rows_give_what_the_file_gives(agent, ledger) -> None:
    kind, records, recalls, roles = ledger
    document = MemoryDocument(format="x", stores=[StoreIn(key="s", name="s", kind=kind, source_format="mem0",
                                                         records=records)], recalls=recalls,
                              conversations=[Conversation(external_id="c", messages=[
                                  Message(role=role, content=f"m{i}") for i, role in enumerate(roles)])])
    expected = sorted(((f.kind, f.index, f.record, f.version, f.message) for f in document_findings(document)),
                      key=repr)  # index, record and version may be None beside ints and strings
    session = models.Session.objects.create(agent=agent, external_id="c", message_count=len(roles))
    models.Message.objects.bulk_create([models.Message(session=session, seq=i, role=role, content=f"m{i}")
                                        for i, role in enumerate(roles)])
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="s", kind=kind,
                                              record_count=len(records))
    rows = {}
    for record in records:
        rows[record.external_id] = models.MemoryRecord.objects.create(
            store=store, external_id=record.external_id, text=record.text, state=record.state,
            char_limit=record.char_limit, version_count=len(record.versions))
        models.RecordVersion.objects.bulk_create([models.RecordVersion(
            record=rows[record.external_id], number=n, op=v.op, text=v.text, at=v.at)
            for n, v in enumerate(record.versions, 1)])
    for recall in recalls:
        row = models.Recall.objects.create(session=session, seq=recall.seq, store=store, at=recall.at,
                                           persisted=recall.persisted, query=recall.query or "",
                                           item_count=len(recall.items))
        models.RecallItem.objects.bulk_create([models.RecallItem(
            recall=row, record=rows[i.record] if i.record else None, version=i.version, rank=i.rank, text=i.text)
            for i in recall.items])

    got = [(f.finding.kind, f.finding.index, f.finding.record, f.finding.version, f.finding.message)
           for f in [*findings.store_findings_compute(store), *findings.session_findings_compute(session)]]
    assert sorted(got, key=repr) == expected
    models.Session.objects.filter(pk=session.pk).delete()
    models.MemoryStore.objects.filter(pk=store.pk).delete()


# --- bounded --------------------------------------------------------------------------------------------------------


def test_a_session_of_50000_recalls_costs_a_bounded_number_of_queries(agent) -> None:
    session = models.Session.objects.create(agent=agent, external_id="long", message_count=2)
    models.Message.objects.bulk_create([models.Message(session=session, seq=0, role="user", content="q"),
                                        models.Message(session=session, seq=1, role="assistant", content="a")])
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="s", kind="records",
                                              record_count=1, version_count=2)
    record = models.MemoryRecord.objects.create(store=store, external_id="m1", text="vegan", version_count=2)
    models.RecordVersion.objects.bulk_create([
        models.RecordVersion(record=record, number=1, op="ADD", text="vegetarian", at=T0),
        models.RecordVersion(record=record, number=2, op="UPDATE", text="vegan", at=T0 + dt.timedelta(days=1))])
    n = 50_000
    recalls = models.Recall.objects.bulk_create([models.Recall(
        session=session, seq=0, store=store, at=T0 + dt.timedelta(days=2), item_count=i % 2) for i in range(n)],
        batch_size=5000)
    models.RecallItem.objects.bulk_create([models.RecallItem(recall=r, record=record, version=1, rank=1, text="x")
                                           for r in recalls[1::2]], batch_size=5000)
    started = time.perf_counter()
    with CaptureQueriesContext(connection) as queries:
        count = findings.session_findings_store(session)
    took = time.perf_counter() - started
    assert count == n  # every other recall found nothing, the others sent version 1 after version 2
    batches = n // findings.BATCH
    # Per batch: the recalls and their items, and the findings' insert; once: the last reply, the store, the record
    # and its versions, the key's two aggregates, the delete and the count.
    assert len(queries) <= 3 * batches + 12, len(queries)
    assert took < 30, took
    with CaptureQueriesContext(connection) as queries:
        page = list(findings.session_findings(session)[:50])
    assert len(page) == 50 and len(queries) == 3  # fresh: the key, then the page
