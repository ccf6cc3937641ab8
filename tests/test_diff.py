"""Diffing two runs of one task, and a session against a trimmed view of it (agents/memory/diff.py)."""
from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agents.memory.diff import (
    Fold,
    MessageDiff,
    Row,
    _said,
    align,
    diff_messages,
    diff_text,
    diff_trim,
    json_changes,
)
from agents.memory.schema import FunctionCall, Message, ToolCall
from agents.memory.tokens import count_messages
from agents.memory.trimming import STRATEGIES, strategy_spec, trim
from tests.strategies_messages import texts, valid_conversations

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def broken(draw: st.DrawFn) -> list[Message]:
    """A conversation with some messages lost (orphan results, unanswered calls) and some thoughts recorded."""
    messages = draw(valid_conversations(system=None, pending=None, max_turns=4))
    out = []
    for m in messages:
        choice = draw(st.integers(0, 9))
        if choice == 0:
            continue
        if choice == 1 and m.role == "assistant":
            m = m.model_copy(update={"reasoning": draw(texts)})
        out.append(m)
    return out


conversations = st.one_of(valid_conversations(system=None, pending=None, max_turns=5), broken())


@st.composite
def strategy_and_params(draw: st.DrawFn, budget: int) -> tuple[str, dict[str, Any]]:
    """Any registered strategy, its numbers drawn up to ``budget`` and its switches drawn (other params default;
    all defaults where the draw breaks a rule across parameters)."""
    name = draw(st.sampled_from(sorted(STRATEGIES)))
    params: dict[str, Any] = {}
    for p in STRATEGIES[name].parameters():
        if p["type"] == "integer":
            low = p["minimum"] if "minimum" in p else p.get("exclusiveMinimum", -1) + 1
            params[p["name"]] = draw(st.integers(low, max(low, budget)))
        elif p["type"] == "boolean":
            params[p["name"]] = draw(st.booleans())
    try:
        STRATEGIES[name].params_model.model_validate(params)
    except ValidationError:  # a rule across parameters (maf_truncation: compact_to <= max_n)
        params = {}
    return name, params


def rerun(messages: list[Message], tag: str = "run2_") -> list[Message]:
    """The same messages as another run of the task records them: other call ids, other timestamps."""
    out = []
    for m in messages:
        update: dict[str, Any] = {"external_id": None, "created_at": None}
        if m.tool_calls:
            update["tool_calls"] = [c.model_copy(update={"id": tag + c.id}) for c in m.tool_calls]
        if m.tool_call_id:
            update["tool_call_id"] = tag + m.tool_call_id
        out.append(m.model_copy(update=update))
    return out


def check_rows(diff: MessageDiff) -> None:
    """Each index of each side in exactly one row, both sides in order; a same pair says the same."""
    lefts = [r.left for r in diff.rows if r.left is not None]
    rights = [r.right for r in diff.rows if r.right is not None]
    assert lefts == list(range(len(diff.left)))
    assert rights == list(range(len(diff.right)))
    for row in diff.rows:
        assert (row.kind == "left_only") == (row.right is None)
        assert (row.kind == "right_only") == (row.left is None)
        if row.kind == "same":
            assert diff.changes(row).fields == []
        if row.kind == "changed":
            assert diff.changes(row).fields != []


def mirrored(diff: MessageDiff) -> set[tuple[str, int | None, int | None]]:
    swap = {"left_only": "right_only", "right_only": "left_only"}
    return {(swap.get(r.kind, r.kind), r.right, r.left) for r in diff.rows}


def keys(messages: list[Message]) -> list[str]:
    """What the alignment matches on (equal keys can be told apart only by exact whitespace or reasoning)."""
    return [s.key for s in _said(messages)]


def answered_by(messages: list[Message], k: int) -> set[int]:
    """Indices of the tool results answering the calls of message k."""
    ids = {c.id for c in messages[k].tool_calls}
    return {i for i, m in enumerate(messages) if m.role == "tool" and m.tool_call_id in ids}


