"""The autogen_memory reader and writer: ListMemory components and TaskResults with MemoryQueryEvents (the samples
AutoGen 0.7.5 wrote, and files it writes in this run), the memory SystemMessages of a save_state, and a ListMemory
component AutoGen loads back."""
from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.memory.formats import autogen, autogen_memory
from agents.memory.formats.base import FormatError, WriteReport
from agents.memory.ledger import MemoryDocument, RecordIn, StoreIn
from tests.paths import MEMORY_SAMPLES, SAMPLES

HERE = MEMORY_SAMPLES / "autogen"
MEMORY_TEXT = ("\nRelevant memory content (in chronological order):\n1. The user prefers metric units\n"
               "2. {'home_city': 'Paris'}\n")
ITEMS = ["The user prefers metric units", "{'home_city': 'Paris'}"]


def load(name: str) -> Any:
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def test_it_detects_components_and_task_results_and_no_other_sample() -> None:
    ours = {"list_memory_component.json", "task_result_run1.json", "task_result_run2.json"}
    for name in ours:
        assert autogen_memory.detect(load(name)), name
    assert autogen_memory.detect([load("list_memory_component.json"), load("task_result_run1.json")])
    assert not autogen_memory.detect([])
    files = [p for p in SAMPLES.rglob("*") if p.suffix in (".json", ".af") and p.is_file()]
    checked = 0
    for path in files:
        if path.parent == HERE and path.name in ours:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        checked += 1
        assert not autogen_memory.detect(data), path
    assert checked > 20


def test_it_reads_a_list_memory_as_a_list_store() -> None:
    doc = autogen_memory.read(load("list_memory_component.json"))
    [store] = doc.stores
    assert (store.key, store.name, store.kind, store.source_format, store.external_id) == (
        "autogen:user_prefs", "user_prefs", "list", "autogen_memory", "user_prefs")
    assert [(r.external_id, r.text, r.value, r.metadata, r.state) for r in store.records] == [
        ("0", "The user prefers metric units", "The user prefers metric units",
         {"mime_type": "text/plain", "metadata": {"category": "units"}}, "active"),
        ("1", "{'home_city': 'Paris'}", {"home_city": "Paris"},
         {"mime_type": "application/json", "metadata": {"source": "profile"}}, "active"),
    ]
    assert [[(v.op, v.text) for v in r.versions] for r in store.records] == [[("ADD", ITEMS[0])], [("ADD", ITEMS[1])]]
    assert not doc.conversations and not doc.recalls


def test_it_reads_a_task_result_as_the_context_the_model_was_sent() -> None:
    doc = autogen_memory.read(load("task_result_run1.json"))
    [conv] = doc.conversations
    assert conv.external_id == "82c2ea6c-3614-4d35-81d1-384513939794" and conv.agent == "assistant"
    assert [(m.role, m.external_id) for m in conv.messages] == [
        ("user", "82c2ea6c-3614-4d35-81d1-384513939794"),
        ("system", "7784aa45-f12b-4c0d-a2dd-89d81e3db577"),
        ("assistant", "b1105b18-120c-4226-a611-aa80d9ca0a49"),
        ("tool", "87388cee-f379-424c-8223-3c4394224a92"),
        ("assistant", "49c52e1f-e601-4ca6-9c66-7f4d131b2b77"),
    ]
    assert conv.messages[1].text == MEMORY_TEXT
    assert conv.messages[2].tool_calls[0].id == "call_1" and conv.messages[3].tool_call_id == "call_1"
    assert conv.messages[2].usage == {"prompt_tokens": 10, "completion_tokens": 5}
    assert conv.messages[0].created_at == datetime(2026, 12, 6, 0, 52, 7, 584262, tzinfo=UTC)
    # What the model received on its second call, less the agent's system message (kept outside the context).
    [sent] = autogen.read({"messages": load("llm_calls.json")[1][1:]})
    mine = conv.messages[:4]
    assert [(m.role, m.text, m.tool_call_id, [c.id for c in m.tool_calls]) for m in mine] == [
        (m.role, m.text, m.tool_call_id, [c.id for c in m.tool_calls]) for m in sent.messages]


def test_it_makes_each_memory_query_event_a_persisted_recall() -> None:
    doc = autogen_memory.read(load("task_result_run2.json"))
    [recall] = doc.recalls
    assert (recall.session, recall.seq, recall.store, recall.query, recall.placement, recall.persisted) == (
        "22ec9cd1-a73b-4d6f-9f75-55e2ab6b298d", 1, None, None, "message", True)
    assert recall.external_id == "a67f034a-2b87-4b4e-ac3f-b0a5c49206c9"
    assert recall.at == datetime(2026, 12, 6, 0, 52, 7, 586784, tzinfo=UTC)
    assert [(i.rank, i.text, i.record, i.metadata["mime_type"]) for i in recall.items] == [
        (1, ITEMS[0], None, "text/plain"), (2, ITEMS[1], None, "application/json")]


