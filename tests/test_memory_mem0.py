"""The mem0 reader (agents/memory/formats/mem0.py): mem0's JSON output and its history.db, on the samples mem0 2.2.1
wrote (tests/samples/memory/mem0/, and AgentScope's mem0 1.0.11 records), on files mem0 writes in this test run
(tests/memory_libs/mem0_files.py), and what it writes back, which mem0 itself takes in again."""
from __future__ import annotations

import json
import sqlite3
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.memory.formats import mem0
from agents.memory.formats.base import FormatError, WriteReport
from agents.memory.formats.memory_files import detect_memory, open_database, read_database
from agents.memory.ledger import MemoryDocument, RecallIn, RecordIn, parse_time
from tests.paths import MEMORY_SAMPLES, SAMPLES

MEM0 = MEMORY_SAMPLES / "mem0"
OUTPUTS = json.loads((MEM0 / "mem0_outputs.json").read_text())
VEGAN = "6008ddaf-1d5b-4c87-a471-1c73c052cea7"
MARATHON = "abbacfbf-81cc-45cc-9ce6-6a7b346eeba0"
NOTED = "cc408d8e-fa53-4f3b-9c84-d686c6f66235"
MORNING = "ed0f935e-4a7e-4d3b-91be-114d4ae42865"


def versions(record: RecordIn) -> list[tuple[int | None, str, str | None, str | None]]:
    return [(v.number, v.op, v.text, v.at.isoformat() if v.at else None) for v in record.versions]


def at(clock: str) -> str:
    return f"2026-12-06T00:48:{clock}+00:00"


def records_of(document: MemoryDocument) -> dict[str, RecordIn]:
    return {record.external_id: record for _, record in document.all_records()}


def read_db(path: Path) -> tuple[MemoryDocument, dict[str, RecordIn]]:
    with open_database(path) as db:
        document = mem0.read_sqlite(db)
        return document, records_of(document)  # the records are read while the database is open


# --- the samples ------------------------------------------------------------------------------------------------


def test_it_reads_the_history_db_mem0_wrote_record_by_record_in_the_order_mem0_wrote() -> None:
    document, records = read_db(MEM0 / "history.db")
    assert [store.key for store in document.stores] == ["mem0"]
    assert document.stores[0].kind == "records" and document.stores[0].source_format == "mem0"
    assert document.stores[0].scope == {}  # history.db holds no scope
    assert list(records) == [VEGAN, MARATHON, NOTED, MORNING]  # by memory_id
    assert versions(records[VEGAN]) == [
        (1, "ADD", "I am vegetarian and allergic to peanuts", at("20.493510")),
        (2, "UPDATE", "I am vegan and allergic to peanuts", at("20.589266")),
    ]
    assert [(v.actor, v.external_id, v.order) for v in records[VEGAN].versions] == [
        ("alice", "d4194dfe-19d4-4144-9838-8765d5c979e8", 1), ("alice", "18b88b30-af91-4f0e-828c-d9976af358f2", 5)]
    # An inferred add has no updated_at: its time is its created_at.
    assert versions(records[MARATHON]) == [(1, "ADD", "Alice is training for a half marathon in October",
                                            at("20.528475"))]
    assert versions(records[NOTED]) == [(1, "ADD", "Noted, no meat and no peanuts.", at("20.524378")),
                                        (2, "DELETE", None, at("20.625107"))]
    assert versions(records[MORNING]) == [(1, "ADD", "Alice prefers morning runs", at("20.528497"))]
    assert {key: (r.state, r.text) for key, r in records.items()} == {
        VEGAN: ("active", "I am vegan and allergic to peanuts"),
        MARATHON: ("active", "Alice is training for a half marathon in October"),
        NOTED: ("deleted", "Noted, no meat and no peanuts."),  # the text it had when deleted
        MORNING: ("active", "Alice prefers morning runs"),
    }
    # mem0's own hash of each text (get_all's), computed from the text: the file holds none.
    assert records[VEGAN].content_hash == OUTPUTS["get_after_update"]["hash"] == "fd30cf0cc567f9d8f1f14a4c5a64e5cf"
    assert records[MORNING].content_hash == "842e4d649fa6cf05cb888cf58c11bce0"
    assert records[VEGAN].metadata == {"actor_id": "alice", "role": "user"}
    assert records[NOTED].metadata == {"role": "assistant"}
    assert records[VEGAN].created_at == parse_time(at("20.493510"))
    assert records[VEGAN].updated_at == parse_time(at("20.589266"))
    assert records[NOTED].updated_at == parse_time(at("20.625107"))


