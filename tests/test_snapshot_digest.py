"""The diff of two snapshots read from their digests (memory.snapshot_diff's ``snapshot_digest`` and
``diff_digests``) is the diff of their values (``diff_snapshots``) exactly, reading only what changed; no Django."""
from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.snapshot_diff import (
    Parts,
    Side,
    SnapshotDiff,
    diff_digests,
    diff_snapshots,
    digest_message_id,
    digest_usable,
    message_id,
    snapshot_digest,
)

LONG = "Answer the question using the retrieved documents below, and cite each one you use: "  # > 48 characters


def stored(value: Any) -> Any:
    """As the database gives it back."""
    return json.loads(json.dumps(value))


class Values:
    """A ``fetch`` over two values that counts what it was asked."""

    def __init__(self, left: Any, right: Any) -> None:
        self.sides = {"left": left, "right": right}
        self.calls = 0
        self.paths = 0

    def __call__(self, wanted: dict[Side, list[Parts]]) -> dict[Side, list[Any]]:
        self.calls += 1
        out: dict[Side, list[Any]] = {}
        for side, paths in wanted.items():
            self.paths += len(paths)
            found = []
            for parts in paths:
                node = self.sides[side]
                for part in parts:
                    node = node[part]  # a path the digest gave: it exists
                found.append(copy.deepcopy(node))
            out[side] = found
        return out


def outcome(diff: SnapshotDiff) -> tuple[Any, ...]:
    return diff.changes, diff.total, diff.counts, diff.exact, diff.steps


# --- values made at random: message lists of every shape the walk knows, changed as agents change them ---------------


def text(rng: random.Random) -> str:
    return rng.choice(["hi", "What is the weather?", "It is sunny.", "", LONG + "one", LONG + "two", LONG])


def message(rng: random.Random) -> Any:
    with_id = rng.random() < 0.5
    ident = f"m-{rng.randrange(12)}" if with_id else rng.choice([None, ""])
    shape = rng.randrange(5)
    flag = rng.choice([True, 1, 1.0, False, 0])
    if shape == 0:
        out: dict[str, Any] = {"role": rng.choice(["user", "assistant", "tool"]), "content": text(rng)}
        if rng.random() < 0.3:
            out["tool_calls"] = [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]
        if ident is not None:
            out["id"] = ident
        return out
    if shape == 1:
        return {"type": rng.choice(["human", "ai"]), "content": text(rng), "id": ident, "example": flag}
    if shape == 2:
        return [{"role": rng.choice(["user", "assistant"]), "content": text(rng), "id": ident or "x"},
                rng.choice([[], ["hint"], ["compressed"]])]
    if shape == 3:
        return {"__type__": "langchain_core.messages.ai.AIMessage", "content": text(rng), "id": ident,
                "usage": {"n": rng.choice([1, 1.0, 2])}}
    return {"type": "data", "data": {"content": [{"type": "text", "text": text(rng)}], "flag": flag}} \
        if rng.random() < 0.2 else {"type": "human", "content": [{"text": text(rng), "cache": flag}], "id": ident}


def messages(rng: random.Random, n: int | None = None) -> list[Any]:
    return [message(rng) for _ in range(rng.randrange(7) if n is None else n)]


def scalar(rng: random.Random) -> Any:
    return rng.choice([None, True, False, 0, 1, 1.0, 2.5, "a", "b", LONG])


def value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.3:
        return scalar(rng)
    if roll < 0.55:
        return messages(rng)
    if roll < 0.75:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {key: value(rng, depth + 1) for key in rng.sample(["a", "b", "memory", "key with space", "é"],
                                                            rng.randrange(1, 4))}


def changed(rng: random.Random, node: Any, depth: int = 0) -> Any:
    """``node`` (a copy) with a few of the changes agents make: messages edited, inserted, removed, swapped, their ids
    renamed, a flag written as a number; keys added and removed; a value of another type."""
    if rng.random() < 0.08:
        return value(rng, depth)
    if isinstance(node, dict):
        out = {key: changed(rng, item, depth + 1) if rng.random() < 0.6 else item for key, item in node.items()}
        if rng.random() < 0.2:
            out[rng.choice(["a", "new", "memory"])] = value(rng, depth + 1)
        if out and rng.random() < 0.15:
            out.pop(rng.choice(list(out)))
        return out
    if isinstance(node, list):
        out_list = list(node)
        for _ in range(rng.randrange(4)):
            roll = rng.random()
            if roll < 0.25 and out_list:
                k = rng.randrange(len(out_list))
                out_list[k] = changed(rng, out_list[k], depth + 1)
            elif roll < 0.45:
                out_list.insert(rng.randrange(len(out_list) + 1), message(rng) if rng.random() < 0.7 else scalar(rng))
            elif roll < 0.6 and out_list:
                del out_list[rng.randrange(len(out_list))]
            elif roll < 0.75 and len(out_list) > 1:
                i, j = rng.sample(range(len(out_list)), 2)
                out_list[i], out_list[j] = out_list[j], out_list[i]
            elif roll < 0.85 and out_list and isinstance(out_list[0], dict) and "id" in out_list[0]:
                out_list[0] = {**out_list[0], "id": f"renamed-{rng.randrange(3)}"}
            elif roll < 0.95:
                out_list = [flip(item) for item in out_list]
        return out_list
    return flip(node) if rng.random() < 0.5 else scalar(rng)


