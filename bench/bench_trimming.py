"""How fast memoryviz's trimming is, next to the frameworks it emulates, and that it stays linear.

    python bench/bench_trimming.py [--messages 10000 [100000 ...]] [--strategies NAME ...] [--scale 100000]
                                   [--repeat 3] [--json]
    python bench/bench_trimming.py --messages 10000 --scale 0 --repeat 5    # every strategy against its framework

1. Every strategy that has a framework to run, against that framework, on the same ``--messages`` history
   (bench_chain's agent history), side by side; the ratio printed is ours / theirs (below 1: ours is faster).
   - In this virtualenv: autogen-core 0.7.5's model contexts (``unbounded``, ``buffered``, ``head_and_tail``,
     ``token_limited``: ``get_messages()``, its model client counting with our stored cl100k counts) and
     langchain-core 1.8.3's ``trim_messages`` (``langchain_last``, ``langchain_first``: a list counter over the
     same counts). ``safe_token_budget``, memoryviz's own, is set beside AutoGen's and LangChain's token budgets.
   - In ``.venv-ref-2026`` (the 2026 frameworks: LangChain middleware, OpenAI Agents SDK, Strands, Microsoft
     Agent Framework, Google ADK): the exactness tests' reference oracle (tests/reference/oracle_2026.py, run by
     tests/reference/harness.py's ``oracle``) in one subprocess, each case with ``"repeat"``: the oracle times
     the library's trim alone, on inputs converted to the library's types before each timer, and returns the
     median. Both sides count with memoryviz's approx counter, each message counted once before the timer
     (ours: stored counts; the library's counter: a message it made while trimming is counted when it asks).
   Parameters: those of the scale run below, which make each strategy act. Before the figures are believed, the
   outputs are checked to be the same (the exactness tests' comparison). Our side is the whole ``trim`` call:
   the trimmed list (what the framework returns) and the drops as runs; the rest of the result (the violations
   of the trimmed list, the kept indices, reasons, sources, token figures, notes) is made when first read, and
   the column "+ all read" is ``trim`` with every part read (``read_all``; before those parts were made when
   read, only the violations were, and the column was "+ violations"). Neither side includes process start-up
   or the conversion of the input. Each side holds the history as it does in use: AutoGen its list of messages
   (a call's results grouped into one message when they are added), LangChain and the others their lists, and
   memoryviz a stored session as the store reads it (``store.outlines._outlines``): a ``Grouped`` tuple, whose roles
   are read and units found once when the session is read (what AutoGen does when messages are added), and a
   tuple of counts; ``trim`` shares both instead of copying them. Times are CPU time of the process
   (``time.process_time``): the machine is shared.
   ``--strategies`` compares only those (some frameworks are quadratic: Microsoft Agent Framework's tool result
   compaction takes over three minutes at 10,000 messages).
2. Every strategy on a ``--scale`` history, and at a quarter and half of it, per message: the cost per message
   stays flat when a strategy is O(n) or O(n log n). ``--scale 0`` skips it.
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

from autogen_core.model_context import (  # noqa: E402
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from langchain_core.messages import trim_messages  # noqa: E402

from agents.memory.tokens import count_messages  # noqa: E402
from agents.memory.trimming import STRATEGIES, strategy_spec, trim  # noqa: E402
from agents.memory.trimming.catalog import strategy_entry  # noqa: E402
from agents.memory.trimming.registry import LATER_FIELDS  # noqa: E402
from agents.memory.trimming.tool_runs import Grouped  # noqa: E402
from bench_chain import build_history  # noqa: E402
from tests.reference.harness import case, mismatch, oracle  # noqa: E402
from tests.test_trimming_reference import CountingClient, to_autogen, to_langchain  # noqa: E402

PER_LIST = 3  # cl100k's reply priming
# The strategies with a framework in this virtualenv (autogen-core, langchain-core).
HERE = ["unbounded", "buffered", "head_and_tail", "token_limited", "langchain_last", "langchain_first"]
# The strategies the 2026 reference oracle runs (tests/reference/oracle_2026.py's ORACLES, "prompts" aside).
REF_2026 = [
    "langchain_summarization", "langchain_clear_tool_uses", "openai_session_limit", "openai_tool_output_trimmer",
    "strands_sliding_window", "strands_summarizing", "maf_sliding_window", "maf_truncation",
    "maf_selective_tool_calls", "maf_tool_result_compaction", "maf_summarization", "adk_compaction",
]


def median_seconds(fn: Callable[[], Any], repeat: int) -> float:
    """The median CPU time of the process over ``repeat`` calls (``time.process_time``: the machine is shared,
    and time spent waiting for a core is not the code's; the reference oracle times the frameworks likewise)."""
    # Building a big history leaves the collector a full collection to do (0.5 s at 100,000 messages); do it
    # now, so it is not billed to whichever call happens to trigger it.
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def read_all(result: Any) -> None:
    """Read every part of a result that ``trim`` leaves to be made when first read: the violations, and the kept
    indices, reasons, sources, inserts, token figures and notes (registry.LATER_FIELDS)."""
    len(result.violations)
    for name in LATER_FIELDS:
        getattr(result, name)


def row(strategy: str, framework: str, theirs: float, ours: Callable[[], Any], repeat: int) -> dict[str, Any]:
    """Our ``trim`` timed alone and with every part of its result read, against the framework's ``theirs``."""
    alone = median_seconds(ours, repeat)
    checked = median_seconds(lambda: read_all(ours()), repeat)
    return {"strategy": strategy, "framework": framework, "theirs": theirs, "ours": alone, "ratio": alone / theirs,
            "ours_checked": checked, "ratio_checked": checked / theirs}


def compare_here(n: int, repeat: int, only: set[str]) -> list[dict[str, Any]]:
    """autogen-core and langchain-core, in this virtualenv, with stored cl100k counts."""
    history = build_history(n)
    counts = count_messages(history, "cl100k")  # what session_store keeps per message
    budget = (sum(counts) + PER_LIST) // 10

    stored, where = to_autogen(history, 0)
    tokens = {key: sum(counts[i] for i in idx) for key, idx in where.items()}
    contexts = {
        "unbounded": UnboundedChatCompletionContext(stored),
        "buffered": BufferedChatCompletionContext(n // 10, stored),
        "head_and_tail": HeadAndTailChatCompletionContext(n // 20, n // 20, stored),
        "token_limited": TokenLimitedChatCompletionContext(CountingClient(tokens, PER_LIST), token_limit=budget,
                                                           initial_messages=stored),
    }
    params = {
        "unbounded": {}, "buffered": {"buffer_size": n // 10},
        "head_and_tail": {"head_size": n // 20, "tail_size": n // 20},
        "token_limited": {"token_limit": budget}, "langchain_last": {"max_tokens": budget},
        "langchain_first": {"max_tokens": budget}, "safe_token_budget": {"max_tokens": budget},
    }
    lc_messages = to_langchain(history, 0)

    def lc_counter(batch):  # a list counter: LangChain passes lists to it
        return sum(counts[int(m.id)] for m in batch) + PER_LIST

    def theirs(name: str) -> Callable[[], list[int]]:
        if name in contexts:
            context = contexts[name]
            return lambda: asyncio.run(context.get_messages())
        strategy = name.removeprefix("langchain_")
        return lambda: trim_messages(lc_messages, max_tokens=budget, token_counter=lc_counter, strategy=strategy)

    def kept_by(name: str) -> list[int]:
        out = theirs(name)()
        if name in contexts:  # AutoGen's head-and-tail placeholder is no stored message
            return [i for m in out if id(m) in where for i in where[id(m)]]
        return [int(m.id) for m in out]

    held, held_counts = Grouped(history), tuple(counts)  # as the store holds a stored session (below)

    def ours(name: str) -> Callable[[], Any]:
        spec = strategy_spec(name, {**params[name], "pin_system": False})  # read once, as an interface does
        return lambda: trim(held, spec, counter="cl100k", token_counts=held_counts)

    rows = []
    for name, library in (*((k, "autogen-core 0.7.5") for k in contexts), ("langchain_last", "langchain-core 1.8.3"),
                          ("langchain_first", "langchain-core 1.8.3")):
        if name not in only:
            continue
        # Same output first: a fast wrong answer is worth nothing.
        assert ours(name)().kept == kept_by(name), name
        label = f"{library} {type(contexts[name]).__name__ if name in contexts else 'trim_messages'}"
        rows.append(row(name, label, median_seconds(theirs(name), repeat), ours(name), repeat))
    if "safe_token_budget" not in only:
        return rows
    for name in ("token_limited", "langchain_last"):  # memoryviz's own budget beside theirs, for scale
        theirs_row = next((r for r in rows if r["strategy"] == name), None)
        if theirs_row is None:
            continue
        rows.append(row("safe_token_budget", f"(no framework) beside {theirs_row['framework']}",
                        theirs_row["theirs"], ours("safe_token_budget"), repeat))
    return rows


def compare_2026(n: int, repeat: int, only: set[str]) -> list[dict[str, Any]]:
    """The 2026 frameworks, timed by the reference oracle in .venv-ref-2026, with stored approx counts."""
    history = build_history(n)
    counts = count_messages(history, "approx")
    total = sum(counts) + PER_LIST  # approx's per_list too
    specs = {name: scale_params(name, total, n) for name in REF_2026 if name in only}
    if not specs:
        return []
    cases = [{**case(history, name, params, "approx"), "repeat": repeat} for name, params in specs.items()]
    answers = oracle(cases, timeout=3600)
    rows = []
    for (name, params), c, answer in zip(specs.items(), cases, answers, strict=True):
        spec = strategy_spec(name, params)
        run = partial(trim, Grouped(history), spec, counter="approx", token_counts=tuple(counts))
        problem = mismatch(history, c, answer, run())
        assert problem is None, f"{name}: {problem[:2000]}"
        entry = strategy_entry(name)
        rows.append(row(name, f"{entry.version} {entry.label}", answer["seconds"], run, repeat))
    return rows


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
    parser.add_argument("--messages", type=int, nargs="+", default=[10_000])
    parser.add_argument("--strategies", nargs="+", default=[*HERE, "safe_token_budget", *REF_2026],
                        choices=[*HERE, "safe_token_budget", *REF_2026])
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    only = set(args.strategies)

    report: dict[str, Any] = {
        "compare": [
            {"messages": n, "rows": compare_here(n, args.repeat, only) + compare_2026(n, args.repeat, only)}
            for n in args.messages
        ],
    }
    if args.scale:
        report["scale"] = scale(args.scale, args.repeat)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for c in report["compare"]:
        print(f"{c['messages']:,} messages, median of {args.repeat} (CPU ms); ratio ours / theirs (below 1: ours is "
              "faster)")
        print(f"  {'strategy':28s} {'theirs':>9s} {'ours':>9s} {'ratio':>7s} {'+ all read':>12s} {'ratio':>7s}")
        for r in c["rows"]:
            print(f"  {r['strategy']:28s} {r['theirs'] * 1000:9.2f} {r['ours'] * 1000:9.2f} {r['ratio']:7.3f} "
                  f"{r['ours_checked'] * 1000:12.2f} {r['ratio_checked']:7.3f}   {r['framework']}")
    if "scale" in report:
        s = report["scale"]
        print(f"\nevery strategy, microseconds per message at {', '.join(f'{x:,}' for x in s['sizes'])} messages")
        for name, r in s["strategies"].items():
            cells = "  ".join(f"{r['microseconds_per_message'][size]:7.2f}" for size in s["sizes"])
            print(f"  {name:28s} {cells}   ({r['seconds_at_full']:.2f} s at {s['sizes'][-1]:,})")


if __name__ == "__main__":
    main()