def test_it_reads_the_messages_of_inferred_adds_as_a_conversation_per_scope() -> None:
    document, _ = read_db(MEM0 / "history.db")
    [conversation] = document.conversations
    assert conversation.external_id == "user_id=alice"
    assert conversation.metadata["mem0"]["scope"] == {"user_id": "alice"}
    assert [(m.role, m.content, m.external_id, m.created_at) for m in conversation.messages] == [
        ("user", "I'm training for a half marathon in October, I run every morning.",
         "f5594d08-e463-47df-8a59-da4aa8dd6662", parse_time(at("20.568040")))]


def test_it_reads_get_all_and_history_together_as_one_store_of_alice() -> None:
    data = {"results": OUTPUTS["get_all_after"]["results"],
            "history": OUTPUTS["history_updated"] + OUTPUTS["history_deleted"]}
    assert mem0.detect(data)
    document = mem0.read(data)
    [store] = document.stores
    assert (store.key, store.name, store.scope, store.agent) == ("mem0", "mem0 (user_id=alice)", {"user_id": "alice"},
                                                                 None)
    records = records_of(document)
    assert list(records) == [VEGAN, MARATHON, MORNING, NOTED]  # as listed, then the one only history knows
    assert versions(records[VEGAN]) == [(1, "ADD", "I am vegetarian and allergic to peanuts", at("20.493510")),
                                        (2, "UPDATE", "I am vegan and allergic to peanuts", at("20.589266"))]
    # No history given for it: one ADD from the record itself, at its created_at.
    assert versions(records[MORNING]) == [(1, "ADD", "Alice prefers morning runs", at("20.528497"))]
    assert versions(records[NOTED]) == [(1, "ADD", "Noted, no meat and no peanuts.", at("20.524378")),
                                        (2, "DELETE", None, at("20.625107"))]
    assert records[NOTED].state == "deleted" and records[VEGAN].state == "active"
    # Each record's own scope, and mem0's other payload keys, beside the caller's metadata.
    assert records[VEGAN].metadata == {"source": "onboarding", "category": "diet", "user_id": "alice",
                                       "agent_id": "chef-bot", "run_id": "run-001", "actor_id": "alice",
                                       "role": "user"}
    assert records[MARATHON].metadata == {"source": "chat", "user_id": "alice", "attributed_to": "user"}
    assert records[VEGAN].content_hash == "fd30cf0cc567f9d8f1f14a4c5a64e5cf"
    assert records[VEGAN].value == OUTPUTS["get_all_after"]["results"][0]
    assert document.recalls == []


def test_it_reads_a_search_output_as_the_records_and_one_recall_of_them() -> None:
    document = mem0.read(OUTPUTS["search"])
    records = records_of(document)
    assert list(records) == [NOTED, VEGAN, MARATHON]
    [recall] = document.recalls
    assert (recall.store, recall.query, recall.params, recall.session, recall.seq) == ("mem0", None, {}, None, None)
    assert [(i.rank, i.record, i.version, i.score, i.text, i.ref) for i in recall.items] == [
        (1, NOTED, 1, 0.8825226674091904, "Noted, no meat and no peanuts.", {"id": NOTED}),
        (2, VEGAN, 1, 0.6689936140321355, "I am vegetarian and allergic to peanuts", {"id": VEGAN}),
        (3, MARATHON, 1, 0.5783149544903788, "Alice is training for a half marathon in October", {"id": MARATHON}),
    ]
    assert "score" not in records[NOTED].value  # the search's, not the record's


