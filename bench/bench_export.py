"""Export speed and memory: `export_to` of one stored N-message session, native and openai.

    python bench/bench_export.py            # 10k, 30k, 100k messages
    python bench/bench_export.py --full     # 100k, 300k, 1M messages

For each size a child process fills a fresh SQLite database (rows inserted with plain sqlite3 into the migrated
schema, not measured), then another fresh child exports the session to a file and reports its time and peak RSS
(``ru_maxrss``), so that the peak belongs to the export alone. The baseline is the floor of any export: reading the
same rows with plain sqlite3 and writing each as a ``json.dumps`` line.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def setup_django(db: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def message_rows(columns: list[str], session_id: int, n: int, *, pad: int = 0) -> Any:
    """The rows of one session of n messages (a tool loop: user, assistant with a call, its result, an answer; 12
    stored tokens a message), as tuples of ``columns`` (agents_message's, without its id): what ``fill`` inserts."""
    filler = " " + "x" * (pad - 1) if pad else ""
    turn = 0
    for seq in range(n):
        kind = seq % 4
        turn += kind == 0
        calls: list[dict[str, Any]] = []
        values: dict[str, Any] = {
            "session_id": session_id, "seq": seq, "role": "user", "content": f"Plan day {turn}." + filler,
            "content_parts": None, "name": "", "tool_call_id": "", "tool_calls": "[]", "is_error": None,
            "reasoning": "", "external_id": "", "created_at": None, "token_count": 12,
            "token_running": 12 * (seq + 1), "usage": None,
            "marks": "[]", "extra": "{}", "content_key": "", "has_content": True,
        }
        if kind == 1:
            calls = [{"id": f"call_{seq}", "type": "function",
                      "function": {"name": "get_weather", "arguments": json.dumps({"city": f"c{turn}"})}}]
            values.update(role="assistant", content=None, tool_calls=json.dumps(calls), has_content=False)
        elif kind == 2:
            values.update(role="tool", tool_call_id=f"call_{seq - 1}",
                          content=json.dumps({"ok": True, "items": [f"r{turn}.{k}" for k in range(3)],
                                              "note": filler}))
        elif kind == 3:
            values.update(role="assistant", content=f"Day {turn}: sunny." + filler)
        yield tuple(values[c] for c in columns)


def bench_sessions(n: int, sessions: int) -> list[Any]:
    """Migrate the configured database and create ``sessions`` empty sessions said to hold n messages each (their
    rows are written by the caller), in one project and agent: bench_export's fill and bench_search's."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from agents import models

    project = models.Project.objects.create(name="Bench", slug="bench")
    agent = models.Agent.objects.create(project=project, name="Bench", slug="bench")
    return [
        models.Session.objects.create(agent=agent, external_id=f"bench-{k}", title=f"bench {k}", message_count=n,
                                      token_total=12 * n)
        for k in range(sessions)
    ]


def fill(db: Path, n: int, *, pad: int = 0, sessions: int = 1) -> int:
    """A migrated database with one session of n messages (a tool loop), inserted with plain sqlite3; ``pad``
    characters more in each text (a user's question, a tool's result, an answer); ``sessions``: that many such
    sessions. Returns the (first) session's id."""
    setup_django(db)
    from agents import models

    created = bench_sessions(n, sessions)
    conn = sqlite3.connect(db)
    fields = [f for f in models.Message._meta.concrete_fields if not f.primary_key]
    cols = ", ".join(f.column for f in fields)

    def rows(session: Any) -> Any:
        return message_rows([f.column for f in fields], session.pk, n, pad=pad)

    conn.execute("BEGIN")
    for session in created:
        conn.executemany(f"INSERT INTO agents_message ({cols}) VALUES ({', '.join('?' * len(fields))})", rows(session))
    conn.commit()
    conn.close()
    return created[0].pk


def export(db: Path, out: Path, fmt: str) -> dict[str, Any]:
    setup_django(db)
    from agents import models
    from agents.transfer import exports

    rss_before = _rss_kb()
    plan = exports.export_plan(sessions=models.Session.objects.all(), format=fmt, scope="bench")
    start = time.perf_counter()
    with open(out, "w", encoding="utf-8") as fh:
        result = exports.export_to(plan, fh)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    baseline = _baseline(db, out.with_suffix(".baseline"))
    return {
        "messages": result.messages, "seconds": round(seconds, 2), "per_second": round(result.messages / seconds),
        "baseline_seconds": round(baseline, 2), "ratio": round(seconds / baseline, 1),
        "rss_before_mb": round(rss_before / 1024, 1), "peak_rss_mb": round(peak / 1024, 1),
        "file_mb": round(out.stat().st_size / 1e6, 1),
    }


def _baseline(db: Path, out: Path) -> float:
    conn = sqlite3.connect(db)
    start = time.perf_counter()
    cur = conn.execute("SELECT role, content, tool_calls, tool_call_id FROM agents_message ORDER BY session_id, seq")
    with open(out, "w", encoding="utf-8") as fh:
        for role, content, tool_calls, tool_call_id in cur:
            fh.write(json.dumps({"role": role, "content": content, "tool_calls": json.loads(tool_calls),
                                 "tool_call_id": tool_call_id}) + "\n")
    seconds = time.perf_counter() - start
    conn.close()
    return seconds


def _rss_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="100k, 300k and 1M messages")
    parser.add_argument("--sizes", help="comma-separated message counts (overrides the defaults)")
    parser.add_argument("--formats", default="native,openai", help="formats to export (default native,openai)")
    parser.add_argument("--fill", nargs=2, metavar=("DB", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--export", nargs=3, metavar=("DB", "OUT", "FORMAT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        fill(Path(args.fill[0]), int(args.fill[1]))
        return
    if args.export:
        print(json.dumps(export(Path(args.export[0]), Path(args.export[1]), args.export[2])))
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [100_000, 300_000, 1_000_000] if args.full else [10_000, 30_000, 100_000])
    print("export of one stored session; baseline: sqlite3 rows written as json.dumps lines")
    print(f"{'format':>8} {'messages':>10} {'file MB':>8} {'export s':>9} {'msg/s':>8} {'baseline s':>11} {'ratio':>6} "
          f"{'RSS before':>11} {'peak RSS':>9}")
    with tempfile.TemporaryDirectory(prefix="memoryviz-bench-export-") as tmp:
        for n in sizes:
            db = Path(tmp) / f"db-{n}.sqlite3"
            subprocess.run([sys.executable, __file__, "--fill", str(db), str(n)], check=True)
            for fmt in args.formats.split(","):
                out = Path(tmp) / f"out-{n}.{fmt}"
                done = subprocess.run([sys.executable, __file__, "--export", str(db), str(out), fmt],
                                      capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    sys.exit(f"size {n} {fmt}: the child failed:\n{done.stderr}")
                r = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"{fmt:>8} {r['messages']:>10,} {r['file_mb']:>8} {r['seconds']:>9} {r['per_second']:>8,} "
                      f"{r['baseline_seconds']:>11} {r['ratio']:>5}x {r['rss_before_mb']:>9} MB "
                      f"{r['peak_rss_mb']:>6} MB", flush=True)
                out.unlink()
                out.with_suffix(".baseline").unlink(missing_ok=True)
            for f in Path(tmp).iterdir():
                f.unlink()


if __name__ == "__main__":
    main()
