"""The agentscope_session memory reader: AgentScope 1.x JSONSession files (the samples AgentScope 1.0.21 wrote, and
files it writes in this run) and 2.x AgentState dumps (written by agentscope 2.0.11 in this run)."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agents.memory.formats import agentscope, agentscope_session
from agents.memory.formats.base import FormatError, WriteReport
from agents.memory.ledger import RecordIn, VersionIn
from tests.paths import MEMORY_SAMPLES, SAMPLES

HERE = MEMORY_SAMPLES / "agentscope"
# In the order the agent put them (by score): the retriever's, not the guide's.
KNOWLEDGE = ["Trains from Shanghai to Hangzhou take about one hour.", "West Lake is the main sight of Hangzhou.",
             "Longjing tea is grown in the hills west of Hangzhou."]
FIRST_QUESTION = "What's the weather in Hangzhou? I'm going there next week, by train."


def load(name: str) -> Any:
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def other_samples() -> list[Path]:
    files = [p for p in SAMPLES.rglob("*") if p.suffix in (".json", ".af") and p.is_file()]
    return [p for p in files if not p.name.startswith("session_user_1_")]


def test_it_detects_the_session_files_and_no_other_sample() -> None:
    assert agentscope_session.detect(load("session_user_1_turn1.json"))
    assert agentscope_session.detect(load("session_user_1_turn2.json"))
    others = other_samples()
    assert len(others) > 20
    for path in others:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        assert not agentscope_session.detect(data), path


def test_it_reads_the_first_turn_with_the_system_prompt_first() -> None:
    doc = agentscope_session.read(load("session_user_1_turn1.json"))
    [conv] = doc.conversations
    assert conv.external_id == "Friday" and conv.agent == "Friday" and doc.agent == "Friday"
    assert [(m.role, m.name, m.external_id) for m in conv.messages] == [
        ("system", "system", "_sys_prompt"),
        ("user", "user", "aTM2jV3dgw9vtwGpcUghUq"),
        ("user", "user", "BLiUMDdasc9Pan3WM2cCCA"),
        ("assistant", "Friday", "8mm6frf96sTG4zgjTzviKk"),
        ("tool", "get_weather", "QpR79ReQypeZ2a8s7dbxjk"),
        ("assistant", "Friday", "WoLwUQvNet7VnTkYd4Nndo"),
    ]
    assert conv.messages[0].text == "You are Friday, a travel assistant."
    assert conv.messages[3].tool_calls[0].function.arguments == '{"city": "Hangzhou"}'
    assert conv.messages[4].tool_call_id == "call_weather_1"
    assert conv.metadata["agentscope"] == {"compressed_summary": ""}
    assert "summary" not in conv.metadata


def test_it_makes_the_retrieved_knowledge_a_persisted_recall() -> None:
    doc = agentscope_session.read(load("session_user_1_turn1.json"))
    [recall] = doc.recalls
    assert (recall.session, recall.seq, recall.store, recall.query) == ("Friday", 2, "knowledge:Friday",
                                                                          FIRST_QUESTION)
    assert (recall.placement, recall.persisted, recall.params) == ("message", True, {"limit": 5})
    assert recall.external_id == "BLiUMDdasc9Pan3WM2cCCA"
    assert recall.at == datetime(2026, 12, 6, 0, 51, 32, 705000)
    assert [(i.rank, i.text, i.ref, i.record) for i in recall.items] == [
        (1, "Trains from Shanghai to Hangzhou take about one hour.", {}, None),
        (2, "West Lake is the main sight of Hangzhou.", {}, None),
        (3, "Longjing tea is grown in the hills west of Hangzhou.", {}, None),
    ]
    stores = {s.key: s for s in doc.stores}
    assert set(stores) == {"knowledge:Friday", "mem0:Friday"}
    assert (stores["knowledge:Friday"].kind, stores["knowledge:Friday"].agent, stores["knowledge:Friday"].records) == (
        "knowledge", "Friday", [])
    # long_term_memory ({}) says the agent has one; its records live in mem0, not in the file.
    ltm = stores["mem0:Friday"]
    assert (ltm.kind, ltm.source_format, ltm.scope, ltm.records) == ("records", "mem0", {"agent_id": "Friday"}, [])


def test_it_reads_the_second_turn_with_both_recalls() -> None:
    doc = agentscope_session.read(load("session_user_1_turn2.json"))
    [conv] = doc.conversations
    assert len(conv.messages) == 12
    assert [(m.role, m.name) for m in conv.messages[6:]] == [
        ("user", "user"), ("user", "long_term_memory"), ("user", "user"), ("assistant", "Friday"),
        ("tool", "create_plan"), ("assistant", "Friday")]
    got = [(r.seq, r.store, r.query, [i.text for i in r.items]) for r in doc.recalls]
    assert got == [
        (2, "knowledge:Friday", FIRST_QUESTION, KNOWLEDGE),
        (7, "mem0:Friday", "Make me a plan for the trip.",
         ["User is planning a trip to Hangzhou next week", "User prefers trains over flights"]),
        (8, "knowledge:Friday", "Make me a plan for the trip.", KNOWLEDGE),
    ]
    assert all(r.persisted and r.placement == "message" for r in doc.recalls)
    assert [r.external_id for r in doc.recalls] == ["BLiUMDdasc9Pan3WM2cCCA", "5pbjk4zWo3RuUo8QwbgKzH",
                                                    "kwPPvAPXWTixGGSmobfdCa"]


def test_it_gives_two_files_of_one_session_one_conversation_and_two_snapshots() -> None:
    one = agentscope_session.read(load("session_user_1_turn1.json"), name="user_1_trip.json")
    two = agentscope_session.read(load("session_user_1_turn2.json"), name="user_1_trip.json")
    assert one.conversations[0].external_id == two.conversations[0].external_id == "user_1_trip"
    ids_one = [m.external_id for m in one.conversations[0].messages]
    assert [m.external_id for m in two.conversations[0].messages][:len(ids_one)] == ids_one
    [s1], [s2] = one.snapshots, two.snapshots
    assert s1.external_id.startswith("user_1_trip@6:") and s2.external_id.startswith("user_1_trip@12:")
    assert s1.external_id != s2.external_id
    assert (s1.session, s1.seq, s1.parent, s1.agent) == ("user_1_trip", 5, None, "Friday")
    assert (s2.session, s2.seq, s2.parent, s2.agent) == ("user_1_trip", 11, None, "Friday")
    assert s1.value == load("session_user_1_turn1.json")["friday"]
    assert s2.value == load("session_user_1_turn2.json")["friday"]
    assert s2.value["plan_notebook"]["current_plan"]["name"] == "Hangzhou trip"
    # read again: the same ids
    assert agentscope_session.read(load("session_user_1_turn2.json"), name="user_1_trip.json").snapshots[0] == s2


def test_it_scopes_the_long_term_store_by_the_user_in_the_file_name() -> None:
    doc = agentscope_session.read(load("session_user_1_turn2.json"), name="/tmp/sessions/user_1_trip.json")
    ltm = next(s for s in doc.stores if s.kind == "records")
    assert ltm.scope == {"user_id": "user_1", "agent_id": "Friday"}
    assert ltm.key == "mem0:user_1:Friday"
    assert doc.recalls[1].store == ltm.key
    assert doc.conversations[0].metadata["agentscope_session"] == {"module": "friday", "file": "user_1_trip.json",
                                                                   "user_id": "user_1"}


def test_it_parses_session_file_names() -> None:
    assert agentscope_session.session_of_name("user_1_trip.json") == ("user_1_trip", "user_1", "trip")
    assert agentscope_session.session_of_name("dir/s42.json") == ("s42", None, "s42")
    assert agentscope_session.session_of_name(None) == (None, None, None)


def test_it_joins_the_mem0_records_of_the_same_scope_by_text() -> None:
    doc = agentscope_session.read(load("session_user_1_turn2.json"), name="user_1_trip.json")
    mem0 = load("ltm_mem0_records.json")
    records = []
    for row in mem0["get_all"]["results"]:
        versions = [VersionIn(op=h["event"], text=h["new_memory"], at=h["updated_at"])
                    for h in mem0["history"][row["id"]]]
        records.append(RecordIn(external_id=row["id"], text=row["memory"], content_hash=row["hash"],
                                versions=versions))
    joined = agentscope_session.join_records(doc.recalls, "mem0:user_1:Friday", records)
    ltm = joined[1]
    assert [(i.text, i.record, i.version) for i in ltm.items] == [
        ("User is planning a trip to Hangzhou next week", "ac66f5e8-3d90-4352-b1eb-eaf750ecca96", 1),
        # recalled before turn 2's update made it "high-speed": its first version
        ("User prefers trains over flights", "97471722-3994-4a2e-ae92-ad22be78fc72", 1),
    ]
    assert joined[0] == doc.recalls[0] and joined[2] == doc.recalls[2]


def test_it_gives_knowledge_items_their_chunk_by_text() -> None:
    doc = agentscope_session.read(load("session_user_1_turn1.json"))
    records = [RecordIn(external_id=f"{d['metadata']['doc_id']}#{d['metadata']['chunk_id']}",
                        text=d["metadata"]["content"]["text"],
                        metadata={"doc_id": d["metadata"]["doc_id"], "chunk_id": d["metadata"]["chunk_id"]})
               for d in load("rag_documents_retrieved.json")]
    [recall] = agentscope_session.join_records(doc.recalls, "knowledge:Friday", records)
    assert [(i.record, i.ref) for i in recall.items] == [
        ("hangzhou_guide.md#1", {"doc_id": "hangzhou_guide.md", "chunk_id": 1}),
        ("hangzhou_guide.md#0", {"doc_id": "hangzhou_guide.md", "chunk_id": 0}),
        (None, {}),  # chunk 2 was not in what the retriever returned there
    ]


def test_it_finds_recalls_in_a_plain_agentscope_memory_file() -> None:
    [conv] = agentscope.read(load("session_user_1_turn2.json")["friday"]["memory"])
    conv = conv.model_copy(update={"external_id": "s"})
    recalls = agentscope_session.recalls_of(conv, long_term_store="ltm", knowledge_store="kb")
    assert [(r.session, r.seq, r.store, len(r.items)) for r in recalls] == [
        ("s", 1, "kb", 3), ("s", 6, "ltm", 2), ("s", 7, "kb", 3)]
    assert agentscope_session.recalls_of(conv)[1].store is None


def test_it_keeps_marks_and_the_compressed_summary() -> None:
    data = load("session_user_1_turn2.json")
    memory = data["friday"]["memory"]
    memory["_compressed_summary"] = "<summary>The user asked about Hangzhou's weather.</summary>"
    memory["content"][0][1] = ["compressed"]
    memory["content"][4][1] = ["compressed"]
    memory["content"].append([{"id": "h1", "name": "user", "role": "user", "content": "<system-hint>Go on"
                               "</system-hint>", "metadata": {}, "timestamp": "2026-12-06 00:51:33.000"}, ["hint"]])
    doc = agentscope_session.read(data)
    conv = doc.conversations[0]
    assert conv.metadata["summary"] == "<summary>The user asked about Hangzhou's weather.</summary>"
    assert conv.metadata["agentscope"]["compressed_summary"] == conv.metadata["summary"]
    assert conv.messages[1].marks == ["compressed"] and conv.messages[5].marks == ["compressed"]
    assert conv.messages[-1].marks == ["hint"]
    assert doc.snapshots[0].seq == 12


def test_it_writes_the_conversation_back_to_agentscope_without_the_system_prompt() -> None:
    data = load("session_user_1_turn2.json")
    conv = agentscope_session.read(data).conversations[0]
    report = WriteReport(format="agentscope")
    written = json.loads("".join(agentscope.write([conv], report)))
    assert written == data["friday"]["memory"]
    assert ("the agent's system prompt on 1 message: AgentScope keeps it in the agent (_sys_prompt), not in its "
            "memory; not written") in report.dropped


def test_it_reads_every_agent_of_a_file_and_keeps_other_modules_as_snapshots() -> None:
    friday = load("session_user_1_turn2.json")["friday"]
    other = json.loads(json.dumps(friday))
    other["name"] = "Saturday"
    data = {"friday": friday, "saturday": other, "notebook": {"storage": {"plans": {}}, "current_plan": None}}
    doc = agentscope_session.read(data, name="user_1_trip.json")
    assert [(c.external_id, c.agent) for c in doc.conversations] == [("user_1_trip/Friday", "Friday"),
                                                                     ("user_1_trip/Saturday", "Saturday")]
    assert {r.session for r in doc.recalls} == {"user_1_trip/Friday", "user_1_trip/Saturday"}
    assert sorted(s.key for s in doc.stores) == ["knowledge:Friday", "knowledge:Saturday", "mem0:user_1:Friday",
                                                 "mem0:user_1:Saturday"]
    assert [s.agent for s in doc.snapshots] == ["Friday", "Saturday", None]
    assert doc.snapshots[2].value == data["notebook"] and doc.snapshots[2].session is None
    assert doc.notes == ["notebook: not an agent nor a memory; kept as a snapshot"]
    assert doc.agent is None


@pytest.mark.parametrize(("mutate", "place"), [
    (lambda d: d["friday"]["memory"]["content"][3][0].update(role="robot"), "friday.memory.content[3][0].role"),
    (lambda d: d["friday"].update(_sys_prompt=["x"]), "friday._sys_prompt"),
    (lambda d: d["friday"]["memory"]["content"][2].pop(), "friday.memory.content[2]"),
    (lambda d: d["friday"]["memory"]["content"][2][0]["content"][1].update(input="x"),
     "friday.memory.content[2][0].content[1].input"),
    (lambda d: d["friday"].update(name=3), "friday.name"),
])
def test_it_names_the_place_of_bad_input(mutate: Any, place: str) -> None:
    data = load("session_user_1_turn2.json")
    mutate(data)
    with pytest.raises(FormatError) as caught:
        agentscope_session.read(data)
    assert caught.value.place == place


def test_it_refuses_deep_nesting_and_files_without_an_agent() -> None:
    deep: Any = "x"
    for _ in range(400):
        deep = [deep]
    data = load("session_user_1_turn1.json")
    data["friday"]["plan_notebook"] = deep
    with pytest.raises(FormatError, match="nested too deeply"):
        agentscope_session.read(data)
    with pytest.raises(FormatError, match="no agent"):
        agentscope_session.read({"toolkit": {"active_groups": []}})
    with pytest.raises(FormatError, match="expected an object"):
        agentscope_session.read([1, 2])


# --- files AgentScope 1.0.21 writes in this run (tests/memory_libs/agentscope_files.py) ----------------------------

@pytest.fixture
def as1(library_files: Any) -> Path:
    out: Path = library_files("agentscope", "agentscope_files.py")
    return out


def session_file(out: Path, turn: int) -> Any:
    return json.loads((out / f"turn{turn}" / "user_1_trip.json").read_text(encoding="utf-8"))


def api_of(out: Path) -> Any:
    return json.loads((out / "api.json").read_text(encoding="utf-8"))


def test_it_reads_each_agent_as_its_memory_said(as1: Path) -> None:
    api = api_of(as1)
    for turn in (1, 2):
        doc = agentscope_session.read(session_file(as1, turn), name="user_1_trip.json")
        convs = {c.agent: c for c in doc.conversations}
        assert set(convs) == {"Friday", "Saturday"}
        for module, agent in (("friday", "Friday"), ("saturday", "Saturday")):
            memory = api["memories"][f"turn{turn}"][module]
            conv = convs[agent]
            assert conv.external_id == f"user_1_trip/{agent}"
            assert [(m.external_id, m.marks) for m in conv.messages[1:]] == [(m["id"], marks) for m, marks in memory]
            assert conv.messages[0].text == api["states"][f"turn{turn}"][module]["_sys_prompt"]
        snapshots = {s.agent: s for s in doc.snapshots}
        assert snapshots["Friday"].value == api["states"][f"turn{turn}"]["friday"]
        assert snapshots["Saturday"].value == api["states"][f"turn{turn}"]["saturday"]
        assert snapshots["Friday"].seq == len(api["memories"][f"turn{turn}"]["friday"])


def test_it_reads_the_list_the_model_was_sent(as1: Path) -> None:
    api = api_of(as1)
    conv = agentscope_session.read(session_file(as1, 2), name="user_1_trip.json").conversations[0]
    # The last reasoning call: the system prompt, then the memory, then the plan notebook's transient hint.
    last = [c for c in api["model_calls"] if c["tools"]][-1]["messages"]
    sent = [m for m in last if "<system-hint>" not in json.dumps(m)]
    mine = [m.to_openai() for m in conv.messages[:-1]]  # the last message is the reply to this call
    assert [(m["role"], m.get("tool_call_id"), [c["id"] for c in m.get("tool_calls", [])]) for m in sent] == [
        (m["role"], m.get("tool_call_id"), [c["id"] for c in m.get("tool_calls", [])]) for m in mine]
    assert [_text(m["content"]) for m in sent] == [_text(m["content"]) for m in mine]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content)
    return content or ""


def test_it_makes_recalls_of_what_the_retrievals_returned(as1: Path) -> None:
    api = api_of(as1)
    doc = agentscope_session.read(session_file(as1, 2), name="user_1_trip.json")
    friday = "user_1_trip/Friday"
    knowledge = [r for r in doc.recalls if r.store == "knowledge:Friday"]
    [ltm] = [r for r in doc.recalls if r.store == "mem0:user_1:Friday"]
    assert [r.session for r in doc.recalls] == [friday] * 3
    assert [[i.text for i in r.items] for r in knowledge] == [[d["text"] for d in k["docs"]]
                                                              for k in api["knowledge"]]
    assert [r.query for r in knowledge] == [k["query"] for k in api["knowledge"]]
    # turn 1's retrieval of the long-term memory returned nothing: no message, no recall
    assert [c["returned"] for c in api["retrieve"]][0] == ""
    assert [i.text for i in ltm.items] == api["retrieve"][1]["returned"].split("\n")
    chunks = [RecordIn(external_id=f"{c['doc_id']}#{c['chunk_id']}", text=c["text"],
                       metadata={"doc_id": c["doc_id"], "chunk_id": c["chunk_id"]}) for c in api["chunks"]]
    joined = agentscope_session.join_records(doc.recalls, "knowledge:Friday", chunks)
    assert [[(i.ref["doc_id"], i.ref["chunk_id"]) for i in r.items] for r in joined if r.store == "knowledge:Friday"
            ] == [[(d["doc_id"], d["chunk_id"]) for d in k["docs"]] for k in api["knowledge"]]
    records = [RecordIn(external_id=r["id"], text=r["memory"], content_hash=r["hash"],
                        versions=[VersionIn(op=h["event"], text=h["new_memory"], at=h["updated_at"])
                                  for h in api["mem0_history"][r["id"]]])
               for r in api["mem0_get_all"]["results"]]
    [joined_ltm] = [r for r in agentscope_session.join_records(doc.recalls, "mem0:user_1:Friday", records)
                    if r.store == "mem0:user_1:Friday"]
    assert [i.record for i in joined_ltm.items] == [r["id"] for r in api["retrieve"][1]["records"]]
    # what was recalled is the text before turn 2's update: version 1 of each (mem0's search returns one or both
    # records, as its fact extraction ran: the count is the library's, the version ours)
    assert joined_ltm.items and [i.version for i in joined_ltm.items] == [1] * len(api["retrieve"][1]["records"])


def test_it_gives_the_two_saves_of_a_session_one_conversation_and_two_snapshots(as1: Path) -> None:
    one = agentscope_session.read(session_file(as1, 1), name="user_1_trip.json")
    two = agentscope_session.read(session_file(as1, 2), name="user_1_trip.json")
    for agent in ("Friday", "Saturday"):
        c1 = next(c for c in one.conversations if c.agent == agent)
        c2 = next(c for c in two.conversations if c.agent == agent)
        assert c1.external_id == c2.external_id
        assert [m.external_id for m in c2.messages][:len(c1.messages)] == [m.external_id for m in c1.messages]
        s1 = next(s for s in one.snapshots if s.agent == agent)
        s2 = next(s for s in two.snapshots if s.agent == agent)
        assert s1.external_id != s2.external_id and s1.session == s2.session and s1.seq < s2.seq  # type: ignore[operator]


# --- AgentScope 2.0.11's AgentState, dumped in this run (tests/memory_libs/agentscope2_files.py) -------------------

@pytest.fixture
def as2(library_files: Any) -> Path:
    out: Path = library_files("agentscope2", "agentscope2_files.py")
    return out


def state_of(out: Path, turn: int) -> Any:
    return json.loads((out / f"state_turn{turn}.json").read_text(encoding="utf-8"))


def test_it_reads_a_2x_agent_state_as_the_chain_its_formatter_sends(as2: Path) -> None:
    api = api_of(as2)
    state = state_of(as2, 2)
    assert agentscope_session.detect(state)
    doc = agentscope_session.read(state)
    [conv] = doc.conversations
    assert (conv.external_id, conv.agent, doc.agent) == (state["session_id"], "Friday", "Friday")
    # the last call: AgentScope's OpenAIChatFormatter over the system prompt (not in the state) and the context;
    # the conversation's last message is that call's reply
    sent = api["calls"][-1]["messages"][1:]
    mine = [m.to_openai() for m in conv.messages[:-1]]
    assert [(m["role"], _text(m["content"]), m.get("tool_call_id"), [c["id"] for c in m.get("tool_calls", [])])
            for m in sent] == [(m["role"], _text(m["content"]), m.get("tool_call_id"),
                                [c["id"] for c in m.get("tool_calls", [])]) for m in mine]
    assert [m.tool_calls[0].function.arguments for m in conv.messages if m.tool_calls] == ['{"city": "Hangzhou"}']
    # a reply is one Msg in the state: its pieces keep its id, numbered
    reply = api["context"]["turn2"][1]["id"]
    assert [m.external_id for m in conv.messages[1:5]] == [reply, f"{reply}:1", f"{reply}:2", f"{reply}:3"]
    [snapshot] = doc.snapshots
    assert (snapshot.value, snapshot.session, snapshot.seq, snapshot.format_version, snapshot.agent) == (
        state, state["session_id"], len(conv.messages) - 1, "2", "Friday")


def test_it_appends_a_later_2x_state_to_the_same_session(as2: Path) -> None:
    one = agentscope_session.read(state_of(as2, 1))
    two = agentscope_session.read(state_of(as2, 2))
    c1, c2 = one.conversations[0], two.conversations[0]
    assert c1.external_id == c2.external_id
    assert [m.external_id for m in c2.messages][:len(c1.messages)] == [m.external_id for m in c1.messages]
    assert len(c2.messages) == len(c1.messages) + 2
    assert one.snapshots[0].external_id != two.snapshots[0].external_id
    assert one.snapshots[0].seq == len(c1.messages) - 1


def test_it_keeps_a_2x_summary(as2: Path) -> None:
    state = state_of(as2, 2)
    state["summary"] = "The user plans a trip to Hangzhou."
    assert agentscope_session.read(state).conversations[0].metadata["summary"] == state["summary"]
    state["summary"] = [{"type": "text", "text": "Part one.", "id": "s1"}, {"type": "text", "text": "Part two."}]
    assert agentscope_session.read(state).conversations[0].metadata["summary"] == "Part one.\nPart two."


@pytest.mark.parametrize(("mutate", "place"), [
    (lambda s: s["context"][1]["content"][2].update(input={"city": "x"}), "context[1].content[2].input"),
    (lambda s: s["context"][0].update(role="robot"), "context[0].role"),
    (lambda s: s["context"][1]["content"][3].update(output=3), "context[1].content[3].output"),
    (lambda s: s["context"][1]["content"].append({"type": "video"}), "context[1].content[5].type"),
    (lambda s: s.update(summary=3), "summary"),
])
def test_it_names_the_place_in_a_bad_2x_state(as2: Path, mutate: Any, place: str) -> None:
    state = state_of(as2, 2)
    mutate(state)
    with pytest.raises(FormatError) as caught:
        agentscope_session.read(state)
    assert caught.value.place == place
