"""How fast grouping and the protocol checks are, next to a plain pass that only reads each message.

    python bench/bench_chain.py [--messages 100000] [--repeat 7] [--json]

Builds an agent history of N messages (user questions, assistant messages with one to three parallel calls,
their results, answers; in every fifty exchanges one misses a result, one is followed by an orphan result, one
is interrupted and answered late), then times, in this process, side by side, each repetition in the same order:

- ``plain pass``: ``for m in messages: m.role, m.tool_calls`` (the floor: touching every message once);
- ``group_blocks`` and ``group_turns``;
- ``find_violations`` with the openai and the anthropic profile;
- ``ProtocolChecker.feed`` one message at a time (what a streaming import does).

Prints the median of the repetitions and its ratio to the plain pass's median; then the same at a quarter and half
of N, per message, to show the cost stays linear.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.memory.chain import ProtocolChecker, find_violations, group_blocks, group_turns  # noqa: E402
from agents.memory.schema import FunctionCall, Message, ToolCall  # noqa: E402


def build_history(n: int) -> list[Message]:
    """A deterministic agent history of exactly ``n`` messages."""
    messages: list[Message] = [Message(role="system", content="You are a travel assistant. Use the tools.")]
    k = 0
    while len(messages) < n:
        k += 1
        messages.append(Message(role="user", content=f"Question {k}: weather in Paris and Tokyo?"))
        calls = [
            ToolCall(id=f"call_{k}_{j}", function=FunctionCall(name="get_weather", arguments=f'{{"city": "c{j}"}}'))
            for j in range(1 + k % 3)
        ]
        messages.append(Message(role="assistant", content=None, tool_calls=calls))
        defect = k % 50
        for j, call in enumerate(calls):
            if defect == 7 and j == 0:
                continue  # a missing result
            messages.append(Message(role="tool", tool_call_id=call.id, content=f"{18 + j}C, cloudy"))
        if defect == 13:
            messages.append(Message(role="tool", tool_call_id=f"gone_{k}", content="orphan"))
        if defect == 29:
            messages.append(Message(role="user", content="hurry up"))  # interrupts: the late result follows
            messages.append(Message(role="tool", tool_call_id=calls[0].id, content="late"))
        messages.append(Message(role="assistant", content=f"Answer {k}: Paris 18C, Tokyo 24C."))
    return messages[:n]


def plain_pass(messages: list[Message]) -> None:
    for m in messages:
        m.role, m.tool_calls  # noqa: B018 - reading each message is the point


def streamed(messages: list[Message]) -> None:
    checker = ProtocolChecker()
    feed = checker.feed
    for m in messages:
        feed(m)
    checker.finish()


def median_seconds(fn: Callable[[list[Message]], object], messages: list[Message], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(messages)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


CASES: list[tuple[str, Callable[[list[Message]], object]]] = [
    ("plain pass", plain_pass),
    ("group_blocks", group_blocks),
    ("group_turns", group_turns),
    ("find_violations openai", lambda ms: find_violations(ms, "openai")),
    ("find_violations anthropic", lambda ms: find_violations(ms, "anthropic")),
    ("ProtocolChecker.feed (streaming)", streamed),
]


def run(n: int, repeat: int) -> dict[str, float]:
    messages = build_history(n)
    times: dict[str, list[float]] = {name: [] for name, _ in CASES}
    # Interleave the cases in each repetition so a noisy neighbour slows them all alike.
    for _ in range(repeat):
        for name, fn in CASES:
            times[name].append(median_seconds(fn, messages, 1))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    history = build_history(args.messages)
    violations = find_violations(history)
    result = run(args.messages, args.repeat)
    scaling = {size: run(size, args.repeat) for size in (args.messages // 4, args.messages // 2)}
    scaling[args.messages] = result
    if args.json:
        print(json.dumps({"messages": args.messages, "repeat": args.repeat, "violations": len(violations),
                          "median_seconds": result, "scaling": scaling}, indent=2))
        return
    base = result["plain pass"]
    print(f"{args.messages:,} messages ({len(violations)} violations found), median of {args.repeat}")
    print(f"{'':34} {'median':>10} {'x plain pass':>13}")
    for name, seconds in result.items():
        print(f"{name:34} {seconds * 1000:8.1f}ms {seconds / base:12.1f}x")
    print("\nlinearity: microseconds per message")
    print(f"{'':34} " + " ".join(f"{size:>10,}" for size in sorted(scaling)))
    for name, _ in CASES:
        print(f"{name:34} " + " ".join(f"{scaling[size][name] / size * 1e6:10.3f}" for size in sorted(scaling)))


if __name__ == "__main__":
    main()
