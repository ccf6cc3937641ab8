"""The memory layers through the one import path (``import_history``, the import page and the API all call
``transfer.imports.import_file``): files the libraries wrote, joined across files, previewed without writing,
refused whole, exported in native and read back the same, and linted."""
from __future__ import annotations

import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.transfer import exports, imports
from tests.commands import run
from tests.paths import MEMORY_SAMPLES

AGENTSCOPE = MEMORY_SAMPLES / "agentscope"
MEMORY_MODELS = (models.MemoryStore, models.MemoryRecord, models.RecordVersion, models.Recall, models.RecallItem,
                 models.Snapshot)


def counts() -> list[int]:
    return [m.objects.count() for m in (models.Session, models.Message, *MEMORY_MODELS)]


def session_file(tmp_path: Path, turn: int) -> Path:
    # JSONSession names its file {user_id}_{session_id}.json: the user scopes the agent's mem0 store.
    folder = tmp_path / f"turn{turn}"
    folder.mkdir(exist_ok=True)
    return Path(shutil.copy(AGENTSCOPE / f"session_user_1_turn{turn}.json", folder / "user_1_trip.json"))


@pytest.fixture
def friday(db, tmp_path: Path) -> dict[str, object]:
    """AgentScope's two saves of one session and its mem0 long-term memory, imported as a user would."""
    reports = [imports.import_file(session_file(tmp_path, 1), project="mem"),
               imports.import_file(session_file(tmp_path, 2), project="mem"),
               imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project="mem")]
    return {"reports": reports, "session": models.Session.objects.get(external_id="user_1_trip")}


def test_two_saves_of_a_session_and_its_long_term_memory_make_one_ledger(friday) -> None:
    session = friday["session"]
    assert (session.agent.name, session.message_count) == ("Friday", 12)
    first, second, ltm = friday["reports"]
    assert [s["status"] for s in first.memory["stores"]] == ["new", "new"]
    assert [s["status"] for s in second.memory["stores"]] == ["joined", "joined"]
    assert ltm.memory["stores"] == [{"name": "long-term memory of Friday", "kind": "records", "status": "joined",
                                     "id": models.MemoryStore.objects.get(kind="records").pk}]
    store = models.MemoryStore.objects.get(kind="records")
    assert (store.agent, store.scope, store.record_count, store.version_count) == (
        session.agent, {"user_id": "user_1", "agent_id": "Friday"}, 2, 3)
    # Turn 2's <long_term_memory> message (#7) sent both memories, the second as it was before mem0's update.
    recall = models.Recall.objects.get(session=session, store=store)
    assert (recall.seq, recall.persisted, recall.query) == (7, True, "Make me a plan for the trip.")
    assert list(recall.items.order_by("rank").values_list("record__text", "version", "text")) == [
        ("User is planning a trip to Hangzhou next week", 1, "User is planning a trip to Hangzhou next week"),
        ("User prefers high-speed trains over flights", 1, "User prefers trains over flights"),
    ]
    # <retrieved_knowledge> in both turns: once per carrying message, not once per save.
    knowledge = models.Recall.objects.filter(session=session, store__kind="knowledge")
    assert list(knowledge.values_list("seq", flat=True).order_by("seq")) == [2, 8]
    snapshots = list(models.Snapshot.objects.filter(agent=session.agent).order_by("seq"))
    assert [(s.seq, s.parent_id) for s in snapshots] == [(5, None), (11, snapshots[0].pk)]


def test_importing_the_same_files_again_adds_nothing(friday, tmp_path: Path) -> None:
    before = counts()
    again = imports.import_file(session_file(tmp_path, 2), project="mem")
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project="mem")
    assert counts() == before
    # Its three recalls and its snapshot are stored already.
    assert (again.memory["recalls"], again.memory["snapshots"], again.memory["skipped"]) == (0, 0, 4)


def test_a_preview_says_what_the_memory_layers_hold_and_writes_nothing(db) -> None:
    before = counts()
    report = imports.preview_file(MEMORY_SAMPLES / "mem0" / "history.db", project="mem")
    assert counts() == before
    assert report.format == "mem0" and not report.saved
    assert (report.memory["records"], report.memory["versions"]) == (4, 6)
    assert report.memory["stores"] == [{"name": "mem0", "kind": "records", "status": "new", "id": None}]


def test_a_memory_file_without_conversations_imports(db) -> None:
    report = imports.import_file(MEMORY_SAMPLES / "autogen" / "list_memory_component.json", project="mem")
    assert report.sessions == [] and report.memory["records"] == 2
    store = models.MemoryStore.objects.get()
    assert (store.kind, store.name, store.state) == ("list", "user_prefs", "ready")
    assert list(store.records.order_by("external_id").values_list("text", flat=True)) == [
        "The user prefers metric units", "{'home_city': 'Paris'}"]


