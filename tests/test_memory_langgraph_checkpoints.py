"""The LangGraph checkpoints reader (agents/memory/formats/langgraph_checkpoints.py): the samples, and the SqliteSaver
database and get_state_history JSON that LangGraph writes in this run (tests/memory_libs/langgraph_files.py), compared
with what LangGraph's own API said about them in the same script (checkpoints.json)."""
from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import msgpack
import pytest

from agents.memory.formats import langgraph_checkpoints as lg
from agents.memory.formats.base import FormatError
from agents.memory.formats.langchain import message_from_dump
from agents.memory.formats.memory_files import detect_database, detect_memory, read_database
from agents.memory.ledger import MemoryDocument, SnapshotIn

LANGGRAPH = Path(__file__).parent / "samples" / "memory" / "langgraph"
SAMPLES = Path(__file__).parent / "samples"


@pytest.fixture(scope="module")
def lg_files(library_files: Any) -> Path:
    folder: Path = library_files("mem", "langgraph_files.py")
    return folder


@pytest.fixture(scope="module")
def lg_db(lg_files: Path) -> MemoryDocument:
    return read_database(lg_files / "checkpoints.sqlite")


@pytest.fixture(scope="module")
def listed(lg_files: Path) -> list[dict[str, Any]]:
    """Every checkpoint as LangGraph's saver.list(None) gave it."""
    rows: list[dict[str, Any]] = json.loads((lg_files / "checkpoints.json").read_text(encoding="utf-8"))
    return rows


def by_id(document: MemoryDocument) -> dict[str, SnapshotIn]:
    return {s.external_id: s for s in document.snapshots}


def conversation(document: MemoryDocument, key: str) -> Any:
    return next(c for c in document.conversations if c.external_id == key)


# --- the samples (langgraph 1.2.24, tests/samples/memory/langgraph) --------------------------------------------

def test_it_reads_get_state_history_json_each_step_a_snapshot() -> None:
    data = json.loads((LANGGRAPH / "state_history.json").read_text(encoding="utf-8"))
    assert lg.detect(data)
    document = lg.read(data)
    ids = ["1f1f10f5-1997-6b4f-bfff-6aff009ae3e7", "1f1f10f5-199c-6312-8000-89c6fcac5893",
           "1f1f10f5-19a9-68e3-8001-3aa48414e9e3", "1f1f10f5-19b1-6852-8002-668827c6a35f",
           "1f1f10f5-19b6-6f44-8003-f85909d2296f"]
    snapshots = document.snapshots
    assert [(s.external_id, s.parent, s.step, s.session, s.seq) for s in snapshots] == [
        (ids[0], None, -1, "thread-1", None),  # the input checkpoint holds no message yet
        (ids[1], ids[0], 0, "thread-1", 0),
        (ids[2], ids[1], 1, "thread-1", 1),
        (ids[3], ids[2], 2, "thread-1", 2),
        (ids[4], ids[3], 3, "thread-1", 3),
    ]
    assert snapshots[4].taken_at == datetime.fromisoformat("2026-12-06T00:52:32.114035+00:00")
    assert snapshots[4].value == data[0] and snapshots[0].value == data[4]  # verbatim; the file is newest first
    (thread,) = document.conversations
    assert thread.external_id == "thread-1"
    assert [(m.role, m.text, m.external_id) for m in thread.messages] == [
        ("user", "What's the weather in Lisbon?", "h-1"),
        ("assistant", "", "ai-1"),
        ("tool", "It is 21C and sunny in Lisbon.", "28ca5a88-c966-4d6b-a6cd-b1660795a306"),
        ("assistant", "Sunny, 21C in Lisbon - pack light clothes (you prefer carry-on only).", "ai-2"),
    ]
    call = thread.messages[1].tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == ("call_w1", "get_weather",
                                                                                  {"city": "Lisbon"})
    assert (thread.messages[2].tool_call_id, thread.messages[2].name, thread.messages[2].is_error) == (
        "call_w1", "get_weather", False)