# --- the alignment -----------------------------------------------------------------------------------------------


@SETTINGS
@given(conversations)
def test_it_aligns_a_list_with_itself_as_the_identity(messages: list[Message]) -> None:
    diff = diff_messages(messages, messages)

    assert diff.rows == [Row("same", i, i) for i in range(len(messages))]
    assert diff.identical and diff.exact


@SETTINGS
@given(valid_conversations(pending=None))
def test_it_aligns_two_runs_on_what_they_say_not_on_their_call_ids(messages: list[Message]) -> None:
    diff = diff_messages(messages, rerun(messages))

    assert diff.rows == [Row("same", i, i) for i in range(len(messages))]


@SETTINGS
@given(conversations.filter(bool), st.data())
def test_it_shows_one_removed_message_as_exactly_one_gap_at_its_place(messages: list[Message],
                                                                      data: st.DataObject) -> None:
    k = data.draw(st.integers(0, len(messages) - 1))
    right = rerun(messages[:k] + messages[k + 1:])

    diff = diff_messages(messages, right)

    check_rows(diff)
    gaps = [r for r in diff.rows if r.kind in ("left_only", "right_only")]
    assert len(gaps) == 1 and gaps[0].kind == "left_only"
    # At k, or at an equal message next to it (which of two equal neighbours is missing cannot be told).
    at, key = gaps[0].left, keys(messages)
    run = range(min(at, k), max(at, k) + 1)
    assert all(key[i] == key[k] for i in run)
    # The only other differences: results whose call was the removed message no longer answer a call (and, in a
    # run of equal neighbours, a whitespace or reasoning difference shifted by one).
    orphaned = answered_by(messages, k)
    for row in diff.rows:
        if row.kind == "changed":
            assert row.left in run or (row.left in orphaned and diff.changes(row).fields == ["answers"])


@SETTINGS
@given(conversations, st.data())
def test_it_shows_one_inserted_message_as_exactly_one_gap_at_its_place(messages: list[Message],
                                                                       data: st.DataObject) -> None:
    k = data.draw(st.integers(0, len(messages)))
    extra = Message(role=data.draw(st.sampled_from(["user", "assistant", "system"])), content=data.draw(texts))
    right = messages[:k] + [extra] + messages[k:]

    diff = diff_messages(messages, right)

    check_rows(diff)
    gaps = [r for r in diff.rows if r.kind in ("left_only", "right_only")]
    assert len(gaps) == 1 and gaps[0].kind == "right_only"
    at, key = gaps[0].right, keys(right)
    run = range(min(at, k), max(at, k) + 1)
    assert all(key[i] == key[k] for i in run)
    assert all(r.right in run for r in diff.rows if r.kind == "changed")


@st.composite
def edited(draw: st.DrawFn, messages: list[Message]) -> list[Message]:
    """Another run: a few messages removed, inserted or reworded, call ids renamed."""
    out = list(messages)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["remove", "insert", "reword"]))
        if op == "insert" or not out:
            k = draw(st.integers(0, len(out)))
            out.insert(k, Message(role=draw(st.sampled_from(["user", "assistant"])), content=draw(texts)))
        else:
            k = draw(st.integers(0, len(out) - 1))
            if op == "remove":
                del out[k]
            else:
                out[k] = out[k].model_copy(update={"content": (out[k].text or "") + " " + draw(texts)})
    return rerun(out)


@SETTINGS
@given(conversations, st.data())
def test_it_mirrors_the_result_when_the_sides_are_swapped(messages: list[Message], data: st.DataObject) -> None:
    other = data.draw(edited(messages))

    forward, backward = diff_messages(messages, other), diff_messages(other, messages)

    check_rows(forward)
    check_rows(backward)
    assert mirrored(backward) == {(r.kind, r.left, r.right) for r in forward.rows}
    for row in forward.rows:
        if row.kind == "changed":
            there = backward.changes(Row("changed", row.right, row.left))
            here = forward.changes(row)
            assert there.fields == here.fields
            if here.content is not None:
                assert (there.content.left, there.content.right) == (here.content.right, here.content.left)


