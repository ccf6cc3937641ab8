"""How fast the ``o200k`` counter is, next to ``cl100k`` on the same input.

    python bench/bench_tokens.py [--messages 10000] [--repeat 5] [--json]

Two histories of ``--messages`` messages each, counted per message with ``count_messages`` (what an import does
for every message) by ``cl100k`` and by ``o200k``, the two interleaved in every repetition so a noisy neighbour
slows both alike:

- ``agent``: bench_chain's agent history (short questions, tool calls with small JSON arguments, short results);
- ``mixed``: longer texts in turn English prose, Japanese and Chinese, emoji, Python code and a JSON tool result
  of about forty records, each made distinct by its number.

Prints the median of the repetitions, the ratio o200k ÷ cl100k, and the tokens each counts; then each encoding's
first load (reading and checking its ranks file), in a fresh process, median of three.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agents.memory.schema import FunctionCall, Message, ToolCall  # noqa: E402
from agents.memory.tokens import count_messages  # noqa: E402
from bench_chain import build_history  # noqa: E402

COUNTERS = ("cl100k", "o200k")
TEXTS = (
    "Could you compare the weather in Paris and Tokyo for trip {k}, and tell me which city is warmer in May?",
    "東京の天気は晴れです。明日は雨が降るでしょう。旅行{k}日目：北京今天多云，气温十八度，适合散步。",
    "Ça marche 🙂👍🏽 trip {k} booked ✈️ 🇫🇷→🇯🇵, see you there 👨‍👩‍👧‍👦!",
    "def forecast_{k}(city: str) -> float:\n    data = fetch(city)\n"
    "    return sum(d['temp_c'] for d in data) / len(data)\n",
)


def build_mixed(n: int) -> list[Message]:
    messages: list[Message] = [Message(role="system", content="You are a travel assistant. Use the tools.")]
    k = 0
    while len(messages) < n:
        k += 1
        messages.append(Message(role="user", content=TEXTS[k % len(TEXTS)].format(k=k)))
        call = ToolCall(id=f"call_{k}", function=FunctionCall(name="get_forecast", arguments=json.dumps(
            {"city": "Zürich", "days": k % 7 + 1, "units": "metric"})))
        messages.append(Message(role="assistant", tool_calls=[call]))
        records = [{"day": d, "city": "Zürich", "temp_c": 12.5 + (k + d) % 9, "sky": "☀️ clear"} for d in range(40)]
        messages.append(Message(role="tool", tool_call_id=call.id, content=json.dumps({"trip": k, "days": records},
                                                                                      ensure_ascii=False)))
        messages.append(Message(role="assistant", content=TEXTS[(k + 1) % len(TEXTS)].format(k=k)))
    return messages[:n]


def run(messages: list[Message], repeat: int) -> dict[str, float]:
    for counter in COUNTERS:
        count_messages(messages[:10], counter)  # load the encoding before measuring
    times: dict[str, list[float]] = {counter: [] for counter in COUNTERS}
    for _ in range(repeat):
        for counter in COUNTERS:
            start = time.perf_counter()
            count_messages(messages, counter)
            times[counter].append(time.perf_counter() - start)
    return {counter: statistics.median(values) for counter, values in times.items()}


def first_load_seconds(counter: str) -> float:
    code = (
        "import time, tiktoken; from agents.memory import tokens; start = time.perf_counter(); "
        f"tokens.{counter}_encoding(); print(time.perf_counter() - start)"
    )
    runs = [float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout) for _ in range(3)]
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    results = {}
    for name, history in (("agent", build_history(args.messages)), ("mixed", build_mixed(args.messages))):
        seconds = run(history, args.repeat)
        totals = {counter: sum(count_messages(history, counter)) for counter in COUNTERS}
        results[name] = {"median_seconds": seconds, "tokens": totals}
    loads = {counter: first_load_seconds(counter) for counter in COUNTERS}
    if args.json:
        print(json.dumps({"messages": args.messages, "repeat": args.repeat, "inputs": results,
                          "first_load_seconds": loads}, indent=2))
        return
    print(f"{args.messages:,} messages per input, median of {args.repeat}")
    print(f"{'input':8} {'counter':8} {'median':>10} {'o200k ÷ cl100k':>15} {'tokens':>12} {'tokens/s':>12}")
    for name, result in results.items():
        seconds, totals = result["median_seconds"], result["tokens"]
        for counter in COUNTERS:
            ratio = f"{seconds[counter] / seconds['cl100k']:14.2f}x" if counter == "o200k" else ""
            print(f"{name:8} {counter:8} {seconds[counter] * 1000:8.1f}ms {ratio:>15} {totals[counter]:12,} "
                  f"{totals[counter] / seconds[counter]:12,.0f}")
    print("first load (fresh process, median of 3): " + ", ".join(f"{c} {s:.2f} s" for c, s in loads.items()))


if __name__ == "__main__":
    main()
