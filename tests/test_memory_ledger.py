"""The memory layers' shared rules (agents/memory/ledger.py): version order, matching recalled items, the version
current at a moment; and SQLite files opened as data (agents/memory/formats/memory_files.py)."""
from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agents.memory.formats.base import FormatError
from agents.memory.formats.memory_files import detect_database, open_database, read_database, tables_of
from agents.memory.ledger import (
    CompactionIn,
    MemoryDocument,
    RecallItemIn,
    RecordIn,
    RecordIndex,
    StoreIn,
    VersionIn,
    content_hash,
    folded,
    match_items,
    order_events,
    record_state,
    scope_of,
    version_at,
)

T0 = datetime(2026, 12, 6, 0, 48, 20, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_it_hashes_text_as_mem0_does() -> None:
    # mem0's own hash of "I am vegetarian and allergic to peanuts" (tests/samples/memory/mem0/mem0_outputs.json).
    assert content_hash("I am vegetarian and allergic to peanuts") == "e7b3e6973568958b66ce1134834236b0"
    assert content_hash("é") == hashlib.md5("é".encode()).hexdigest()


def test_it_orders_versions_by_time_then_by_the_order_read() -> None:
    versions = [
        VersionIn(op="UPDATE", text="b", at=at(2), order=5),
        VersionIn(op="ADD", text="a", at=at(1), order=9),
        VersionIn(op="UPDATE", text="c", at=at(2), order=7),
    ]
    assert [v.text for v in order_events(versions)] == ["a", "b", "c"]


def test_it_places_an_untimed_delete_after_the_event_before_it_never_dropping_it() -> None:
    versions = [
        VersionIn(op="ADD", text="a", at=at(1), order=1),
        VersionIn(op="UPDATE", text="b", at=at(3), order=2),
        VersionIn(op="DELETE", text=None, at=None, order=3),
    ]
    record = RecordIn(external_id="r1", text="b", versions=versions)
    ordered = record.ordered_versions()
    assert [(v.number, v.op) for v in ordered] == [(1, "ADD"), (2, "UPDATE"), (3, "DELETE")]
    assert record_state(ordered) == "deleted"


def test_it_keeps_untimed_events_that_lead_in_the_order_read() -> None:
    versions = [VersionIn(op="ADD", text="a", order=1), VersionIn(op="UPDATE", text="b", at=at(1), order=2)]
    assert [v.text for v in order_events(versions)] == ["a", "b"]


def test_it_compares_naive_and_aware_times_on_one_line() -> None:
    naive = datetime(2026, 12, 6, 0, 48, 21)  # read as UTC: one second after T0
    versions = [VersionIn(op="UPDATE", text="b", at=naive), VersionIn(op="ADD", text="a", at=T0)]
    assert [v.text for v in order_events(versions)] == ["a", "b"]


def test_it_matches_recalled_items_by_id_then_hash_then_folded_text() -> None:
    records = [
        RecordIn(external_id="m1", text="User prefers high-speed trains over flights",
                 versions=[VersionIn(op="ADD", text="User prefers trains over flights")]),
        RecordIn(external_id="m2", text="User is planning a trip to Hangzhou next week"),
    ]
    index = RecordIndex.of(records)
    items = [
        RecallItemIn(text="anything", rank=1, ref={"id": "m2"}),
        RecallItemIn(text="User prefers trains over flights", rank=2),  # an older version's text
        RecallItemIn(text="  User is planning a trip\nto Hangzhou next week ", rank=3),
        RecallItemIn(text="Nobody wrote this", rank=4),
    ]
    matched = match_items(items, index)
    assert [item.record for item in matched] == ["m2", "m1", "m2", None]
    assert matched[3].text == "Nobody wrote this"  # an unmatched item stays, as unmatched


def test_it_finds_the_version_current_at_a_moment() -> None:
    record = RecordIn(external_id="m1", versions=[
        VersionIn(op="ADD", text="a", at=at(1)), VersionIn(op="UPDATE", text="b", at=at(5)),
    ])
    versions = record.ordered_versions()
    assert version_at(versions, at(0)) is None  # before the record existed
    assert version_at(versions, at(3)) == 1
    assert version_at(versions, at(5)) == 2
    assert version_at(versions, None, text="a") == 1  # no time: the version whose text was sent
    assert version_at(versions, None) == 2


def test_it_keeps_only_the_scope_keys_that_are_set() -> None:
    assert scope_of({"user_id": "alice", "agent_id": "", "run_id": None, "other": 1}) == {"user_id": "alice"}
    assert folded(" a \n\t b ") == "a b"


# --- SQLite files as data ---------------------------------------------------------------------------------------


def _database(path: Path, statements: list[str]) -> Path:
    db = sqlite3.connect(path)
    for sql in statements:
        db.execute(sql)
    db.commit()
    db.close()
    return path


def test_it_refuses_a_database_that_is_none_of_the_known_ones_by_its_tables(tmp_path: Path) -> None:
    path = _database(tmp_path / "x.db", ["CREATE TABLE customers (id INTEGER)", "CREATE TABLE orders (id INTEGER)"])
    with pytest.raises(FormatError) as caught:
        read_database(path)
    text = str(caught.value)
    assert "customers, orders" in text and "none of the known ones" in text
    assert "mem0 (history)" in text and "openai_agents_session (agent_messages, agent_sessions)" in text


def test_it_opens_a_database_read_only_so_nothing_in_it_is_written(tmp_path: Path) -> None:
    path = _database(tmp_path / "x.db", ["CREATE TABLE history (id TEXT)"])
    before = path.read_bytes()
    with open_database(path) as db:
        for sql in ["INSERT INTO history VALUES ('x')", "CREATE TABLE y (a)", "DROP TABLE history",
                    "PRAGMA journal_mode = WAL", "PRAGMA query_only = OFF"]:
            with pytest.raises(sqlite3.DatabaseError):
                db.execute(sql)
    assert path.read_bytes() == before
    assert not (tmp_path / "x.db-wal").exists() and not (tmp_path / "x.db-journal").exists()


def test_it_attaches_no_other_database_and_loads_no_extension(tmp_path: Path) -> None:
    other = _database(tmp_path / "other.db", ["CREATE TABLE secret (a)"])
    path = _database(tmp_path / "x.db", ["CREATE TABLE history (id TEXT)"])
    with open_database(path) as db:
        with pytest.raises(sqlite3.DatabaseError):
            db.execute(f"ATTACH DATABASE '{other}' AS other")
        with pytest.raises(sqlite3.DatabaseError):
            db.execute("SELECT load_extension('/nonexistent.so')")
        assert tables_of(db) == {"history"}


def test_it_runs_no_function_a_view_in_the_file_names(tmp_path: Path) -> None:
    # A view is how a file could make a reader's plain SELECT run something: only plain functions are allowed.
    path = _database(tmp_path / "x.db", [
        "CREATE TABLE base (a TEXT)", "INSERT INTO base VALUES ('x')",
        "CREATE VIEW history AS SELECT randomblob(1000000000) AS id FROM base",
    ])
    with open_database(path) as db:
        assert "history" not in tables_of(db)  # a view is not a table: detection never counts it
        with pytest.raises(sqlite3.DatabaseError):
            db.execute("SELECT * FROM history").fetchall()


def test_it_says_which_formats_a_database_could_be() -> None:
    assert detect_database({"history", "messages"}) == "mem0"
    assert detect_database({"checkpoints", "writes"}) == "langgraph_checkpoints"
    assert detect_database({"agent_sessions", "agent_messages", "message_structure"}) == "openai_agents_session"


def test_it_names_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    with pytest.raises(FormatError, match="SQLite database"):
        read_database(path)


def test_it_reads_what_a_running_program_left_in_the_write_ahead_log_of_a_file_given_by_its_path(
        tmp_path: Path) -> None:
    path = tmp_path / "live.db"
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # what it writes stays in the log while it runs
    writer.execute("CREATE TABLE history (id TEXT)")
    writer.execute("INSERT INTO history VALUES ('in the log')")
    writer.commit()
    try:
        assert (tmp_path / "live.db-wal").stat().st_size > 0
        with open_database(path, live=True) as db:
            assert db.execute("SELECT id FROM history").fetchall() == [("in the log",)]
        # An upload is a copy, opened immutable: the main file alone.
        with open_database(path) as db:
            assert "history" not in tables_of(db)
    finally:
        writer.close()


def test_it_carries_compactions_and_bodiless_versions_through_a_document():
    seen = VersionIn(op="UPDATE", at=T0, captured=False)
    store = StoreIn(key="s", name="s", kind="records", source_format="otel")
    record = RecordIn(external_id="r", versions=[seen])
    doc = MemoryDocument(format="otel", stores=[store], records=iter([("s", record)]),
                         compactions=[CompactionIn(external_id="t:part:c1", at=T0, summary="so far", source="output")])
    assert not MemoryDocument(format="otel", compactions=doc.compactions).is_empty()
    assert MemoryDocument(format="otel").is_empty()
    whole = doc.materialized()
    assert whole.compactions == doc.compactions
    assert whole.stores[0].records[0].versions == [seen] and not seen.captured and seen.text is None
    assert VersionIn(op="ADD", text="x").captured
