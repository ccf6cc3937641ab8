"""Import speed and memory: `import_file` of one N-message OpenAI conversation, against plain sqlite3.

    python bench/bench_import.py            # 10k, 30k, 100k messages (about a minute)
    python bench/bench_import.py --full     # 100k, 300k, 1M messages (several minutes)

For each size, the input file is generated (a realistic tool loop: user, assistant with one or two calls, their
results, an answer) into a temporary folder and deleted afterwards. Each measurement runs in a fresh child process
with its own SQLite file, so that peak RSS (``ru_maxrss``) belongs to that one import. The baseline inserts the
same Session/Message/ToolCall rows (streamed from the imported database's cursor) into a fresh copy of the same
schema with plain ``sqlite3`` ``executemany`` in one transaction, with the same PRAGMAs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def generate(path: Path, n: int) -> None:
    """One conversation of exactly n messages, written as it is generated (the generator holds no list)."""
    with open(path, "w", encoding="utf-8") as out:
        out.write("[\n")
        out.write(json.dumps({"role": "system", "content": "You are a travel assistant. Use the tools."}))
        written, turn = 1, 0
        while written < n:
            turn += 1
            calls = 1 + turn % 2
            block: list[dict[str, Any]] = [{"role": "user", "content": f"Plan day {turn} in city {turn % 97}."}]
            block.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{turn}_{c}", "type": "function",
                 "function": {"name": "search_hotels" if c else "get_weather",
                              "arguments": json.dumps({"city": f"city {turn % 97}", "day": turn, "n": c})}}
                for c in range(calls)]})
            for c in range(calls):
                block.append(
                    {
                        "role": "tool",
                        "tool_call_id": f"call_{turn}_{c}",
                        "content": json.dumps({"ok": True, "items": [f"result {turn}.{c}.{k}" for k in range(3)]}),
                    }
                )
            block.append({"role": "assistant", "content": f"Day {turn}: sunny, three hotels found near the centre."})
            for message in block[: n - written]:
                out.write(",\n" + json.dumps(message, ensure_ascii=False))
                written += 1
        out.write("\n]\n")


def rss_now_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def child(path: Path, db: Path, counter: str) -> dict[str, Any]:
    """Runs in a fresh process: migrate an empty database, import the file, then the sqlite3 baseline."""
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from agents.memory.schema import Message
    from agents.memory.tokens import get_counter
    from agents.transfer import imports

    get_counter(counter).count(Message(role="user", content="warm up"))  # load the tokenizer before measuring
    rss_before = rss_now_kb()
    start = time.perf_counter()
    report = imports.import_file(path, project="bench", agent="bench", counter=counter)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    messages = report.messages_imported
    baseline = baseline_executemany(db)
    return {
        "messages": messages,
        "seconds": round(seconds, 2),
        "per_second": round(messages / seconds),
        "baseline_seconds": round(baseline, 2),
        "ratio": round(seconds / baseline, 1),
        "rss_before_mb": round(rss_before / 1024, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "file_mb": round(path.stat().st_size / 1e6, 1),
    }


SESSION_TABLES = ("agents_project", "agents_agent", "agents_session", "agents_message", "agents_toolcall")


def baseline_executemany(db: Path, tables: tuple[str, ...] = SESSION_TABLES) -> float:
    """The same rows of ``tables`` into a fresh copy of the schema with plain sqlite3 executemany, one transaction
    (the full-text index's triggers fire as they do for the import)."""
    fresh = db.with_name(db.stem + "-baseline.sqlite3")
    fresh.unlink(missing_ok=True)
    src = sqlite3.connect(db)
    dst = sqlite3.connect(fresh, isolation_level=None)
    # Django's SQLite connections define REGEXP, which the schema's checks use.
    dst.create_function("REGEXP", 2, lambda pattern, text: text is not None and bool(re.search(pattern, str(text))),
                        deterministic=True)
    dst.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
    for (sql,) in src.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"):
        try:
            dst.execute(sql)
        except sqlite3.OperationalError as exc:  # the search index's own tables: made with its virtual table
            if "already exists" not in str(exc):
                raise
    start = time.perf_counter()
    dst.execute("BEGIN")
    for table in tables:
        cur = src.execute(f"SELECT * FROM {table}")
        width = len(cur.description)
        dst.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * width)})", cur)
    dst.execute("COMMIT")
    seconds = time.perf_counter() - start
    src.close()
    dst.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="100k, 300k and 1M messages")
    parser.add_argument("--sizes", help="comma-separated message counts (overrides the defaults)")
    parser.add_argument("--counter", default="cl100k", help="token counter used by the import (default cl100k)")
    parser.add_argument("--child", nargs=2, metavar=("FILE", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child[0]), Path(args.child[1]), args.counter)))
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [100_000, 300_000, 1_000_000] if args.full else [10_000, 30_000, 100_000])
    print(f"import of one OpenAI conversation, counter {args.counter}; baseline: sqlite3 executemany of the same rows")
    print(f"{'messages':>10} {'file MB':>8} {'import s':>9} {'msg/s':>8} {'baseline s':>11} {'ratio':>6} "
          f"{'RSS before':>11} {'peak RSS':>9}")
    with tempfile.TemporaryDirectory(prefix="memoryviz-bench-import-") as tmp:
        for n in sizes:
            path = Path(tmp) / f"conv-{n}.json"
            generate(path, n)
            db = Path(tmp) / f"db-{n}.sqlite3"
            done = subprocess.run(
                [sys.executable, __file__, "--counter", args.counter, "--child", str(path), str(db)],
                capture_output=True, text=True, check=False,
            )
            if done.returncode != 0:
                sys.exit(f"size {n}: the child failed:\n{done.stderr}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{r['messages']:>10,} {r['file_mb']:>8} {r['seconds']:>9} {r['per_second']:>8,} "
                  f"{r['baseline_seconds']:>11} {r['ratio']:>5}x {r['rss_before_mb']:>9} MB {r['peak_rss_mb']:>6} MB",
                  flush=True)
            for f in Path(tmp).iterdir():
                f.unlink()


if __name__ == "__main__":
    main()
