"""How much a replay and an aligned comparison cost, next to one plain preview of the same session.

    python bench/bench_replay.py [--messages 10000] [--repeat 3] [--json]

1. bench_chain's agent history of ``--messages`` messages with stored cl100k counts. Baseline: one plain
   preview, ``trim`` of the whole list (the lab's single strategy), for the strategy of each row. Then:
   - compare, four columns: four trims (buffered, head_and_tail, safe_token_budget, langchain_last) and
     ``compare_aligned`` over them, against one plain preview of safe_token_budget;
   - the replay of every strategy (every call of the run, and the next), against that strategy's preview.
2. Growth: the replay at a quarter, half and all of ``--messages``, in microseconds per message (flat when the
   replay is O(n) or O(n log n)), and the per-call reference (each call's input trimmed from scratch, what an
   obvious replay does) at 1,000 and 2,000 messages, which grows with the square.
"""
from __future__ import annotations

import argparse
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

from agents.memory.compare import compare_aligned  # noqa: E402
from agents.memory.replay import replay  # noqa: E402
from agents.memory.tokens import count_messages  # noqa: E402
from agents.memory.trimming import STRATEGIES, strategy_spec, trim  # noqa: E402
from bench_chain import build_history  # noqa: E402


def median_seconds(fn: Callable[[], Any], repeat: int) -> float:
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parameters(total_tokens: int) -> dict[str, dict[str, Any]]:
    budget = total_tokens // 10  # keeps about a tenth of the history, as bench_trimming
    return {
        "openmanus_window": {"max_messages": 100},
        "buffered": {"buffer_size": 40},
        "head_and_tail": {"head_size": 2, "tail_size": 40},
        "token_limited": {"token_limit": budget},
        "langchain_last": {"max_tokens": budget},
        "langchain_first": {"max_tokens": budget},
        "safe_window": {"max_messages": 100},
        "last_turns": {"max_turns": 8},
        "sk_truncation": {"target_count": 100, "threshold_count": 20},
        "llamaindex_buffer": {"token_limit": budget},
        "safe_token_budget": {"max_tokens": budget},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    history = build_history(args.messages)
    counts = count_messages(history, "cl100k")
    params = parameters(sum(counts) + 3)
    out: dict[str, Any] = {"messages": len(history), "calls": sum(m.role == "assistant" for m in history) + 1}

    def preview(name: str) -> Callable[[], Any]:
        spec = strategy_spec(name, params.get(name, {}))
        return lambda: trim(history, spec, counter="cl100k", token_counts=counts)

    columns = ["buffered", "head_and_tail", "safe_token_budget", "langchain_last"]

    specs = [strategy_spec(n, params[n]) for n in columns]

    def compare() -> Any:
        results = [trim(history, spec, counter="cl100k", token_counts=counts) for spec in specs]
        return compare_aligned(history, results)

    base = median_seconds(preview("safe_token_budget"), args.repeat)
    took = median_seconds(compare, args.repeat)
    out["compare"] = {"columns": columns, "preview_ms": base * 1000, "compare_ms": took * 1000,
                      "ratio": took / base, "items": compare().total_items}

    rows = []
    for name in STRATEGIES:
        p = params.get(name, {})
        base = median_seconds(preview(name), args.repeat)
        took = median_seconds(partial(replay, history, name, p, counter="cl100k", token_counts=counts), args.repeat)
        method = replay(history, name, p, counter="cl100k", token_counts=counts).method
        rows.append({"strategy": name, "method": method, "preview_ms": base * 1000, "replay_ms": took * 1000,
                     "ratio": took / base})
    out["replay"] = rows

    growth = []
    for name in ("buffered", "langchain_last", "safe_token_budget", "sk_truncation", "token_limited"):
        row: dict[str, Any] = {"strategy": name}
        for size in (args.messages // 4, args.messages // 2, args.messages):
            h = build_history(size)
            c = count_messages(h, "cl100k")
            p = parameters(sum(c) + 3).get(name, {})
            t = median_seconds(partial(replay, h, name, p, counter="cl100k", token_counts=c), args.repeat)
            row[f"us_per_message_{size}"] = t / size * 1e6
        for size in (1_000, 2_000):
            h = build_history(size)
            c = count_messages(h, "cl100k")
            p = parameters(sum(c) + 3).get(name, {})
            t = median_seconds(
                partial(replay, h, name, p, counter="cl100k", token_counts=c, incremental=False, work_limit=10**12), 1
            )
            row[f"per_call_ms_{size}"] = t * 1000
        growth.append(row)
    out["growth"] = growth

    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['messages']:,} messages, {out['calls']:,} calls")
    cmp = out["compare"]
    print(f"compare, 4 columns: {cmp['compare_ms']:.1f} ms against one preview {cmp['preview_ms']:.1f} ms "
          f"({cmp['ratio']:.1f} x), {cmp['items']} items on the page")
    print(f"{'strategy':20} {'method':18} {'preview':>10} {'replay':>10} {'ratio':>7}")
    for r in rows:
        print(
            f"{r['strategy']:20} {r['method']:18} {r['preview_ms']:8.1f}ms {r['replay_ms']:8.1f}ms {r['ratio']:6.1f}x"
        )
    for r in growth:
        print(r)


if __name__ == "__main__":
    main()