@SETTINGS
@given(conversations, st.data())
def test_it_pairs_every_message_once_and_in_order_after_any_edits(messages: list[Message],
                                                                  data: st.DataObject) -> None:
    other = data.draw(edited(messages))

    diff = diff_messages(messages, other)

    check_rows(diff)
    edits = sum(r.kind != "same" for r in diff.rows)
    assert edits <= 2 * 4 + sum(m.role == "tool" for m in messages)  # at most the edits, plus orphaned results


@SETTINGS
@given(st.lists(st.sampled_from("abcde"), max_size=30), st.lists(st.sampled_from("abcde"), max_size=30))
def test_it_matches_only_equal_keys_in_increasing_order_and_mirrors(a: list[str], b: list[str]) -> None:
    pairs = align(a, b)

    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:], strict=False))
    assert align(b, a) == [(j, i) for i, j in pairs]


def test_it_finds_a_longest_common_subsequence_where_no_key_is_unique() -> None:
    a, b = list("abcabba"), list("cbabac")

    assert len(align(a, b)) == 4  # Myers' example: the shortest edit script has 5 steps


def test_it_pairs_a_reworded_answer_and_a_call_with_other_arguments_as_changes() -> None:
    def run(city: str, answer: str, tag: str) -> list[Message]:
        return [
            Message(role="user", content="Weather?"),
            Message(role="assistant", tool_calls=[ToolCall(id=f"{tag}1", function=FunctionCall(
                name="get_weather", arguments=json.dumps({"city": city, "units": "C"})))]),
            Message(role="tool", tool_call_id=f"{tag}1", content="18C"),
            Message(role="assistant", content=answer),
        ]

    diff = diff_messages(run("Paris", "It is 18C in Paris.", "a"), run("Tokyo", "It is 18C in Tokyo today.", "b"))

    assert [r.kind for r in diff.rows] == ["same", "changed", "same", "changed"]
    call = diff.changes(diff.rows[1]).calls[0]
    assert call.kind == "changed"
    assert [p.to_dict() for p in call.paths] == [{"path": "$.city", "op": "changed", "left": "Paris", "right": "Tokyo"}]
    answer = diff.changes(diff.rows[3]).content
    assert answer.segments == (("=", "It is 18C in "), ("-", "Paris"), ("+", "Tokyo today"), ("=", "."))
    assert answer.side("left") == [(False, "It is 18C in "), (True, "Paris"), (False, ".")]


def test_it_pairs_parallel_calls_by_name_not_by_id() -> None:
    def call(i: str, name: str, args: dict[str, Any]) -> ToolCall:
        return ToolCall(id=i, function=FunctionCall(name=name, arguments=json.dumps(args)))

    left = Message(role="assistant", tool_calls=[call("x1", "search", {"q": "a"}), call("x2", "read", {"p": 1})])
    right = Message(role="assistant", tool_calls=[call("y1", "lookup", {}), call("y2", "search", {"q": "a"}),
                                                  call("y3", "read", {"p": 2})])

    changes = diff_messages([left], [right]).changes(Row("changed", 0, 0))

    assert [(c.kind, c.left, c.right) for c in changes.calls] == [
        ("added", None, 0), ("same", 0, 1), ("changed", 1, 2)
    ]
    assert changes.calls[2].paths[0].path == "$.p"


def test_it_says_a_result_that_became_an_error_and_answers_another_tool() -> None:
    def run(name: str, error: bool) -> list[Message]:
        return [
            Message(role="assistant", tool_calls=[ToolCall(id="c", function=FunctionCall(name=name, arguments="{}"))]),
            Message(role="tool", tool_call_id="c", content="boom", is_error=error),
        ]

    diff = diff_messages(run("search", False), run("lookup", True))

    changes = diff.changes(diff.rows[1])
    assert changes.to_dict() == {
        "is_error": {"left": False, "right": True}, "answers": {"left": "search", "right": "lookup"}
    }


