"""How fast memoryviz's trimming is, next to the real libraries, and that it stays linear.

    python bench/bench_trimming.py [--messages 10000] [--scale 100000] [--repeat 3] [--json]

1. The same ``--messages`` history (bench_chain's agent history) and the same stored cl100k counts go through our
   ``token_limited``, ``langchain_last`` and ``safe_token_budget`` and through autogen-core 0.7.5's
   ``TokenLimitedChatCompletionContext.get_messages()`` (its model client counts with our stored counts) and
   langchain-core 1.8.3's ``trim_messages(strategy="last")`` (a list counter over the same counts). The budget
   keeps about a tenth of the history, so AutoGen pops most of it. Our side is the whole ``trim`` call: the
   result with every drop explained and the violations of the trimmed list. Before timing, the kept messages
   are checked to be identical. Prints the median of the repetitions and the ratio library / ours.
2. Every strategy on a ``--scale`` history, and at a quarter and half of it, per message: the cost per message
   stays flat when a strategy is O(n) or O(n log n).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from autogen_core.model_context import TokenLimitedChatCompletionContext  # noqa: E402
from langchain_core.messages import trim_messages  # noqa: E402

from agents.memory.tokens import count_messages  # noqa: E402
from agents.memory.trimming import STRATEGIES, strategy_spec, trim  # noqa: E402
from bench_chain import build_history  # noqa: E402
from tests.test_trimming_reference import CountingClient, to_autogen, to_langchain  # noqa: E402

PER_LIST = 3  # cl100k's reply priming


def median_seconds(fn: Callable[[], Any], repeat: int) -> float:
    # Building a big history leaves the collector a full collection to do (0.5 s at 100,000 messages); do it
    # now, so it is not billed to whichever call happens to trigger it.
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compare(n: int, repeat: int) -> dict[str, Any]:
    history = build_history(n)
    counts = count_messages(history, "cl100k")  # what session_store keeps per message
    budget = (sum(counts) + PER_LIST) // 10

    stored, where = to_autogen(history, 0)
    tokens = {key: sum(counts[i] for i in idx) for key, idx in where.items()}
    context = TokenLimitedChatCompletionContext(CountingClient(tokens, PER_LIST), token_limit=budget,
                                                initial_messages=stored)
    lc_messages = to_langchain(history, 0)

    def lc_counter(batch):  # a list counter: LangChain passes lists to it
        return sum(counts[int(m.id)] for m in batch) + PER_LIST

    def autogen() -> list[Any]:
        return asyncio.run(context.get_messages())

    def langchain() -> list[Any]:
        return trim_messages(lc_messages, max_tokens=budget, token_counter=lc_counter, strategy="last")

    def ours(name: str, key: str) -> Callable[[], Any]:
        spec = strategy_spec(name, {key: budget, "pin_system": False})  # read once, as an interface does
        return lambda: trim(history, spec, counter="cl100k", token_counts=counts)

    # Same output first: a fast wrong answer is worth nothing.
    ag_kept = [i for m in autogen() for i in where[id(m)]]
    assert ours("token_limited", "token_limit")().kept == ag_kept
    assert ours("langchain_last", "max_tokens")().kept == [int(m.id) for m in langchain()]

    timings = {
        "autogen TokenLimitedChatCompletionContext": median_seconds(autogen, repeat),
        "langchain trim_messages last": median_seconds(langchain, repeat),
        "ours token_limited": median_seconds(ours("token_limited", "token_limit"), repeat),
        "ours langchain_last": median_seconds(ours("langchain_last", "max_tokens"), repeat),
        "ours safe_token_budget": median_seconds(ours("safe_token_budget", "max_tokens"), repeat),
    }
    ag, lc = timings["autogen TokenLimitedChatCompletionContext"], timings["langchain trim_messages last"]
    ratios = {
        "autogen / ours token_limited": ag / timings["ours token_limited"],
        "autogen / ours safe_token_budget": ag / timings["ours safe_token_budget"],
        "langchain / ours langchain_last": lc / timings["ours langchain_last"],
        "langchain / ours safe_token_budget": lc / timings["ours safe_token_budget"],
    }
    return {"messages": n, "tokens": sum(counts) + PER_LIST, "budget": budget, "kept_by_autogen": len(ag_kept),
            "seconds": timings, "ratios": ratios}


def scale_params(name: str, total_tokens: int, n: int) -> dict[str, Any]:
    budget = max(1, total_tokens // 10)
    return {
        "openmanus_window": {"max_messages": n // 10},
        "buffered": {"buffer_size": n // 10},
        "head_and_tail": {"head_size": n // 20, "tail_size": n // 20},
        "token_limited": {"token_limit": budget},
        "langchain_last": {"max_tokens": budget, "start_on": ["human", "ai"]},
        "langchain_first": {"max_tokens": budget, "end_on": "ai"},
        "safe_window": {"max_messages": n // 10},
        "last_turns": {"max_turns": n // 50},
        "sk_truncation": {"target_count": n // 10, "threshold_count": 5},
        "llamaindex_buffer": {"token_limit": budget // 2},
        "safe_token_budget": {"max_tokens": budget},
        # 2026's frameworks: parameters that make each one act (their defaults often do nothing at this size).
        "langchain_summarization": {"trigger_tokens": budget, "keep_tokens": budget // 2},
        "langchain_clear_tool_uses": {"trigger": budget, "clear_at_least": budget},
        "openai_session_limit": {"limit": n // 10},
        "openai_tool_output_trimmer": {"max_output_chars": 20, "preview_chars": 10},
        "anthropic_clear_tool_uses": {"trigger_input_tokens": budget, "clear_tool_inputs": True},
        "strands_sliding_window": {"window_size": n // 10},
        "strands_summarizing": {"preserve_recent_messages": n // 10},
        "maf_truncation": {"max_n": n // 5, "compact_to": n // 10},
        "maf_summarization": {"target_count": n // 10},
        "adk_compaction": {"compaction_interval": 3, "overlap_size": 1},
    }.get(name, {})


def scale(n: int, repeat: int) -> dict[str, Any]:
    sizes = [n // 4, n // 2, n]
    histories = {size: build_history(size) for size in sizes}
    counts = {size: count_messages(h, "cl100k") for size, h in histories.items()}
    rows: dict[str, Any] = {}
    for name in STRATEGIES:
        per_message = {}
        for size in sizes:
            spec = strategy_spec(name, scale_params(name, sum(counts[size]) + PER_LIST, size))
            seconds = median_seconds(
                partial(trim, histories[size], spec, counter="cl100k", token_counts=counts[size]), repeat
            )
            per_message[size] = seconds / size * 1e6
        rows[name] = {"microseconds_per_message": per_message, "seconds_at_full": per_message[n] * n / 1e6}
    return {"sizes": sizes, "strategies": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    report = {"compare": compare(args.messages, args.repeat), "scale": scale(args.scale, args.repeat)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    c = report["compare"]
    print(f"{c['messages']:,} messages, {c['tokens']:,} cl100k tokens, budget {c['budget']:,} "
          f"(AutoGen keeps {c['kept_by_autogen']:,} messages); median of {args.repeat}")
    for label, seconds in c["seconds"].items():
        print(f"  {label:45s} {seconds * 1000:10.1f} ms")
    for label, ratio in c["ratios"].items():
        print(f"  {label:45s} {ratio:10.1f}x")
    s = report["scale"]
    print(f"\nevery strategy, microseconds per message at {', '.join(f'{x:,}' for x in s['sizes'])} messages")
    for name, row in s["strategies"].items():
        cells = "  ".join(f"{row['microseconds_per_message'][size]:7.2f}" for size in s["sizes"])
        print(f"  {name:20s} {cells}   ({row['seconds_at_full']:.2f} s at {s['sizes'][-1]:,})")


if __name__ == "__main__":
    main()
