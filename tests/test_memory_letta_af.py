"""The Letta agent file reader (agents/memory/formats/letta_af.py), on files Letta's exporter wrote
(tests/samples/memory/letta/, published in letta-ai/agent-file: no runnable Letta package exists to write more)."""
from __future__ import annotations

import contextlib
import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.memory.formats import letta_af
from agents.memory.formats.base import FormatError
from agents.memory.formats.memory_files import detect_memory, read_memory_data
from agents.memory.ledger import MemoryDocument, RecordIn, StoreIn

LETTA = Path(__file__).parent / "samples" / "memory" / "letta"
SAMPLES = Path(__file__).parent / "samples"


def load(name: str) -> Any:
    return json.loads((LETTA / name).read_text(encoding="utf-8"))


def t(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def store(document: MemoryDocument, key: str) -> StoreIn:
    return next(s for s in document.stores if s.key == key)


def record(document: MemoryDocument, key: str, label: str) -> RecordIn:
    return next(r for r in store(document, key).records if r.external_id == label)


def history(rec: RecordIn) -> list[tuple[str, str | None, int | None, datetime | None]]:
    return [(v.op, v.session, v.seq, v.at) for v in rec.ordered_versions()]


def texts(rec: RecordIn) -> list[str | None]:
    return [v.text for v in rec.ordered_versions()]


# --- the older schema (Letta 0.6.47): a new system message after every edit -----------------------------------

HUMAN_0 = ("\nThis is what I know so far about the user, I should expand this as I learn more about them.\n\n"
           "First name: Chad\nLast name: ?\nGender: Male\nAge: ?\nNationality: ?\n"
           "Occupation: Computer science PhD student at UC Berkeley\n"
           "Interests: Formula 1, Sailing, Taste of the Himalayas Restaurant in Berkeley, CSGO\n")


def test_it_rebuilds_each_block_history_from_the_system_messages_and_core_memory_calls() -> None:
    document = letta_af.read(load("memgpt_agent_with_convo.v1.af"))
    human = record(document, "memgpt_agent/core_memory", "human")
    # Message 0 is the first system message; 5, 52, 71 and 88 carry the core_memory_* calls (each followed by the
    # system message Letta regenerated: 6, 53, 72, 89).
    assert history(human) == [
        ("ADD", "memgpt_agent", 0, t("2025-04-01T03:47:27.492924")),
        ("UPDATE", "memgpt_agent", 5, t("2025-04-01T03:51:11.615592")),
        ("UPDATE", "memgpt_agent", 52, t("2025-04-01T03:54:45.388075")),
        ("UPDATE", "memgpt_agent", 71, t("2025-04-01T03:56:20.857724")),
        ("UPDATE", "memgpt_agent", 88, t("2025-04-01T03:57:37.245343")),
    ]
    sarah = HUMAN_0.replace("First name: Chad", "First name: Sarah")
    vanilla = sarah + "\nFavorite ice cream: Vanilla"
    jean_luc = vanilla + "\nSailing partner: Jean-Luc"
    assert texts(human) == [HUMAN_0, sarah, vanilla, jean_luc, jean_luc.replace("First name: Sarah", "First name: Sam")]
    assert [v.actor for v in human.ordered_versions()] == [None, "memgpt_agent", "memgpt_agent", "memgpt_agent",
                                                           "memgpt_agent"]
    persona = record(document, "memgpt_agent/core_memory", "persona")
    assert [(op, seq) for op, _, seq, _ in history(persona)] == [("ADD", 0), ("UPDATE", 15)]
    assert texts(persona)[1] == texts(persona)[0].replace("I am Sam.", "I am BigChungus.")
    assert human.char_limit == 5000 and human.created_at == t("2025-04-01T03:47:27")


def test_it_checks_each_version_against_the_rendering_letta_wrote_after_it() -> None:
    data = load("memgpt_agent_with_convo.v1.af")
    document = letta_af.read(data)
    human = record(document, "memgpt_agent/core_memory", "human")
    renderings = [m["content"][0]["text"] for m in data["messages"] if m["role"] == "system"]
    # The older Letta renders a block as <label characters="len/limit">\nvalue\n</label>; system messages 0, 6,
    # 53, 72 and 89 follow the versions (16 follows the persona's edit).
    for version, rendered in zip(human.ordered_versions(), [renderings[i] for i in (0, 1, 3, 4, 5)], strict=True):
        assert version.text is not None
        assert f'<human characters="{len(version.text)}/5000">\n{version.text}\n</human>' in rendered


def test_it_reads_what_a_trimmed_older_file_still_says() -> None:
    data = load("memgpt_agent_with_convo.v1.trimmed.af")
    document = letta_af.read(data)
    conversation = document.conversations[0]
    assert (conversation.external_id, conversation.agent, len(conversation.messages)) == (
        "memgpt_agent", "memgpt_agent", 40)
    # in_context_message_indices, system message first, as seqs (one Letta message is one message here).
    assert conversation.metadata["in_context_seqs"] == [38, 30, 29, 31, 32, 33, 34, 35, 36, 37, 39]
    human = record(document, "memgpt_agent/core_memory", "human")
    # The renderings are cut (strings over 160 chars), and so is the block's value: the replace at 37 made it, but
    # the append at 1 ("Favorite ice cream") and 20 ("Sailing partner"), whose text the cut value has lost, cannot
    # be shown to have made what came before it. One version is known.
    assert history(human) == [("UPDATE", "memgpt_agent", 37, t("2025-04-01T03:57:37.245343"))]
    assert texts(human) == [human.text]
    assert "First name: Sam" in human.text and human.text.endswith("[cut by make_letta.py, 351 chars in all]")
    persona = record(document, "memgpt_agent/core_memory", "persona")
    assert history(persona) == [("ADD", None, None, t("2025-04-01T03:52:02.091007"))]


def test_it_keeps_the_conversation_as_letta_sent_it() -> None:
    data = load("memgpt_agent_with_convo.v1.af")
    conversation = letta_af.read(data).conversations[0]
    messages = conversation.messages
    assert messages[0].role == "system" and messages[0].text == data["messages"][0]["content"][0]["text"]
    # send_message is how a MemGPT agent talks: a tool call, answered by a tool message.
    call = messages[1].tool_calls[0]
    assert (messages[1].role, call.function.name) == ("assistant", "send_message")
    assert (messages[2].role, messages[2].tool_call_id, messages[2].is_error) == ("tool", call.id, False)
    assert messages[5].tool_calls[0].function.name == "core_memory_replace"
    assert json.loads(messages[5].tool_calls[0].function.arguments)["old_content"] == "First name: Chad"
    assert conversation.tools is not None and {tool["function"]["name"] for tool in conversation.tools} == {
        "archival_memory_search", "core_memory_append", "archival_memory_insert", "send_message",
        "core_memory_replace", "conversation_search"}
    assert conversation.metadata["letta_af"] == {"schema": "older", "agent_type": "memgpt_agent",
                                                 "version": "0.6.47"}


# --- the current schema ---------------------------------------------------------------------------------------

def test_it_reads_a_current_agent_file_blocks_conversation_and_snapshot() -> None:
    data = load("memgpt_agent_with_convo.af")
    document = letta_af.read(data)
    assert document.agent == "memgpt_agent" and document.notes == []
    conversation = document.conversations[0]
    assert (conversation.external_id, len(conversation.messages)) == ("agent-0", 1)
    assert conversation.messages[0].external_id == "message-0"
    assert conversation.metadata["in_context_seqs"] == [0]
    blocks = store(document, "agent-0/core_memory")
    assert (blocks.kind, blocks.name, blocks.scope, blocks.agent) == ("blocks", "core_memory",
                                                                      {"agent_id": "agent-0"}, "memgpt_agent")
    human = record(document, "agent-0/core_memory", "human")
    block = data["blocks"][0]
    assert (human.text, human.char_limit, human.value) == (block["value"], 20000, block)
    assert human.metadata == {"description": block["description"], "read_only": False, "metadata": {},
                              "block_id": "block-0"}
    # The system message renders both blocks: their first and only version, at its seq and time.
    for label in ("human", "persona"):
        rec = record(document, "agent-0/core_memory", label)
        assert history(rec) == [("ADD", "agent-0", 0, t("2025-10-31T22:56:56.459100+00:00"))]
        assert texts(rec) == [rec.text]
    snapshot = document.snapshots[0]
    assert snapshot.value == {"agent": data["agents"][0], "blocks": data["blocks"], "tools": data["tools"]}
    assert (snapshot.external_id, snapshot.session, snapshot.seq, snapshot.taken_at, snapshot.format_version) == (
        "agent-0@2025-10-31T22:56:56.879513+00:00", "agent-0", 0, t("2025-10-31T22:56:56.879513+00:00"),
        "revision f6cd5a1e519d")
    assert [s.external_id for s in letta_af.read(data).snapshots] == [snapshot.external_id]


def test_it_reads_a_tool_call_and_its_return() -> None:
    document = letta_af.read(load("loop.trimmed.af"))
    system, call, result = document.conversations[0].messages
    assert call.tool_calls[0].function.name == "send_message"
    assert json.loads(call.tool_calls[0].function.arguments) == {
        "message": "I'm Loop. I remember. What's on your mind?"}
    assert (result.role, result.tool_call_id, result.is_error) == ("tool", call.tool_calls[0].id, False)
    assert document.conversations[0].metadata["in_context_seqs"] == [0, 1, 2]
    # The system message is cut in this copy (strings over 1000 chars): no rendering, so each block has one
    # version, the file's value, at the export time.
    blocks = store(document, "agent-0/core_memory").records
    assert [b.external_id for b in blocks] == ["about_user", "active_hypotheses", "conversation_patterns",
                                               "custom_instructions", "learned_corrections", "persona", "preferences",
                                               "scratchpad", "soul"]
    assert all(history(b) == [("ADD", None, None, t("2026-01-22T02:06:35.101954+00:00"))] for b in blocks)


def test_it_reads_a_file_encoded_twice_like_once() -> None:
    text = (LETTA / "customer_service.af").read_text(encoding="utf-8")
    data = json.loads(text)
    assert isinstance(data, str)
    assert letta_af.detect(data)
    document = letta_af.read(data)
    assert document.conversations == letta_af.read(json.loads(data)).conversations
    assert document.agent == "customer_service"
    assert [(r.external_id, r.char_limit, history(r)) for r in store(document, "agent-1/core_memory").records] == [
        ("human", 20000, [("ADD", "agent-1", 0, t("2025-11-21T03:09:18.456506+00:00"))]),
        ("persona", 20000, [("ADD", "agent-1", 0, t("2025-11-21T03:09:18.456506+00:00"))]),
    ]
    assert "letta_af" in detect_memory(data)
    assert read_memory_data(data, "letta_af").conversations == document.conversations


def _letta_rendering(label: str, value: str, numbered: bool) -> str:
    """How Letta's Memory.compile writes a block's value (letta/schemas/memory.py)."""
    if numbered:
        lines = "".join(f"{i}→ {line}\n" for i, line in enumerate(value.split("\n"), 1)) if value else ""
        return f"<value>\n{lines}</value>\n</{label}>"
    return f"<value>\n{value}\n</value>\n</{label}>"


def test_it_rebuilds_shared_blocks_edited_by_a_sleeptime_agent_with_rewritten_system_messages() -> None:
    data = load("ezra.trimmed.af")
    document = letta_af.read(data)
    ezra, sleeptime = document.conversations
    assert (ezra.external_id, ezra.agent, len(ezra.messages)) == ("agent-0", "Ezra", 1)
    assert (sleeptime.external_id, sleeptime.agent, len(sleeptime.messages)) == ("agent-1", "ezra-sleeptime", 45)
    calls = {m.tool_calls[0].id: (seq, json.loads(m.tool_calls[0].function.arguments))
             for seq, m in enumerate(sleeptime.messages) if m.tool_calls}
    edit_26 = next(args for seq, args in calls.values() if seq == 26)
    edit_34 = next(args for seq, args in calls.values() if seq == 34)
    # observations is shared by both agents: one history in both stores. Ezra's system message was created on
    # 2025-08-10 and rewritten in place at 2026-01-21 21:40:25 (after the edit at 26); the sleep-time agent's at
    # 2026-01-22 00:51:19 (after the edit at 34). The value before the first edit is rebuilt backward.
    for key in ("agent-0/core_memory", "agent-1/core_memory"):
        observations = record(document, key, "observations")
        assert history(observations) == [
            ("ADD", "agent-0", 0, t("2025-08-10T17:00:55.353227+00:00")),
            ("UPDATE", "agent-1", 26, t("2026-01-21T21:29:11.642586+00:00")),
            ("UPDATE", "agent-1", 34, t("2026-01-22T00:51:18.986758+00:00")),
        ]
    first, second, third = texts(record(document, "agent-0/core_memory", "observations"))
    assert first is not None and second is not None and third is not None
    assert second == first.replace(edit_26["old_str"], edit_26["new_str"])
    assert third == second.replace(edit_34["old_str"], edit_34["new_str"])
    assert third == next(b["value"] for b in data["blocks"] if b["label"] == "observations")
    ezra_system = ezra.messages[0].text
    sleeptime_system = sleeptime.messages[0].text
    assert _letta_rendering("observations", second, numbered=False) in ezra_system
    assert _letta_rendering("observations", third, numbered=True) in sleeptime_system
    # The edit of api_integration_patterns at 2 (2025-11-20) cannot have made what Ezra's rewritten system message
    # shows (changes the exported messages do not hold came between): it makes no version.
    assert [(op, seq) for op, _, seq, _ in history(record(document, "agent-0/core_memory",
                                                            "api_integration_patterns"))] == [("ADD", 0)]
    # Both memory_insert calls on this block failed (their returns say so): the block keeps its one version.
    user = record(document, "agent-1/core_memory", "/ezra/discord/users/295589927016726528")
    assert history(user) == [("ADD", "agent-1", 0, t("2025-11-20T17:35:41.482106+00:00"))]
    assert [sleeptime.messages[seq + 1].is_error for seq in (36, 38, 40)] == [True, True, True]
    # response_guidelines is not in this copy of the file.
    assert document.notes == ["1 memory edit(s) of a block the file does not hold; not read"]
    ids = {m.external_id: seq for seq, m in enumerate(sleeptime.messages)}
    assert sleeptime.metadata["in_context_seqs"] == [ids[i] for i in data["agents"][1]["in_context_message_ids"]]
    # Every block's last version is the block's value in the file.
    for s in document.stores:
        for rec in s.records:
            assert rec.ordered_versions()[-1].text == rec.text


@pytest.mark.parametrize("name", sorted(p.name for p in LETTA.glob("*.af")))
def test_it_ends_every_block_history_on_the_value_in_the_file(name: str) -> None:
    document = letta_af.read(load(name))
    records = [rec for s in document.stores for rec in s.records]
    assert records
    for rec in records:
        versions = rec.ordered_versions()
        assert versions[-1].text == rec.text
        assert [v.number for v in versions] == list(range(1, len(versions) + 1))


# --- edits and searches, as Letta's executor writes them --------------------------------------------------------

def _packaged(message: Any, status: str = "OK") -> str:
    """letta/system.py package_function_response: json_dumps({"status", "message", "time"}) with indent 2."""
    return json.dumps({"status": status, "message": message, "time": "2025-11-01 10:00:00 AM UTC+0000"}, indent=2)


def _with_calls(data: dict[str, Any], calls: list[tuple[str, dict[str, Any], str, str]]) -> dict[str, Any]:
    """The current-schema file with an assistant message per call (name, args, return status, return message),
    each followed by its tool message, one minute apart from 2025-11-01 10:00."""
    data = copy.deepcopy(data)
    messages = data["agents"][0]["messages"]
    for i, (name, args, status, returned) in enumerate(calls):
        when = f"2025-11-01T10:{i:02d}:00+00:00"
        call_id = f"call-{i}"
        messages.append({"type": "message", "role": "assistant", "content": [], "id": f"message-{len(messages)}",
                         "created_at": when, "tool_call_id": None, "tool_returns": [],
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": json.dumps(args)}}]})
        response = _packaged(returned, "OK" if status == "success" else "Failed")
        messages.append({"type": "message", "role": "tool", "content": [{"type": "text", "text": response}],
                         "id": f"message-{len(messages)}", "created_at": when, "tool_call_id": call_id,
                         "tool_calls": None, "name": name,
                         "tool_returns": [{"tool_call_id": call_id, "status": status, "stdout": None,
                                           "stderr": None, "func_response": response}]})
    return data


def _set_block(data: dict[str, Any], label: str, value: str) -> None:
    next(b for b in data["blocks"] if b["label"] == label)["value"] = value


def test_it_replays_insert_rethink_and_the_memory_command_and_skips_failed_edits() -> None:
    base = load("memgpt_agent_with_convo.af")
    human_0 = next(b["value"] for b in base["blocks"] if b["label"] == "human")
    data = _with_calls(base, [
        ("memory_insert", {"label": "human", "new_str": "Likes: sailing", "insert_line": 0}, "success", "ok"),
        ("memory_replace", {"label": "human", "old_str": "not there", "new_str": "x"}, "error", "No replacement"),
        ("memory", {"command": "str_replace", "path": "/memories/human", "old_string": "Likes: sailing",
                    "new_string": "Likes: sailing, chess"}, "success", "ok"),
        ("memory_rethink", {"label": "persona", "new_memory": "I am Sam."}, "success", "ok"),
        ("memory_rethink", {"label": "persona", "new_memory": "I am Sam."}, "success", "ok"),
    ])
    human_1 = "Likes: sailing\n" + human_0
    human_2 = human_1.replace("Likes: sailing", "Likes: sailing, chess")
    _set_block(data, "human", human_2)
    _set_block(data, "persona", "I am Sam.")
    document = letta_af.read(data)
    human = record(document, "agent-0/core_memory", "human")
    assert [(op, seq) for op, _, seq, _ in history(human)] == [("ADD", 0), ("UPDATE", 1), ("UPDATE", 5)]
    assert texts(human) == [human_0, human_1, human_2]
    assert [v.at for v in human.ordered_versions()][1:] == [t("2025-11-01T10:00:00+00:00"),
                                                            t("2025-11-01T10:02:00+00:00")]
    persona = record(document, "agent-0/core_memory", "persona")
    # A rethink that writes what is there is still a write (an UPDATE that changed nothing).
    assert [(op, seq) for op, _, seq, _ in history(persona)] == [("ADD", 0), ("UPDATE", 7), ("UPDATE", 9)]
    assert texts(persona)[1:] == ["I am Sam.", "I am Sam."]


def test_it_ends_on_the_file_value_when_something_the_messages_do_not_show_changed_a_block() -> None:
    data = load("memgpt_agent_with_convo.af")
    _set_block(data, "human", "Changed through the API")
    document = letta_af.read(data)
    human = record(document, "agent-0/core_memory", "human")
    assert [(op, seq) for op, _, seq, _ in history(human)] == [("ADD", 0), ("UPDATE", None)]
    assert human.ordered_versions()[-1].at == t(data["created_at"])
    assert texts(human)[-1] == "Changed through the API"


def _search_file(returned: str, args: dict[str, Any] | None = None, status: str = "success") -> dict[str, Any]:
    return _with_calls(load("memgpt_agent_with_convo.af"), [
        ("archival_memory_search", args or {"query": "ice cream", "top_k": 2, "tags": ["prefs"]}, status, returned)])


def test_it_makes_a_recall_of_each_archival_search_placed_in_its_tool_result() -> None:
    # Letta's executor returns a list of dicts; the tool execution manager makes it str(); the agent packs it.
    results = [
        {"id": "passage-1", "timestamp": "2025-10-31T22:57:00+00:00", "content": "Likes vanilla ice cream",
         "tags": ["prefs"], "relevance": {"rrf_score": 0.032, "vector_rank": 1, "fts_rank": 1}},
        {"id": "passage-2", "timestamp": "2025-10-31T22:58:00+00:00", "content": "Sails on Sundays", "tags": []},
    ]
    document = letta_af.read(_search_file(str(results)))
    recall = document.recalls[0]
    assert (recall.session, recall.seq, recall.store, recall.query, recall.params, recall.placement,
            recall.persisted, recall.at) == (
        "agent-0", 2, "agent-0/archival", "ice cream", {"limit": 2, "tags": ["prefs"]}, "tool_result", True,
        t("2025-11-01T10:00:00+00:00"))
    assert [(i.rank, i.text, i.score, i.ref, i.record) for i in recall.items] == [
        (1, "Likes vanilla ice cream", 0.032, {"id": "passage-1"}, None),
        (2, "Sails on Sundays", None, {"id": "passage-2"}, None),
    ]
    assert recall.items[0].metadata == {"timestamp": "2025-10-31T22:57:00+00:00", "tags": ["prefs"],
                                        "relevance": {"rrf_score": 0.032, "vector_rank": 1, "fts_rank": 1}}
    archival = store(document, "agent-0/archival")
    assert (archival.kind, archival.name, archival.records) == ("records", "archival", [])
    carrier = document.conversations[0].messages[2]
    assert (carrier.role, carrier.tool_call_id) == ("tool", "call-0")


def test_it_reads_the_older_archival_return_and_an_empty_one() -> None:
    older = str(([{"timestamp": "2025-04-01 03:50:00", "content": "Sarah likes vanilla"}], 1))
    recall = letta_af.read(_search_file(older, {"query": "vanilla", "page": 0})).recalls[0]
    assert [(i.rank, i.text, i.ref) for i in recall.items] == [(1, "Sarah likes vanilla", {})]
    assert recall.params == {"page": 0}
    assert letta_af.read(_search_file("[]")).recalls[0].items == []
    assert letta_af.read(_search_file("No results found.")).recalls[0].items == []
    # A failed search returned nothing.
    assert letta_af.read(_search_file("boom", status="error")).recalls[0].items == []


def test_it_keeps_an_unreadable_archival_return_whole_and_runs_nothing_in_it() -> None:
    sneaky = "[__import__('os').system('echo pwned')]"
    document = letta_af.read(_search_file(sneaky))
    assert [(i.rank, i.text) for i in document.recalls[0].items] == [(1, _packaged(sneaky))]
    assert any("not a result list" in note for note in document.notes)


# --- detection and bad input -------------------------------------------------------------------------------------

def test_it_detects_letta_files_and_nothing_else() -> None:
    for path in sorted(LETTA.glob("*.af")):
        assert letta_af.detect(load(path.name)), path.name
    others = [p for p in SAMPLES.rglob("*.json")]
    assert others
    for path in others:
        assert not letta_af.detect(json.loads(path.read_text(encoding="utf-8"))), path
    assert not letta_af.detect("just a string") and not letta_af.detect('{"not": "json')


@pytest.mark.parametrize(("change", "place"), [
    (lambda d: d["blocks"][0].update(value=42), "blocks[0].value"),
    (lambda d: d["agents"][0].update(block_ids=["block-0", "block-9"]), "agents[0].block_ids[1]"),
    (lambda d: d["agents"][0]["messages"][0].update(role="robot"), "agents[0].messages[0].role"),
    (lambda d: d["agents"][0]["messages"][0].update(created_at="yesterday"), "agents[0].messages[0].created_at"),
    (lambda d: d["agents"][0]["messages"][0].update(content=[{"type": "text", "text": 5}]),
     "agents[0].messages[0].content[0].text"),
    (lambda d: d["agents"][0]["messages"].append({"role": "assistant", "content": [], "tool_calls": [
        {"id": "c", "function": "send_message"}]}), "agents[0].messages[1].tool_calls[0].function"),
    (lambda d: d["agents"][0]["messages"].append({"role": "tool", "content": [], "tool_returns": []}),
     "agents[0].messages[1].tool_call_id"),
])
def test_it_names_the_place_of_a_wrong_value(change: Any, place: str) -> None:
    data = load("memgpt_agent_with_convo.af")
    change(data)
    with pytest.raises(FormatError) as caught:
        letta_af.read(data)
    assert caught.value.place == place


def test_it_refuses_a_truncated_or_too_deep_file_encoded_twice() -> None:
    text = json.loads((LETTA / "customer_service.af").read_text(encoding="utf-8"))
    with pytest.raises(FormatError, match="invalid JSON"):
        letta_af.read(text[: len(text) // 2])
    with pytest.raises(FormatError, match="nested too deeply"):
        letta_af.read('{"agents": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(FormatError) as caught:
        letta_af.read({"agents": "none"})
    assert caught.value.place == "input"


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Any:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in ("llm_config", "embedding_config", "tools"):
                yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            yield from _paths(item, (*prefix, i))


@pytest.mark.parametrize("name", ["memgpt_agent_with_convo.af", "memgpt_agent_with_convo.v1.trimmed.af"])
def test_it_reads_any_value_anywhere_or_names_its_place(name: str) -> None:
    data = load(name)
    for path in list(_paths(data))[1:]:
        for value in (12345, "x", [], {}, None, [{"a": 1}], True):
            changed = copy.deepcopy(data)
            target = changed
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            with contextlib.suppress(FormatError):  # anything else (KeyError, TypeError, ...) fails the test
                letta_af.read(changed)
