"""The session list's text search at volume, against one plain scan of the messages.

    python bench/bench_search.py                          # 200 sessions of 1,000 messages (200,000)
    python bench/bench_search.py --sessions 1000 --messages 1000   # 1,000,000

A child process fills a fresh SQLite database (bench_export.fill: tool loops, the search index kept by its
triggers; not measured), then, as a logged-in admin of the project, times through Django's test client:
- the list searched for a word in one turn of each session (``?q=day 125.`` for 1,000 messages a session: one
  message of each session matches),
  and for a word in no message (the worst case of a scan: it reads everything);
- the list without a search (for scale);
- the baseline: one plain scan, ``SELECT COUNT(DISTINCT session_id) FROM agents_message WHERE content LIKE ?``,
  the least any search without an index does once per request.
Medians of ``--repeat`` runs; the ratios are against the plain scan of the same word.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def child(db: str, sessions: int, messages: int, repeat: int) -> dict[str, Any]:
    os.environ["MEMORYVIZ_EXPENSIVE_RATE"] = ""
    from bench_export import fill

    started = time.perf_counter()
    fill(Path(db), messages, sessions=sessions)
    filled = time.perf_counter() - started
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from agents import models

    settings.ALLOWED_HOSTS = ["*"]
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=models.Project.objects.get(slug="bench"), user=user, role="admin")
    client = Client()
    client.force_login(user)

    def timed(fn: Any) -> float:
        fn()  # warm
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        return statistics.median(runs) * 1000

    def page(query: str) -> Any:
        def get() -> None:
            response = client.get("/", {"q": query} if query else {})
            assert response.status_code == 200, response.status_code
        return get

    def scan(word: str) -> Any:
        def run() -> int:
            with connection.cursor() as cursor:
                cursor.execute("SELECT COUNT(DISTINCT session_id) FROM agents_message WHERE content LIKE %s",
                               [f"%{word}%"])
                return int(cursor.fetchone()[0])
        return run

    hit, miss = f"day {max(1, messages // 8)}.", "no such words"  # turn n/8 of n/4: mid-session
    found = scan(hit)()
    assert found == sessions, (found, sessions)  # the word is in one turn of every session
    rows = {
        "list, no search": timed(page("")),
        f"list search {hit!r} ({found} sessions)": timed(page(hit)),
        f"plain scan {hit!r}": timed(scan(hit)),
        f"list search {miss!r} (none)": timed(page(miss)),
        f"plain scan {miss!r}": timed(scan(miss)),
    }
    return {"sessions": sessions, "messages": sessions * messages, "fill_s": round(filled, 1), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=1000, help="messages per session")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        db, sessions, messages, repeat = args.child
        print(json.dumps(child(db, int(sessions), int(messages), int(repeat))))
        return
    with tempfile.TemporaryDirectory(prefix="memoryviz-search-") as tmp:
        db = str(Path(tmp) / "search.sqlite3")
        out = subprocess.run([sys.executable, __file__, "--child", db, str(args.sessions), str(args.messages),
                              str(args.repeat)], cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    rows = result["rows"]
    print(f"SQLite, {result['sessions']:,} sessions, {result['messages']:,} messages (filled in {result['fill_s']} s), "
          f"median of {args.repeat}, load average {os.getloadavg()[0]:.1f}")
    print("| request | ms | × plain scan of the same word |")
    print("|---|---:|---:|")
    labels = list(rows)
    for label in labels:
        ms = rows[label]
        if label.startswith("list search"):
            word = label.split("'")[1]
            base = rows[f"plain scan {word!r}"]
            print(f"| {label} | {ms:,.1f} | {ms / base:.3f} |")
        else:
            print(f"| {label} | {ms:,.1f} | |")


if __name__ == "__main__":
    main()