def test_a_damaged_database_leaves_every_count_unchanged(db, tmp_path: Path) -> None:
    imports.import_file(MEMORY_SAMPLES / "autogen" / "list_memory_component.json", project="mem")
    before = counts()
    data = (MEMORY_SAMPLES / "mem0" / "history.db").read_bytes()
    damaged = tmp_path / "history.db"
    damaged.write_bytes(data[: len(data) // 2])
    with pytest.raises(imports.ImportFailed) as caught:
        imports.import_file(damaged, project="mem")
    assert "SQLite" in str(caught.value) or "damaged" in str(caught.value)
    assert counts() == before and not models.MemoryStore.objects.filter(state="importing").exists()


def test_a_record_the_database_cannot_store_is_refused_by_its_place_with_nothing_written(db, tmp_path: Path) -> None:
    rows = json.loads((MEMORY_SAMPLES / "mem0" / "history_db_dump.json").read_text())["history"]["rows"]
    assert rows[0]["event"] == "ADD"
    rows[0]["new_memory"] = "nul \x00 inside"
    path = tmp_path / "history.json"
    path.write_text(json.dumps(rows))
    before = counts()
    with pytest.raises(imports.ImportFailed) as caught:
        imports.import_file(path, project="mem")
    assert "NUL" in str(caught.value) and "records[" in str(caught.value)
    assert counts() == before


def test_a_database_of_other_tables_is_refused_by_name(db, tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    db_file = sqlite3.connect(path)
    db_file.execute("CREATE TABLE customers (id INTEGER)")
    db_file.commit()
    db_file.close()
    code, out, err = run("import_history", str(path))
    assert (code, out) == (2, "")
    assert "customers" in err and "none of the known ones" in err


def test_native_export_carries_the_memory_layers_and_reads_back_the_same(friday, alice, tmp_path: Path) -> None:
    session = friday["session"]
    out = io.StringIO()
    plan = exports.export_plan(sessions=models.Session.objects.filter(pk=session.pk), format="native", scope="t")
    exports.export_to(plan, out)
    doc = json.loads(out.getvalue())
    assert doc["version"] == 3 and {"stores", "records", "recalls", "snapshots"} <= set(doc["memory"])
    path = tmp_path / "export.json"
    path.write_text(out.getvalue())
    imports.import_file(path, project="copy")
    copy = models.Session.objects.get(agent__project__slug="copy")

    def ledger(project: str) -> dict[str, object]:
        recalls = models.Recall.objects.filter(session__agent__project__slug=project).order_by("seq", "id")
        return {
            "stores": sorted(models.MemoryStore.objects.filter(project__slug=project).values_list(
                "name", "kind", "record_count", "version_count")),
            "versions": sorted(models.RecordVersion.objects.filter(record__store__project__slug=project)
                               .values_list("record__external_id", "number", "op", "text", "at")),
            "recalls": [(r.seq, r.store.name if r.store else None, r.query, r.persisted,
                         [(i.rank, i.text, i.record.external_id if i.record else None, i.version)
                          for i in r.items.order_by("rank")]) for r in recalls],
            "snapshots": sorted(models.Snapshot.objects.filter(agent__project__slug=project).values_list(
                "external_id", "seq", "parent__external_id", "value")),
        }

    assert ledger("copy") == ledger("mem")
    assert copy.message_count == session.message_count


def test_native_export_reads_each_snapshots_value_once(friday) -> None:
    # A parent was read as a whole row (its value, megabytes for a long session) to write its id; nor is the digest
    # (what the diff reads) part of the file.
    session = friday["session"]
    assert models.Snapshot.objects.filter(session=session, parent__isnull=False).exists()
    plan = exports.export_plan(sessions=models.Session.objects.filter(pk=session.pk), format="native", scope="t")
    with CaptureQueriesContext(connection) as queries:
        exports.export_to(plan, io.StringIO())
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "agents_snapshot"' in q["sql"]]
    assert len(reads) == 1
    assert reads[0].count('"value"') == 1 and '"digest"' not in reads[0]


def test_other_formats_say_they_leave_the_memory_layers_out(friday) -> None:
    out = io.StringIO()
    plan = exports.export_plan(sessions=models.Session.objects.all(), format="openai", scope="t")
    result = exports.export_to(plan, out)
    assert any("recalls" in line and "native keeps the memory layers" in line for line in result.dropped)


def test_lint_reports_the_memory_findings_of_a_file_that_carries_memory() -> None:
    code, out, _ = run("lint", str(MEMORY_SAMPLES / "autogen" / "assistant_state_after_run2.json"))
    found = json.loads(out)
    assert code == 1 and found["violations"] == []
    assert [(f["kind"], f["index"]) for f in found["memory_findings"]] == [("repeated_injection", 6)]
    code, out, _ = run("lint", str(MEMORY_SAMPLES / "autogen" / "assistant_state_after_run1.json"))
    assert (code, json.loads(out)) == (0, {"violations": [], "memory_findings": []})