def test_it_matches_recalled_contents_to_the_list_memory_in_the_document() -> None:
    doc = autogen_memory.read([load("list_memory_component.json"), load("task_result_run1.json"),
                               load("task_result_run2.json")])
    assert [s.key for s in doc.stores] == ["autogen:user_prefs"]
    assert len(doc.conversations) == 2
    assert [(r.session, r.seq, r.store) for r in doc.recalls] == [
        ("82c2ea6c-3614-4d35-81d1-384513939794", 1, "autogen:user_prefs"),
        ("22ec9cd1-a73b-4d6f-9f75-55e2ab6b298d", 1, "autogen:user_prefs")]
    assert [[(i.record, i.version) for i in r.items] for r in doc.recalls] == [[("0", 1), ("1", 1)]] * 2


def test_it_finds_the_memory_messages_of_a_saved_state() -> None:
    [conv] = autogen.read(load("assistant_state_after_run2.json"))
    conv = conv.model_copy(update={"external_id": "state"})
    recalls = autogen_memory.recalls_of(conv)
    assert [(r.session, r.seq, r.persisted, r.placement, r.store) for r in recalls] == [
        ("state", 1, True, "message", None), ("state", 6, True, "message", None)]
    assert [[(i.rank, i.text) for i in r.items] for r in recalls] == [[(1, ITEMS[0]), (2, ITEMS[1])]] * 2


def test_it_parses_numbered_lines_and_refuses_other_system_messages() -> None:
    items = autogen_memory.memory_items(
        "\nRelevant memory content (in chronological order):\n1. a\n2. Allergies:\n1. none\n3. c\n")
    assert [(i.rank, i.text) for i in items or []] == [(1, "a"), (2, "Allergies:\n1. none"), (3, "c")]
    assert autogen_memory.memory_items("You are a helpful assistant.") is None
    assert autogen_memory.memory_items("\nRelevant memory content (in chronological order):\nno number\n") is None


def test_it_writes_the_component_it_read() -> None:
    component = load("list_memory_component.json")
    report = WriteReport(format="autogen_memory")
    assert autogen_memory.write(autogen_memory.read(component), report) == component
    assert report.dropped == []


def test_it_writes_another_store_as_text_contents_and_says_what_it_left() -> None:
    store = StoreIn(key="m", name="prefs", kind="records", source_format="mem0", records=[
        RecordIn(external_id="b", text="Likes tea", metadata={"category": "food"}),
        RecordIn(external_id="a", text="Gone", state="deleted")])
    doc = MemoryDocument(format="mem0", stores=[store, StoreIn(key="k", name="kb", kind="knowledge",
                                                               source_format="x")])
    report = WriteReport(format="autogen_memory")
    written = autogen_memory.write(doc, report)
    assert written["config"] == {"name": "prefs", "memory_contents": [
        {"content": "Likes tea", "mime_type": "text/plain", "metadata": {"category": "food"}}]}
    assert sorted(report.dropped) == ["deleted records on 1 record: ListMemory keeps current contents only",
                                      "store kb on 1 store: a ListMemory component holds one list"]
    with pytest.raises(FormatError, match="no memory store"):
        autogen_memory.write(MemoryDocument(format="x"), WriteReport(format="autogen_memory"))


@pytest.mark.parametrize(("mutate", "place"), [
    (lambda d: d["messages"][2]["content"][0].update(id=3), "input.messages[2].content[0].id"),
    (lambda d: d["messages"][1]["content"][1].pop("mime_type"), "input.messages[1].content[1].mime_type"),
    (lambda d: d["messages"][3].update(content=[]), "input.messages[3].content"),
    (lambda d: d["messages"][0].update(created_at="yesterday"), "input.messages[0].created_at"),
    (lambda d: d["messages"][4].update(content=None), "input.messages[4].content"),
])
def test_it_names_the_place_of_a_bad_task_result(mutate: Any, place: str) -> None:
    data = load("task_result_run1.json")
    mutate(data)
    with pytest.raises(FormatError) as caught:
        autogen_memory.read(data)
    assert caught.value.place == place


