"""What filled the window in a long session, side by side with that session's page (issue 25).

    python bench/bench_window_bar.py                               # 200,000 messages, 50,000 recalls
    python bench/bench_window_bar.py --messages 20000 --recalls 5000 --repeat 5   # quicker

A child process fills a fresh SQLite database: bench_export.fill's tool loop of ``--messages`` messages (12 stored
tokens each, running totals kept), then ``--recalls`` persisted recalls spread evenly over its user messages (two
items each; every third of a knowledge store, the rest of a memory store) and a compaction's summary at a third of
the session, the memory findings stored as an import stores them. Not measured.

Then, as a logged-in member, through Django's test client, interleaved in each repetition (medians), with each
request's queries:
- the session page as it opens, the baseline, and at its last message (``?at=``);
- the window bar of the last reply and of the reply at half the session, as the session page loads it (htmx) and
  as its own page; the context API for the last reply;
- the growth chart (htmx fragment) and its API.
Prints each median and its ratio to the session page; the goal (issue 25, Speed): the window bar of one call within
2× that session's page.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def fill(db: Path, n: int, recalls: int) -> dict[str, Any]:
    from bench_export import fill as fill_messages

    session_id = fill_messages(db, n)
    from agents import models
    from agents.ledger import findings

    session = models.Session.objects.get(pk=session_id)
    agent = session.agent
    memory = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="memory", kind="records")
    knowledge = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="docs", kind="knowledge")
    users = n // 4  # the tool loop's user messages are at seq % 4 == 0
    step = max(1, users // max(recalls, 1))
    seqs = [4 * k for k in range(0, users, step)][:recalls]
    rows = models.Recall.objects.bulk_create([
        models.Recall(session=session, seq=seq, store=knowledge if k % 3 == 2 else memory, query=f"q{seq}",
                      persisted=True, at=T0, item_count=2) for k, seq in enumerate(seqs)], batch_size=5000)
    models.RecallItem.objects.bulk_create([
        models.RecallItem(recall=r, rank=rank, score=1 / rank, text=f"fact {r.seq}.{rank}")
        for r in rows for rank in (1, 2)], batch_size=5000)
    models.Compaction.objects.create(session=session, seq=4 * (users // 3), summary="What was said before",
                                     source="summary", external_id="bench", at=T0)
    findings.session_findings_store(session)
    return {"session": session.pk, "recalls": len(rows)}


def measure(db: Path, session_id: int, repeat: int) -> dict[str, Any]:
    from bench_export import setup_django

    setup_django(db)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from agents import models

    settings.ALLOWED_HOSTS = ["*"]
    session = models.Session.objects.get(pk=session_id)
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=session.agent.project, user=user, role="viewer")
    client = Client()
    client.force_login(user)
    replies = models.Message.objects.filter(session=session, role="assistant")
    last = replies.order_by("-seq").values_list("seq", flat=True).first()
    middle = replies.filter(seq__gte=session.message_count // 2).order_by("seq").values_list("seq", flat=True).first()
    base, hx = f"/sessions/{session.pk}/", {"HTTP_HX_REQUEST": "true"}
    cases: dict[str, tuple[str, dict[str, str]]] = {
        "session page (baseline)": (base, {}),
        "session page at the last message": (f"{base}?at={session.message_count - 1}", {}),
        "window bar, last reply (htmx)": (f"{base}context/?seq={last}", hx),
        "window bar, middle reply (htmx)": (f"{base}context/?seq={middle}", hx),
        "window bar, last reply (its page)": (f"{base}context/?seq={last}", {}),
        "context API, last reply": (f"/api/sessions/{session.pk}/context/?seq={last}", {}),
        "growth chart (htmx)": (f"{base}context/growth/", hx),
        "growth API": (f"/api/sessions/{session.pk}/context/growth/", {}),
    }
    queries: dict[str, int] = {}
    for label, (url, headers) in cases.items():  # warm (templates, the counter), and count the queries
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url, **headers)
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code} {response.content[:300]!r}")
        queries[label] = len(ctx.captured_queries)
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(repeat):
        for label, (url, headers) in cases.items():
            start = time.perf_counter()
            client.get(url, **headers)
            times[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(t) * 1000 for label, t in times.items()}
    page = medians["session page (baseline)"]
    return {"messages": session.message_count, "last_reply": last, "middle_reply": middle,
            "rows": {label: {"ms": ms, "x_page": ms / page, "queries": queries[label]}
                     for label, ms in medians.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--recalls", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=4, metavar=("DB", "N", "RECALLS", "REPEAT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        db, n, recalls, repeat = Path(args.child[0]), int(args.child[1]), int(args.child[2]), int(args.child[3])
        filled = fill(db, n, recalls)
        print(json.dumps({**measure(db, filled["session"], repeat), "recalls": filled["recalls"]}))
        return
    with tempfile.TemporaryDirectory(prefix="memoryviz-bench-window-") as tmp:
        db = Path(tmp) / "db.sqlite3"
        done = subprocess.run([sys.executable, __file__, "--child", str(db), str(args.messages), str(args.recalls),
                               str(args.repeat)], stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            sys.exit("the child failed (its errors above)")
        result = json.loads(done.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['messages']:,} messages, {result['recalls']:,} recalls; last reply #{result['last_reply']}, "
          f"middle #{result['middle_reply']} (medians of {args.repeat}):")
    print(f"  {'request':36} {'time':>10} {'x page':>7} {'queries':>8}")
    for label, r in result["rows"].items():
        print(f"  {label:36} {r['ms']:8.1f}ms {r['x_page']:6.2f}x {r['queries']:8}")


if __name__ == "__main__":
    main()