def test_it_matches_a_search_to_the_version_it_returned_when_history_is_known() -> None:
    document = mem0.read({"search": OUTPUTS["search"], "query": "what should alice eat", "top_k": 3,
                          "threshold": 0.0, "history": OUTPUTS["history_updated"]})
    [recall] = document.recalls
    assert recall.query == "what should alice eat" and recall.params == {"top_k": 3, "threshold": 0.0}
    # The search ran before the update: it returned the first version's text.
    assert [(i.record, i.version) for i in recall.items][1] == (VEGAN, 1)
    # History wrote after the search was taken: the record's text is the update's.
    vegan = records_of(document)[VEGAN]
    assert vegan.text == "I am vegan and allergic to peanuts"
    assert vegan.content_hash == "fd30cf0cc567f9d8f1f14a4c5a64e5cf"
    assert vegan.updated_at == parse_time(at("20.589266"))


def test_it_reads_agentscope_s_mem0_records_and_their_history_by_memory_id() -> None:
    data = json.loads((MEMORY_SAMPLES / "agentscope" / "ltm_mem0_records.json").read_text())
    assert detect_memory(data) == ["mem0"]
    document = mem0.read(data)
    [store] = document.stores
    assert store.scope == {"user_id": "user_1", "agent_id": "Friday"} and store.agent == "Friday"
    records = records_of(document)
    assert versions(records["97471722-3994-4a2e-ae92-ad22be78fc72"]) == [
        (1, "ADD", "User prefers trains over flights", "2026-12-06T00:51:32.712017+00:00"),
        (2, "UPDATE", "User prefers high-speed trains over flights", "2026-12-06T00:51:32.726813+00:00")]
    assert versions(records["ac66f5e8-3d90-4352-b1eb-eaf750ecca96"]) == [
        (1, "ADD", "User is planning a trip to Hangzhou next week", "2026-12-06T00:51:32.711958+00:00")]
    assert records["ac66f5e8-3d90-4352-b1eb-eaf750ecca96"].metadata == {"user_id": "user_1", "agent_id": "Friday"}


# --- the rules --------------------------------------------------------------------------------------------------


def _row(event: str, new: str | None, old: str | None, updated: str | None, created: str = at("00.100000"),
         memory_id: str = "m1") -> dict[str, Any]:
    return {"id": f"h-{event}-{updated}", "memory_id": memory_id, "old_memory": old, "new_memory": new,
            "event": event, "created_at": created, "updated_at": updated, "is_deleted": event == "DELETE",
            "actor_id": None, "role": None}


def test_it_places_a_delete_without_a_time_after_the_row_before_it() -> None:
    # created_at is the memory's creation time on every row, not the event's: an untimed DELETE taking it would go
    # before the UPDATE.
    rows = [_row("ADD", "a", None, at("00.100000")), _row("UPDATE", "b", "a", at("05.100000")),
            _row("DELETE", None, "b", None)]
    [record] = records_of(mem0.read(rows)).values()
    assert versions(record) == [(1, "ADD", "a", at("00.100000")), (2, "UPDATE", "b", at("05.100000")),
                                (3, "DELETE", None, None)]
    assert (record.state, record.text) == ("deleted", "b")


def test_it_orders_rows_by_their_time_whatever_order_the_file_lists_them_in() -> None:
    rows = [_row("UPDATE", "c", "b", at("09.100000")), _row("ADD", "a", None, at("01.100000")),
            _row("UPDATE", "b", "a", at("05.100000"))]
    [record] = records_of(mem0.read(rows)).values()
    assert [v.text for v in record.versions] == ["a", "b", "c"] and record.text == "c"


def test_it_gives_the_events_of_an_add_output_to_records_history_does_not_know() -> None:
    document = mem0.read({"results": [{"id": "m1", "memory": "x", "event": "ADD"},
                                      {"id": "m2", "memory": "gone", "event": "DELETE"}]})
    records = records_of(document)
    assert versions(records["m1"]) == [(1, "ADD", "x", None)]
    assert versions(records["m2"]) == [(1, "DELETE", None, None)]
    assert (records["m2"].state, records["m2"].text) == ("deleted", "gone")