def test_it_reads_a_checkpoint_tuple_json() -> None:
    data = json.loads((LANGGRAPH / "latest_checkpoint_tuple.json").read_text(encoding="utf-8"))
    assert lg.detect(data)
    (snapshot,) = lg.read(data).snapshots
    assert (snapshot.external_id, snapshot.parent, snapshot.step, snapshot.format_version, snapshot.seq) == (
        "1f1f10f5-19b6-6f44-8003-f85909d2296f", "1f1f10f5-19b1-6852-8002-668827c6a35f", 3, "4", 3)
    assert snapshot.value == data


def test_it_detects_its_json_and_no_other_sample() -> None:
    for path in sorted(SAMPLES.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert lg.detect(data) == (path.name in ("state_history.json", "latest_checkpoint_tuple.json")), path
    for path in sorted((SAMPLES / "memory" / "letta").glob("*.af")):
        assert not lg.detect(json.loads(path.read_text(encoding="utf-8")))


# --- LangGraph's own database, written in this run ----------------------------------------------------------------

def plain(value: Any) -> Any:
    """The reader's decoded value as LangGraph's objects dump to JSON (checkpoints.json): a model or dataclass its
    fields, a set a sorted list, a datetime or an enum its value."""
    if isinstance(value, dict):
        kind = value.get("__type__")
        if kind in ("builtins.set", "builtins.frozenset"):
            return sorted(plain(v) for v in value["value"])
        if isinstance(kind, str) and set(value) <= {"__type__", "value", "method"}:
            return plain(value["value"])
        return {k: plain(v) for k, v in value.items() if k != "__type__"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def test_it_makes_every_checkpoint_a_snapshot_as_langgraph_lists_it(lg_db: MemoryDocument,
                                                                     listed: list[dict[str, Any]]) -> None:
    snapshots = by_id(lg_db)
    assert len(snapshots) == len(listed) == len(lg_db.snapshots)
    for row in listed:
        snapshot = snapshots[row["checkpoint_id"]]
        assert snapshot.parent == row["parent_checkpoint_id"]
        assert snapshot.step == row["metadata"]["step"]
        assert snapshot.taken_at == datetime.fromisoformat(row["ts"])
        assert snapshot.format_version == str(row["v"])
        value = snapshot.value
        assert (value["thread_id"], value["checkpoint_ns"], value["metadata"]) == (
            row["thread_id"], row["checkpoint_ns"], row["metadata"])
        if row["channel_values"] is not None:
            assert plain(value["checkpoint"]["channel_values"]) == row["channel_values"]
        ours = sorted(json.dumps([w["task_id"], w["channel"], plain(w["value"])], sort_keys=True)
                      for w in value["pending_writes"])
        theirs = sorted(json.dumps(w, sort_keys=True) for w in row["pending_writes"])
        assert ours == theirs


def test_it_points_each_snapshot_to_the_last_message_it_holds(lg_db: MemoryDocument,
                                                               listed: list[dict[str, Any]]) -> None:
    snapshots = by_id(lg_db)
    for row in listed:
        snapshot = snapshots[row["checkpoint_id"]]
        thread = row["thread_id"] if not row["checkpoint_ns"] else f"{row['thread_id']}|{row['checkpoint_ns']}"
        assert snapshot.session == thread
        ids = row["message_ids"]
        last = ids[1] if row["thread_id"] == "thread-big" else (ids[-1] if ids else None)
        if last is None:
            assert snapshot.seq is None
        else:
            assert snapshot.seq is not None
            assert conversation(lg_db, thread).messages[snapshot.seq].external_id == last
    assert lg_db.notes == []


def test_it_makes_each_thread_latest_messages_a_conversation(lg_db: MemoryDocument, lg_files: Path) -> None:
    assert sorted(c.external_id for c in lg_db.conversations if "|" not in c.external_id) == [
        "thread-1", "thread-2", "thread-3", "thread-4", "thread-big"]
    thread = conversation(lg_db, "thread-1")
    assert [(m.role, m.external_id) for m in thread.messages if m.role != "tool"] == [
        ("user", "t1-h-1"), ("assistant", "t1-ai-1"), ("assistant", "t1-ai-2"), ("user", "t1-h-2"),
        ("assistant", "t1-ai-3"), ("assistant", "t1-ai-4")]
    assert [m.role for m in thread.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant",
                                                  "tool", "tool", "assistant"]
    parallel = thread.messages[5]
    assert [(c.id, c.function.name) for c in parallel.tool_calls] == [("call_w2", "get_weather"),
                                                                      ("call_t1", "get_time")]
    assert [(m.tool_call_id, m.text) for m in thread.messages[6:8]] == [
        ("call_w2", "It is 21C and sunny in Porto."), ("call_t1", "It is 10:00 in Porto.")]
    failed = conversation(lg_db, "thread-2").messages[4]
    assert (failed.role, failed.tool_call_id, failed.is_error) == ("tool", "call_b1", True)
    assert "no flights to Oslo" in failed.text
    # The same messages as get_state_history's newest state, read by the langchain reader.
    for name in ("thread-1", "thread-2", "thread-3", "thread-4"):
        history = json.loads((lg_files / f"history_{name}.json").read_text(encoding="utf-8"))
        newest = [message_from_dump(m, "x") for m in history[0]["values"]["messages"]]
        ours = conversation(lg_db, name).messages
        assert [m.model_dump(exclude={"extra"}) for m in ours] == [m.model_dump(exclude={"extra"}) for m in newest]
    assert len(conversation(lg_db, "thread-big").messages) == 10_001


def test_it_reads_get_state_history_json_like_the_database(lg_db: MemoryDocument, lg_files: Path) -> None:
    for name in ("thread-1", "thread-2", "thread-4"):
        history = json.loads((lg_files / f"history_{name}.json").read_text(encoding="utf-8"))
        assert lg.detect(history) and "langgraph_checkpoints" in detect_memory(history)
        document = lg.read(history)
        from_json = [(s.external_id, s.parent, s.step, s.taken_at, s.session, s.seq) for s in document.snapshots]
        from_db = [(s.external_id, s.parent, s.step, s.taken_at, s.session, s.seq) for s in lg_db.snapshots
                   if s.session == name]
        assert from_json == from_db
        assert document.conversations[0].messages == conversation(lg_db, name).messages


def test_it_keeps_a_subgraph_namespace_apart(lg_db: MemoryDocument) -> None:
    (child,) = [c for c in lg_db.conversations if c.external_id.startswith("thread-3|child:")]
    assert [(m.role, m.text) for m in child.messages] == [("user", "Research Lisbon"),
                                                          ("assistant", "Research done: Lisbon is hilly.")]
    child_snapshots = [s for s in lg_db.snapshots if s.session == child.external_id]
    parents = {s.value["metadata"]["parents"][""] for s in child_snapshots}
    assert len(child_snapshots) == 3 and parents <= set(by_id(lg_db))


def test_it_keeps_an_interrupt_left_waiting_among_the_pending_writes(lg_db: MemoryDocument) -> None:
    last = [s for s in lg_db.snapshots if s.session == "thread-4"][-1]
    (interrupt,) = [w for w in last.value["pending_writes"] if w["channel"] == "__interrupt__"]
    (value,) = interrupt["value"]
    assert value["__type__"] == "langgraph.types.Interrupt"
    assert value["value"] == {"question": "Book the flight?"}


def test_it_decodes_the_graphs_own_types_without_importing_them(lg_files: Path) -> None:
    before = set(sys.modules)
    document = read_database(lg_files / "checkpoints.sqlite")
    assert set(sys.modules) == before and "lg_custom_types" not in sys.modules
    last = [s for s in document.snapshots if s.session == "thread-1"][-1]
    values = last.value["checkpoint"]["channel_values"]
    assert values["prefs"] == [{"__type__": "lg_custom_types.Preference", "key": "luggage", "value": "carry-on",
                                "since": {"__type__": "datetime.datetime", "method": "fromisoformat",
                                          "value": "2026-12-01T09:30:00+00:00"}}]
    assert values["mood"] == {"__type__": "__main__.Mood", "value": "calm"}
    assert values["seen"]["__type__"] == "builtins.set" and sorted(values["seen"]["value"]) == ["t1-h-1", "t1-h-2"]
    assert values["messages"][0]["__type__"] == "langchain_core.messages.human.HumanMessage"
    json.dumps(document.snapshots[0].value)  # plain values only


def test_it_refuses_a_pickled_checkpoint_by_name_and_unpickles_nothing(lg_files: Path) -> None:
    before = set(sys.modules)
    with pytest.raises(FormatError) as caught:
        read_database(lg_files / "pickled.sqlite")
    assert "pickled" in caught.value.detail and "never unpickles" in caught.value.detail
    assert caught.value.place.startswith(("checkpoints[thread 'pickled'", "writes[checkpoint"))
    assert set(sys.modules) == before


def test_it_reads_a_checkpoint_of_10000_messages_in_linear_time(lg_files: Path) -> None:
    with contextlib.closing(sqlite3.connect(lg_files / "checkpoints.sqlite")) as db:
        blob = db.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = 'thread-big' "
                          "ORDER BY checkpoint_id DESC LIMIT 1").fetchone()[0]
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        value = lg.decode_typed("msgpack", blob, "checkpoint")
        timings.append(time.perf_counter() - start)
    assert len(value["channel_values"]["messages"]) == 10_001
    # About 0.1 s here (decoding only); a diff of two such checkpoints must stay under a second.
    assert min(timings) < 0.5
    # Linear: a quarter of the messages takes about a quarter of the time (well under half).
    messages = msgpack.unpackb(blob, raw=False)["channel_values"]["messages"]
    quarter = msgpack.packb({"v": 4, "channel_values": {"messages": messages[:2_500]}}, use_bin_type=True)
    whole = msgpack.packb({"v": 4, "channel_values": {"messages": messages}}, use_bin_type=True)

    def best(data: bytes) -> float:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            lg.decode_msgpack(data, "x")
            runs.append(time.perf_counter() - start)
        return min(runs)

    assert best(quarter) < best(whole) / 2


# --- what a blob may say --------------------------------------------------------------------------------------

def ext(code: int, *fields: Any) -> msgpack.ExtType:
    return msgpack.ExtType(code, msgpack.packb(list(fields), use_bin_type=True))


def test_it_decodes_a_class_that_does_not_exist_and_a_method_call_as_plain_values() -> None:
    blob = msgpack.packb({
        "model": ext(5, "nonexistent_pkg_xyz.models", "Secret", {"a": 1, "b": [b"\x00\x01"]}, "model_validate_json"),
        "call": ext(3, "pickle", "loads", b"cos\nsystem\n(S'echo pwned'\ntR.", "loads"),
        "system": ext(0, "os", "system", "echo pwned"),
        "args": ext(1, "nonexistent_pkg_xyz", "Thing", [1, 2]),
        "other": msgpack.ExtType(42, b"\x01\x02"),
        7: {b"key": "int and bytes keys"},
    }, use_bin_type=True)
    before = set(sys.modules)
    value = lg.decode_msgpack(blob, "checkpoint")
    assert set(sys.modules) == before and "nonexistent_pkg_xyz" not in sys.modules
    assert value == {
        "model": {"__type__": "nonexistent_pkg_xyz.models.Secret", "a": 1, "b": [{"__bytes__": "AAE="}]},
        "call": {"__type__": "pickle.loads", "method": "loads",
                 "value": {"__bytes__": "Y29zCnN5c3RlbQooUydlY2hvIHB3bmVkJwp0Ui4="}},
        "system": {"__type__": "os.system", "value": "echo pwned"},
        "args": {"__type__": "nonexistent_pkg_xyz.Thing", "args": [1, 2]},
        "other": {"__ext__": 42, "data": {"__bytes__": "AQI="}},
        "7": {"key": "int and bytes keys"},
    }
    json.dumps(value)


def test_it_bounds_what_a_blob_may_build(monkeypatch: pytest.MonkeyPatch) -> None:
    nested: Any = "deep"
    for _ in range(lg.MAX_EXT_DEPTH + 1):
        nested = ext(0, "builtins", "set", nested)
    with pytest.raises(FormatError, match="nested more than"):
        lg.decode_msgpack(msgpack.packb(nested, use_bin_type=True), "checkpoint")
    with pytest.raises(FormatError, match="not msgpack"):
        lg.decode_msgpack(b"\x91" * 5000 + b"\xc0", "checkpoint")  # deeper than msgpack's own stack
    monkeypatch.setattr(lg, "MAX_CONTAINERS", 100)
    with pytest.raises(FormatError, match="more than 100 arrays and maps"):
        lg.decode_msgpack(msgpack.packb([[]] * 200), "checkpoint")
    monkeypatch.setattr(lg, "MAX_BLOB", 10)
    with pytest.raises(FormatError, match="more than the 10"):
        lg.decode_msgpack(b"\x90" * 11, "checkpoint")


@pytest.mark.parametrize(("kind", "data", "message"), [
    ("msgpack", msgpack.packb({"v": 4})[:-1], "not msgpack"),
    ("msgpack", b"\xc1", "not msgpack"),
    ("json", b"{", "not JSON"),
    ("msgpack+aes", b"x", "encrypted"),
    ("yaml", b"x", "unknown serialization type"),
    ("msgpack", 5, "expected a blob"),
])
def test_it_names_a_value_it_cannot_read(kind: str, data: Any, message: str) -> None:
    with pytest.raises(FormatError, match=message) as caught:
        lg.decode_typed(kind, data, "checkpoints[thread 't', checkpoint 'c'].checkpoint")
    assert caught.value.place == "checkpoints[thread 't', checkpoint 'c'].checkpoint"


def test_it_refuses_a_checkpoints_table_of_another_shape(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, data TEXT)")
        db.execute("CREATE TABLE writes (id INTEGER PRIMARY KEY)")
    assert detect_database({"checkpoints", "writes"}) == "langgraph_checkpoints"
    with pytest.raises(FormatError) as caught:
        read_database(path)
    assert caught.value.place == "checkpoints"
    assert "another shape" in caught.value.detail and "thread_id" in caught.value.detail


def test_it_names_a_damaged_row_and_reads_nothing_of_the_file(lg_files: Path, tmp_path: Path) -> None:
    path = tmp_path / "damaged.sqlite"
    shutil.copy(lg_files / "checkpoints.sqlite", path)
    # Closed, so that SQLite moves the change from its write-ahead log (SqliteSaver's journal mode) into the file.
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        (checkpoint_id,) = db.execute("SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'thread-2' "
                                      "ORDER BY checkpoint_id LIMIT 1 OFFSET 2").fetchone()
        db.execute("UPDATE checkpoints SET checkpoint = substr(checkpoint, 1, 20) WHERE checkpoint_id = ?",
                   (checkpoint_id,))
    with pytest.raises(FormatError) as caught:
        read_database(path)
    assert caught.value.place == f"checkpoints[thread 'thread-2', checkpoint '{checkpoint_id}'].checkpoint"
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes((lg_files / "checkpoints.sqlite").read_bytes()[:50_000])
    with pytest.raises(FormatError):
        read_database(truncated)


@pytest.mark.parametrize(("change", "place"), [
    (lambda d: d[0]["values"]["messages"][1].update(type="robot"), "input[0].values.messages[1].type"),
    (lambda d: d[0]["values"]["messages"][1].update(tool_calls="none"), "input[0].values.messages[1].tool_calls"),
    (lambda d: d[0]["values"]["messages"][0].update(content=5), "input[0].values.messages[0].content"),
])
def test_it_names_the_place_of_a_wrong_message_in_history_json(change: Any, place: str) -> None:
    data = json.loads((LANGGRAPH / "state_history.json").read_text(encoding="utf-8"))
    change(data)
    with pytest.raises(FormatError) as caught:
        lg.read(data)
    assert caught.value.place == place


@pytest.mark.parametrize(("update", "place_end"), [
    ("UPDATE checkpoints SET thread_id = x'00ff' WHERE checkpoint_id = :id", ".thread_id"),
    ("UPDATE checkpoints SET metadata = '[1, 2]' WHERE checkpoint_id = :id", ".metadata"),
    ("UPDATE checkpoints SET type = 'pickle' WHERE checkpoint_id = :id", ".checkpoint"),
    ("UPDATE writes SET channel = x'07' WHERE checkpoint_id = :id", ".channel"),
])
def test_it_names_a_row_holding_the_wrong_type(lg_files: Path, tmp_path: Path, update: str, place_end: str) -> None:
    path = tmp_path / "changed.sqlite"
    shutil.copy(lg_files / "checkpoints.sqlite", path)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        (checkpoint_id,) = db.execute("SELECT checkpoint_id FROM writes WHERE thread_id = 'thread-1' "
                                      "ORDER BY checkpoint_id LIMIT 1").fetchone()
        db.execute(update, {"id": checkpoint_id})
    with pytest.raises(FormatError) as caught:
        read_database(path)
    assert checkpoint_id in caught.value.place and caught.value.place.endswith(place_end)