def test_it_compares_arguments_as_json_and_reasoning_as_text() -> None:
    left = [Message(role="assistant", reasoning="think A", tool_calls=[
        ToolCall(id="1", function=FunctionCall(name="f", arguments='{"a": 1, "b": [1, 2]}'))])]
    right = [Message(role="assistant", reasoning="think B", tool_calls=[
        ToolCall(id="2", function=FunctionCall(name="f", arguments='{"b":[1,2],"a":1.0}'))])]

    diff = diff_messages(left, right)

    assert diff.rows == [Row("changed", 0, 0)]
    assert diff.changes(diff.rows[0]).fields == ["reasoning"]  # key order, spacing and 1 vs 1.0 are not changes


def test_it_pairs_a_system_prompt_with_a_developer_prompt_as_a_role_change() -> None:
    left, right = Message(role="system", content="Be brief."), Message(role="developer", content="Be brief.")

    diff = diff_messages([left], [right])

    assert diff.rows == [Row("changed", 0, 0)]
    assert diff.changes(diff.rows[0]).to_dict() == {"role": {"left": "system", "right": "developer"}}


# --- text and JSON -----------------------------------------------------------------------------------------------


@SETTINGS
@given(st.text(max_size=80), st.text(max_size=80))
def test_it_gives_both_texts_back_from_a_word_diff(left: str, right: str) -> None:
    diff = diff_text(left, right)

    assert (diff.left, diff.right) == (left, right)
    back = diff_text(right, left)
    assert (back.left, back.right) == (right, left)
    assert [t for op, t in back.segments if op == "="] == [t for op, t in diff.segments if op == "="]


def test_it_reports_json_changes_by_path_and_survives_an_inserted_item() -> None:
    left = {"city": "Paris", "days": [1, 2, 3], "opts": {"x": True, "a key": 1}}
    right = {"city": "Paris", "days": [1, 9, 2, 3], "opts": {"x": 1, "a key": 1}, "new": None}

    assert [c.to_dict() for c in json_changes(left, right)] == [
        {"path": "$.days[1]", "op": "added", "right": 9},
        {"path": "$.new", "op": "added", "right": None},
        {"path": "$.opts.x", "op": "changed", "left": True, "right": 1},
    ]


# --- folding -----------------------------------------------------------------------------------------------------


def test_it_folds_identical_runs_into_a_count_keeping_context_around_changes() -> None:
    left = [Message(role="user", content=f"m{i}") for i in range(20)]
    right = [*left[:10], Message(role="user", content="new"), *left[10:]]

    diff = diff_messages(left, right)
    blocks = diff.blocks(context=1)

    assert blocks == [Fold(0, 0, 9, 0), Row("same", 9, 9), Row("right_only", None, 10), Row("same", 10, 11),
                      Fold(11, 12, 9, 12)]
    assert sum(b.size if isinstance(b, Fold) else 1 for b in blocks) == len(diff.rows)
    assert diff.to_dict(start=0, stop=5)["blocks"] == [{"kind": "fold", "of": "same", "left": 0, "right": 0,
                                                        "count": 5}]


# --- a session against a trimmed view ----------------------------------------------------------------------------


@SETTINGS
@given(conversations, st.data())
def test_it_diffs_a_session_against_any_trimmed_view_of_it(messages: list[Message], data: st.DataObject) -> None:
    counts = count_messages(messages, "approx")
    name, params = data.draw(strategy_and_params(sum(counts) + 3))
    result = trim(messages, strategy_spec(name, params), counter="approx", token_counts=counts)

    diff = diff_trim(messages, result)

    check_rows(diff)
    assert {r.left for r in diff.rows if r.kind == "left_only"} == {d.index for d in result.dropped}
    assert {r.right for r in diff.rows if r.kind == "right_only"} == {x.position for x in result.inserted}
    reasons = {d.index: d.reason for d in result.dropped}
    assert all(r.note == reasons[r.left] for r in diff.rows if r.kind == "left_only")
    edited = {e.index: e.reason for e in result.edited}
    for row in diff.rows:
        if row.kind == "changed":  # only what the strategy says it edited goes out changed
            assert row.left in edited and row.note == edited[row.left]


