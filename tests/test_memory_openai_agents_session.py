"""The Agents SDK session reader (agents/memory/formats/openai_agents_session.py): a SQLiteSession database, on the
sample the SDK 0.24.0 wrote (tests/samples/memory/openai_agents/conversations.db) and on databases it writes in this
test run (tests/memory_libs/agents_sdk_files.py), AdvancedSQLiteSession's branches among them. Its items are read by
the openai_responses reader: written back with it, each session gives what the SDK's get_items() gives."""
from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.memory.formats import openai_agents_session, openai_responses
from agents.memory.formats.base import FormatError, WriteReport
from agents.memory.formats.memory_files import detect_database, open_database, read_database, tables_of
from agents.memory.ledger import MemoryDocument
from agents.memory.schema import Conversation
from tests.paths import MEMORY_SAMPLES

SAMPLE_DB = MEMORY_SAMPLES / "openai_agents" / "conversations.db"
SDK_SCHEMA = [
    "CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
    "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)",
    "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, "
    "message_data TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, FOREIGN KEY (session_id) "
    "REFERENCES agent_sessions (session_id) ON DELETE CASCADE)",
]


def read(path: Path) -> MemoryDocument:
    with open_database(path) as db:
        return openai_agents_session.read_sqlite(db)


def items_of(conversation: Conversation) -> list[Any]:
    """The conversation written back as Responses items, by the openai_responses writer."""
    report = WriteReport(format="openai_responses")
    written = json.loads("".join(openai_responses.write([conversation], report)))
    # What a list of items cannot hold: the session's id, title and times, each message's time.
    assert {line.split(" on ")[0] for line in report.dropped} <= {"external_id", "title", "started_at", "created_at"}
    return written if isinstance(written, list) else written["input"]


def database(path: Path, sessions: list[tuple[str, str]], rows: list[tuple[int, str, Any, str]],
             extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    db = sqlite3.connect(path)
    for sql in [*SDK_SCHEMA, *extra]:
        db.execute(sql)
    db.executemany("INSERT INTO agent_sessions VALUES (?, ?, ?)", [(s, t, t) for s, t in sessions])
    db.executemany("INSERT INTO agent_messages VALUES (?, ?, ?, ?)",
                   [(i, s, item if isinstance(item, str) else json.dumps(item), t) for i, s, item, t in rows])
    db.commit()
    db.close()
    return path


def t(second: int) -> str:
    return f"2026-12-06 00:53:{second:02d}"


def utc(second: int) -> datetime:
    return datetime(2026, 12, 6, 0, 53, second, tzinfo=UTC)


# --- the sample -------------------------------------------------------------------------------------------------


def test_it_reads_the_sample_session_as_one_conversation_of_its_items_in_order() -> None:
    with open_database(SAMPLE_DB) as db:
        assert detect_database(tables_of(db)) == "openai_agents_session"
    document = read_database(SAMPLE_DB)
    [conversation] = document.conversations
    assert (conversation.external_id, conversation.title, conversation.source_format, conversation.started_at) == (
        "user-7", "user-7", "openai_agents_session", utc(1))
    assert conversation.metadata["openai_agents_session"] == {
        "session_id": "user-7", "created_at": "2026-12-06T00:53:01+00:00", "updated_at": "2026-12-06T00:53:01+00:00"}
    assert [(m.role, m.content, [(c.id, c.function.name, c.function.arguments) for c in m.tool_calls],
             m.tool_call_id, m.external_id, m.created_at) for m in conversation.messages] == [
        ("user", "Weather in Oslo?", [], None, None, utc(1)),
        ("assistant", None, [("call_1", "get_weather", '{"city": "Oslo"}')], None, None, utc(1)),
        ("tool", "Oslo: 3C, snow", [], "call_1", None, utc(1)),
        ("assistant", "Oslo: 3°C and snowing.", [], None, "msg_2", utc(1)),
    ]
    assert document.stores == [] and document.recalls == [] and document.notes == []


def test_it_writes_the_sample_back_as_the_items_get_items_gave() -> None:
    [conversation] = read(SAMPLE_DB).conversations
    expected = json.loads((MEMORY_SAMPLES / "openai_agents" / "session_get_items.json").read_text())
    assert items_of(conversation) == expected


# --- the rules --------------------------------------------------------------------------------------------------


def test_it_gives_each_message_the_time_of_the_row_that_opens_it(tmp_path: Path) -> None:
    call = {"type": "function_call", "name": "f", "arguments": "{}"}
    rows = [
        (1, "s", {"role": "user", "content": "hi"}, t(1)),
        (2, "s", {**call, "call_id": "a"}, t(2)),
        (3, "s", {**call, "call_id": "b"}, t(3)),  # joins the call before it: one assistant message
        (4, "s", {"type": "function_call_output", "call_id": "a", "output": "A"}, t(4)),
        (5, "s", {"type": "function_call_output", "call_id": "b", "output": "B"}, t(5)),
        (6, "s", {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "so"}]}, t(6)),
        (7, "s", {"type": "message", "role": "assistant", "id": "msg_1",
                  "content": [{"type": "output_text", "text": "done", "annotations": []}]}, t(7)),
    ]
    [conversation] = read(database(tmp_path / "s.db", [("s", t(0))], rows)).conversations
    assert [(m.role, len(m.tool_calls), m.created_at, m.reasoning) for m in conversation.messages] == [
        ("user", 0, utc(1), None), ("assistant", 2, utc(2), None), ("tool", 0, utc(4), None),
        ("tool", 0, utc(5), None), ("assistant", 0, utc(7), "so")]
    assert items_of(conversation) == [row[2] for row in rows]


