"""How fast two runs are diffed, next to reading both of them.

    python bench/bench_diff.py [--messages 10000] [--edits 10] [--repeat 5] [--json]

Builds bench_chain's agent history of N messages as run 1, and run 2 as the same task run again: every call id
renamed (two runs never share ids) and ``--edits`` edits spread over it (a message removed, a user message inserted,
an answer reworded, a call's arguments changed, in turn). Both are written as OpenAI chat JSON. Then times, side by
side in each repetition:

- ``read both``: parsing both files into messages (``formats.read_data``), the baseline: a diff has to read both;
- ``diff_messages``: the alignment, each pair identical or changed;
- ``diff + page``: the alignment, the differences of every changed pair, and the rows folded (what a page of the
  whole diff costs);
- ``diff, same task renamed``: run 1 against itself with renamed ids (no edit);
- ``diff_trim``: run 1 against its ``safe_token_budget`` trim to a tenth of its tokens (the trim itself not timed);
- ``diff, unrelated runs``: run 1 against an unrelated session of the same length (every text reworded, exchanges
  reversed): the worst case, where the search budget runs out and the rest is matched greedily.

Prints each median and its ratio to ``read both``; then the diff's cost per message at a quarter, half and all of N.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agents.memory.diff import Fold, diff_messages, diff_trim  # noqa: E402
from agents.memory.formats import read_data  # noqa: E402
from agents.memory.schema import FunctionCall, Message  # noqa: E402
from agents.memory.tokens import count_messages  # noqa: E402
from agents.memory.trimming import strategy_spec, trim  # noqa: E402
from bench_chain import build_history  # noqa: E402


def renamed(messages: list[Message], tag: str) -> list[Message]:
    out = []
    for m in messages:
        update: dict[str, Any] = {}
        if m.tool_calls:
            update["tool_calls"] = [c.model_copy(update={"id": tag + c.id}) for c in m.tool_calls]
        if m.tool_call_id:
            update["tool_call_id"] = tag + m.tool_call_id
        out.append(m.model_copy(update=update))
    return out


def second_run(messages: list[Message], edits: int) -> list[Message]:
    out = renamed(messages, "run2_")
    for e in range(edits):
        k = (e + 1) * len(out) // (edits + 1)
        kind = e % 4
        if kind == 0:
            del out[k]
        elif kind == 1:
            out.insert(k, Message(role="user", content=f"Also, edit {e}: what about Lyon?"))
        elif kind == 2:
            while out[k].role != "assistant" or out[k].tool_calls:
                k += 1
            out[k] = out[k].model_copy(update={"content": out[k].text.replace("Paris", "Lyon") + " (checked)"})
        else:
            while not out[k].tool_calls:
                k += 1
            call = out[k].tool_calls[0]
            args = FunctionCall(name=call.function.name, arguments='{"city": "Lyon", "units": "C"}')
            out[k] = out[k].model_copy(update={"tool_calls": [call.model_copy(update={"function": args})]})
    return out


def unrelated(messages: list[Message]) -> list[Message]:
    out = [m.model_copy(update={"content": f"Other run {i}: {m.text[::-1]}"}) if m.role != "tool" else m
           for i, m in enumerate(messages)]
    return renamed(out[::-1], "other_")


def page(left: list[Message], right: list[Message]) -> int:
    diff = diff_messages(left, right)
    for row in diff.rows:
        if row.kind == "changed":
            diff.changes(row)
    return sum(1 for b in diff.blocks() if not isinstance(b, Fold))


def cases(n: int, edits: int) -> tuple[list[tuple[str, Callable[[], object]]], dict[str, Any]]:
    run1 = build_history(n)
    run2 = second_run(run1, edits)
    files = [json.dumps([m.to_openai() for m in run]) for run in (run1, run2)]
    other = unrelated(run1)
    renamed_run1 = renamed(run1, "again_")
    counts = count_messages(run1, "cl100k")
    trimmed = trim(run1, strategy_spec("safe_token_budget", {"max_tokens": sum(counts) // 10}), token_counts=counts)

    def read_both() -> None:
        for text in files:
            read_data(json.loads(text), "openai")

    found = diff_messages(run1, run2)
    worst = diff_messages(run1, other)
    facts = {"counts": found.counts(), "steps": found.steps, "exact": found.exact,
             "unrelated": {"counts": worst.counts(), "steps": worst.steps, "exact": worst.exact},
             "trim": diff_trim(run1, trimmed).counts()}
    return [
        ("read both", read_both),
        ("diff_messages", lambda: diff_messages(run1, run2)),
        ("diff + page", lambda: page(run1, run2)),
        ("diff, same task renamed", lambda: diff_messages(run1, renamed_run1)),
        ("diff_trim", lambda: diff_trim(run1, trimmed)),
        ("diff, unrelated runs", lambda: diff_messages(run1, other)),
    ], facts


def run(n: int, edits: int, repeat: int) -> tuple[dict[str, float], dict[str, Any]]:
    timed, facts = cases(n, edits)
    times: dict[str, list[float]] = {name: [] for name, _ in timed}
    # Interleave the cases in each repetition so a noisy neighbour slows them all alike.
    for _ in range(repeat):
        for name, fn in timed:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    result, facts = run(args.messages, args.edits, args.repeat)
    scaling = {size: run(size, args.edits, args.repeat)[0] for size in (args.messages // 4, args.messages // 2)}
    scaling[args.messages] = result
    if args.json:
        print(json.dumps({"messages": args.messages, "edits": args.edits, "repeat": args.repeat, **facts,
                          "median_seconds": result, "scaling": scaling}, indent=2))
        return
    base = result["read both"]
    print(f"two runs of {args.messages:,} messages, {args.edits} edits apart, median of {args.repeat}")
    print(f"diff: {facts['counts']}, {facts['steps']} search steps, exact={facts['exact']}")
    print(f"unrelated: {facts['unrelated']}")
    print(f"trim: {facts['trim']}")
    print(f"{'':28} {'median':>10} {'x read both':>12}")
    for name, seconds in result.items():
        print(f"{name:28} {seconds * 1000:8.1f}ms {seconds / base:11.2f}x")
    print("\nlinearity: microseconds per message of one run")
    print(f"{'':28} " + " ".join(f"{size:>10,}" for size in sorted(scaling)))
    for name in result:
        print(f"{name:28} " + " ".join(f"{scaling[size][name] / size * 1e6:10.2f}" for size in sorted(scaling)))


if __name__ == "__main__":
    main()