def test_it_folds_a_long_run_dropped_for_one_reason() -> None:
    messages = [Message(role="user", content=f"q{i}") for i in range(30)]
    result = trim(messages, strategy_spec("openmanus_window", {"max_messages": 4}))

    blocks = diff_trim(messages, result).blocks(context=1)

    assert blocks[0] == Fold(0, None, 25, 0, "left_only", result.dropped[0].reason)
    assert blocks[1] == Row("left_only", 25, None, result.dropped[0].reason)
    assert blocks[2].kind == "same" and (blocks[2].left, blocks[2].right) == (26, 0)
    assert blocks[3] == Fold(27, 1, 3, 27, "same", "")  # the rest kept: identical on both sides


def test_it_shows_stripped_thoughts_as_edits_and_a_placeholder_as_inserted() -> None:
    messages = [
        Message(role="system", content="sys"),
        *[Message(role="user", content=f"q{i}") for i in range(6)],
        Message(role="assistant", content="a", reasoning="long thought"),
    ]

    stripped = diff_trim(messages, trim(messages, strategy_spec("strip_thoughts")))
    assert [r.kind for r in stripped.rows] == ["same"] * 7 + ["changed"]
    assert stripped.changes(stripped.rows[-1]).reasoning.segments == (("-", "long thought"),)

    windowed = diff_trim(messages, trim(messages, strategy_spec("head_and_tail", {"head_size": 1, "tail_size": 2})))
    kinds = [(r.kind, r.left, r.right) for r in windowed.rows]
    assert kinds[:3] == [("same", 0, 0), ("same", 1, 1), ("right_only", None, 2)]
    assert windowed.rows[2].note and "Skipped" in windowed.right[2].text


# --- cost --------------------------------------------------------------------------------------------------------


def long_history(n: int) -> list[Message]:
    out = [Message(role="system", content="You are a travel assistant.")]
    k = 0
    while len(out) < n:
        k += 1
        out.append(Message(role="user", content=f"Question {k}: weather in Paris?"))
        out.append(Message(role="assistant", tool_calls=[
            ToolCall(id=f"c{k}", function=FunctionCall(name="get_weather", arguments='{"city": "Paris"}'))]))
        out.append(Message(role="tool", tool_call_id=f"c{k}", content="18C, cloudy"))
        out.append(Message(role="assistant", content=f"Answer {k}: 18C."))
    return out[:n]


def test_it_spends_search_steps_on_the_edits_not_on_the_length() -> None:
    left = long_history(10_000)
    right = rerun(left)
    for k in (50, 2_000, 5_001, 9_000):
        right[k] = right[k].model_copy(update={"content": "reworded"}) if right[k].role != "tool" else right[k]
    del right[7_000]
    right.insert(3_000, Message(role="user", content="hurry up"))

    diff = diff_messages(left, right)

    check_rows(diff)
    assert diff.exact
    assert diff.counts()["same"] >= 9_990
    assert diff.steps < 1_000  # Myers runs only between the anchors around each edit


def test_it_bounds_the_work_on_two_unrelated_sessions_and_says_the_alignment_is_approximate() -> None:
    left = long_history(3_000)
    right = [m.model_copy(update={"content": f"other {i}"}) if m.role != "tool" else m
             for i, m in enumerate(reversed(rerun(left)))]

    diff = diff_messages(left, right, budget=20_000)

    check_rows(diff)
    assert not diff.exact
    assert diff.steps <= 20_000
