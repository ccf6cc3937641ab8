"""The snapshot diff page of two 10,000-message snapshots, side by side with the session page of the same session
(issue 25: "within 2× the session page of the same session").

    python bench/bench_snapshot_pages.py [--messages 10000] [--repeat 7]
    DATABASE_URL=postgres://postgres@127.0.0.1:55481/postgres python bench/bench_snapshot_pages.py   # PostgreSQL

A child process fills a fresh SQLite database (or a fresh database on the PostgreSQL server named, dropped after):
one agent, a session of ``--messages`` messages (a question, an AI message calling a tool, its result, an answer, in
turn: bench_snapshot_diff's thread) stored through the one storing path, and two LangGraph checkpoints of it as the
``langgraph_checkpoints`` reader gives them (bench_snapshot_diff's: the later one with a message removed, one edited
and one added, each holding every message), as snapshots of that session. Not measured.

Then, as a logged-in member, through Django's test client, interleaved, medians of ``--repeat``:
- the session page as it opens, and at its middle message;
- the snapshots page with the two side by side (``?a=&b=``: the structural diff, messages aligned by message), the
  first time the pair is opened (the kept comparisons cleared before, not timed) and opened again (the comparison
  kept: ``ledger.snapshots``, neither value read);
- the snapshots page with one opened as a folded tree (``?snapshot=``).
Each is given as a ratio to the session page as it opens; the goal is the diff page within 2.
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

from bench_memory_pages import drop_postgres, fresh_postgres, is_postgres, setup  # noqa: E402


def fill(n: int) -> dict[str, int]:
    from django.contrib.auth.models import User

    from agents import models
    from agents.memory.schema import Conversation, parse_messages
    from agents.store.writing import session_store
    from bench_snapshot_diff import checkpoint_blob, later, message, snapshot_value

    project = models.Project.objects.create(name="Bench", slug="bench")
    agent = models.Agent.objects.create(project=project, name="Bench", slug="bench")
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=project, user=user, role="admin")
    thread = [message(i) for i in range(n)]

    def openai(m: dict[str, Any]) -> dict[str, Any]:
        if m["type"] == "human":
            return {"role": "user", "content": m["content"]}
        if m["type"] == "tool":
            return {"role": "tool", "content": m["content"], "tool_call_id": m["tool_call_id"]}
        calls = [{"id": c["id"], "type": "function",
                  "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
                 for c in m.get("tool_calls") or []]
        return {"role": "assistant", "content": m["content"] or None, **({"tool_calls": calls} if calls else {})}

    session = session_store(agent=agent, conversation=Conversation(
        external_id="thread-big", messages=parse_messages([openai(m) for m in thread])))
    left = models.Snapshot.objects.create(agent=agent, session=session, seq=n - 1, external_id="step-7", step=7,
                                          source_format="langgraph_checkpoints",
                                          value=snapshot_value(checkpoint_blob(thread, 7), 7))
    right = models.Snapshot.objects.create(agent=agent, session=session, seq=n - 1, external_id="step-8", step=8,
                                           parent=left, source_format="langgraph_checkpoints",
                                           value=snapshot_value(checkpoint_blob(later(thread), 8), 8))
    return {"agent": agent.pk, "session": session.pk, "left": left.pk, "right": right.pk}


def child(db: str, n: int, repeat: int) -> dict[str, Any]:
    setup(db)
    ids = fill(n)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    snapshots = f"/agents/{ids['agent']}/snapshots/"
    from django.core.cache import caches

    from agents.ledger.snapshots import COMPARE_CACHE

    pair = {"a": ids["left"], "b": ids["right"]}
    cases = {
        "session page as it opens": (f"/sessions/{ids['session']}/", {}),
        "session page at its middle": (f"/sessions/{ids['session']}/", {"at": n // 2}),
        "snapshot diff page (a, b), first open": (snapshots, {**pair, "cold": "1"}),
        "snapshot diff page (a, b), opened again": (snapshots, pair),
        "snapshot opened as a tree": (snapshots, {"snapshot": ids["right"]}),
    }

    def get(url: str, query: dict[str, Any]) -> None:
        if query.get("cold"):
            caches[COMPARE_CACHE].clear()  # the pair never opened before (not timed: see the loop)
            query = {k: v for k, v in query.items() if k != "cold"}
        response = client.get(url, query)
        assert response.status_code == 200, (url, query, response.status_code)

    queries: dict[str, int] = {}
    for label, (url, query) in cases.items():  # warm, and count the queries once
        get(url, query)
        with CaptureQueriesContext(connection) as ctx:
            get(url, query)
        queries[label] = len(ctx.captured_queries)
    timings: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(repeat):
        for label, (url, query) in cases.items():
            if query.get("cold"):
                caches[COMPARE_CACHE].clear()
                query = {k: v for k, v in query.items() if k != "cold"}
            start = time.perf_counter()
            get(url, query)
            timings[label].append(time.perf_counter() - start)
    return {"rows": {label: statistics.median(t) * 1000 for label, t in timings.items()}, "queries": queries,
            "vendor": connection.vendor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        db, n, repeat = args.child
        print(json.dumps(child(db, int(n), int(repeat))))
        return
    url = os.environ.get("DATABASE_URL", "")
    with tempfile.TemporaryDirectory(prefix="memoryviz-snapshot-pages-") as tmp:
        env = dict(os.environ)
        if is_postgres(url):
            env["DATABASE_URL"] = fresh_postgres(url)
        try:
            out = subprocess.run([sys.executable, __file__, "--child", str(Path(tmp) / "snapshots.sqlite3"),
                                  str(args.messages), str(args.repeat)], cwd=ROOT, capture_output=True, text=True,
                                 env=env)
        finally:
            if is_postgres(url):
                drop_postgres(url)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    vendor = "PostgreSQL" if result["vendor"] == "postgresql" else "SQLite"
    base = result["rows"]["session page as it opens"]
    print(f"{vendor}: a session of {args.messages:,} messages and two snapshots of it; medians of {args.repeat}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| request | ms | × session page | queries |")
    print("|---|---:|---:|---:|")
    for label, ms in result["rows"].items():
        print(f"| {label} | {ms:,.1f} | {ms / base:.2f} | {result['queries'][label]} |")


if __name__ == "__main__":
    main()