def flip(node: Any) -> Any:
    """What ``==`` does not tell apart, written otherwise: True as 1, 1 as 1.0."""
    if node is True:
        return 1
    if isinstance(node, bool):
        return node
    if isinstance(node, int):
        return float(node)
    if isinstance(node, dict):
        return {key: flip(item) for key, item in node.items()}
    if isinstance(node, list):
        return [flip(item) for item in node]
    return node


def pair(seed: int) -> tuple[Any, Any]:
    rng = random.Random(seed)
    left = value(rng)
    if not isinstance(left, (dict, list)):
        left = {"memory": messages(rng, rng.randrange(2, 9)), "step": 1}
    right = changed(rng, copy.deepcopy(left))
    return stored(left), stored(right)


def assert_same_diff(left: Any, right: Any, *, limit: int | None, budget: int) -> Values:
    expected = diff_snapshots(left, right, limit=limit, budget=budget)
    digests = stored(snapshot_digest(left)), stored(snapshot_digest(right))
    fetch = Values(left, right)
    got = diff_digests(*digests, fetch, limit=limit, budget=budget)
    assert outcome(got) == outcome(expected)
    assert [c.to_dict() for c in got.changes] == [c.to_dict() for c in expected.changes]
    return fetch


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), limit=st.sampled_from([None, 0, 1, 3, 200]),
       budget=st.sampled_from([250_000, 0, 2, 10]))
def test_the_diff_of_two_digests_is_the_diff_of_their_values(seed: int, limit: int | None, budget: int) -> None:
    left, right = pair(seed)
    assert_same_diff(left, right, limit=limit, budget=budget)
    assert_same_diff(right, left, limit=limit, budget=budget)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_digest_names_each_messages_id_as_the_value_does(seed: int) -> None:
    left, _ = pair(seed)
    digest = stored(snapshot_digest(left))

    def lists(node: Any, parts: Parts) -> Any:
        if isinstance(node, dict):
            for key, item in node.items():
                yield from lists(item, (*parts, key))
        elif isinstance(node, list):
            yield parts, node
            for k, item in enumerate(node):
                yield from lists(item, (*parts, k))

    for parts, items in lists(left, ()):
        for k in range(len(items) + 1):
            said = digest_message_id(digest, (*parts, k))
            if said is not None:
                assert said == (message_id(items[k]) if k < len(items) else "")


def long_thread(n: int, *, ids: bool) -> list[dict[str, Any]]:
    return [{"role": ("user", "assistant")[k % 2], "content": f"{LONG}{k}", "id": f"run-{k}" if ids else None,
             "meta": {"cached": k % 3 == 0}} for k in range(n)]


@pytest.mark.parametrize("ids", [True, False])
def test_only_what_changed_is_read_in_one_fetch(ids: bool) -> None:
    before = long_thread(2000, ids=ids)
    after = copy.deepcopy(before)
    after[1000]["content"] += " (edited)"
    after.insert(1500, {"role": "user", "content": "one more", "id": "new" if ids else None})
    del after[500]
    left, right = stored({"thread": "t", "memory": before, "step": 1}), stored(
        {"thread": "t", "memory": after, "step": 2})
    fetch = assert_same_diff(left, right, limit=200, budget=250_000)
    # The edited pair, the added and the removed message: one call for both sides (the values of the changes kept
    # are those already read).
    assert (fetch.calls, fetch.paths) == (1, 4)


def test_a_flag_written_as_a_number_is_no_change_yet_reads_the_messages_to_know_it() -> None:
    before = long_thread(50, ids=False)
    after = [{**m, "meta": {"cached": int(m["meta"]["cached"])}} for m in before]
    left, right = stored({"memory": before}), stored({"memory": after})
    assert diff_snapshots(left, right).identical
    fetch = assert_same_diff(left, right, limit=None, budget=250_000)
    assert fetch.calls == 1


def test_lists_whose_first_difference_is_two_long_keys_alike_read_those_two_to_orient_the_alignment() -> None:
    # No ids: the key is role and content; both contents start alike for longer than the digest keeps.
    before = [{"role": "user", "content": LONG + "a"}, {"role": "user", "content": LONG + "c"}]
    after = [{"role": "user", "content": LONG + "b"}, {"role": "user", "content": LONG + "a"}]
    for left, right in ((before, after), (after, before)):
        assert_same_diff(stored({"m": left}), stored({"m": right}), limit=None, budget=250_000)


def test_a_value_holding_the_markers_own_key_has_no_digest() -> None:
    assert snapshot_digest({"\u001fmemoryviz.messages": []}) is None
    assert digest_usable(snapshot_digest({"a": 1}))
    assert not digest_usable(None) and not digest_usable({"version": 0, "value": 1})
    with pytest.raises(ValueError):
        diff_digests(None, snapshot_digest({}), Values({}, {}))


def test_a_message_list_against_an_array_of_other_things_reads_both() -> None:
    left, right = stored({"m": long_thread(3, ids=True)}), stored({"m": [1, 2, 3, 4]})
    fetch = assert_same_diff(left, right, limit=None, budget=250_000)
    assert fetch.paths == 2