def test_it_names_the_place_of_a_bad_component_and_refuses_deep_nesting() -> None:
    data = load("list_memory_component.json")
    data["config"]["memory_contents"][1]["metadata"] = "x"
    with pytest.raises(FormatError) as caught:
        autogen_memory.read([data])
    assert caught.value.place == "input[0].config.memory_contents[1].metadata"
    deep: Any = "x"
    for _ in range(400):
        deep = {"k": deep}
    data = load("list_memory_component.json")
    data["config"]["memory_contents"][0]["content"] = deep
    with pytest.raises(FormatError, match="nested too deeply"):
        autogen_memory.read(data)
    with pytest.raises(FormatError, match="ListMemory component or a TaskResult"):
        autogen_memory.read([load("list_memory_component.json"), 3])


# --- files AutoGen 0.7.5 writes in this run (tests/memory_libs/autogen_files.py) ----------------------------------

@pytest.fixture
def ag(library_files: Any) -> Path:
    out: Path = library_files("mem", "autogen_files.py")
    return out


def read_out(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def test_it_reads_what_autogen_wrote_as_its_api_said(ag: Path) -> None:
    api = read_out(ag, "api.json")
    component = read_out(ag, "list_memory_component.json")
    runs = [read_out(ag, f"task_result_run{k}.json") for k in (1, 2, 3)]
    doc = autogen_memory.read([component, *runs])
    [store] = doc.stores
    last = api["query"][-1]
    assert [r.text for r in store.records] == api["rendered"]
    assert [r.value for r in store.records] == [c["content"] for c in last]
    assert [r.metadata["mime_type"] for r in store.records] == [c["mime_type"] for c in last]
    assert len(doc.conversations) == 3 and len(doc.recalls) == 3
    for run, (conv, recall) in enumerate(zip(doc.conversations, doc.recalls, strict=True)):
        # each run's recall is every content the memory held then, as the model read them
        held = len(api["query"][run])
        assert [i.text for i in recall.items] == api["rendered"][:held]
        assert [(i.record, i.version) for i in recall.items] == [(str(k), 1) for k in range(held)]
        assert recall.seq == 1 and conv.messages[1].role == "system"
    # the memory text of each conversation is the one the model received (the bytes as b'...')
    calls = api["llm_calls"]
    memory_texts = [m["content"] for call in calls for m in call
                    if m["type"] == "SystemMessage" and m["content"].startswith(autogen_memory.MEMORY_HEADER)]
    for conv in doc.conversations:
        assert conv.messages[1].text in memory_texts
    # the last call of run 3: the whole context as AutoGen sent it (its system message aside)
    [sent] = autogen.read({"messages": calls[-1][1:]})
    mine = [m for conv in doc.conversations for m in conv.messages][:-1]
    assert [(m.role, m.text) for m in mine] == [(m.role, m.text) for m in sent.messages]
    assert doc.conversations[0].messages[2].text == "I should look it up."  # the ThoughtEvent, with the calls


def test_it_finds_every_run_s_memory_message_in_the_saved_state(ag: Path) -> None:
    api = read_out(ag, "api.json")
    [conv] = autogen.read(read_out(ag, "assistant_state.json"))
    recalls = autogen_memory.recalls_of(conv)
    assert [[i.text for i in r.items] for r in recalls] == [api["rendered"][:len(q)] for q in api["query"]]
    assert all(r.persisted for r in recalls)


def test_autogen_loads_the_list_memory_memoryviz_writes(ag: Path, tmp_path: Path) -> None:
    from tests.memory_libs.runner import run_script

    component = read_out(ag, "list_memory_component.json")
    written = autogen_memory.write(autogen_memory.read(component), WriteReport(format="autogen_memory"))
    assert written == component
    path = tmp_path / "written.json"
    path.write_text(json.dumps(written), encoding="utf-8")
    loaded = json.loads(run_script("mem", "autogen_files.py", tmp_path / "load", "load-memory", str(path)).stdout)
    assert loaded["name"] == "user_prefs"
    # AutoGen dumps a content's absent metadata as null, and leaves it out of the component
    assert [{k: v for k, v in c.items() if v is not None} for c in loaded["contents"]] == (
        component["config"]["memory_contents"])


def test_autogen_loads_the_state_with_its_memory_messages_that_the_autogen_writer_writes(ag: Path,
                                                                                         tmp_path: Path) -> None:
    from tests.memory_libs.runner import run_script

    state = read_out(ag, "assistant_state.json")
    report = WriteReport(format="autogen")
    written = json.loads("".join(autogen.write(autogen.read(state), report)))
    assert report.dropped == []
    path = tmp_path / "state.json"
    path.write_text(json.dumps(written), encoding="utf-8")
    context = json.loads(run_script("mem", "autogen_files.py", tmp_path / "load", "load-state", str(path)).stdout)
    assert context == state["llm_context"]["messages"]
    assert sum(1 for m in context if m["type"] == "SystemMessage") == 3