def test_it_reads_times_as_mem0_and_sqlite_write_them() -> None:
    assert parse_time("2026-12-06T00:48:20.493510+00:00") == datetime(2026, 12, 6, 0, 48, 20, 493510, tzinfo=UTC)
    assert parse_time("2026-12-06 00:53:01") == datetime(2026, 12, 6, 0, 53, 1, tzinfo=UTC)  # CURRENT_TIMESTAMP: UTC
    assert parse_time("2026-12-06T00:52:32Z") == datetime(2026, 12, 6, 0, 52, 32, tzinfo=UTC)
    with pytest.raises(ValueError):
        parse_time("yesterday")


def _json_samples(skip: set[str]) -> list[tuple[str, Any]]:
    out = []
    for path in sorted(SAMPLES.rglob("*")):
        if path.suffix not in (".json", ".af", ".jsonl") or path.name in skip:
            continue
        texts = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
        for text in texts:
            value = json.loads(text)
            if isinstance(value, str):  # a Letta file encoded twice
                value = json.loads(value)
            out.append((str(path.relative_to(SAMPLES)), value))
    return out


def test_it_detects_mem0_s_shapes_and_no_other_format_s_sample() -> None:
    shape: Any
    for shape in (OUTPUTS["get_all"], OUTPUTS["search"], OUTPUTS["get_all"]["results"], OUTPUTS["history_updated"],
                  {"get_all": OUTPUTS["get_all"], "history": {VEGAN: OUTPUTS["history_updated"]}}, {"results": []}):
        assert mem0.detect(shape), shape
    # mem0_outputs.json is the sample script's dump of every call (add's and update's messages among them): its
    # parts are mem0's output, not the whole.
    others = _json_samples({"ltm_mem0_records.json"})
    assert len(others) > 30
    assert [name for name, value in others if mem0.detect(value)] == []


# --- bad input --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "place", "detail"), [
    ({"results": [{"id": 3, "memory": "x"}]}, "results[0].id", "expected a string, got a number"),
    ({"results": [{"id": "m", "memory": "x", "metadata": [1]}]}, "results[0].metadata", "expected an object"),
    ({"results": [{"id": "m", "memory": "x", "score": "high"}]}, "results[0].score", "expected a number"),
    ([_row("ADD", "a", None, "yesterday")], "input[0].updated_at", "not a time: 'yesterday'"),
    ([_row("ADD", 5, None, None)], "input[0].new_memory", "expected a string or null, got a number"),  # type: ignore[arg-type]
    ({"history": {"m1": [{"event": "ADD", "new_memory": "a", "memory_id": None}]}}, "history.m1[0].memory_id",
     "expected a string"),
    ({"results": [], "notes": "x"}, "input.notes", "not a key of mem0's output"),
    ("text", "input", "expected mem0 records"),
])
def test_it_names_the_place_of_a_bad_value(data: Any, place: str, detail: str) -> None:
    with pytest.raises(FormatError) as caught:
        mem0.read(data)
    assert caught.value.place == place and detail in caught.value.detail


def test_it_refuses_deep_nesting_before_reading_it() -> None:
    deep: Any = "x"
    for _ in range(500):
        deep = {"a": deep}
    with pytest.raises(FormatError, match="nested too deeply"):
        mem0.read({"results": [{"id": "m", "memory": "x", "metadata": deep}]})


def _history_db(path: Path, rows: list[tuple[Any, ...]], *, extra: str | None = None) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE history (id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT, new_memory TEXT, "
               "event TEXT, created_at DATETIME, updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)")
    db.executemany("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    if extra:
        db.execute(extra)
    db.commit()
    db.close()
    return path


def test_it_names_the_row_of_a_bad_value_in_history_db(tmp_path: Path) -> None:
    path = _history_db(tmp_path / "h.db", [
        ("h1", "m1", None, "a", "ADD", at("00.100000"), at("00.100000"), 0, None, None),
        ("h2", "m1", "a", "b", "UPDATE", at("00.100000"), 17, 0, None, None),
    ])
    with open_database(path) as db, pytest.raises(FormatError) as caught:
        list(mem0.read_sqlite(db).records)
    assert str(caught.value) == "history[rowid=2].updated_at: expected a time, got a number"


def test_it_refuses_a_history_table_that_is_not_mem0_s(tmp_path: Path) -> None:
    path = tmp_path / "browser.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE history (url TEXT, visited INTEGER)")
    db.execute("CREATE TABLE bookmarks (url TEXT)")
    db.commit()
    db.close()
    with pytest.raises(FormatError) as caught:
        read_database(path)
    assert str(caught.value) == "history: not mem0's history table: no column memory_id, event"