def test_it_orders_items_by_id_and_reads_every_session(tmp_path: Path) -> None:
    rows = [(9, "a", {"role": "assistant", "content": "second"}, t(1)), (2, "a", {"role": "user", "content": "first"},
            t(1)), (5, "orphan", {"role": "user", "content": "no session row"}, t(2))]
    document = read(database(tmp_path / "s.db", [("empty", t(0)), ("a", t(1))], rows))
    assert [(c.external_id, [m.content for m in c.messages]) for c in document.conversations] == [
        ("empty", []), ("a", ["first", "second"]), ("orphan", ["no session row"])]
    assert document.conversations[2].started_at == utc(2)  # no session row: its first item's time


# --- bad input --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("item", "place", "detail"), [
    ('{"role": "user", "content": "cut', "agent_messages[id=2].message_data", "not JSON"),
    ({"type": "function_call", "name": "f", "arguments": {}, "call_id": "c"},
     "agent_messages[id=2].message_data.arguments", "expected a string (the arguments as JSON text)"),
    ({"role": "robot", "content": "x"}, "agent_messages[id=2].message_data.role", "expected user, assistant"),
    ("[" * 5000 + "]" * 5000, "agent_messages[id=2].message_data", "nested too deeply"),
])
def test_it_names_the_row_of_a_bad_item(tmp_path: Path, item: Any, place: str, detail: str) -> None:
    path = database(tmp_path / "s.db", [("s", t(0))], [(1, "s", {"role": "user", "content": "ok"}, t(1)),
                                                       (2, "s", item, t(2))])
    with pytest.raises(FormatError) as caught:
        read(path)
    assert caught.value.place == place and detail in caught.value.detail


def test_it_names_a_bad_time_and_a_table_that_is_not_the_sdk_s(tmp_path: Path) -> None:
    path = database(tmp_path / "s.db", [("s", t(0))], [(1, "s", {"role": "user", "content": "ok"}, "noon")])
    with pytest.raises(FormatError, match=r"^agent_messages\[id=1\]\.created_at: not a time: 'noon'$"):
        read(path)
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE agent_sessions (session_id TEXT)")
    db.execute("CREATE TABLE agent_messages (id INTEGER, body TEXT)")
    db.commit()
    db.close()
    with pytest.raises(FormatError) as caught:
        read_database(other)
    assert str(caught.value) == ("agent_messages: not the Agents SDK's agent_messages table: no column session_id, "
                                 "message_data")


def test_it_names_a_damaged_database(tmp_path: Path) -> None:
    rows = [(i, "s", {"role": "user", "content": "x" * 300}, t(1)) for i in range(1, 2000)]
    path = database(tmp_path / "s.db", [("s", t(0))], rows)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle:middle + 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="damaged SQLite database"):
        read_database(path)


# --- databases the SDK writes in this run -----------------------------------------------------------------------


@pytest.fixture
def sdk_files(library_files: Any) -> Path:
    return Path(library_files("mem", "agents_sdk_files.py"))


def _load(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text())


def test_it_reads_each_session_as_get_items_gives_it(sdk_files: Path) -> None:
    expected = _load(sdk_files, "get_items.json")
    document = read(sdk_files / "sessions.db")
    assert [c.external_id for c in document.conversations] == ["user-7", "user-9"]
    for conversation in document.conversations:
        assert items_of(conversation) == expected[conversation.external_id]
    db = sqlite3.connect(sdk_files / "sessions.db")
    first = {s: datetime.fromisoformat(when).replace(tzinfo=UTC) for s, when in db.execute(
        "SELECT session_id, min(created_at) FROM agent_messages GROUP BY session_id")}
    db.close()
    for conversation in document.conversations:
        assert conversation.messages[0].created_at == first[conversation.external_id]
    user9 = document.conversations[1]
    # pop_item() took the first answer back: its reasoning item stays, before the next message.
    assert [(m.role, m.content, m.reasoning) for m in user9.messages] == [
        ("user", "Weather in Bergen?", None), ("user", "And the temperature?", "The user asks about Bergen."),
        ("assistant", "Bergen: rain, 8°C.", None)]


def test_it_reads_an_advanced_session_s_branches_as_get_items_gives_each(sdk_files: Path) -> None:
    expected = _load(sdk_files, "advanced_items.json")
    usage = _load(sdk_files, "advanced_usage.json")
    document = read(sdk_files / "advanced.db")
    assert [(c.external_id, c.metadata["openai_agents_session"]["branch_id"]) for c in document.conversations] == [
        ("user-adv", "main"), ("user-adv@rainy", "rainy")]
    for conversation in document.conversations:
        branch = conversation.metadata["openai_agents_session"]["branch_id"]
        assert items_of(conversation) == expected[branch]
        assert conversation.metadata["openai_agents_session"]["turn_usage"] == [
            {"turn": u["user_turn_number"], **{k: u[k] for k in ("requests", "input_tokens", "output_tokens",
                                                                  "total_tokens")}} for u in usage[branch]]
    main, rainy = document.conversations
    assert [m.content for m in rainy.messages][:2] == [m.content for m in main.messages][:2]  # shared before turn 2
    assert document.notes == []
