"""How fast two LangGraph checkpoints are diffed, next to reading them.

    python bench/bench_snapshot_diff.py [--messages 10000] [--repeat 7] [--json]

Builds a thread of N LangChain messages (a user question, an AI message calling a tool with usage metadata, the
tool's result, an AI answer, in turn; each message with its id, as add_messages gives them) and two checkpoints of
it as LangGraph's SqliteSaver writes them: msgpack blobs, each message a pydantic ext value as JsonPlusSerializer
encodes it (module, class, model_dump), read back by the langgraph_checkpoints reader into the snapshot's value
(``{thread_id, checkpoint_ns, checkpoint, metadata, pending_writes}``, messages as ``{"__type__": ..., fields}``).
The later checkpoint differs by one message removed (at a quarter), one edited (its content, at half) and one
added (at three quarters), so both hold N messages, plus the step's bookkeeping (id, ts, versions, step).

Times, interleaved in each repetition (medians):

- ``json.loads both``: the baseline, parsing the two values from their JSON text (what a page reads from the
  database before any diff); and the same with the cyclic collector paused, as the diff runs (the collections
  that parsing sets off rescan the whole heap, which here holds every case's checkpoints);
- ``decode both blobs``: the reader's msgpack decoding of the two checkpoints (what an import does);
- ``json_changes``: the message diff's JSON diff (diff.json_changes), by JSON index: lists of equal length are
  compared item by item, so every message between the removed and the added one shows as changed;
- ``diff_snapshots``: the snapshot diff, messages aligned by id;
- ``diff + API JSON``: the same with the first 200 changes as the API gives them (values cut for display);
- ``diff, ids all new``: against a checkpoint whose every message has another id (nothing matches: the search
  budget runs out, the rest is matched greedily);
- ``diff, no ids``: both checkpoints with every message's id None (aligned on role, content and calls instead).

Prints each median and its ratios to the two ``json.loads`` baselines; then each case's cost per message at a
quarter, half and all of N.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.memory.diff import json_changes  # noqa: E402
from agents.memory.formats.langgraph_checkpoints import EXT_PYDANTIC_V2, decode_msgpack  # noqa: E402
from agents.memory.snapshot_diff import diff_snapshots  # noqa: E402

_CLASSES = {"human": ("langchain_core.messages.human", "HumanMessage"),
            "ai": ("langchain_core.messages.ai", "AIMessage"),
            "tool": ("langchain_core.messages.tool", "ToolMessage")}


def message(i: int) -> dict[str, Any]:
    """A message as ``model_dump()`` gives it (langchain-core 1.x fields)."""
    base = {"additional_kwargs": {}, "response_metadata": {}, "name": None, "id": f"run-{i:06d}"}
    kind = i % 4
    if kind == 0:
        return {**base, "content": f"Question {i}: what is the weather in city {i % 97}, and what should I pack?",
                "type": "human"}
    if kind == 1:
        return {**base, "content": "", "type": "ai", "response_metadata": {"model_name": "gpt-4o-mini",
                                                                          "finish_reason": "tool_calls"},
                "tool_calls": [{"name": "get_weather", "args": {"city": f"city {i % 97}"}, "id": f"call_{i}",
                                "type": "tool_call"}],
                "invalid_tool_calls": [], "usage_metadata": {"input_tokens": 120 + i % 50, "output_tokens": 18,
                                                             "total_tokens": 138 + i % 50}}
    if kind == 2:
        return {**base, "content": f"It is {i % 31}C and sunny in city {i % 97}.", "type": "tool",
                "name": "get_weather", "tool_call_id": f"call_{i - 1}", "artifact": None, "status": "success"}
    return {**base, "content": f"Answer {i}: sunny, {i % 31}C; pack light clothes and sunscreen. " * 2,
            "type": "ai", "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None}


def ext(dump: dict[str, Any]) -> msgpack.ExtType:
    module, name = _CLASSES[dump["type"]]
    return msgpack.ExtType(EXT_PYDANTIC_V2, msgpack.packb([module, name, dump, "model_validate_json"],
                                                          use_bin_type=True))


def checkpoint_blob(messages: list[dict[str, Any]], step: int) -> bytes:
    """A checkpoint as JsonPlusSerializer packs it (langgraph-checkpoint 3.x, v 4)."""
    version = f"{step + 2:032d}.0.{step / 7:.16f}"
    return msgpack.packb({
        "v": 4, "ts": f"2026-12-07T10:00:{step:02d}.000000+00:00", "id": f"1f1f10f5-19b6-6f44-{step:04d}-f85909d2296f",
        "channel_versions": {"__start__": version, "messages": version, "branch:to:agent": version},
        "versions_seen": {"__input__": {}, "__start__": {"__start__": version}, "agent": {"branch:to:agent": version}},
        "updated_channels": ["messages"],
        "channel_values": {"messages": [ext(m) for m in messages]},
    }, use_bin_type=True)


def snapshot_value(blob: bytes, step: int) -> dict[str, Any]:
    """The value the reader gives a SqliteSaver checkpoint."""
    return {"thread_id": "thread-big", "checkpoint_ns": "", "checkpoint": decode_msgpack(blob, "checkpoint"),
            "metadata": {"source": "loop", "step": step, "parents": {}}, "pending_writes": []}


def later(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    n = len(messages)
    out = [dict(m) for m in messages]
    out[n // 2]["content"] = out[n // 2]["content"] + " (edited)"
    out.insert(3 * n // 4, {**message(n), "id": f"run-{n:06d}", "content": "One more question, added."})
    del out[n // 4]
    return out


def messages_of(value: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = value["checkpoint"]["channel_values"]["messages"]
    return found


def cases(n: int) -> tuple[list[tuple[str, Callable[[], object]]], dict[str, Any]]:
    first = [message(i) for i in range(n)]
    second = later(first)
    blobs = [checkpoint_blob(first, 7), checkpoint_blob(second, 8)]
    left, right = snapshot_value(blobs[0], 7), snapshot_value(blobs[1], 8)
    texts = [json.dumps(left), json.dumps(right)]
    renamed = copy.deepcopy(right)
    for m in messages_of(renamed):
        m["id"] = "other-" + m["id"]
    left_no_ids, right_no_ids = copy.deepcopy(left), copy.deepcopy(right)
    for m in [*messages_of(left_no_ids), *messages_of(right_no_ids)]:
        m["id"] = None

    found = diff_snapshots(left, right)
    facts = {
        "json_mb": round(sum(len(t) for t in texts) / 2 / 1e6, 2),
        "messages": [len(messages_of(left)), len(messages_of(right))],
        "diff": {"total": found.total, "counts": found.counts, "exact": found.exact,
                 "message_changes": [(c.path, c.op) for c in found.changes if c.message_list]},
        "json_changes": len(json_changes(left, right)),
        "ids_all_new": diff_snapshots(left, renamed).counts,
        "no_ids": diff_snapshots(left_no_ids, right_no_ids).counts,
    }
    def loads_paused() -> list[Any]:
        gc.disable()
        try:
            return [json.loads(t) for t in texts]
        finally:
            gc.enable()

    return [
        ("json.loads both", lambda: [json.loads(t) for t in texts]),
        ("json.loads, gc paused", loads_paused),
        ("decode both blobs", lambda: [decode_msgpack(b, "checkpoint") for b in blobs]),
        ("json_changes", lambda: json_changes(left, right)),
        ("diff_snapshots", lambda: diff_snapshots(left, right)),
        ("diff + API JSON", lambda: diff_snapshots(left, right, limit=200).to_dict()),
        ("diff, ids all new", lambda: diff_snapshots(left, renamed)),
        ("diff, no ids", lambda: diff_snapshots(left_no_ids, right_no_ids)),
    ], facts


def run(n: int, repeat: int) -> tuple[dict[str, float], dict[str, Any]]:
    timed, facts = cases(n)
    times: dict[str, list[float]] = {name: [] for name, _ in timed}
    # Interleave the cases in each repetition so a noisy neighbour slows them all alike.
    for _ in range(repeat):
        for name, fn in timed:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    result, facts = run(args.messages, args.repeat)
    scaling = {size: run(size, args.repeat)[0] for size in (args.messages // 4, args.messages // 2)}
    scaling[args.messages] = result
    if args.json:
        print(json.dumps({"messages": args.messages, "repeat": args.repeat, **facts, "median_seconds": result,
                          "scaling": scaling}, indent=2))
        return
    base = result["json.loads both"]
    print(f"two checkpoints of {args.messages:,} messages ({facts['json_mb']} MB of JSON each), median of "
          f"{args.repeat}")
    print(f"diff_snapshots: {facts['diff']}")
    print(f"json_changes: {facts['json_changes']} changes; ids all new: {facts['ids_all_new']}; "
          f"no ids: {facts['no_ids']}")
    paused = result["json.loads, gc paused"]
    print(f"{'':22} {'median':>10} {'x json.loads':>13} {'x paused':>9}")
    for name, seconds in result.items():
        print(f"{name:22} {seconds * 1000:8.1f}ms {seconds / base:12.2f}x {seconds / paused:8.2f}x")
    print("\nlinearity: microseconds per message of one checkpoint")
    print(f"{'':22} " + " ".join(f"{size:>10,}" for size in sorted(scaling)))
    for name in result:
        print(f"{name:22} " + " ".join(f"{scaling[size][name] / size * 1e6:10.2f}" for size in sorted(scaling)))


if __name__ == "__main__":
    main()