def test_it_names_a_damaged_database_even_while_its_records_are_read(tmp_path: Path) -> None:
    rows = [(f"h{i}", f"m{i // 3}", None, "x" * 200, "ADD", at("00.100000"), None, 0, None, None) for i in range(3000)]
    path = _history_db(tmp_path / "h.db", rows)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096  # a page of rows, far from the schema on the first page
    data[middle:middle + 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))
    with open_database(path) as db:
        document = mem0.read_sqlite(db)  # the schema reads: the damage is met among the rows
        with pytest.raises(FormatError, match="damaged SQLite database"):
            for _ in document.records:
                pass


def test_it_streams_a_big_history_db_in_bounded_memory(tmp_path: Path) -> None:
    rows = [(f"h{i}", f"memory-{i % 5000:05d}", None, f"text {i} " * 8, "UPDATE" if i >= 5000 else "ADD",
             at("00.100000"), f"2026-12-06T01:{i // 1000 % 60:02d}:{i % 60:02d}+00:00", 0, "alice", "user")
            for i in range(40_000)]
    path = _history_db(tmp_path / "big.db", rows)
    with open_database(path) as db:
        document = mem0.read_sqlite(db)
        tracemalloc.start()
        try:
            count = versions_seen = 0
            for _, record in document.records:
                count += 1
                versions_seen += len(record.versions)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert (count, versions_seen) == (5000, 40_000)
    # 40,000 versions held at once would take well over 20 MB; one record at a time takes a few kilobytes.
    assert peak < 2_000_000, peak


# --- writing ----------------------------------------------------------------------------------------------------


def test_it_writes_the_records_as_get_all_lists_them_and_every_version_as_a_history_row() -> None:
    rows = OUTPUTS["history_updated"] + OUTPUTS["history_deleted"]
    document = mem0.read({"results": OUTPUTS["get_all_after"]["results"], "history": rows})
    report = WriteReport(format="mem0")
    written = mem0.write(document, report)
    assert written["results"] == OUTPUTS["get_all_after"]["results"]  # the deleted record is not listed
    by_id = {row["id"]: row for row in written["history"]}
    for row in rows:
        assert by_id[row["id"]] == row
    assert report.dropped == []
    again = records_of(mem0.read(written))
    assert {k: (versions(r), r.text, r.metadata, r.state) for k, r in again.items()} == {
        k: (versions(r), r.text, r.metadata, r.state) for k, r in records_of(document).items()}


def test_it_reports_what_mem0_cannot_hold() -> None:
    document = mem0.read(OUTPUTS["search"])
    document.recalls.append(RecallIn(store="mem0"))
    report = WriteReport(format="mem0")
    mem0.write(document, report)
    assert report.dropped == ["recall on 2 recalls: mem0 keeps no record of its reads"]


# --- files mem0 writes in this run ------------------------------------------------------------------------------


@pytest.fixture
def mem0_files(library_files: Any) -> Path:
    return Path(library_files("mem", "mem0_files.py"))


def _load(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text())


def _expected_versions(rows: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None]]:
    return [(r["event"], None if r["event"] == "DELETE" else r["new_memory"],
             parse_time(r["updated_at"] or r["created_at"]).isoformat()) for r in rows]


def test_it_reads_mem0_s_fresh_history_db_as_mem0_s_history_gives_it(mem0_files: Path) -> None:
    history = _load(mem0_files, "history.json")
    ids = _load(mem0_files, "ids.json")
    _, records = read_db(mem0_files / "history.db")
    assert sorted(records) == sorted(ids["added"]) == sorted(history)
    for memory_id, rows in history.items():
        assert [(op, text, when) for _, op, text, when in versions(records[memory_id])] == _expected_versions(rows)
        assert [v.external_id for v in records[memory_id].versions] == [r["id"] for r in rows]
    assert {k for k, r in records.items() if r.state == "deleted"} == set(ids["deleted"])
    vegan = records[ids["updated"][0]]
    # Two updates: the second changed only the metadata, so its text is the first's (a noop write, kept).
    assert [v.op for v in vegan.versions] == ["ADD", "UPDATE", "UPDATE"]
    assert vegan.versions[1].text == vegan.versions[2].text == vegan.text == "I am vegan and allergic to peanuts"


