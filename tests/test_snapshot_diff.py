"""The structural diff of two snapshots (agents/memory/snapshot_diff.py): on the libraries' own files (AgentScope's
session files, LangGraph's get_state_history and a SqliteSaver database written in this run, a Letta agent file,
AutoGen's save_state), message lists diffed by message in every shape the readers meet, and the invariants
(hypothesis): a value against itself, the changes applied, the sides swapped."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.diff import DEFAULT_BUDGET, index_path, json_changes, key_path, path_parts
from agents.memory.formats import langgraph_checkpoints as lg
from agents.memory.formats import letta_af
from agents.memory.formats.memory_files import read_database, read_memory_data
from agents.memory.ledger import SnapshotIn
from agents.memory.snapshot_diff import (
    SnapshotChange,
    SnapshotDiff,
    apply_changes,
    diff_snapshots,
    message_fields,
)

MEMORY = Path(__file__).parent / "samples" / "memory"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows(diff: SnapshotDiff) -> list[tuple[Any, ...]]:
    """Each change as (path, op, message, left_index, right_index)."""
    return [(c.path, c.op, c.message, c.left_index, c.right_index) for c in diff.changes]


def resolve(value: Any, path: str) -> Any:
    for part in path_parts(path):
        value = value[part]
    return value


# --- AgentScope: two saves of one session ---------------------------------------------------------------------

def agentscope_snapshot(file: str) -> SnapshotIn:
    data = json.loads((MEMORY / "agentscope" / file).read_text(encoding="utf-8"))
    (snapshot,) = read_memory_data(data, "agentscope_session", name="user_1.json").snapshots
    return snapshot


def test_it_says_turn_two_added_its_messages_and_changed_the_plan_and_nothing_else() -> None:
    turn1, turn2 = agentscope_snapshot("session_user_1_turn1.json"), agentscope_snapshot("session_user_1_turn2.json")

    diff = diff_snapshots(turn1.value, turn2.value)

    added = turn2.value["memory"]["content"][5:]
    assert [m[0]["id"] for m in added] == ["gy5hcSXABFmGv2CpnaouGK", "5pbjk4zWo3RuUo8QwbgKzH", "kwPPvAPXWTixGGSmobfdCa",
                                           "5YRnXiuXb4hwCJUgHnNjzn", "68pqhXzNRGcfaag4ShEyaw", "42mmAixAPAWLJ6t67TRB2w"]
    assert rows(diff) == [
        *[(f"$.memory.content[{i}]", "added", i, None, i) for i in range(5, 11)],
        ("$.plan_notebook.current_plan", "changed", None, None, None),
    ]
    assert [c.new for c in diff.changes[:6]] == added
    assert all(c.message_list == "$.memory.content" and c.old is None for c in diff.changes[:6])
    plan = diff.changes[6]
    assert plan.old is None and plan.new["name"] == "Hangzhou trip" and len(plan.new["subtasks"]) == 2
    assert (diff.total, diff.counts, diff.exact, diff.truncated) == (
        7, {"added": 6, "removed": 0, "changed": 1}, True, False)
    # The snapshots say which message of the session each reaches: the session leads with the system prompt.
    assert (turn1.seq, turn2.seq) == (5, 11)
    assert apply_changes(turn1.value, diff.changes) == turn2.value


def test_it_says_the_same_messages_removed_from_the_later_save_by_their_left_index() -> None:
    turn1, turn2 = agentscope_snapshot("session_user_1_turn1.json"), agentscope_snapshot("session_user_1_turn2.json")

    diff = diff_snapshots(turn2.value, turn1.value)

    assert rows(diff) == [
        *[(f"$.memory.content[{i}]", "removed", i, i, None) for i in range(5, 11)],
        ("$.plan_notebook.current_plan", "changed", None, None, None),
    ]
    assert apply_changes(turn2.value, diff.changes) == turn1.value


def test_it_finds_an_edited_message_by_its_id_after_one_inserted_at_the_head() -> None:
    turn2 = agentscope_snapshot("session_user_1_turn2.json").value
    edited = copy.deepcopy(turn2)
    content = edited["memory"]["content"]
    content[8][0]["content"][0]["input"]["name"] = "Lisbon trip"
    content[3][1].append("hint")
    content.insert(0, [{"id": "new-head", "name": "user", "role": "user", "content": "Before anything:",
                        "metadata": {}, "timestamp": "2026-12-06 00:51:30.000"}, []])

    diff = diff_snapshots(turn2, edited)

    assert rows(diff) == [
        ("$.memory.content[0]", "added", 0, None, 0),
        ("$.memory.content[4][1][0]", "added", 4, 3, 4),
        ("$.memory.content[9][0].content[0].input.name", "changed", 9, 8, 9),
    ]
    assert (diff.changes[2].old, diff.changes[2].new) == ("Hangzhou trip", "Lisbon trip")
    assert apply_changes(turn2, diff.changes) == edited


# --- LangGraph: consecutive checkpoints -------------------------------------------------------------------------

def test_it_says_each_langgraph_step_added_its_message_and_what_else_moved() -> None:
    data = json.loads((MEMORY / "langgraph" / "state_history.json").read_text(encoding="utf-8"))
    snapshots = sorted(lg.read(data).snapshots, key=lambda s: s.step or 0)

    diffs = [diff_snapshots(a.value, b.value) for a, b in zip(snapshots, snapshots[1:], strict=False)]

    message_changes = [[(c.path, c.op, c.message, c.new["id"]) for c in d.changes if c.message_list] for d in diffs]
    assert message_changes == [
        [("$.values.messages[0]", "added", 0, "h-1")],
        [("$.values.messages[1]", "added", 1, "ai-1")],
        [("$.values.messages[2]", "added", 2, "28ca5a88-c966-4d6b-a6cd-b1660795a306")],
        [("$.values.messages[3]", "added", 3, "ai-2")],
    ]
    # The last step in full: the answer added, the step's bookkeeping changed, the pending task gone.
    last = diffs[-1]
    assert [(c.path, c.op, c.old, c.new) for c in last.changes if not c.message_list] == [
        ("$.config.configurable.checkpoint_id", "changed", "1f1f10f5-19b1-6852-8002-668827c6a35f",
         "1f1f10f5-19b6-6f44-8003-f85909d2296f"),
        ("$.created_at", "changed", "2026-12-06T00:52:32.111805+00:00", "2026-12-06T00:52:32.114035+00:00"),
        ("$.metadata.step", "changed", 2, 3),
        ("$.next[0]", "removed", "agent", None),
        ("$.parent_config.configurable.checkpoint_id", "changed", "1f1f10f5-19a9-68e3-8001-3aa48414e9e3",
         "1f1f10f5-19b1-6852-8002-668827c6a35f"),
        ("$.tasks[0]", "removed", snapshots[3].value["tasks"][0], None),
    ]
    assert last.changes[-1].new == data[0]["values"]["messages"][3]
    for (a, b), diff in zip(zip(snapshots, snapshots[1:], strict=False), diffs, strict=True):
        assert apply_changes(a.value, diff.changes) == b.value
        # The message each reaches is the one the later snapshot ends on.
        assert [c.message for c in diff.changes if c.message_list] == [b.seq]


@pytest.fixture(scope="module")
def saver_snapshots(library_files: Any) -> dict[str, list[SnapshotIn]]:
    """The snapshots of every thread of the SqliteSaver database LangGraph 1.2.24 wrote in this run, oldest first."""
    document = read_database(Path(library_files("mem", "langgraph_files.py")) / "checkpoints.sqlite")
    threads: dict[str, list[SnapshotIn]] = {}
    for snapshot in document.snapshots:
        threads.setdefault(snapshot.value["thread_id"] + "|" + snapshot.value["checkpoint_ns"], []).append(snapshot)
    return {key: sorted(snaps, key=lambda s: s.value["checkpoint"]["id"]) for key, snaps in threads.items()}


def test_it_diffs_decoded_checkpoints_of_a_sqlitesaver_by_message(
        saver_snapshots: dict[str, list[SnapshotIn]]) -> None:
    snapshots = saver_snapshots["thread-1|"]
    assert len(snapshots) > 4
    # The input checkpoint has no messages channel yet: the next one adds it whole.
    first = diff_snapshots(snapshots[0].value, snapshots[1].value)
    assert "messages" not in snapshots[0].value["checkpoint"]["channel_values"]
    assert [(c.op, c.new) for c in first.changes if c.path == "$.checkpoint.channel_values.messages"] == [
        ("added", snapshots[1].value["checkpoint"]["channel_values"]["messages"])]
    for a, b in zip(snapshots[1:], snapshots[2:], strict=False):
        diff = diff_snapshots(a.value, b.value)
        left = a.value["checkpoint"]["channel_values"]["messages"]
        right = b.value["checkpoint"]["channel_values"]["messages"]
        ids_left = [m["id"] for m in left]
        new = [(i, m) for i, m in enumerate(right) if m["id"] not in ids_left]
        assert [m["__type__"].startswith("langchain_core.messages.") for _, m in new] == [True] * len(new)
        in_messages = [c for c in diff.changes if c.message_list == "$.checkpoint.channel_values.messages"]
        # Messages are only ever added by a step of this graph: one added change per new message, at its index.
        assert [(c.op, c.message, c.new) for c in in_messages] == [("added", i, m) for i, m in new]
        assert apply_changes(a.value, diff.changes) == b.value


def test_it_diffs_two_checkpoints_of_10000_messages_as_the_one_added(
        saver_snapshots: dict[str, list[SnapshotIn]]) -> None:
    big = [s for s in saver_snapshots["thread-big|"] if s.value["checkpoint"]["channel_values"].get("messages")]
    before, after = big[-2], big[-1]
    assert len(before.value["checkpoint"]["channel_values"]["messages"]) == 10_000

    diff = diff_snapshots(before.value, after.value, limit=20)

    messages = [c for c in diff.changes if c.message_list]
    assert [(c.path, c.op, c.message, c.new["id"], c.new["content"]) for c in messages] == [
        ("$.checkpoint.channel_values.messages[10000]", "added", 10_000, "big-10000", "one more")]
    assert diff.exact and not diff.truncated
    assert apply_changes(before.value, diff.changes) == after.value


# --- Letta: one block edited --------------------------------------------------------------------------------------

def test_it_says_the_one_block_value_edited_in_a_letta_agent_file() -> None:
    text = (MEMORY / "letta" / "customer_service.af").read_text(encoding="utf-8")
    data = json.loads(json.loads(text))  # encoded twice, as Letta's export does
    edited = copy.deepcopy(data)
    human = next(b for b in edited["blocks"] if b["label"] == "human")
    human["value"] += "The human's name is Ada.\n"
    (before,) = letta_af.read(data).snapshots
    (after,) = letta_af.read(json.dumps(edited)).snapshots
    position = [b["label"] for b in before.value["blocks"]].index("human")

    diff = diff_snapshots(before.value, after.value)

    assert [(c.path, c.op, c.old, c.new) for c in diff.changes] == [
        (f"$.blocks[{position}].value", "changed", before.value["blocks"][position]["value"], human["value"])]
    assert apply_changes(before.value, diff.changes) == after.value


def test_it_adds_a_message_to_a_letta_agent_entry_by_its_id() -> None:
    data = json.loads(json.loads((MEMORY / "letta" / "customer_service.af").read_text(encoding="utf-8")))
    later = copy.deepcopy(data)
    messages = later["agents"][0]["messages"]
    reply = {**messages[0], "id": "message-new", "role": "user",
             "content": [{"type": "text", "text": "My order never came."}]}
    messages.insert(0, reply)
    (before,) = letta_af.read(data).snapshots
    (after,) = letta_af.read(later).snapshots

    diff = diff_snapshots(before.value, after.value)

    assert rows(diff) == [("$.agent.messages[0]", "added", 0, None, 0)]
    assert diff.changes[0].new == reply


# --- AutoGen: messages without ids ----------------------------------------------------------------------------

def test_it_aligns_autogen_messages_without_ids_on_what_they_say() -> None:
    run1, run2 = (json.loads((MEMORY / "autogen" / f"assistant_state_after_run{n}.json").read_text(encoding="utf-8"))
                  for n in (1, 2))

    diff = diff_snapshots(run1, run2)

    # The second run's question, ListMemory's SystemMessage (the same text as the first run's) and the answer.
    assert rows(diff) == [(f"$.llm_context.messages[{i}]", "added", i, None, i) for i in (5, 6, 7)]
    assert [c.new["type"] for c in diff.changes] == ["UserMessage", "SystemMessage", "AssistantMessage"]
    assert apply_changes(run1, diff.changes) == run2


def test_it_pairs_a_reworded_message_without_id_with_its_place_by_role() -> None:
    run2 = json.loads((MEMORY / "autogen" / "assistant_state_after_run2.json").read_text(encoding="utf-8"))
    reworded = copy.deepcopy(run2)
    reworded["llm_context"]["messages"][4]["content"] = "It is 18 °C, cloudy, in Paris."
    del reworded["llm_context"]["messages"][0]

    diff = diff_snapshots(run2, reworded)

    assert rows(diff) == [("$.llm_context.messages[0]", "removed", 0, 0, None),
                          ("$.llm_context.messages[3].content", "changed", 3, 4, 3)]
    assert (diff.changes[1].old, diff.changes[1].new) == ("It is 18 °C and cloudy in Paris.",
                                                          "It is 18 °C, cloudy, in Paris.")


# --- every message shape ----------------------------------------------------------------------------------------

def openai(i: int, text: str) -> Any:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": text}


def letta(i: int, text: str) -> Any:
    return {"type": "message", "role": "user" if i % 2 == 0 else "assistant", "id": f"message-{i}",
            "content": [{"type": "text", "text": text}]}


def agentscope_pair(i: int, text: str) -> Any:
    return [{"id": f"as-{i}", "name": "user", "role": "user", "content": text, "metadata": {},
             "timestamp": "2026-12-06 00:51:32.703"}, []]


def agentscope2_msg(i: int, text: str) -> Any:
    return {"id": f"m{i}", "name": "Friday", "role": "assistant", "content": [{"type": "text", "text": text}],
            "metadata": {}, "created_at": "2026-12-06T00:51:32Z"}


def langchain_dump(i: int, text: str) -> Any:
    return {"content": text, "additional_kwargs": {}, "response_metadata": {}, "type": "human" if i % 2 else "ai",
            "name": None, "id": f"lc-{i}"}


def langchain_dump_without_id(i: int, text: str) -> Any:
    return {**langchain_dump(i, text), "id": None}


def langchain_envelope(i: int, text: str) -> Any:
    return {"type": "human", "data": {"content": text, "type": "human", "id": None, "additional_kwargs": {}}}


def langchain_constructor(i: int, text: str) -> Any:
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
            "kwargs": {"content": text, "id": f"run-{i}", "type": "ai"}}


def langgraph_decoded(i: int, text: str) -> Any:
    return {"__type__": "langchain_core.messages.ai.AIMessage", "content": text, "additional_kwargs": {},
            "response_metadata": {}, "type": "ai", "name": None, "id": f"lg-{i}", "tool_calls": [],
            "invalid_tool_calls": [], "usage_metadata": None}


def autogen_core(i: int, text: str) -> Any:
    return {"content": text, "source": "user", "type": "UserMessage"}


def autogen_agentchat(i: int, text: str) -> Any:
    return {"id": f"ag-{i}", "source": "assistant", "models_usage": None, "metadata": {}, "content": text,
            "type": "TextMessage", "created_at": "2026-12-06T00:51:32Z"}


SHAPES = [openai, letta, agentscope_pair, agentscope2_msg, langchain_dump, langchain_dump_without_id,
          langchain_envelope, langchain_constructor, langgraph_decoded, autogen_core, autogen_agentchat]


@pytest.mark.parametrize("make", SHAPES, ids=[f.__name__ for f in SHAPES])
def test_it_reads_one_message_inserted_at_the_head_as_one_added_change(make: Any) -> None:
    left = [make(i, f"message {i}") for i in range(1, 41)]
    right = [make(0, "the new head"), *left]
    assert all(message_fields(m) is not None for m in right)

    diff = diff_snapshots({"messages": left}, {"messages": right})

    assert rows(diff) == [("$.messages[0]", "added", 0, None, 0)]
    assert diff.changes[0].message_list == "$.messages"


@pytest.mark.parametrize("make", SHAPES, ids=[f.__name__ for f in SHAPES])
def test_it_reads_one_message_edited_after_a_head_insertion_at_its_right_index(make: Any) -> None:
    left = [make(i, f"message {i}") for i in range(1, 41)]
    right = [make(0, "the new head"), *copy.deepcopy(left)]
    edited = right[20]
    fields = message_fields(edited)
    assert fields is not None
    fields[1]["metadata_note"] = "edited"  # a field of the message's own (its content may be its id's stand-in)

    diff = diff_snapshots({"messages": left}, {"messages": right})

    assert [(c.op, c.message, c.left_index, c.right_index) for c in diff.changes] == [
        ("added", 0, None, 0), ("added", 20, 19, 20)]
    assert diff.changes[1].path.startswith("$.messages[20]") and diff.changes[1].path.endswith(".metadata_note")
    assert apply_changes({"messages": left}, diff.changes) == {"messages": right}


def test_it_takes_a_message_of_another_id_at_the_same_place_for_another_message() -> None:
    left = [langgraph_decoded(i, f"m{i}") for i in range(5)]
    right = [*left[:2], langgraph_decoded(99, "m2"), *left[3:]]

    diff = diff_snapshots(left, right)

    assert rows(diff) == [("$[2]", "removed", 2, 2, None), ("$[2]", "added", 2, None, 2)]


def test_it_diffs_lists_that_are_not_messages_as_json_changes_does() -> None:
    left = {"city": "Paris", "days": [1, 2, 3], "opts": {"x": True, "a key": 1},
            "blocks": [{"type": "text", "text": "a"}, {"type": "tool_result", "content": "b"}]}
    right = {"city": "Paris", "days": [1, 9, 2, 3], "opts": {"x": False, "a key": 2}, "new": None,
             "blocks": [{"type": "text", "text": "a"}, {"type": "tool_result", "content": "c"}]}

    diff = diff_snapshots(left, right)

    expected = json_changes(left, right)
    assert [(c.path, c.op, c.old, c.new) for c in diff.changes] == [(c.path, c.op, c.left, c.right) for c in expected]
    assert not any(c.message_list for c in diff.changes)


# --- bounds ---------------------------------------------------------------------------------------------------

def test_it_keeps_the_first_changes_up_to_the_limit_and_counts_them_all() -> None:
    left = {"memory": [openai(i, f"m{i}") for i in range(10)], "plan": {"a": 1, "b": 2}}
    right = {"memory": [openai(i, f"m{i}") for i in range(10)] + [openai(i, f"x{i}") for i in range(3)],
             "plan": {"a": 2, "c": 3}}

    diff = diff_snapshots(left, right, limit=2)

    assert rows(diff) == [("$.memory[10]", "added", 10, None, 10), ("$.memory[11]", "added", 11, None, 11)]
    assert (diff.total, diff.counts, diff.truncated) == (6, {"added": 4, "removed": 1, "changed": 1}, True)
    assert diff.to_dict()["total"] == 6 and len(diff.to_dict()["changes"]) == 2
    assert diff_snapshots(left, right, limit=0).changes == [] and diff_snapshots(left, right, limit=0).total == 6
    with pytest.raises(ValueError):
        diff_snapshots(left, right, limit=-1)


def test_it_cuts_long_values_for_display_and_says_how_long_they_are() -> None:
    long_text = "x" * 5000
    plan = {"steps": ["s" * 100] * 40}
    diff = diff_snapshots({"note": "short", "plan": None}, {"note": long_text, "plan": plan})

    shown = diff.to_dict(max_chars=100)["changes"]
    whole_plan = json.dumps(plan)
    assert shown == [
        {"path": "$.note", "op": "changed", "old": "short", "new": "x" * 100, "cut": {"new": 5000}},
        {"path": "$.plan", "op": "changed", "old": None, "new": whole_plan[:100], "cut": {"new": len(whole_plan)}},
    ]
    assert diff.to_dict(max_chars=None)["changes"][0]["new"] == long_text
    assert diff.changes[1].to_dict(max_chars=None)["new"] == plan


def test_it_bounds_the_alignment_of_two_unrelated_message_lists() -> None:
    left = [openai(i, f"left message {i}") for i in range(3000)]
    right = [openai(i, f"right message {i}") for i in range(3000)]

    diff = diff_snapshots({"m": left}, {"m": right})

    # Nothing matches: Myers' search stops at its budget and the rest is paired by role, greedily, in one pass.
    assert diff.steps <= DEFAULT_BUDGET and not diff.exact
    assert diff.total == 3000 and diff.counts["changed"] == 3000
    assert apply_changes({"m": left}, diff.changes) == {"m": right}


def test_it_reads_back_every_path_it_writes() -> None:
    path = index_path(key_path(key_path(key_path("$", "memory"), "a key"), 'q"uo]te'), 3)
    assert path == '$.memory["a key"]["q\\"uo]te"][3]'
    assert path_parts(path) == ["memory", "a key", 'q"uo]te', 3]
    assert path_parts("$") == []
    for bad in ("memory", "$.", "$[x]", "$[3", '$["a"', "$..a"):
        with pytest.raises(ValueError):
            path_parts(bad)


# --- invariants -----------------------------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=4)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=25,
)


@st.composite
def message_lists(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """A message list of one shape and a later one: messages removed, inserted and edited (ids kept or not)."""
    make = draw(st.sampled_from(SHAPES))
    texts = st.sampled_from(["hi", "weather?", "sunny", "ok", "thanks", ""])
    left = [make(i, draw(texts)) for i in range(draw(st.integers(0, 12)))]
    right = copy.deepcopy(left)
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 2))
        if kind == 0 and right:
            del right[draw(st.integers(0, len(right) - 1))]
        elif kind == 1:
            right.insert(draw(st.integers(0, len(right))), make(draw(st.integers(100, 110)), draw(texts)))
        elif right:
            found = message_fields(right[draw(st.integers(0, len(right) - 1))])
            assert found is not None
            found[1]["content"] = draw(texts | json_values)
    return left, right


@st.composite
def snapshot_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    if draw(st.booleans()):
        return draw(json_values), draw(json_values)
    left_messages, right_messages = draw(message_lists())
    extra = draw(json_values)
    return ({"memory": {"content": left_messages}, "state": extra},
            {"memory": {"content": right_messages}, "state": draw(st.just(extra) | json_values)})


@SETTINGS
@given(json_values | st.builds(lambda p: p[0], snapshot_pairs()))
def test_it_finds_no_change_between_a_value_and_a_copy_of_it(value: Any) -> None:
    assert diff_snapshots(value, value).total == 0
    assert diff_snapshots(value, copy.deepcopy(value)).changes == []


@SETTINGS
@given(snapshot_pairs())
def test_it_gives_the_right_side_back_when_its_changes_are_applied_to_the_left(pair: tuple[Any, Any]) -> None:
    left, right = pair
    before = copy.deepcopy(left)
    diff = diff_snapshots(left, right)
    assert apply_changes(left, diff.changes) == right
    assert left == before  # applying copies what it changes
    for change in diff.changes:
        # A path names the right side (a removed item's last index excepted).
        if change.op != "removed":
            assert resolve(right, change.path) == change.new
        assert (change.message is not None) == (change.message_list is not None)


def mirrored(change: SnapshotChange) -> tuple[Any, ...]:
    op = {"added": "removed", "removed": "added", "changed": "changed"}[change.op]
    return (re.sub(r"\[\d+\]", "[]", change.path), op, json.dumps(change.new, sort_keys=True),
            json.dumps(change.old, sort_keys=True), change.message_list, change.right_index, change.left_index)


def plain(change: SnapshotChange) -> tuple[Any, ...]:
    return (re.sub(r"\[\d+\]", "[]", change.path), change.op, json.dumps(change.old, sort_keys=True),
            json.dumps(change.new, sort_keys=True), change.message_list, change.left_index, change.right_index)


@SETTINGS
@given(snapshot_pairs())
def test_it_swaps_added_and_removed_when_the_sides_are_swapped(pair: tuple[Any, Any]) -> None:
    left, right = pair
    forth, back = diff_snapshots(left, right), diff_snapshots(right, left)
    assert sorted(map(mirrored, back.changes)) == sorted(map(plain, forth.changes))
    assert back.counts == {"added": forth.counts["removed"], "removed": forth.counts["added"],
                           "changed": forth.counts["changed"]}
    assert apply_changes(right, back.changes) == left


def test_it_refuses_to_apply_a_change_whose_path_does_not_fit() -> None:
    with pytest.raises(ValueError):
        apply_changes({"a": 1}, [SnapshotChange("$.a.b", "changed", 1, 2)])
    with pytest.raises(ValueError):
        apply_changes([1], [SnapshotChange("$[3]", "removed", 1, None)])
    with pytest.raises(ValueError):
        apply_changes({"a": 1}, [SnapshotChange("$[0]", "changed", 1, 2)])