def test_it_reads_mem0_s_fresh_messages_as_one_conversation_per_scope(mem0_files: Path) -> None:
    rows = _load(mem0_files, "messages.json")
    document, _ = read_db(mem0_files / "history.db")
    got = {c.external_id: [(m.external_id, m.role, m.content) for m in c.messages] for c in document.conversations}
    expected: dict[str, list[tuple[str, str, str]]] = {}
    for row in rows:
        expected.setdefault(row["session_scope"], []).append((row["id"], row["role"], row["content"]))
    assert got == expected and list(got) == ["user_id=alice", "user_id=bob"]


def test_it_reads_mem0_s_fresh_get_all_with_its_history_as_the_api_gives_them(mem0_files: Path) -> None:
    get_all = _load(mem0_files, "get_all.json")
    history = _load(mem0_files, "history.json")
    listed = {r["id"]: r for output in get_all.values() for r in output["results"]}
    document = mem0.read({"results": list(listed.values()), "history": history})
    [store] = document.stores
    assert store.scope == {}  # alice's, bob's and the planner's records share no scope
    records = records_of(document)
    for memory_id, body in listed.items():
        record = records[memory_id]
        assert (record.text, record.content_hash, record.state) == (body["memory"], body["hash"], "active")
        own = {k: body[k] for k in mem0.PROMOTED if k in body}
        assert record.metadata == {**(body["metadata"] or {}), **own}
        assert [(op, text, when) for _, op, text, when in versions(record)] == _expected_versions(history[memory_id])
    assert {k for k, r in records.items() if r.state == "deleted"} == set(_load(mem0_files, "ids.json")["deleted"])
    bob = mem0.read({"get_all": get_all["bob"], "history": {k: history[k] for k in listed
                                                            if listed[k].get("user_id") == "bob"}})
    assert bob.stores[0].scope == {"user_id": "bob"} and bob.stores[0].name == "mem0 (user_id=bob)"
    planner = mem0.read(get_all["planner"])
    assert planner.stores[0].scope == {"agent_id": "planner"} and planner.stores[0].agent == "planner"


def test_it_reads_mem0_s_fresh_search_as_a_recall_with_its_query_and_scores(mem0_files: Path) -> None:
    data = _load(mem0_files, "search.json")
    assert mem0.detect(data)
    [recall] = mem0.read(data).recalls
    assert recall.query == data["query"] and recall.params == {"top_k": 3, "threshold": 0.0}
    assert [(i.rank, i.record, i.score, i.text) for i in recall.items] == [
        (rank, r["id"], r["score"], r["memory"]) for rank, r in enumerate(data["search"]["results"], 1)]


def test_mem0_takes_back_the_records_memoryviz_writes(mem0_files: Path, tmp_path: Path) -> None:
    from tests.memory_libs.runner import run_script

    get_all = _load(mem0_files, "get_all.json")
    listed = {r["id"]: r for output in get_all.values() for r in output["results"]}
    document = mem0.read({"results": list(listed.values()), "history": _load(mem0_files, "history.json")})
    report = WriteReport(format="mem0")
    written = mem0.write(document, report)
    assert report.dropped == []
    path = tmp_path / "written.json"
    path.write_text(json.dumps(written))
    run_script("mem", "mem0_files.py", tmp_path, "reload", str(path))
    reloaded = _load(tmp_path, "reloaded.json")
    assert set(reloaded) == set(listed)
    for memory_id, body in listed.items():
        again = reloaded[memory_id]
        assert again["memory"] == body["memory"] and again["hash"] == body["hash"]
        assert again.get("metadata") == body.get("metadata")
        for key in ("user_id", "agent_id", "run_id", "actor_id", "attributed_to"):
            assert again.get(key) == body.get(key), key
        if body.get("role"):
            assert again["role"] == body["role"]
